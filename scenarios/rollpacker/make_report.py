"""Write reports/rollpacker.md: rlsim's reproduction of RollPacker against the paper.

Simulates the three veRL/RollPacker scenario pairs, the ablation of RollPacker's parts
(tail batching alone, + reward scheduler, + parallelism planner, + stream trainer) and a
sweep of eta (eta_p = eta_r) from 1.0 to 1.5 at 8k/16k/32k and the weak-scaling study (14B/16k
on 32 / 64 / 128 GPUs, the batch growing with them), then writes the tables next to
the paper's numbers (docs/research/rollpacker.md, [P] = paper section). Every figure is
computed here from the scenarios as committed. Nothing is fitted to the paper: the trainer
is priced per kernel by the Megatron backend (docs/cost-model.md section 3) with the
batching of the authors' artifact config, and [P Table 1], [P Table 2] and [F Fig. 10c]
only validate.
Run: `make rollpacker-report` (about a minute on 2 cores).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlsim.config.scenario import Scenario

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "reports" / "rollpacker.md"
SIZES = {"qwen2.5-7b-8k": "7B / 8k", "qwen2.5-14b-16k": "14B / 16k",
         "qwen2.5-32b-32k": "32B / 32k"}
# [F Fig. 10]: mean step time over the first 40 steps, seconds (veRL, RollPacker).
PAPER_STEP = {"qwen2.5-7b-8k": (233.5, 115.2), "qwen2.5-14b-16k": (382.7, 172.1),
              "qwen2.5-32b-32k": (874.6, 341.2)}
# [P Table 2]: speedup over veRL as each part is added (tail batching, + reward scheduler,
# + parallelism planner, + stream trainer).
PAPER = {"qwen2.5-7b-8k": (1.30, 2.01, 2.01, 2.03), "qwen2.5-14b-16k": (1.48, 1.99, 2.02, 2.22),
         "qwen2.5-32b-32k": (2.21, 2.48, 2.52, 2.56)}
# Each part's switches: the reward scheduler is per-sample rewards, the adaptive sandbox
# timeout and the judge co-located under MPS [P 4.3]; without it the judge is time-shared
# as in veRL.
# [F Fig. 10c]: RollPacker's step in short and long rounds, seconds: the labelled step
# time and its parts read off the bars (about +-2% of the long round).
PAPER_ROUNDS = {
    "qwen2.5-7b-8k": {
        "short": {"step": 106, "rollout": 74, "reward": 3, "training": 25, "sync": 5},
        "long": {"step": 129, "rollout": 88, "reward": 4, "training": 32, "sync": 5}},
    "qwen2.5-14b-16k": {
        "short": {"step": 134, "rollout": 68, "reward": 1, "training": 50, "sync": 15},
        "long": {"step": 302, "rollout": 225, "reward": 2, "training": 59, "sync": 16}},
    "qwen2.5-32b-32k": {
        "short": {"step": 261, "rollout": 69, "reward": 2, "training": 163, "sync": 27},
        "long": {"step": 771, "rollout": 568, "reward": 3, "training": 171, "sync": 29}},
}
# rlsim's phases in the paper's four parts (the colocated offload/reload counts as sync).
PAPER_PARTS = {"rollout": ("gen",), "reward": ("reward",), "training": ("ref", "train"),
               "sync": ("weight_sync", "switch")}
PARTS = (("policy.tail_batching.reward_scheduler", "policy.tail_batching.adaptive_timeout"),
         ("policy.tail_batching.planner",), ("policy.tail_batching.stream_trainer",))
CODE_ONLY = "code-only"  # not an override: the scenario with its code task alone
# [P Fig. 13c] setup, from the artifact's benchmark_fig13 code config [C]: Qwen2.5-7B/8k
# code-only on 8 GPUs, 44 prompts per step, 32 sandbox workers, no GPU scaling or TP change.
FIG13C = ("pools.0.nodes=1", "workload.prompts_per_step=44", "reward.workers=32",
          "policy.tail_batching.planner=false", "policy.tail_batching.stream_trainer=false",
          CODE_ONLY)
FIG13C_JOBS = {adaptive: ("rollpacker-qwen2.5-7b-8k.yaml",
                          (*FIG13C, f"policy.tail_batching.adaptive_timeout={adaptive}"))
               for adaptive in ("true", "false")}
TABLE1_JOBS = {"mix": ("verl-qwen2.5-14b-16k.yaml", ()),
               "code": ("verl-qwen2.5-14b-16k.yaml", (CODE_ONLY,))}
ABLATION = ("tail batching alone", "+ reward scheduler", "+ parallelism planner",
            "+ stream trainer")
ETAS = (1.0, 1.125, 1.25, 1.375, 1.5)
# [P §6.7, Fig. 14] weak scaling of Qwen2.5-14B/16k: the batch (P0) grows from 128 to 512
# with the GPUs, R0 = 8 as everywhere; throughput is samples per second over 20 steps, the
# bars' labels normalised to veRL on 32 GPUs. GPUs -> (veRL, RollPacker).
WEAK_KEY = "qwen2.5-14b-16k"
PAPER_WEAK = {32: (1.0, 2.22), 64: (1.42, 3.37), 128: (2.18, 4.81)}
WEAK_FIG = "[P Fig. 14]"  # arXiv 2509.21009's numbering may differ (the issue says Fig. 16)
WEAK_TOL = 0.20  # issue 19's target for this figure


@dataclass(frozen=True)
class Run:
    """What the report needs of one simulated run."""

    step_s: float  # mean step time
    phases: dict[str, float]  # mean seconds per step, by phase
    preemptions: int = 0
    tp_changes: int = 0  # the parallelism planner's
    cut: int = 0  # sandbox runs cut by the adaptive timeout
    false_cut: int = 0  # of those, runs that would have completed
    rounds: dict[str, dict[str, float]] = field(default_factory=dict)
    """Tail batching: kind of round -> mean seconds per step of `step` and of each phase."""


Result = Run
Job = tuple[str, tuple[str, ...]]


@dataclass(frozen=True)
class ScalePoint:
    """One point of the weak-scaling study: the scenario on `gpus` GPUs, its batch grown by
    the same factor (same prompts per GPU), everything else as committed."""

    gpus: int
    prompts: int  # prompts per step (P0)
    samples_per_step: int  # prompts x responses per prompt: what one step trains
    overrides: tuple[str, ...]  # on top of either system's scenario; () at the base point

    def jobs(self, key: str = WEAK_KEY) -> tuple[Job, Job]:
        """The (veRL, RollPacker with every part on) runs at this point."""
        return ((f"verl-{key}.yaml", self.overrides),
                (f"rollpacker-{key}.yaml", (*self.overrides, *_ablation_overrides(3))))


def code_only(sc: Scenario) -> Scenario:
    """The scenario with its code task alone (share 1): [P Table 1] measures each task on
    its own."""
    tasks = sc.workload.tasks
    assert tasks is not None
    code = [t.model_copy(update={"share": 1.0}) for t in tasks if t.name == "code"]
    return sc.model_copy(update={"workload": sc.workload.model_copy(update={"tasks": code})})


def _step_s(job: tuple[str, tuple[str, ...]]) -> Run:
    from rlsim.api import simulate
    from rlsim.config.loading import load_scenario

    path, overrides = job
    sc, base = load_scenario(HERE / path, [o for o in overrides if o != CODE_ONLY])
    res = simulate(code_only(sc) if CODE_ONLY in overrides else sc, base)
    steps = [sp for sp in res.recorder.spans if sp.name == "step"]
    preempted = sum(int(sp.attrs.get("preemptions", 0)) for sp in steps)
    changes = sum(1 for i in res.recorder.instants
                  if i.name == "decision" and i.attrs.get("what") == "rollout_tp")
    cut = sum(int(sp.attrs.get("sandbox_cut", 0)) for sp in steps)
    false_cut = sum(int(sp.attrs.get("sandbox_false_cut", 0)) for sp in steps)
    kind = {sp.attrs["step"]: sp.attrs.get("round") for sp in steps}
    rounds: dict[str, dict[str, float]] = {}
    for k in sorted({v for v in kind.values() if v is not None}):
        n = sum(1 for v in kind.values() if v == k)
        total: dict[str, float] = {"step": sum(sp.t1 - sp.t0 for sp in steps
                                               if kind[sp.attrs["step"]] == k)}
        for sp in res.recorder.spans:
            if sp.track == "controller" and sp.name != "step" and \
                    kind.get(sp.attrs.get("step")) == k:
                total[sp.name] = total.get(sp.name, 0.0) + sp.t1 - sp.t0
        rounds[k] = {name: t / n for name, t in total.items()}
    s = res.summary
    return Run(s["step_time_s"]["mean"], s["phase_time_s"], preempted, changes, cut,
               false_cut, rounds)


def _ablation_overrides(level: int) -> tuple[str, ...]:
    out = [f"{key}={'true' if i < level else 'false'}"
           for i, keys in enumerate(PARTS) for key in keys]
    if level == 0:
        out.append("reward.judge.placement=time_shared")
    return tuple(out)


def weak_scaling_points(key: str = WEAK_KEY,
                        gpus: tuple[int, ...] = tuple(PAPER_WEAK)) -> list[ScalePoint]:
    """The scenario pair `key` scaled to each GPU count in `gpus`, as [P §6.7] does: the
    one colocated pool's nodes and the prompts per step grow by the same factor over the
    scenario's own (32 GPUs and 128 prompts for 14B/16k), responses per prompt, parallelism
    and the rollout/train placement stay. The base point has no overrides, so its runs are
    the pair the rest of the report uses."""
    from rlsim.config.loading import load_scenario

    sc, _ = load_scenario(HERE / f"verl-{key}.yaml")
    assert len(sc.pools) == 1, "weak scaling grows the one colocated pool"
    pool, prompts = sc.pools[0], sc.workload.prompts_per_step
    out = []
    for n in gpus:
        nodes, rem = divmod(n * pool.nodes, pool.gpus)
        batch, rem_batch = divmod(n * prompts, pool.gpus)
        assert rem == 0 and rem_batch == 0, f"{n} GPUs is not a whole scaling of {pool.gpus}"
        overrides = (() if n == pool.gpus else
                     (f"pools.0.nodes={nodes}", f"workload.prompts_per_step={batch}"))
        out.append(ScalePoint(n, batch, batch * sc.workload.samples_per_prompt, overrides))
    return out


def weak_scaling(results: dict[Job, Result], points: list[ScalePoint]
                 ) -> dict[int, tuple[float, float]]:
    """Throughput at each point, samples per second (samples per step / mean step time),
    normalised to veRL at the first point: GPUs -> (veRL, RollPacker)."""
    def samples_per_s(point: ScalePoint, job: Job) -> float:
        return point.samples_per_step / results[job].step_s

    base = samples_per_s(points[0], points[0].jobs()[0])
    out = {}
    for point in points:
        verl, packer = point.jobs()
        out[point.gpus] = (samples_per_s(point, verl) / base, samples_per_s(point, packer) / base)
    return out


def jobs() -> list[Job]:
    """Every run the report needs, once each: (scenario file, overrides)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for key in SIZES:
        out.append((f"verl-{key}.yaml", ()))
        out += [(f"rollpacker-{key}.yaml", _ablation_overrides(level)) for level in range(4)]
        out += [(f"rollpacker-{key}.yaml", (f"policy.tail_batching.eta_p={eta}",
                                            f"policy.tail_batching.eta_r={eta}"))
                for eta in ETAS]
    out += [TABLE1_JOBS["code"], *FIG13C_JOBS.values()]
    out += [job for point in weak_scaling_points() for job in point.jobs()]
    return list(dict.fromkeys(out))


