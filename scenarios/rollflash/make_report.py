"""Write reports/rollflash.md: rlsim's ROLL Flash reproduction against the paper.

Simulates the three sync/async scenario pairs in this folder, the RLVR pair at 16 to 128
GPUs (async on 3/4 rollout and 1/4 train GPUs, as the scenarios) and at 128 to 2,048
prompts per step (async on the better of a 3/4-1/4 and a 1/2-1/2 split), the RLVR async job
at alpha 0, 1, 2, 4 and 8, the agentic pairs taken apart mechanism by mechanism (lock-step
sync, environment-level async sync, async, async + redundant environments; ALFWorld-like
at environment-step sigma 1, 5 and 10 s), the Search-R1 trace replay pair
(scenarios/search-r1), and the staleness each async job trains with. It writes the tables
next to the paper's numbers (docs/research/rollflash.md). Every figure is computed here
from the scenarios as committed. The paper's setups beyond its abstract are unread, so the
scenarios hold documented defaults, and the report says which targets the paper's readable
text confirms and what the setting the defaults miss would have to be.
Run: `make rollflash-report` (about 2 minutes on 2 cores).
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
BATCHES = (128, 512, 1024, 2048)  # prompts per step (x 8 samples)
BATCH_GPUS = (16, 128)
BATCH_STEPS = 10
SIGMAS = (1, 5, 10)  # ALFWorld-like env-step standard deviation, s (mean 10 s)
SEARCH_R1 = ROOT / "scenarios" / "search-r1"
# [S] (secondary summaries, docs/research/rollflash.md section 4): env-level async within
# sync, async (with env-level async), redundancy alone, each over the lock-step sync job.
AGENTIC_S = {"alfworld": (1.58, 2.27, 1.20), "swe": (1.23, 1.68, 1.08)}

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


def _gpus(n: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Overrides for the RLVR pair at n GPUs: sync on n / 8 nodes; async on nodes of 4
    GPUs, 3/4 of them rollout and 1/4 train (the scenarios' split)."""
    sync = (f"pools.cluster.nodes={n // 8}",)
    async_ = (f"pools.rollout.nodes={3 * n // 16}", "pools.rollout.gpus_per_node=4",
              f"pools.train.nodes={n // 16}", "pools.train.gpus_per_node=4")
    return sync, async_


