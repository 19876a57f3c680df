"""Write reports/rollpacker.md: rlsim's reproduction of RollPacker against the paper.

Simulates the three veRL/RollPacker scenario pairs, the ablation of RollPacker's parts
(tail batching alone, + reward scheduler, + parallelism planner, + stream trainer) and a
sweep of eta (eta_p = eta_r) from 1.0 to 1.5 at 8k/16k/32k, then writes the tables next to
the paper's numbers (docs/research/rollpacker.md, [P] = paper section). Every figure is
computed here from the scenarios as committed. One constant, the trainer's end-to-end MFU
(`train.mfu`), is calibrated on the paper's characterisation of veRL [P Table 1] by
calibrate_train.py; nothing is fitted to the speedups of [P Table 2].
Run: `make rollpacker-report` (about a minute on 2 cores).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # calibrate_train, beside this script
ROOT = HERE.parents[1]
OUT = ROOT / "reports" / "rollpacker.md"
SIZES = {"qwen2.5-7b-8k": "7B / 8k", "qwen2.5-14b-16k": "14B / 16k",
         "qwen2.5-32b-32k": "32B / 32k"}
# [P Table 2]: speedup over veRL as each part is added (tail batching, + reward scheduler,
# + parallelism planner, + stream trainer).
PAPER = {"qwen2.5-7b-8k": (1.30, 2.01, 2.01, 2.03), "qwen2.5-14b-16k": (1.48, 1.99, 2.02, 2.22),
         "qwen2.5-32b-32k": (2.21, 2.48, 2.52, 2.56)}
# Each part's switches: the reward scheduler is per-sample rewards, the adaptive sandbox
# timeout and the judge co-located under MPS [P 4.3]; without it the judge is time-shared
# as in veRL.
# [F Fig. 10c]: RollPacker's step time in short / long rounds, seconds (read off the figure).
PAPER_ROUNDS = {"qwen2.5-7b-8k": (106, 129), "qwen2.5-14b-16k": (134, 302),
                "qwen2.5-32b-32k": (261, 771)}
PARTS = (("policy.tail_batching.reward_scheduler", "policy.tail_batching.adaptive_timeout"),
         ("policy.tail_batching.planner",), ("policy.tail_batching.stream_trainer",))
DEFAULT_TRAINER = ("train.mfu=null",)
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


Result = tuple[float, dict[str, float], int, int, int, int, float, float, float, float]
"""Mean step time, phase time per step, preemptions, rollout TP changes, sandbox executions
cut by the adaptive timeout, those of them that would have completed (false cuts), the
mean step time of short and of long rounds, and their mean generation time (nan when a
kind of round does not occur)."""


def _step_s(job: tuple[str, tuple[str, ...]]) -> Result:
    from calibrate_train import code_only

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
    gens = [sp for sp in res.recorder.spans if sp.track == "controller" and sp.name == "gen"]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else float("nan")

    per_round = [mean([sp.t1 - sp.t0 for sp in spans if kind.get(sp.attrs["step"]) == k])
                 for spans in (steps, gens) for k in ("short", "long")]
    s = res.summary
    return (s["step_time_s"]["mean"], s["phase_time_s"], preempted, changes, cut, false_cut,
            *per_round)


def _ablation_overrides(level: int) -> tuple[str, ...]:
    out = [f"{key}={'true' if i < level else 'false'}"
           for i, keys in enumerate(PARTS) for key in keys]
    if level == 0:
        out.append("reward.judge.placement=time_shared")
    return tuple(out)


def jobs() -> list[tuple[str, tuple[str, ...]]]:
    """Every run the report needs: (scenario file, overrides)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for key in SIZES:
        out.append((f"verl-{key}.yaml", ()))
        out.append((f"verl-{key}.yaml", DEFAULT_TRAINER))
        out.append((f"rollpacker-{key}.yaml", _ablation_overrides(3) + DEFAULT_TRAINER))
        out += [(f"rollpacker-{key}.yaml", _ablation_overrides(level)) for level in range(4)]
        out += [(f"rollpacker-{key}.yaml", (f"policy.tail_batching.eta_p={eta}",
                                            f"policy.tail_batching.eta_r={eta}"))
                for eta in ETAS]
    return [*out, TABLE1_JOBS["code"], *FIG13C_JOBS.values()]