def _within(value: float, target: float, tol: float) -> str:
    err = value / target - 1
    return f"{err:+.0%} {'within' if abs(err) <= tol else 'MISSED'}"


def main() -> None:
    jobs_ = jobs()
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = dict(zip(jobs_, pool.map(_step_s, jobs_), strict=True))
    OUT.write_text(markdown(results), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


def _speedups(results: dict[tuple[str, tuple[str, ...]], Result]) -> dict[str, float]:
    return {key: results[(f"verl-{key}.yaml", ())].step_s
            / results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))].step_s
            for key in SIZES}


def _weak_check(gpus: int, system: int, got: float) -> str:
    """`got` against the paper's bar: the error and within/MISSED at +-20%; veRL on the
    first point is the normalisation, which checks nothing."""
    paper = PAPER_WEAK[gpus][system]
    if system == 0 and gpus == next(iter(PAPER_WEAK)):
        return "normalisation"
    return _within(got, paper, WEAK_TOL)


def _weak_must_show(points: list[ScalePoint], scaled: dict[int, tuple[float, float]]
                    ) -> list[str]:
    """The weak-scaling rows of the must-show table (14B/16k column only)."""
    lines = []
    for system, name in enumerate(("veRL", "RollPacker")):
        for point in points:
            got, paper = scaled[point.gpus][system], PAPER_WEAK[point.gpus][system]
            cell = f"{got:.2f} vs {paper} ({_weak_check(point.gpus, system, got)})"
            cells = [cell if key == WEAK_KEY else "-" for key in SIZES]
            lines.append(f"| weak scaling {WEAK_FIG}: {name} on {point.gpus} GPUs / "
                         f"{point.prompts} prompts, throughput vs veRL on "
                         f"{points[0].gpus}, +-{WEAK_TOL:.0%} | " + " | ".join(cells) + " |")
    return lines