def _batch(b: int, n: int) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """Overrides for the RLVR pair at b prompts per step on n GPUs: sync, and async with
    1/4 and with 1/2 of the GPUs training (nodes of 4 GPUs)."""
    common = (f"workload.prompts_per_step={b}", f"steps={BATCH_STEPS}")
    sync = (*common, f"pools.cluster.nodes={n // 8}")
    splits = tuple((*common, f"pools.rollout.nodes={(n - t) // 4}", "pools.rollout.gpus_per_node=4",
                    f"pools.train.nodes={t // 4}", "pools.train.gpus_per_node=4")
                   for t in (n // 4, n // 2))
    return sync, splits


def _agentic(job: str, sigma: int | None) -> tuple[Job, Job, Job, Job]:
    """Lock-step sync, env-level async sync, async without and with redundancy."""
    env = () if sigma is None else (f"workload.agentic.env_step.std={sigma}",)
    sync, async_ = f"{job}-sync", f"{job}-async-redundant"
    return ((sync, env), (sync, (*env, "policy.env_interaction=per_trajectory")),
            (async_, (*env, "policy.asynchronous.extra_groups=0",
                      "policy.asynchronous.extra_per_group=0")), (async_, env))


def _agentic_rows() -> list[tuple[str, int | None, tuple[Job, Job, Job, Job]]]:
    rows: list[tuple[str, int | None, tuple[Job, Job, Job, Job]]] = []
    for sigma in SIGMAS:
        # sigma 5 is the scenario's own: no override, so the rows reuse the headline runs
        rows.append(("alfworld", sigma, _agentic("alfworld", None if sigma == 5 else sigma)))
    rows.append(("swe", None, _agentic("swe", None)))
    return rows


def jobs() -> list[Job]:
    """Every run the report needs."""
    out: list[Job] = []
    for sync, async_, *_ in PAIRS:
        out += [(sync, ()), (async_, ()), (async_, DISAGG_SYNC)]
    for n in GPUS:
        s, a = _gpus(n)
        out += [(RLVR_SYNC, s), (RLVR_ASYNC, a)]
    out += [(RLVR_ASYNC, (f"policy.asynchronous.alpha={alpha}",)) for alpha in ALPHAS]
    for b in BATCHES:
        for n in BATCH_GPUS:
            s, splits = _batch(b, n)
            out += [(RLVR_SYNC, s), *((RLVR_ASYNC, a) for a in splits)]
    for *_, four in _agentic_rows():
        out += list(four)
    out += [("search-r1/qwen2.5-7b-sync", ()), ("search-r1/qwen2.5-7b-async", ())]
    out += budget_jobs()
    return list(dict.fromkeys(out))


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


def main() -> None:
    jobs_ = jobs()
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = dict(zip(jobs_, pool.map(_simulate, jobs_), strict=True))
    OUT.write_text(markdown(results), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


# The disaggregated sync baseline: the async scenario's pools, on-policy and lock-step.
DISAGG_SYNC = ("policy.name=sync", "policy.env_interaction=batched")


def _speedup_rows(results: dict[Job, Run]) -> list[str]:
    lines = ["| job | sync step (s) | async step (s) | rlsim speedup | target | source | error "
             "| sync disaggregated (s) | async over it |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for sync, async_, label, target, source in PAIRS:
        a, b = results[(sync, ())].step_s, results[(async_, ())].step_s
        d = results[(async_, DISAGG_SYNC)].step_s
        lines.append(f"| {label} | {a:.1f} | {b:.1f} | {a / b:.2f}x | {target:.2f}x | "
                     f"{source} | {a / b / target - 1:+.0%} | {d:.1f} | {d / b:.2f}x |")
    return lines


def _batch_rows(results: dict[Job, Run]) -> tuple[list[str], dict[int, float]]:
    """The batch sweep's table, and the speedup at 128 GPUs of each batch."""
    lines = ["| prompts x 8 per step | sync 16 GPUs (s) | async 16 (s) | sync 128 (s) | "
             "async 128 (s) | speedup at 16 | speedup at 128 | sync 16->128 | "
             "async 16->128 |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    at128: dict[int, float] = {}
    for b in BATCHES:
        cells: dict[int, tuple[float, float, str]] = {}
        for n in BATCH_GPUS:
            sync, splits = _batch(b, n)
            runs = [(results[(RLVR_ASYNC, a)].step_s, f"{t}") for a, t in
                    zip(splits, (n // 4, n // 2), strict=True)]
            best, train = min(runs)
            cells[n] = (results[(RLVR_SYNC, sync)].step_s, best, train)
        (s16, a16, t16), (s128, a128, t128) = cells[16], cells[128]
        at128[b] = s128 / a128
        lines.append(f"| {b} | {s16:.1f} | {a16:.1f} ({t16} train) | {s128:.1f} | "
                     f"{a128:.1f} ({t128} train) | {s16 / a16:.2f}x | {s128 / a128:.2f}x | "
                     f"{s16 / s128:.2f}x | {a16 / a128:.2f}x |")
    return lines, at128


def _agentic_table(results: dict[Job, Run]) -> list[str]:
    lines = ["| job | env step sigma (s) | lock-step sync (s) | env-level async sync | async | "
             "async + redundancy | redundancy alone |", "|---|---:|---:|---:|---:|---:|---:|"]
    for job, sigma, (batched, per_traj, plain, redundant) in _agentic_rows():
        b = results[batched].step_s
        p, a, r = (results[j].step_s for j in (per_traj, plain, redundant))
        env_s, async_s, red_s = AGENTIC_S[job]
        label = "ALFWorld-like" if job == "alfworld" else "SWE-like"
        sig = f"{sigma}" if sigma is not None else "(lognormal)"
        lines.append(f"| {label} | {sig} | {b:.0f} | {b / p:.2f}x | {b / a:.2f}x | "
                     f"{b / r:.2f}x | {a / r:.2f}x |")
        if sigma in (5, None):
            lines.append(f"| {label}, [S] | | | {env_s:.2f}x | {async_s:.2f}x | "
                         f"{async_s * red_s:.2f}x | {red_s:.2f}x |")
    return lines


def markdown(results: dict[Job, Run]) -> str:
    lines = [
        "# ROLL Flash reproduction",
        "",
        "Written by `make rollflash-report` (scenarios/rollflash/make_report.py) from the",
        "scenarios in `scenarios/rollflash/` and `scenarios/search-r1/` (20 steps each unless",
        "said). **Status: not reproduced; issue 7 is blocked on the paper's setups.** Only",
        "the abstract, the start of section 1 and the Figure 1 caption of the paper could be",
        "read (docs/research/rollflash.md). Its batch sizes, response lengths, GPU type,",
        "train/rollout split and agentic environments are unknown, so every such setting in",
        "the scenarios is a documented default, and nothing is fitted to the paper's speedups.",
        "The sections after the headline show which unknown decides each gap.",
        "",
        "## Speedup of async over sync on the same GPUs",
        "",
        *_speedup_rows(results),
        "",
        "Sources: [P] the paper's abstract; [S] AI-written secondary summaries (unverified).",
        "The target compares with sync on the same GPUs time-shared (colocated, ROLL's sync",
        "examples); 'sync disaggregated' runs sync on the async job's own rollout and train",
        "pools (lock-step environments for the agentic jobs).",
        "",
    ]
    lines += budget_section(results)
    batch_lines, at128 = _batch_rows(results)
    match = [b for b in BATCHES if abs(at128[b] / 2.24 - 1) <= 0.15]
    lines += [
        "## RLVR: what the paper's speedup implies about its batch",
        "",
        "The RLVR pair at 128 to 2,048 prompts x 8 samples per step "
        f"({BATCH_STEPS} steps each; async on the",
        "better of 1/4 and 1/2 of the GPUs training, since the paper's split is unknown).",
        "Two published numbers constrain this regime: the 2.24x speedup at 128 GPUs [P] and",
        "async throughput scaling 7.6x from 16 to 128 GPUs ([ROLL maintainers, GitHub",
        "alibaba/ROLL#207]; throughput at a fixed batch, so step time scales alike).",
        "",
        *batch_lines,
        "",
        "rlsim's speedup at 128 GPUs falls from "
        f"{at128[BATCHES[0]]:.2f}x to {at128[BATCHES[-1]]:.2f}x as the batch grows: a",
        "small batch leaves the sync step waiting on its longest response (which async",
        "hides), a large one makes both throughput-bound, where decoupling cannot help.",
        "Within +-15% of 2.24x: " + (", ".join(f"{b} prompts" for b in match)
                                    if match else "no batch of the sweep") + ".",
        "This is an inversion, not a reproduction: the scenarios keep ROLL's default batch",
        "(128 x 8), and the batch is not fitted.",
        "",
        "## RLVR: speedup against GPU count (scenario batch, 128 x 8)",
        "",
        "Sync on n/8 nodes of 8 H800; async on 3n/4 rollout and n/4 train GPUs.",
        "",
        "| GPUs | sync step (s) | async step (s) | speedup |",
        "|---:|---:|---:|---:|",
    ]
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
    lines += [
        "",
        "[S] reports that alpha = 2 reaches near the maximum; no per-alpha speedups could",
        "be read.",
        "",
        "## Agentic jobs, mechanism by mechanism",
        "",
        "Each speedup is over the lock-step sync job (every turn of the batch waits for its",
        "slowest environment step; `policy.env_interaction: batched`). ALFWorld-like rows vary",
        "the Gaussian environment-step latency (mean 10 s, as in ROLL Flash's and RollArt's",
        "synthetic-latency experiments, REFERENCES.md); sigma 5 s is the scenario's. [S] rows",
        "are the secondary summaries' factors.",
        "",
        *_agentic_table(results),
        "",
        "## Search-R1, replayed from the PolyTrace trace",
        "",
    ]
    ss = results[("search-r1/qwen2.5-7b-sync", ())]
    sa = results[("search-r1/qwen2.5-7b-async", ())]
    lines += [
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
        "## Staleness of the trained samples (async scenarios)",
        "",
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
    lines += ["", *DISCUSSION, ""]
    return "\n".join(lines)


DISCUSSION = [
    "## Why each gap above 10% stays open",
    "",
    "- **RLVR.** At the scenario's batch (ROLL's default 128 prompts x 8 on 128 GPUs, the",
    "  PolyTrace DAPO lengths: median 466 tokens, longest 10k) the sync step waits about a",
    "  minute for its longest responses while the work itself takes seconds, so async hides",
    "  almost the whole step. The paper's batch and lengths are unknown; the batch sweep",
    "  shows the speedup falls to the paper's range only once a step holds thousands of",
    "  samples, and at that batch rlsim's async also scales with GPU count as ROLL's",
    "  maintainers report. Pinning the batch to the target would be a fit.",
    "- **Agentic.** The sync baseline's form decides the speedup. Lock-step environments",
    "  make every turn wait for the slowest of the batch's environment steps and the batch",
    "  wait for its longest trajectory; with the scenarios' heavy-tailed turn counts",
    "  (lognormal, up to 50 or 100 turns) and resets, environment-level async alone gains",
    "  more than [S]'s factors, and async decoupling and redundancy compound it. The",
    "  paper's turn counts, environment latencies and redundancy settings are unread (the",
    "  [S] '36 x 9' groups reading is an inference), so no setting here is tuned to them.",
    "- **SWE.** Its target (1.81x) comes only from [S]; the SWE-like scenario follows",
    "  RollArt's SWE profile (bimodal turns, heavy-tailed resets), whose sync step is far",
    "  slower in rlsim's lock-step form than RollArt's measured 366 s.",
    "- **What would unblock it:** the paper's sections 5-6 and Figs. 1b and 4-10 (batch,",
    "  lengths, GPU split per GPU count, alpha, the agentic environments and the sync",
    "  baselines' exact form).",
]


if __name__ == "__main__":
    main()
