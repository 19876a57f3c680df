# Two commands: `make demo` and `make test`. Both set up .venv/ from scratch when needed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# A second environment without torch: the simulator must import and pass its tests there.
NOTORCH := .venv-notorch
NOTORCH_STAMP := $(NOTORCH)/.installed

.PHONY: demo test test-notorch lint bench validate validate-quick validate-quick-check validate-real calibrate-quick screenshots rollpacker-report rollflash-report rollmux-report belayer-report robustrl-report crosscheck-vidur setup clean framework-profiles coverage-report coverage-realruns

# Installs come from the lock files (requirements/README.md): exact versions with hashes,
# written by uv; rlsim itself goes in editable, without resolving anything more. torch is
# pinned apart (the `calibrate` extra's 2.13.0, a CPU build on this machine; only
# calibration/ uses it): its dependencies are in the lock. The lock's hash is written into
# the environment: summary.json names it (rlsim/config/contracts.py).
LOCK := requirements.lock
LOCK_NOTORCH := requirements-notorch.lock
TORCH := torch==2.13.0
# uv installs the lock (about 30 s on 2 cores against pip's 80: it fetches and byte-compiles
# in parallel). uv itself comes first, by pip, from its own entry in the same lock, hashes
# checked: the lines from `uv==` to its last hash.
PIP_LOCKED := pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r
UV_LOCKED := uv pip install --quiet --link-mode copy --compile-bytecode --require-hashes \
  --no-deps -r
UV_ENTRY = sed -n '/^uv==/,/[^\\]$$/p' $(1) > $(2)/uv.txt
PIP_SELF := pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .

$(STAMP): pyproject.toml $(LOCK)
	$(PY) -m venv $(VENV)
	$(call UV_ENTRY,$(LOCK),$(VENV))
	$(BIN)/$(PIP_LOCKED) $(VENV)/uv.txt
	$(BIN)/$(UV_LOCKED) $(LOCK) --python $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps $(TORCH)
	$(BIN)/$(PIP_SELF)
	sha256sum $(LOCK) > $(VENV)/rlsim-lock.sha256
	touch $(STAMP)

$(NOTORCH_STAMP): pyproject.toml $(LOCK_NOTORCH)
	$(PY) -m venv $(NOTORCH)
	$(call UV_ENTRY,$(LOCK_NOTORCH),$(NOTORCH))
	$(NOTORCH)/bin/$(PIP_LOCKED) $(NOTORCH)/uv.txt
	$(NOTORCH)/bin/$(UV_LOCKED) $(LOCK_NOTORCH) --python $(NOTORCH)/bin/python
	$(NOTORCH)/bin/$(PIP_SELF)
	sha256sum $(LOCK_NOTORCH) > $(NOTORCH)/rlsim-lock.sha256
	touch $(NOTORCH_STAMP)

# The lock files, by uv's resolver (never by hand). `make lock` re-resolves after a change of
# pyproject.toml and keeps every other pin; `make lock-upgrade` moves all to the newest
# versions the ranges allow. Both lock files pin the same versions.
UV_COMPILE := $(BIN)/uv pip compile --quiet --universal --python-version 3.11 \
  --generate-hashes
.PHONY: lock lock-upgrade golden-newest
lock: $(STAMP)
	$(UV_COMPILE) $(UV_FLAGS) pyproject.toml --extra dev --extra ray requirements/build.in \
	  requirements/torch-deps.in -o $(LOCK)
	$(UV_COMPILE) $(UV_FLAGS) pyproject.toml --extra dev requirements/build.in -c $(LOCK) \
	  -o $(LOCK_NOTORCH)
	$(subst --generate-hashes,,$(UV_COMPILE)) pyproject.toml --extra dev --extra ray \
	  requirements/build.in requirements/torch-deps.in -c $(LOCK) -o constraints.txt

lock-upgrade:
	$(MAKE) lock UV_FLAGS=--upgrade