def _weak_section(results: dict[Job, Result], points: list[ScalePoint],
                  scaled: dict[int, tuple[float, float]]) -> list[str]:
    """The weak-scaling section: throughput normalised to veRL on the first point, rlsim
    against the paper, and the mean step times behind it."""
    base = points[0]
    lines = [f"## Weak scaling {WEAK_FIG}", "",
             f"{SIZES[WEAK_KEY]} with the batch growing with the GPUs: {base.prompts} prompts on "
             f"{base.gpus} GPUs, the same",
             "per GPU at every point; responses per prompt, parallelism, reward workers and the",
             "colocated placement as in the scenarios. Throughput is samples per second",
             "(samples per step / mean step time of the 20 steps less the warm-up step, as in",
             "every table here), normalised to veRL on the first point; the paper measures",
             "samples per second averaged over 20 steps [P §6.7]. The issue names this figure",
             "Fig. 16; in the PDF that [P] numbers from it is Fig. 14.", "",
             "| GPUs | prompts per step | veRL rlsim | veRL paper | veRL error | RollPacker "
             "rlsim | RollPacker paper | RollPacker error | veRL step (s) | RollPacker step (s) |",
             "|---:|---:|---:|---:|---|---:|---:|---|---:|---:|"]
    for point in points:
        (verl, packer), paper = scaled[point.gpus], PAPER_WEAK[point.gpus]
        steps = [results[job].step_s for job in point.jobs()]
        lines.append(f"| {point.gpus} | {point.prompts} | {verl:.2f} | {paper[0]:.2f} | "
                     f"{_weak_check(point.gpus, 0, verl)} | {packer:.2f} | {paper[1]:.2f} | "
                     f"{_weak_check(point.gpus, 1, packer)} | {steps[0]:.1f} | {steps[1]:.1f} |")
    ratios = " / ".join(f"{scaled[p.gpus][1] / scaled[p.gpus][0]:.2f}" for p in points)
    paper_ratios = " / ".join(f"{r / v:.2f}" for v, r in PAPER_WEAK.values())
    last = points[-1]
    growth = [results[job].step_s / results[first].step_s - 1
              for job, first in zip(last.jobs(), base.jobs(), strict=True)]
    paper_growth = (last.gpus / base.gpus) / PAPER_WEAK[last.gpus][0] - 1
    lines += ["", f"RollPacker over veRL at each point: rlsim {ratios}, paper {paper_ratios}",
              "(\"consistently 2.2x\" [P §6.7]). The paper's throughput grows about 1.5x per",
              "doubling, which it puts down to longer training for larger batches; its veRL",
              f"step is {paper_growth:+.0%} longer on {last.gpus} GPUs than on {base.gpus}. "
              f"rlsim's grows {growth[0]:+.0%} (veRL) and",
              f"{growth[1]:+.0%} (RollPacker): the added GPUs run more rollout engines and more "
              "data-parallel",
              "trainer ranks with the same work per GPU, and nothing in rlsim makes a larger",
              "batch train for longer per GPU.", ""]
    return lines


