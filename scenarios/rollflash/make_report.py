"""Write reports/rollflash.md: rlsim's ROLL Flash reproduction against the paper's figures.

ROLL Flash (arXiv 2510.11345v1) is read in full: ../shared/PAPER-FACTS.md section 1 has its
setups and every figure's values, with the PDF's public source. Each section of the report
simulates the paper's own setup and sets rlsim beside the paper point by point:
- Fig. 1b, RLVR scaling (Qwen3-8B Think and Base, 16-128 GPUs; Async, Sync-ROLL,
  Sync-Naive): scenarios/rollflash/rlvr.py;
- Fig. 3a, a fixed 40-GPU budget: the budget40-*.yaml scenarios, below;
- Fig. 7 and Fig. 8, queue scheduling and prompt replication: scenarios/rollflash/micro.py;
- Fig. 9 (left) and Fig. 11, environment-level async and real environments (SWE, ALFWorld,
  ShopSimulator): scenarios/rollflash/agentic.py;
- Search-R1 replayed from the PolyTrace trace (no paper target; a measured agentic load).
Where the paper is silent (its GPU type, the real environments' latencies) the scenarios
take the closest primary source, say so, and each section shows how its headline moves
when that choice changes. Nothing is fitted to the paper's numbers.
Run: `make rollflash-report`.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "reports" / "rollflash.md"
SEARCH_R1 = ROOT / "scenarios" / "search-r1"
# The sections that simulate their own figures, in the paper's order around Fig. 3a.
BEFORE_BUDGET = ("rlvr",)
AFTER_BUDGET = ("micro", "agentic")

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
    path = SEARCH_R1 / f"{name[len('search-r1/'):]}.yaml" if name.startswith("search-r1/") \
        else HERE / f"{name}.yaml"
    res = simulate_file(path, list(overrides))
    hist: Counter[int] = Counter()
    for sp in res.recorder.spans:
        if sp.track == "controller" and sp.name == "train":
            for k, v in sp.attrs.get("staleness_hist", {}).items():
                hist[int(k)] += int(v)
    s = res.summary
    return Run(s["step_time_s"]["mean"], s["phase_time_s"], dict(hist), s["attempts"])


# ---- Fig. 3a: a fixed 40-GPU budget (issue 19) -------------------------------------------
# (scenario, label, step target s, (train, reference, generation-wait, others) targets s)
# [P-RF Fig. 3a; shared/PAPER-FACTS.md section 1a]: step labels, component stacks (vector).
BUDGET = (
    ("budget40-sync", "40Train&Infer (sync)", 2133.0, (210.0, 153.0, 1694.0, 78.0)),
    ("budget40-async-8t32i", "8Train32Infer", 1703.0, (955.0, 688.0, 30.0, 32.0)),
    ("budget40-async-16t24i", "16Train24Infer", 1298.0, (493.0, 357.0, 400.0, 49.0)),
    ("budget40-async-24t16i", "24Train16Infer", 2188.0, (337.0, 235.0, 1556.0, 62.0)),
    ("budget40-async-32t8i", "32Train8Infer", 4326.0, (264.0, 187.0, 3791.0, 88.0)),
)
BUDGET_STEP_TOL = 0.15
BUDGET_SPLIT_TOL = 0.25
BUDGET_COMPONENTS = ("train", "reference", "generation-wait", "others")
# Values the paper is silent on, one changed at a time (committed value in parentheses).
BUDGET_SENSITIVITY: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GPU H20 (H800; H100 prices alike at TP 1)", ("pools.*.gpu=H20",)),
    ("rollout TP 2 (1)", ("rollout.tp=2",)),
    ("response log-sigma 0.93, DAPO trace (0.80)",
     ("workload.response_len.sigma=0.93", "workload.response_len.median=7104")),
    ("response log-sigma 0.50 (0.80)",
     ("workload.response_len.sigma=0.5", "workload.response_len.median=9707")),
    ("group correlation 0.5 (0.08)", ("workload.group_correlation=0.5",)),
    ("max_running_seqs 512 (256)", ("rollout.max_running_seqs=512",)),
)
BUDGET_ASYNC_SENSITIVITY: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("alpha 1 (2)", ("policy.asynchronous.alpha=1",)),
    ("per-sample routing (per prompt)", ("policy.asynchronous.routing=per_sample",)),
)


def _budget_overrides(name: str, change: tuple[str, ...]) -> tuple[str, ...]:
    """Expand 'pools.*.' to the scenario's pools (the sync file has one, the async two)."""
    pools = ("cluster",) if name == "budget40-sync" else ("rollout", "train")
    out: list[str] = []
    for ov in change:
        if ov.startswith("pools.*."):
            out += [ov.replace("*", p) for p in pools]
        else:
            out.append(ov)
    return tuple(out)