# The golden records against the newest versions pyproject.toml's ranges allow, in a
# throwaway environment: which versions differ from the lock, and which records move.
# Reported, not gating (CI runs it after the tests); the environment is removed after.
NEWEST := .venv-newest
golden-newest:
	rm -rf $(NEWEST)
	$(PY) -m venv $(NEWEST)
	$(NEWEST)/bin/pip install --quiet --disable-pip-version-check -e '.[dev]'
	-$(NEWEST)/bin/python -m tests.golden.versions $(LOCK_NOTORCH)
	-RLSIM_PURE_PYTHON=1 $(NEWEST)/bin/python -m tests.golden.records --check --quick
	rm -rf $(NEWEST)

# The compiled hot path (rlsim/compiled.py): mypyc compiles the hot modules in place, about a
# minute; without a C compiler, or if the compile fails, one line says the pure-Python
# modules are used and setup goes on. Rebuilt when a compiled module changes (a stale build
# is never loaded: rlsim checks the sources' hashes). RLSIM_PURE_PYTHON=1 ignores it.
COMPILED := $(VENV)/.compiled
HOT_SRC := $(addprefix rlsim/,$(addsuffix .py,$(subst .,/,\
  $(shell sed -n 's/^    "rlsim\.\([a-z_.]*\)",$$/\1/p' rlsim/compiled.py))))
$(COMPILED): $(STAMP) rlsim/compiled.py rlsim/_build.py rlsim/_arenas.c $(HOT_SRC)
	$(BIN)/python -m rlsim._build
	touch $(COMPILED)

# rlsim's byte code, written once: an editable install leaves it to the first import, and
# with PYTHONDONTWRITEBYTECODE set (as on this project's machines) every command would
# compile ~300 modules again (~0.1 s of each start). Up-to-date files are skipped.
BYTECODE = $(BIN)/python -m compileall -q rlsim > /dev/null

setup: $(STAMP) $(COMPILED)
	$(BYTECODE)

demo: $(STAMP) $(COMPILED)
	$(BYTECODE)
	$(BIN)/rlsim compare scenarios/quickstart.yaml \
	  --variant policy.name=sync,policy.placement=colocated \
	  --variant policy.name=sync,policy.placement=disaggregated \
	  --variant policy.name=one_off,policy.placement=disaggregated \
	  --out runs/demo

# The suite runs on PYTEST_WORKERS processes (pytest-xdist; 2: this project's machines have
# 2 cores): 8:50 serial -> ~6:30 on 2 cores. `PYTEST_WORKERS=0` runs it in one process.
PYTEST_WORKERS ?= 2
# The lint runs beside the mypyc build (each is single-threaded; mypy took 37-44 s of a
# clean clone's 9:55 after the build's 82 s), then the tests.
test: $(STAMP)
	$(MAKE) --no-print-directory -j2 $(COMPILED) lint
	$(BIN)/pytest -n $(PYTEST_WORKERS)

# CI runs this after `make test`: no torch installed, the simulator's tests still pass
# (tests that need torch skip themselves), and on the pure-Python modules (RLSIM_PURE_PYTHON),
# so the suite passes both with and without the compiled hot path.
test-notorch: $(NOTORCH_STAMP)
	$(NOTORCH)/bin/python -c "import importlib.util, sys; \
	  sys.exit('torch is installed in $(NOTORCH)' if importlib.util.find_spec('torch') else 0)"
	RLSIM_PURE_PYTHON=1 $(NOTORCH)/bin/pytest -p no:cacheprovider -n $(PYTEST_WORKERS)

lint: $(STAMP)
	$(BIN)/ruff check rlsim calibration crosscheck tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP) $(COMPILED)
	$(BIN)/python benchmarks/run_all.py

# The live validation (docs/validation.md): a real RL job here vs rlsim's prediction of it.
validate: $(STAMP)
	$(BIN)/rlsim validate --report reports/validation.md

validate-quick: $(STAMP)
	$(BIN)/rlsim validate --quick --out runs/validate-quick

# The acceptance check on an idle machine: three quick validations in a row, each mode's
# end-to-end error within 10% in every one (exit 1 otherwise).
validate-quick-check: $(STAMP)
	$(BIN)/python -m calibration.live.check_quick --runs 3 --limit 0.10