def main() -> None:
    jobs_ = jobs()
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = dict(zip(jobs_, pool.map(_step_s, jobs_), strict=True))
    OUT.write_text(markdown(results), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


def _speedups(results: dict[tuple[str, tuple[str, ...]], Result],
              extra: tuple[str, ...] = ()) -> dict[str, float]:
    return {key: results[(f"verl-{key}.yaml", extra)][0]
            / results[(f"rollpacker-{key}.yaml", _ablation_overrides(3) + extra)][0]
            for key in SIZES}


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
        "constants. One constant is calibrated, not taken from a spec: the trainer's end-to-end",
        "MFU, `train.mfu = 0.13`, chosen by `calibrate_train.py` so that veRL 14B/16k spends",
        "22% of its step on training as the paper measured [P Table 1] (rlsim's per-kernel",
        "default, 0.4, gives 9%). It is the same in all six scenarios, and the speedups of",
        "[P Table 2] play no part in it; the last section shows the result without it.",
        "",
        "## End-to-end speedup over veRL",
        "",
        "| model / cap | veRL step (s) | RollPacker step (s) | rlsim speedup | paper [P Table 2] "
        "| error |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, label in SIZES.items():
        verl = results[(f"verl-{key}.yaml", ())][0]
        packer = results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))][0]
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
            verl = results[(f"verl-{key}.yaml", ())][0]
            step = results[(f"rollpacker-{key}.yaml", _ablation_overrides(level))][0]
            cells.append(f"{verl / step:.2f} ({PAPER[key][level]:.2f})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Eta sweep (eta_p = eta_r, all parts on): mean step time (s)", "",
              "| eta | " + " | ".join(SIZES.values()) + " |",
              "|---:|" + "---:|" * len(SIZES)]
    for eta in ETAS:
        knobs = (f"policy.tail_batching.eta_p={eta}", f"policy.tail_batching.eta_r={eta}")
        cells = [f"{results[(f'rollpacker-{key}.yaml', knobs)][0]:.1f}" for key in SIZES]
        lines.append(f"| {eta:g} | " + " | ".join(cells) + " |")
    lines += ["", "The paper fixes eta = 1.25 for both [P 6.3]; its eta study [P Fig. 11] gives",
              "rollout time only (docs/research/rollpacker.md, section 1). The same sweep as",
              "an interactive report: `rlsim sweep scenarios/rollpacker/rollpacker-qwen2.5-"
              "14b-16k.yaml",
              "--grid policy.tail_batching.eta_p=1,1.125,1.25,1.375,1.5 --out DIR` (eta_p",
              "alone) then `rlsim report DIR`.", "",
              "## Phase time per step (s): veRL vs RollPacker", "",
              "| model / cap | system | gen | reward | ref | train | switch | weight_sync |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for key, label in SIZES.items():
        for system, job in (("veRL", (f"verl-{key}.yaml", ())),
                            ("RollPacker", (f"rollpacker-{key}.yaml", _ablation_overrides(3)))):
            ph = results[job][1]
            lines.append(f"| {label} | {system} | {ph['gen']:.1f} | {ph['reward']:.1f} | "
                         f"{ph['ref']:.1f} | {ph['train']:.1f} | {ph['switch']:.1f} | "
                         f"{ph['weight_sync']:.2f} |")
    lines += ["", "RollPacker by kind of round (s): step time against [F Fig. 10c], and the",
              "generation part of it", "",
              "| model / cap | short step | paper | short gen | long step | paper | long gen |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for key, label in SIZES.items():
        r = results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))]
        lines.append(f"| {label} | {r[6]:.1f} | {PAPER_ROUNDS[key][0]} | {r[8]:.1f} | "
                     f"{r[7]:.1f} | {PAPER_ROUNDS[key][1]} | {r[9]:.1f} |")
    lines += ["", "Adaptive sandbox timeout, 20 steps: "
              + "; ".join(f"{label}: {r[4]} executions cut early, {r[5]} of them would have "
                          "completed" for label, r in
                          ((label, results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))])
                           for key, label in SIZES.items())) + ".",
              "", "## Component checks against the paper's own measurements", "",
              "| check | rlsim | paper |", "|---|---:|---:|"]
    for name, job in TABLE1_JOBS.items():
        step, ph = results[job][0], results[job][1]
        rollout, reward = ph["gen"] / step, ph["reward"] / step
        paper = "22% (calibrated)" if name == "mix" else "66% / 13% / 21%"
        label = ("veRL 14B/16k, mixed: train share" if name == "mix" else
                 "veRL 14B/16k, code only: rollout / reward / train share")
        ours = (f"{1 - rollout - reward:.1%}" if name == "mix" else
                f"{rollout:.0%} / {reward:.0%} / {1 - rollout - reward:.0%}")
        lines.append(f"| {label} [P Table 1] | {ours} | {paper} |")
    fixed, adapt = (sum(results[FIG13C_JOBS[a]][1][p] for p in ("gen", "reward"))
                    for a in ("false", "true"))
    lines += [f"| adaptive timeout, code only 7B/8k: rollout + reward time, fixed / adaptive "
              f"[P Fig. 13c] | {fixed / adapt:.2f}x | 1.6x |", "",
              "The Fig. 13c run follows the artifact's config [C] (8 GPUs, 44 prompts, 32",
              "workers). rlsim's anchors come only from runs of the same prompt scored earlier",
              "in the run, as the paper describes; the artifact reads a per-problem reference",
              "time from its dataset instead, which would cut hung runs from a prompt's first",
              "response on.",
              "", "## Without the calibration (rlsim's default trainer, MFU 0.4)", "",
              "| model / cap | rlsim speedup | paper | error |", "|---|---:|---:|---:|"]
    plain = _speedups(results, DEFAULT_TRAINER)
    for key, label in SIZES.items():
        lines.append(f"| {label} | {plain[key]:.2f}x | {PAPER[key][3]:.2f}x | "
                     f"{plain[key] / PAPER[key][3] - 1:+.0%} |")
    full = [results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))] for key in SIZES]
    verl32 = results[("verl-qwen2.5-32b-32k.yaml", ())][1]["gen"]
    short32, long32 = full[-1][8], full[-1][9]
    false_share = sum(r[5] for r in full) / max(1, sum(r[4] for r in full))
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
        "- **Work outside rollout at 32B.** The paper's 32B steps spend far more outside",
        "  rollout than rlsim's: Fig. 9/10 read about 870 s per veRL step with about 550-600 s",
        "  of rollout, and RollPacker's short rounds take 261 s with about 75 s of rollout, so",
        "  about 190-300 s per step go to reward, log-probs and the update, even with the",
        "  stream trainer on. rlsim spends about 125 s (veRL) and 30 s (RollPacker): its",
        "  trainer is calibrated at 14B only, and train (TP, PP, CP) = (4, 1, 4) runs context",
        "  parallelism over ~1k-token sequences, which a FLOPs-over-MFU model does not",
        "  penalise. That fixed work dilutes the paper's speedup; the table by kind of round",
        "  shows it at 32B.",
        "- **The stream trainer gains more in rlsim** (+12% / +12% / +14% against the paper's",
        "  +1% / +10% / +2%): the running requests always fit half the engines' KV on H800 at",
        "  these lengths, so it scales down in every round, while the paper notes that short",
        "  rounds scale less often [P 6.6] without saying why.",
        "- **Rollout at 32k** differs in shape: [F Fig. 10b] reads about 550-600 s per veRL",
        f"  step and about 75 s per RollPacker short round; rlsim gives {verl32:.0f} s and "
        f"{short32:.0f} s,",
        f"  and {long32:.0f} s per long round. Its short rounds are shorter and its long",
        "  rounds (the P0 slowest prompts together, at group correlation 0.5) heavier than",
        "  the paper's; the period's mean rollout is close.",
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
        + "; ".join(f"{label}: {r[2]} preemptions, {r[3]} TP changes" for label, r in
                    ((label, results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))])
                     for key, label in SIZES.items())) + ".",
        "- **The stream trainer** does not stream QA samples (their verdicts have no known",
        "  end time while the round runs); they train in the final update.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