def budget_jobs() -> list[Job]:
    """The five Fig. 3a configurations, and each again with one silent value changed."""
    out: list[Job] = [(name, ()) for name, *_ in BUDGET]
    for name, *_ in BUDGET:
        out += [(name, _budget_overrides(name, ov)) for _, ov in BUDGET_SENSITIVITY]
        if name != "budget40-sync":
            out += [(name, ov) for _, ov in BUDGET_ASYNC_SENSITIVITY]
    return out


def budget_split(run: Run) -> dict[str, float]:
    """rlsim's phases in Fig. 3a's four components: train; reference (the log-prob passes);
    generation-wait (sync: the whole generation; async: the trainer waiting for samples);
    others (reward, weight sync, colocated switch, controller)."""
    ph = run.phases
    return {"train": ph.get("train", 0.0), "reference": ph.get("ref", 0.0),
            "generation-wait": ph.get("gen", 0.0),
            "others": sum(ph.get(k, 0.0) for k in ("reward", "weight_sync", "switch",
                                                    "controller", "env", "recovery"))}


def budget_section(results: dict[Job, Run]) -> list[str]:
    """The Fig. 3a section of the report."""
    lines = [
        "## ROLL Flash Fig. 3a: a fixed 40-GPU budget (issue 19)",
        "",
        "Scenarios `budget40-*.yaml` (sync: 3 steps, 1 warm-up; async: 5 steps, 1 warm-up):",
        "Qwen3-8B-Think, 256 prompts x 16 responses, mean response 11k tokens (lognormal,",
        "log-sigma 0.80 of the reasoning trace deepcoder-14b-16k; cap 30,720), Megatron TP 1",
        "with full recompute and dynamic batching, vLLM TP 1, async ratio 2 [P-RF 3.2, Fig.",
        "1b, Table 1, A.1; C: alibaba/ROLL examples]. Each file cites its sources.",
        "",
        "| configuration | rlsim step (s) | paper (s) | error | +-15% | train | reference | "
        "generation-wait | others | split within +-25% |",
        "|---|---:|---:|---:|---|---|---|---|---|---|",
    ]
    for name, label, target, comps in BUDGET:
        r = results[(name, ())]
        err = r.step_s / target - 1
        split = budget_split(r)
        cells, ok = [], 0
        for key, want in zip(BUDGET_COMPONENTS, comps, strict=True):
            got = split[key]
            e = got / want - 1
            hit = abs(e) <= BUDGET_SPLIT_TOL
            ok += hit
            cells.append(f"{got:.0f} / {want:.0f} ({e:+.0%}{'' if hit else ' x'})")
        lines.append(f"| {label} | {r.step_s:.0f} | {target:.0f} | {err:+.1%} | "
                     f"{'met' if abs(err) <= BUDGET_STEP_TOL else 'missed'} | "
                     + " | ".join(cells) + f" | {ok}/4 |")
    sync = results[("budget40-sync", ())].step_s
    best = min(BUDGET[1:], key=lambda b: results[(b[0], ())].step_s)
    lines += [
        "",
        "Each component cell is rlsim / paper (error; x = outside +-25%). Components: train;",
        "reference = rlsim's log-prob passes (the reference forward; ROLL reuses the rollout's",
        "old log-probs with one optimizer step per RL step); generation-wait = rlsim's gen",
        "phase (sync: the generation; async: the trainer waiting for samples); others =",
        "reward + weight sync + colocated switch + controller.",
        f"Best split in rlsim: {best[1]} ({sync / results[(best[0], ())].step_s:.2f}x over",
        "sync; paper: 16Train24Infer, 1.64x).",
        "",
        "### Sensitivity to the values the paper does not state (step, s)",
        "",
        "| change | " + " | ".join(b[1] for b in BUDGET) + " |",
        "|---|" + "---:|" * len(BUDGET),
        "| as committed | " + " | ".join(f"{results[(b[0], ())].step_s:.0f}"
                                        for b in BUDGET) + " |",
    ]
    for label, ov in BUDGET_SENSITIVITY:
        lines.append(f"| {label} | " + " | ".join(
            f"{results[(b[0], _budget_overrides(b[0], ov))].step_s:.0f}" for b in BUDGET)
            + " |")
    for label, ov in BUDGET_ASYNC_SENSITIVITY:
        lines.append(f"| {label} | - | " + " | ".join(
            f"{results[(b[0], ov)].step_s:.0f}" for b in BUDGET[1:]) + " |")
    errs = {k: sum(budget_split(results[(b[0], ())])[k] / want - 1
                   for b in BUDGET for k2, want in zip(BUDGET_COMPONENTS, b[3], strict=True)
                   if k2 == k) / len(BUDGET) for k in ("train", "reference")}
    lines += ["", "Why the misses (no value above is fitted to Fig. 3a):", "",
              f"- **train and reference are short in every configuration** (rlsim "
              f"{errs['train']:+.0%} and {errs['reference']:+.0%}",
              *BUDGET_DISCUSSION, ""]
    return lines