# The README's pictures: the quickstart run's report, the example sweep's report and the
# quickstart's advise report, each checked in headless chromium (no JS errors, every plot
# rendered) and screenshotted.
SWEEP_EXAMPLE := scenarios/quickstart.yaml --set steps=10 --grid rollout.tp=1,2,4 \
  --grid workload.prompts_per_step=64,128,256 --reps 3
screenshots: $(STAMP)
	$(BIN)/rlsim run scenarios/quickstart.yaml --out runs/quickstart
	$(BIN)/python -m rlsim.report.browser runs/quickstart/report.html reports/quickstart-report.png
	rm -rf runs/sweep-tp
	$(BIN)/rlsim sweep $(SWEEP_EXAMPLE) --out runs/sweep-tp
	$(BIN)/rlsim report runs/sweep-tp
	$(BIN)/python -m rlsim.report.browser runs/sweep-tp/report.html reports/sweep-report.png
	rm -rf runs/advise-quickstart
	$(BIN)/rlsim advise scenarios/quickstart.yaml --trials 60 --out runs/advise-quickstart
	$(BIN)/python -m rlsim.report.browser runs/advise-quickstart/report.html reports/advise-report.png
	rm -rf runs/horizon-ckpt
	$(BIN)/rlsim sweep scenarios/bench/large_sync_1024.yaml --allow-large --set 'horizon=30 d' \
	  --set 'faults.node=[{mtbf: 6000 h}]' \
	  --grid recovery.trainer.checkpoint_every=5,10,20,40,80 --out runs/horizon-ckpt
	$(BIN)/rlsim report runs/horizon-ckpt
	$(BIN)/python -m rlsim.report.browser runs/horizon-ckpt/report.html reports/horizon-sweep.png
	rm -rf runs/draws-quickstart
	$(BIN)/rlsim compare scenarios/quickstart.yaml --draws 32 --set 'workload.trace=null' \
	  --set 'workload.response_len={dist: lognormal, median: 4000, sigma: 0.8}' \
	  --set 'unknowns={workload.response_len.median: {low: 1000, high: 12000, dist: loguniform}, workload.response_len.sigma: {low: 0.4, high: 1.2}}' \
	  --variant policy.name=sync,policy.placement=colocated \
	  --variant policy.name=one_off,policy.placement=disaggregated --out runs/draws-quickstart
	$(BIN)/python -m rlsim.report.browser runs/draws-quickstart/report.html reports/draws-report.png

# reports/rollpacker.md: the RollPacker reproduction (pairs, ablation, eta sweep, weak scaling) vs the paper.
rollpacker-report: $(STAMP)
	$(BIN)/python scenarios/rollpacker/make_report.py

rollflash-report: $(STAMP)
	$(BIN)/python scenarios/rollflash/make_report.py

rollmux-report: $(STAMP)
	$(BIN)/python scenarios/rollmux/make_report.py

belayer-report: $(STAMP)
	$(BIN)/python scenarios/belayer/make_report.py

# reports/robustrl.md: RobustRL's role-based recovery against the whole-job restart (ETTR,
# the paper's definition and rlsim's), 256 and 128 GPUs. About a minute on 2 cores.
robustrl-report: $(STAMP)
	$(BIN)/python scenarios/robustrl/make_report.py

# reports/horizon.md: the horizon (a job's whole span at its fault rates) against the full
# simulation on three policies, its closed forms, large_sync_1024 over 30 days, and the
# Llama 3 and RobustRL anchors (docs/research/horizon-anchors.yaml). About 6 minutes on 2
# cores.
.PHONY: horizon-report
horizon-report: $(STAMP)
	$(BIN)/python scenarios/horizon/make_report.py

# reports/rollart.md: RollArt's SWE step breakdown (Fig. 3) and its sensitivity to the
# values the paper does not state. Under a minute on 2 cores.
.PHONY: rollart-report
rollart-report: $(STAMP)
	$(BIN)/python scenarios/rollart/make_report.py

