"""Write reports/rollpacker.md: rlsim's reproduction of RollPacker against the paper.

Simulates the three veRL/RollPacker scenario pairs, the ablation of RollPacker's parts
(tail batching alone, + reward scheduler, + parallelism planner, + stream trainer) and a
sweep of eta (eta_p = eta_r) from 1.0 to 1.5 at 8k/16k/32k, then writes the tables next to
the paper's numbers (docs/research/rollpacker.md, [P] = paper section). Every figure is
computed here from the scenarios as committed; nothing is tuned to the paper.
Run: `make rollpacker-report` (about a minute on 2 cores).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "reports" / "rollpacker.md"
SIZES = {"qwen2.5-7b-8k": "7B / 8k", "qwen2.5-14b-16k": "14B / 16k",
         "qwen2.5-32b-32k": "32B / 32k"}
# [P Table 2]: speedup over veRL as each part is added (tail batching, + reward scheduler,
# + parallelism planner, + stream trainer).
PAPER = {"qwen2.5-7b-8k": (1.30, 2.01, 2.01, 2.03), "qwen2.5-14b-16k": (1.48, 1.99, 2.02, 2.22),
         "qwen2.5-32b-32k": (2.21, 2.48, 2.52, 2.56)}
PARTS = ("reward_scheduler", "planner", "stream_trainer")
ABLATION = ("tail batching alone", "+ reward scheduler", "+ parallelism planner",
            "+ stream trainer")
ETAS = (1.0, 1.125, 1.25, 1.375, 1.5)


Result = tuple[float, dict[str, float], int, int]
"""Mean step time, phase time per step, preemptions, rollout TP changes."""


def _step_s(job: tuple[str, tuple[str, ...]]) -> Result:
    from rlsim.api import simulate_file

    path, overrides = job
    res = simulate_file(HERE / path, list(overrides))
    steps = [sp for sp in res.recorder.spans if sp.name == "step"]
    preempted = sum(int(sp.attrs.get("preemptions", 0)) for sp in steps)
    changes = sum(1 for i in res.recorder.instants
                  if i.name == "decision" and i.attrs.get("what") == "rollout_tp")
    s = res.summary
    return s["step_time_s"]["mean"], s["phase_time_s"], preempted, changes


def _ablation_overrides(level: int) -> tuple[str, ...]:
    return tuple(f"policy.tail_batching.{p}={'true' if i < level else 'false'}"
                 for i, p in enumerate(PARTS))


def jobs() -> list[tuple[str, tuple[str, ...]]]:
    """Every run the report needs: (scenario file, overrides)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for key in SIZES:
        out.append((f"verl-{key}.yaml", ()))
        out += [(f"rollpacker-{key}.yaml", _ablation_overrides(level)) for level in range(4)]
        out += [(f"rollpacker-{key}.yaml", (f"policy.tail_batching.eta_p={eta}",
                                            f"policy.tail_batching.eta_r={eta}"))
                for eta in ETAS]
    return out


def main() -> None:
    jobs_ = jobs()
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = dict(zip(jobs_, pool.map(_step_s, jobs_), strict=True))
    OUT.write_text(markdown(results), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


def markdown(results: dict[tuple[str, tuple[str, ...]], Result]) -> str:
    lines = [
        "# RollPacker reproduction (draft)",
        "",
        "Written by `make rollpacker-report` (scenarios/rollpacker/make_report.py) from the",
        "scenarios in `scenarios/rollpacker/` (20 steps each). The paper's numbers and setup:",
        "docs/research/rollpacker.md. **Status: the reproduction misses its target** (issue 6:",
        "each pair within +-15% of the paper's speedup); the gaps and their known causes are",
        "listed below. Nothing is tuned to the paper: the three pairs share one hardware",
        "profile (H800 built-in) and the cost model's constants.",
        "",
        "## End-to-end speedup over veRL",
        "",
        "| model / cap | veRL step (s) | RollPacker step (s) | rlsim speedup | paper [P Table 2] "
        "| error |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    gaps = []
    for key, label in SIZES.items():
        verl = results[(f"verl-{key}.yaml", ())][0]
        packer = results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))][0]
        speedup, paper = verl / packer, PAPER[key][3]
        err = speedup / paper - 1
        if abs(err) > 0.10:
            gaps.append((label, speedup, paper, err))
        lines.append(f"| {label} | {verl:.1f} | {packer:.1f} | {speedup:.2f}x | {paper:.2f}x "
                     f"| {err:+.0%} |")
    lines += ["", "## Ablation: speedup over veRL as each part is added", "",
              "rlsim (paper [P Table 2] in brackets).", "",
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
    lines += ["", "The paper's eta study [P Fig. 11] reports rollout time per period at fixed",
              "eta = 1.25 for both (docs/research/rollpacker.md, section 1).", "",
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
    lines += ["", "## Gaps above 10% and their known causes", ""]
    if not gaps:
        lines.append("None.")
    for label, speedup, paper, err in gaps:
        lines.append(f"- **{label}**: {speedup:.2f}x vs {paper:.2f}x ({err:+.0%}).")
    lines += [
        "",
        "Modelling gaps that remain (each is a cause to check before any number moves):",
        "",
        "- The QA judge is scored like a rule reward: the paper co-locates a Qwen2.5-7B judge",
        "  with the actor (MPS, layers streamed from host memory) [P 4.3], which rlsim does not",
        "  model, so the baseline's reward stage is lighter than the paper's and the reward",
        "  scheduler gains less (compare the ablation's second row).",
        "- The adaptive sandbox timeout (min(max(2 s, 1.5 T_anchor), 30 s) [P 4.3]) is not",
        "  built: it needs a model of which responses are correct.",
        "- `rule reward 2 s` (REFERENCES.md) is taken as the math reward's median; the paper",
        "  states it as the math timeout [P 5].",
        "- The lengths are derived from the paper's Fig. 2a statistics (derive_lengths.py); the",
        "  research note finds its short rounds shorter than the paper's (12x below the cap vs",
        "  'up to 8.9x'), which favours tail batching at 16k and 32k.",
        "- The parallelism planner reacts only to preemptions, which are rare at these",
        "  settings (H800, 0.9 memory utilization): "
        + "; ".join(f"{label}: {r[2]} preemptions, {r[3]} TP changes" for label, r in
                    ((label, results[(f"rollpacker-{key}.yaml", _ablation_overrides(3))])
                     for key, label in SIZES.items())) + ".",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
