"""Write reports/rollflash.md: rlsim's ROLL Flash reproduction against the paper (DRAFT).

Simulates the three sync/async scenario pairs in this folder, the RLVR pair at 16 to 128
GPUs (async on 3/4 rollout and 1/4 train GPUs, as the scenarios), the RLVR async job at
alpha 0, 1, 2, 4 and 8, and the staleness each async job trains with, then writes the
tables next to the paper's numbers (docs/research/rollflash.md). Every figure is computed
here from the scenarios as committed. The scenarios are drafts: the paper's setup beyond
its abstract is unread, so the targets below are what the issue names, and the report
says which of them the paper's readable text confirms.
Run: `make rollflash-report` (about a minute on 2 cores).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "reports" / "rollflash.md"
# (sync scenario, async scenario, label, target speedup, where the target comes from)
PAIRS = (
    ("rlvr-qwen3-8b-128gpu-sync", "rlvr-qwen3-8b-128gpu-async", "RLVR, 128 GPUs", 2.24,
     "[P abstract]: 'up to 2.24x' on RLVR"),
    ("alfworld-sync", "alfworld-async-redundant", "ALFWorld-like, async + redundancy", 2.72,
     "[P abstract]: 'up to 2.72x' on agentic tasks"),
    ("swe-sync", "swe-async-redundant", "SWE-like, async + redundancy", 1.81,
     "[S] secondary summaries only"),
)
GPUS = (16, 32, 64, 128)
ALPHAS = (0, 1, 2, 4, 8)
RLVR_SYNC, RLVR_ASYNC = PAIRS[0][0], PAIRS[0][1]

Job = tuple[str, tuple[str, ...]]


@dataclass(frozen=True)
class Run:
    """What the report needs of one simulated run."""

    step_s: float
    phases: dict[str, float]
    staleness: dict[int, int] = field(default_factory=dict)  # samples by staleness
    attempts: dict[str, int] | None = None


def _simulate(job: Job) -> Run:
    from rlsim.api import simulate_file

    name, overrides = job
    res = simulate_file(HERE / f"{name}.yaml", list(overrides))
    hist: Counter[int] = Counter()
    for sp in res.recorder.spans:
        if sp.track == "controller" and sp.name == "train":
            for k, v in sp.attrs.get("staleness_hist", {}).items():
                hist[int(k)] += int(v)
    s = res.summary
    return Run(s["step_time_s"]["mean"], s["phase_time_s"], dict(hist), s["attempts"])


def _gpus(n: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Overrides for the RLVR pair at n GPUs: sync on n / 8 nodes; async on nodes of 4
    GPUs, 3/4 of them rollout and 1/4 train (the scenarios' split)."""
    sync = (f"pools.cluster.nodes={n // 8}",)
    async_ = (f"pools.rollout.nodes={3 * n // 16}", "pools.rollout.gpus_per_node=4",
              f"pools.train.nodes={n // 16}", "pools.train.gpus_per_node=4")
    return sync, async_


def jobs() -> list[Job]:
    """Every run the report needs."""
    out: list[Job] = []
    for sync, async_, *_ in PAIRS:
        out += [(sync, ()), (async_, ())]
    for n in GPUS:
        s, a = _gpus(n)
        out += [(RLVR_SYNC, s), (RLVR_ASYNC, a)]
    out += [(RLVR_ASYNC, (f"policy.asynchronous.alpha={alpha}",)) for alpha in ALPHAS]
    return list(dict.fromkeys(out))