# reports/real-runs.md: every measured public RL run (validation/real_runs/*.jsonl) that
# rlsim can express, simulated with no fitting, error per record (docs/validation.md, "Public
# real runs", whose corpus table it rewrites); also writes scenarios/real-runs/*.yaml. Seconds
# on 2 cores.
.PHONY: real-runs
real-runs: $(STAMP)
	$(BIN)/python -m calibration.realruns

# reports/verl-readmes.md: the veRL fully_async and one-step-off README speedups and
# update_actor times (issue 36 must-shows), rlsim across the response length the READMEs do
# not state. No fitting. About a minute on 2 cores.
.PHONY: verl-readmes
verl-readmes: $(STAMP)
	$(BIN)/python -m calibration.realruns.readmes

# reports/rl-shapes.md: the RL-shaped microbenchmarks measured on an H200
# (calibration/profiles/h200-rl-shapes.json, h200-host-overhead.json) against rlsim's prices
# of the same work (issue 36, item 4). Seconds.
.PHONY: rl-shapes-report
rl-shapes-report: $(STAMP)
	$(BIN)/python -m calibration.rl_shapes_check

# The same corpus on stdout: error per record and phase, no fitting (`rlsim validate
# --real-runs`; add --json for the JSON document).
validate-real: $(STAMP)
	$(BIN)/rlsim validate --real-runs

# Every shipped scenario still gives the records tests/golden/records.json holds (hashes of
# each one's summary and record stream; `make test` checks the quick ones). A few minutes.
.PHONY: golden
golden: $(STAMP)
	$(BIN)/python -m tests.golden.records --check

# reports/engine-points.md: rlsim's engine iteration against the published decode-speed points
# (validation/engine_points/), no fitting, error per point and per side of the split.
.PHONY: engine-points
engine-points: $(STAMP)
	$(BIN)/python -m calibration.engine_check

# reports/real-runs-fit.md: `rlsim fit` on the corpus: every record that times its phases
# fitted to its own timings, and fits on one run predicting another run of the same job
# (veRL's one-step-off README, NeMo-RL's on-policy and 1-step-off rows). About 2 minutes.
.PHONY: real-runs-fit
real-runs-fit: $(STAMP)
	$(BIN)/python -m calibration.realruns.fitcheck

# rlsim/config/frameworks.json and reports/framework-profiles.md: each framework's profile
# fitted on the corpus's calibration split and checked on its validation split (~1 min).
framework-profiles: $(STAMP)
	$(BIN)/python -m calibration.frameworks

# Issue 39's coverage must-shows: reports/coverage.md (the papers' points inside rlsim's 80%
# intervals over the unstated inputs of docs/research/coverage-inputs.md; about 15 min on
# 2 cores at 64 draws) and reports/coverage-realruns.md (the validation split's measured
# steps inside the profiles' 80% intervals with their discrepancy; about 10 min).
coverage-report: $(STAMP)
	$(BIN)/python -m calibration.coverage --draws 64 --workers 2

coverage-realruns: $(STAMP)
	$(BIN)/python -m calibration.coverage_realruns --draws 32 --workers 2

# reports/crosscheck-vidur.md: rlsim's rollout engine against Vidur's vLLM scheduler on the
# same request batches (crosscheck/README.md). Vidur lives in its own environment,
# .venv-vidur (Python 3.11: vidur ships a cp311 wheel), never a dependency of rlsim.
VIDUR := .venv-vidur
VIDUR_PY ?= python3.11
$(VIDUR)/.installed: crosscheck/requirements-vidur.txt
	$(VIDUR_PY) -m venv $(VIDUR)
	$(VIDUR)/bin/pip install --quiet -r crosscheck/requirements-vidur.txt
	touch $(VIDUR)/.installed

crosscheck-vidur: $(STAMP) $(VIDUR)/.installed
	$(BIN)/python crosscheck/vidur_report.py

calibrate-quick: $(STAMP)
	$(BIN)/rlsim calibrate --device cpu --quick --out runs/profile-cpu-quick.json

clean:
	find rlsim \( -name '*.so' -o -name '*.pyd' \) -delete
	rm -rf $(VENV) $(NOTORCH) $(NEWEST) $(VIDUR) runs build rlsim/_compiled.json .pytest_cache \
	  .mypy_cache .ruff_cache