def markdown(results: dict[tuple[str, tuple[str, ...]], Result]) -> str:
    speedups = _speedups(results)
    errors = {key: speedups[key] / PAPER[key][3] - 1 for key in SIZES}
    missed = [SIZES[key] for key in SIZES if abs(errors[key]) > 0.15]
    status = ("**Status: every pair is within +-15% of the paper's speedup.**" if not missed
              else "**Status: the reproduction misses its target** (+-15% of the paper's "
              f"speedup) at {', '.join(missed)}; the gaps and their known causes are below.")
    lines = [
        "# RollPacker reproduction",
        "",
        "Written by `make rollpacker-report` (scenarios/rollpacker/make_report.py) from the",
        "scenarios in `scenarios/rollpacker/` (20 steps each). The paper's numbers and setup:",
        f"docs/research/rollpacker.md. {status}",
        "",
        "The three pairs share one hardware profile (H800 built-in) and the cost model's",
        "constants; nothing is calibrated on the paper. The trainer is priced per kernel by",
        "the Megatron backend (docs/cost-model.md section 3) with the authors' artifact",
        "batching: micro-batches of one sequence cut to a multiple of 256 / 2048 tokens, full",
        "recompute, one optimizer step per RL step, reference micro-batches of 8 padded to",
        "the sequence length (scenario comments cite each value).",
        "",
        "## Must-show comparisons (issue 19)",
        "",
        "| quantity | 7B / 8k | 14B / 16k | 32B / 32k |",
        "|---|---:|---:|---:|",
    ]
    for idx, name in ((0, "veRL mean step (s), +-15%"), (1, "RollPacker mean step (s), +-15%")):
        cells = []
        for key in SIZES:
            system = "verl" if idx == 0 else "rollpacker"
            extra = () if idx == 0 else _ablation_overrides(3)
            got = results[(f"{system}-{key}.yaml", extra)].step_s
            cells.append(f"{got:.1f} vs {PAPER_STEP[key][idx]} "
                         f"({_within(got, PAPER_STEP[key][idx], 0.15)})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| speedup [P Table 2], +-15% | " + " | ".join(
        f"{speedups[key]:.2f} vs {PAPER[key][3]} ({_within(speedups[key], PAPER[key][3], 0.15)})"
        for key in SIZES) + " |")
    for level, name in enumerate(ABLATION[:3]):
        cells = []
        for key in SIZES:
            verl = results[(f"verl-{key}.yaml", ())].step_s
            s = verl / results[(f"rollpacker-{key}.yaml", _ablation_overrides(level))].step_s
            cells.append(f"{s:.2f} vs {PAPER[key][level]} "
                         f"({_within(s, PAPER[key][level], 0.20)})")
        lines.append(f"| ablation: {name}, +-20% | " + " | ".join(cells) + " |")
    for kind in ("short", "long"):
        for part in PAPER_PARTS:
            cells = []
            for key in SIZES:
                ours = results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))].rounds.get(
                    kind, {})
                got = sum(ours.get(n, 0.0) for n in PAPER_PARTS[part])
                # ROLL's per-bucket sync cost is calibrated on the 7B "Sync" bar
                # (docs/cost-model.md): that cell checks nothing.
                check = ("calibration" if part == "sync" and key == next(iter(SIZES))
                         else _within(got, PAPER_ROUNDS[key][kind][part], 0.20))
                cells.append(f"{got:.1f} vs {PAPER_ROUNDS[key][kind][part]} ({check})")
            lines.append(f"| {kind} round {part} (s) [F Fig. 10c], +-20% | "
                         + " | ".join(cells) + " |")
    points = weak_scaling_points()
    scaled = weak_scaling(results, points)
    lines += _weak_must_show(points, scaled)
    lines += [
        "",
        "## End-to-end speedup over veRL",
        "",
        "Each pair as an interactive page (timelines of every engine, trainer and reward",
        "pool, phase breakdown per step, KV use, response CDFs): `rlsim compare",
        "scenarios/rollpacker/verl-qwen2.5-14b-16k.yaml",
        "scenarios/rollpacker/rollpacker-qwen2.5-14b-16k.yaml --out DIR` writes",
        "`DIR/report.html` (not committed: about 5 MB each).",
        "",
        "| model / cap | veRL step (s) | RollPacker step (s) | rlsim speedup | paper [P Table 2] "
        "| error |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, label in SIZES.items():
        verl = results[(f"verl-{key}.yaml", ())].step_s
        packer = results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))].step_s
        lines.append(f"| {label} | {verl:.1f} | {packer:.1f} | {speedups[key]:.2f}x | "
                     f"{PAPER[key][3]:.2f}x | {errors[key]:+.0%} |")
    lines += ["", "## Ablation: speedup over veRL as each part is added", "",
              "rlsim (paper [P Table 2] in brackets). The reward scheduler is per-sample",
              "rewards during rollout, the adaptive sandbox timeout and the judge co-located",
              "under MPS; without it the judge is time-shared after rollout, as in veRL.", "",
              "| | " + " | ".join(SIZES.values()) + " |",
              "|---|" + "---:|" * len(SIZES)]
    for level, name in enumerate(ABLATION):
        cells = []
        for key in SIZES:
            verl = results[(f"verl-{key}.yaml", ())].step_s
            step = results[(f"rollpacker-{key}.yaml", _ablation_overrides(level))].step_s
            cells.append(f"{verl / step:.2f} ({PAPER[key][level]:.2f})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Eta sweep (eta_p = eta_r, all parts on): mean step time (s)", "",
              "| eta | " + " | ".join(SIZES.values()) + " |",
              "|---:|" + "---:|" * len(SIZES)]
    for eta in ETAS:
        knobs = (f"policy.tail_batching.eta_p={eta}", f"policy.tail_batching.eta_r={eta}")
        cells = [f"{results[(f'rollpacker-{key}.yaml', knobs)].step_s:.1f}" for key in SIZES]
        lines.append(f"| {eta:g} | " + " | ".join(cells) + " |")
    lines += ["", "The paper fixes eta = 1.25 for both [P 6.3]; its eta study [P Fig. 11] gives",
              "rollout time only (docs/research/rollpacker.md, section 1). The same sweep as",
              "an interactive report: `rlsim sweep scenarios/rollpacker/rollpacker-qwen2.5-"
              "14b-16k.yaml",
              "--grid policy.tail_batching.eta_p=1,1.125,1.25,1.375,1.5 --out DIR` (eta_p",
              "alone) then `rlsim report DIR`.", "",
              *_weak_section(results, points, scaled),
              "## Phase time per step (s): veRL vs RollPacker", "",
              "| model / cap | system | gen | reward | ref | train | switch | weight_sync |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for key, label in SIZES.items():
        for system, job in (("veRL", (f"verl-{key}.yaml", ())),
                            ("RollPacker", (f"rollpacker-{key}.yaml", _ablation_overrides(3)))):
            ph = results[job].phases
            lines.append(f"| {label} | {system} | {ph['gen']:.1f} | {ph['reward']:.1f} | "
                         f"{ph['ref']:.1f} | {ph['train']:.1f} | {ph['switch']:.1f} | "
                         f"{ph['weight_sync']:.2f} |")
    lines += ["", "## RollPacker's step by kind of round (s): rlsim (paper [F Fig. 10c])", "",
              "The paper's four parts; rlsim's rollout is gen, training is ref + train and sync",
              "is the weight sync plus the colocated offload/reload.", "",
              "| model / cap | round | step | rollout | reward | training | sync |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for key, label in SIZES.items():
        run = results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))]
        for kind in ("short", "long"):
            ours, paper = run.rounds.get(kind, {}), PAPER_ROUNDS[key][kind]
            cells = [f"{ours.get('step', float('nan')):.0f} ({paper['step']})"]
            for part, names in PAPER_PARTS.items():
                cells.append(f"{sum(ours.get(n, 0.0) for n in names):.0f} ({paper[part]})")
            lines.append(f"| {label} | {kind} | " + " | ".join(cells) + " |")
    lines += ["", "Adaptive sandbox timeout, 20 steps: "
              + "; ".join(f"{label}: {r.cut} executions cut early, {r.false_cut} of them would "
                          "have completed" for label, r in
                          ((label, results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))])
                           for key, label in SIZES.items())) + ".",
              "", "## Component checks against the paper's own measurements", "",
              "| check | rlsim | paper |", "|---|---:|---:|"]
    for name, job in TABLE1_JOBS.items():
        step, ph = results[job].step_s, results[job].phases
        rollout, reward = ph["gen"] / step, ph["reward"] / step
        paper_txt = "22%" if name == "mix" else "66% / 13% / 21%"
        label = ("veRL 14B/16k, mixed: train share" if name == "mix" else
                 "veRL 14B/16k, code only: rollout / reward / train share")
        ours_txt = (f"{1 - rollout - reward:.1%}" if name == "mix" else
                    f"{rollout:.0%} / {reward:.0%} / {1 - rollout - reward:.0%}")
        lines.append(f"| {label} [P Table 1] | {ours_txt} | {paper_txt} |")
    fixed, adapt = (sum(results[FIG13C_JOBS[a]].phases[p] for p in ("gen", "reward"))
                    for a in ("false", "true"))
    lines += [f"| adaptive timeout, code only 7B/8k: rollout + reward time, fixed / adaptive "
              f"[P Fig. 13c] | {fixed / adapt:.2f}x | 1.6x |", "",
              "The Fig. 13c run follows the artifact's config [C] (8 GPUs, 44 prompts, 32",
              "workers). rlsim's anchors come only from runs of the same prompt scored earlier",
              "in the run, as the paper describes; the artifact reads a per-problem reference",
              "time from its dataset instead, which would cut hung runs from a prompt's first",
              "response on."]
    full = [results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))] for key in SIZES]
    false_share = sum(r.false_cut for r in full) / max(1, sum(r.cut for r in full))

    def per_short(names: tuple[str, ...]) -> str:
        return " / ".join(f"{sum(r.rounds.get('short', {}).get(n, 0.0) for n in names):.0f}"
                          for r in full) + " s"

    short_gen, short_train = per_short(("gen",)), per_short(("ref", "train"))
    long_train = " / ".join(
        f"{sum(r.rounds.get('long', {}).get(n, 0.0) for n in ('ref', 'train')):.0f}"
        for r in full) + " s"
    sync_s = per_short(("weight_sync", "switch"))
    lines += ["", "## Gaps above 10% and their known causes", ""]
    gaps = [key for key in SIZES if abs(errors[key]) > 0.10]
    if not gaps:
        lines.append("None.")
    for key in gaps:
        lines.append(f"- **{SIZES[key]}**: {speedups[key]:.2f}x vs {PAPER[key][3]:.2f}x "
                     f"({errors[key]:+.0%}).")
    lines += [
        "",
        "Known modelling gaps (each is a cause to check before any number moves):",
        "",
        "- **Short rounds are much cheaper in rlsim than in the paper** (the table by kind",
        "  of round). The paper's short-round rollout takes about 70 s at every model size",
        f"  (74 / 68 / 69 s); rlsim's takes {short_gen}. Its short rounds stop at about",
        "  1.5-2k tokens [F Fig. 10a], which rlsim decodes in seconds on these engines; the",
        "  paper does not say what else holds them (its artifact counts a response done only",
        "  once its reward is in, which rlsim does not model).",
        "- **Training: ROLL's padding.** The reference worker sets no use_remove_padding",
        "  [C], so its Megatron forward runs every sample padded to sequence_length (prompt",
        "  length 2048 [C] + the cap), and actor_train cuts each one-sample micro-batch to",
        "  its length rounded up to 256 (cp 1) or 2048 (cp > 1) [C megatron_strategy.py",
        "  _get_unpad_seqlen]; rlsim prices both per kernel (`train.ref_pad_to`,",
        "  `train.pad_to_multiple_of`, no fitted MFU). The padded reference is most of a",
        "  short round's training and costs the same whatever the responses' lengths, which",
        "  is why the paper's long rounds (~10x the tokens) train only 6% longer. Short",
        f"  rounds: rlsim {short_train} against the paper's 25 / 50 / 163 s (the 32B gap: its",
        "  reference runs at TP 4 / CP 4 in rlsim; the paper does not give the reference's",
        "  layout, and the artifact's 7B config runs it at TP 1).",
        f"- **Long rounds train for less in rlsim** ({long_train} against 32 / 59 / 173 s):",
        "  rlsim's stream trainer computes most of a long round's reference and gradients on",
        "  the released GPUs during the rollout's tail, leaving little after it; the paper's",
        "  long-round training bar shows no such saving (its Table 3 credits the stream",
        "  trainer with 1.08x at 7B/8k). What the paper's stream trainer defers to after the",
        "  rollout is not described, so rlsim's is left as the paper's text describes it.",
        "- **Weight sync** is 5 / 15 / 27 s per step in the paper (Sync. in Fig. 10c) against",
        f"  {sync_s} in rlsim, which prices the transfer over NVLink and InfiniBand",
        "  and the offload/reload; the paper does not say what else its sync includes (for",
        "  example converting Megatron's sharded weights to vLLM's layout).",
        "- **The adaptive timeout gains less than in Fig. 13c** (see the component checks):",
        "  its anchors exist only once a run of the same prompt has been scored, so a hung",
        "  run among a prompt's first responses still holds its worker for 30 s. Of the runs",
        f"  it cuts, {false_share:.0%} would have completed (with no correctness model every",
        "  run that ends before 30 s counts as correct for the anchor).",
        "- **Lengths** are derived from the paper's Fig. 2a statistics (derive_lengths.py); the",
        "  research note finds its short rounds shorter than the paper's (12x below the cap vs",
        "  'up to 8.9x'), which favours tail batching at 16k and 32k.",
        "- **The parallelism planner** reacts only to preemptions, which are rare at these",
        "  settings (H800, 0.9 memory utilization): "
        + "; ".join(f"{label}: {r.preemptions} preemptions, {r.tp_changes} TP changes"
                    for label, r in
                    ((label, results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))])
                     for key, label in SIZES.items())) + ".",
        "- **The stream trainer** does not stream QA samples (their verdicts have no known",
        "  end time while the round runs); they train in the final update.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