def main() -> None:
    jobs_ = jobs()
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = dict(zip(jobs_, pool.map(_simulate, jobs_), strict=True))
    OUT.write_text(markdown(results), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


def markdown(results: dict[Job, Run]) -> str:
    lines = [
        "# ROLL Flash reproduction (DRAFT)",
        "",
        "Written by `make rollflash-report` (scenarios/rollflash/make_report.py) from the",
        "scenarios in `scenarios/rollflash/` (20 steps each). **Status: draft, issue 7 open.**",
        "Only the abstract and the start of the paper could be read",
        "(docs/research/rollflash.md): its batch sizes, lengths, GPU type, train/rollout",
        "split and agentic environments are unknown, so every such setting in the scenarios",
        "is a documented default, and nothing here is fitted to the paper's speedups.",
        "",
        "## Speedup of async over sync on the same GPUs",
        "",
        "| job | sync step (s) | async step (s) | rlsim speedup | target | source | error |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for sync, async_, label, target, source in PAIRS:
        a, b = results[(sync, ())].step_s, results[(async_, ())].step_s
        lines.append(f"| {label} | {a:.1f} | {b:.1f} | {a / b:.2f}x | {target:.2f}x | "
                     f"{source} | {a / b / target - 1:+.0%} |")
    lines += ["", "## RLVR: speedup against GPU count", "",
              "Sync on n/8 nodes of 8 H800; async on 3n/4 rollout and n/4 train GPUs.", "",
              "| GPUs | sync step (s) | async step (s) | speedup |", "|---:|---:|---:|---:|"]
    for n in GPUS:
        s, a = _gpus(n)
        x, y = results[(RLVR_SYNC, s)].step_s, results[(RLVR_ASYNC, a)].step_s
        lines.append(f"| {n} | {x:.1f} | {y:.1f} | {x / y:.2f}x |")
    sync128 = results[(RLVR_SYNC, ())].step_s
    lines += ["", "## RLVR at 128 GPUs: async against alpha", "",
              "| alpha | async step (s) | speedup over sync | mean staleness | dropped stale |",
              "|---:|---:|---:|---:|---:|"]
    for alpha in ALPHAS:
        r = results[(RLVR_ASYNC, (f"policy.asynchronous.alpha={alpha}",))]
        n = sum(r.staleness.values())
        mean = sum(k * v for k, v in r.staleness.items()) / n if n else 0.0
        dropped = r.attempts["stale"] if r.attempts else 0
        lines.append(f"| {alpha} | {r.step_s:.1f} | {sync128 / r.step_s:.2f}x | {mean:.2f} | "
                     f"{dropped} |")
    lines += ["", "## Staleness of the trained samples (async scenarios)", "",
              "| job | samples by staleness (versions behind) | attempts: trained / stale / "
              "cancelled / open |", "|---|---|---|"]
    for _, async_, label, *_ in PAIRS:
        r = results[(async_, ())]
        hist = ", ".join(f"{k}: {v}" for k, v in sorted(r.staleness.items()))
        att = r.attempts or {}
        lines.append(f"| {label} | {hist} | {att.get('trained', 0)} / {att.get('stale', 0)} / "
                     f"{att.get('cancelled', 0)} / {att.get('leftover', 0)} |")
    lines += ["", "## Phase time per step (s)", "",
              "| job | policy | gen (waiting for rollout, async) | reward | ref | train | "
              "weight_sync | switch |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for sync, async_, label, *_ in PAIRS:
        for name, policy in ((sync, "sync"), (async_, "async")):
            ph = results[(name, ())].phases
            lines.append(f"| {label} | {policy} | {ph['gen']:.1f} | {ph['reward']:.1f} | "
                         f"{ph['ref']:.1f} | {ph['train']:.1f} | {ph['weight_sync']:.2f} | "
                         f"{ph['switch']:.1f} |")
    lines += [
        "",
        "## Why the numbers are not a reproduction yet",
        "",
        "- The setups are unread: batch size, response lengths and GPU type of the RLVR runs,",
        "  the train/rollout split, and everything about the agentic environments (turn",
        "  counts, step and reset latencies, redundancy) are documented defaults.",
        "- The sync agentic baselines run their environments in lock-step (every turn waits",
        "  for the slowest environment step of the batch, and the batch waits for its",
        "  longest trajectory), which with heavy-tailed resets and turn counts makes them",
        "  far slower than the 366 s SWE step RollArt measured [P-RA 3.1]; the baseline's",
        "  exact form in the paper is unknown.",
        "- The RLVR pair is latency-bound at these defaults (128 prompts x 8 on 128 GPUs): the",
        "  sync step waits for its longest response, which async hides, so the speedup is",
        "  far above the paper's.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
