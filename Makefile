# Two commands: `make demo` and `make test`. Both set up .venv/ from scratch when needed.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench setup clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/rlsim compare scenarios/quickstart.yaml \
	  --variant policy.name=sync,policy.placement=colocated \
	  --variant policy.name=sync,policy.placement=disaggregated \
	  --variant policy.name=one_off,policy.placement=disaggregated \
	  --out runs/demo

test: $(STAMP)
	$(BIN)/ruff check rlsim calibration tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check rlsim calibration tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