BUDGET_DISCUSSION = [
    "  on average against the paper's bars). The reference bars hold since the scenarios",
    "  price ROLL's reference worker as it runs (megatron_infer with packing off: every",
    "  sample padded to sequence_length 32k, `train.log_prob_pad_to`, from ROLL's config",
    "  alone); before that they were 76-78% short. rlsim's Megatron update is still about",
    "  a third faster than ROLL's measured one, as for every public run in",
    "  reports/real-runs.md, while the same trainer model is within -13% to +9% of NVIDIA's",
    "  published Megatron pre-training throughput (docs/validation.md, 'Trainer against",
    "  published throughput'): the gap is in what RL training adds, not in the kernels.",
    "  This is what makes 8Train32Infer miss (its step is the trainer's: generation-wait",
    "  ~0 in both).",
    "- **The async steps with 24, 16 and 8 inference GPUs are bound by generation** (the",
    "  trainer waits in both), so their step is the time 24/16/8 engines take to produce",
    "  a batch: rlsim is 11-17% short there.",
    "- **Sync misses by about its generation**: the paper's sync generation (1,694 s) is",
    "  2.2x what 40 GPUs need at the async configurations' measured production rate",
    "  (1,298 s on 24 GPUs -> ~780 s on 40), rlsim's 1.4x: rlsim's long tail per engine",
    "  (102 responses of mean 11k, KV-bound) is shorter than ROLL's sync rollout of the",
    "  time (generate_opt_level 0: no queue scheduling, no prompt replication). Its",
    "  'others' (78 s: model load/offload, Fig. 3b's 'fixed constant overheads') is far",
    "  above rlsim's colocated switch + weight sync + controller.",
    "- **Async ratio (sensitivity rows):** rlsim's alpha 2 is slower than alpha 1 at 16 and",
    "  8 inference GPUs, against the paper's Takeaway 3: at alpha 2 rlsim drops several",
    "  thousand samples per run as too stale (a resumed partial rollout keeps its first",
    "  version), wasting generation.",
]


def jobs() -> list[Job]:
    """The runs simulated here (the other sections run their own)."""
    return [*budget_jobs(), ("search-r1/qwen2.5-7b-sync", ()),
            ("search-r1/qwen2.5-7b-async", ())]


def search_r1_section(results: dict[Job, Run]) -> list[str]:
    ss = results[("search-r1/qwen2.5-7b-sync", ())]
    sa = results[("search-r1/qwen2.5-7b-async", ())]
    return [
        "## Search-R1, replayed from the PolyTrace trace",
        "",
        "Real per-turn lengths and tool latencies (traces/polytrace/search-r1-qwen2.5-7b, 1-5",
        "turns, median tool call 0.18 s), 256 prompts x 8 on 16 H800 (docs/workload.md). No",
        "paper target: this shows a measured agentic workload, where the environment is fast",
        "and the step is bound by training.",
        "",
        "| policy | step (s) | gen | ref | train | speedup |",
        "|---|---:|---:|---:|---:|---:|",
        f"| sync, colocated 16 | {ss.step_s:.1f} | {ss.phases['gen']:.1f} | "
        f"{ss.phases['ref']:.1f} | {ss.phases['train']:.1f} | 1.00x |",
        f"| async alpha 1, 4 rollout / 12 train | {sa.step_s:.1f} | {sa.phases['gen']:.1f} | "
        f"{sa.phases['ref']:.1f} | {sa.phases['train']:.1f} | {ss.step_s / sa.step_s:.2f}x |",
        "",
    ]


def module_section(name: str, workers: int) -> str:
    """The section written by scenarios/rollflash/<name>.py."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return str(importlib.import_module(name).section(workers)).rstrip() + "\n"


def markdown(results: dict[Job, Run], sections: dict[str, str]) -> str:
    lines = [
        "# ROLL Flash reproduction",
        "",
        "Written by `make rollflash-report` (scenarios/rollflash/make_report.py) from the",
        "scenarios in `scenarios/rollflash/` and `scenarios/search-r1/`. The paper (ROLL",
        "Flash, arXiv 2510.11345v1) is read in full: its setups and the values of every",
        "figure are in ../shared/PAPER-FACTS.md section 1, with the PDF's public source.",
        "Each section simulates the paper's own setup, sets rlsim beside every figure point",
        "(error; met = within the stated tolerance) and discusses each gap. Values the",
        "paper does not state (its GPU type; the real environments' latencies) come from the",
        "closest primary source, cited in each scenario, and each section shows how its",
        "headline moves when such a value changes. Nothing is fitted to the paper.",
        "",
    ]
    lines += [sections[name] for name in BEFORE_BUDGET]
    lines += budget_section(results)
    lines += [sections[name] for name in AFTER_BUDGET]
    lines += search_r1_section(results)
    return "\n".join(lines)


def main() -> None:
    jobs_ = jobs()
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = dict(zip(jobs_, pool.map(_simulate, jobs_), strict=True))
    sections = {name: module_section(name, workers) for name in (*BEFORE_BUDGET, *AFTER_BUDGET)}
    OUT.write_text(markdown(results, sections), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
