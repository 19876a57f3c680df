"""Write reports/rollart.md: rlsim's reproduction of RollArt's SWE step breakdown (Fig. 3).

Simulates scenarios/rollart/swe-qwen3-8b-sync.yaml (Qwen3-8B/32K, 28 H800 rollout time-shared
with training, a 7B reward LLM on 4 H800, 128 SWE trajectories in lock-step) and splits each
measured step into the paper's five components: env.reset, env.step, reward, LLM generation
and training. The split of the `gen` phase comes from the run's environment spans (request
detail): in lock-step every reset ends before the first turn and every turn's steps before
the next turn, so the reset wall is the longest reset, each turn's env.step wall is its
longest step, and generation is the rest of the phase. Training is everything after reward:
the log-prob passes, the update, the colocated switch and the weight sync.
Then it reruns the scenario with each value the paper is silent on changed, one at a time.
Run: `make rollart-report` (under a minute on 2 cores).
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "reports" / "rollart.md"
SCENARIO = HERE / "swe-qwen3-8b-sync.yaml"

# [P-RA Fig. 3 top; shared/PAPER-FACTS.md section 4]: the success-path iteration, seconds.
STEP_TARGET_S = 365.7
STEP_TOL = 0.10
COMPONENT_TARGETS_S = {"env.reset": 53.4, "env.step": 21.2, "reward": 9.5,
                       "generation": 196.9, "training": 84.6}
COMPONENT_TOL = 0.20
# Phases of a sync step that the paper's "training" bar holds (all after the reward).
TRAINING_PHASES = ("controller", "ref", "train", "weight_sync", "switch")

# (label, overrides): one silent value changed at a time; () is the scenario as committed.
SENSITIVITY: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("as committed", ()),
    ("per-turn response median 100 (200)", ("workload.response_len.median=100",)),
    ("per-turn response median 400", ("workload.response_len.median=400",)),
    ("per-turn response sigma 0.4 (0.7)", ("workload.response_len.sigma=0.4",)),
    ("per-turn response sigma 1.0", ("workload.response_len.sigma=1.0",)),
    ("observation median 125 (250)", ("workload.agentic.obs_tokens.median=125",)),
    ("observation median 500", ("workload.agentic.obs_tokens.median=500",)),
    ("prompt median 4000 (2000)", ("workload.prompt_len.median=4000",)),
    ("turns 20-30 (30-50)", ("workload.agentic.turns.values=[20,22,24,26,28,30]",)),
    ("env.step read per call: median 3.8 s (0.095)",
     ("workload.agentic.env_step.median=3.8",)),
    ("env.reset sigma from Fig. 5a p95: 0.38 (0.34)",
     ("workload.agentic.env_reset.sigma=0.378",)),
    ("groups 16 x 8 (8 x 16)", ("workload.prompts_per_step=16",
                                "workload.samples_per_prompt=8")),
    ("reference pass on (off)", ("train.ref_logprob=true",)),
    ("judge output 16 tokens (100)", ("reward.judge.output_tokens=16",)),
    ("judge reads the responses only (the trajectory)", ("reward.judge.reads=responses",)),
    ("judge reads the last response (the trajectory)", ("reward.judge.reads=last_response",)),
    ("no context cap (32,768)", ("workload.agentic.max_context_len=null",)),
    ("prefix caching off (on)", ("rollout.prefix_caching=false",)),
)


@dataclass(frozen=True)
class Breakdown:
    """One run's mean step and the paper's five components, seconds per measured step."""

    step_s: float
    components: dict[str, float]
    turns: float  # lock-step turns per step (the longest trajectory's)


def split_gen(spans: Sequence[Any], warmup_steps: int) -> list[tuple[float, float, float, int]]:
    """(reset wall, env.step wall, generation, turns) of each measured lock-step gen phase.

    Every reset is submitted when the phase starts and every env step of one turn at the
    same instant (policy.env_interaction: batched), so env spans grouped by start time are
    the phase's env waits; with at least as many workers as trajectories none queues, and
    each wait lasts as long as its longest span."""
    gens = [s for s in spans if s.track == "controller" and s.name == "gen"
            and s.attrs.get("step", 0) >= warmup_steps]
    envs = [s for s in spans if s.track == "env" and s.name == "env_step"]
    out = []
    for g in gens:
        walls: dict[float, float] = defaultdict(float)
        for e in envs:
            if g.t0 - 1e-9 <= e.t0 <= g.t1 + 1e-9:
                key = round(e.t0, 9)
                walls[key] = max(walls[key], e.t1 - e.t0)
        reset = walls.pop(round(g.t0, 9), 0.0)
        step = sum(walls.values())
        out.append((reset, step, g.t1 - g.t0 - reset - step, len(walls) + 1))
    return out


def simulate(overrides: tuple[str, ...] = ()) -> Breakdown:
    """Run the scenario with `overrides` and split its measured steps."""
    from rlsim.api import simulate_file

    res = simulate_file(SCENARIO, list(overrides))
    s = res.summary
    parts = split_gen(res.recorder.spans, res.scenario.output.warmup_steps)
    if not parts:
        raise RuntimeError("no measured gen phase: the scenario needs steps > warmup_steps")
    n = len(parts)
    reset, step, gen, turns = (sum(p[i] for p in parts) / n for i in range(4))
    ph = s["phase_time_s"]
    comps = {"env.reset": reset, "env.step": step, "reward": ph.get("reward", 0.0),
             "generation": gen,
             "training": sum(ph.get(k, 0.0) for k in TRAINING_PHASES)}
    return Breakdown(s["step_time_s"]["mean"], comps, turns)


def _verdict(value: float, target: float, tol: float) -> tuple[str, str]:
    err = value / target - 1
    return f"{err:+.0%}", "met" if abs(err) <= tol else "missed"


def _main_table(b: Breakdown) -> list[str]:
    lines = ["| figure | rlsim (s) | paper (s) | error | tolerance | verdict |",
             "|---|---:|---:|---:|---:|---|"]
    err, ok = _verdict(b.step_s, STEP_TARGET_S, STEP_TOL)
    lines.append(f"| step | {b.step_s:.1f} | {STEP_TARGET_S} | {err} | +-10% | {ok} |")
    for name, target in COMPONENT_TARGETS_S.items():
        err, ok = _verdict(b.components[name], target, COMPONENT_TOL)
        lines.append(f"| {name} | {b.components[name]:.1f} | {target} | {err} | +-20% | {ok} |")
    return lines


def markdown(results: dict[tuple[str, ...], Breakdown]) -> str:
    base = results[()]
    lines = [
        "# RollArt reproduction: the SWE step breakdown (Fig. 3)",
        "",
        "Written by `make rollart-report` (scenarios/rollart/make_report.py) from",
        "`scenarios/rollart/swe-qwen3-8b-sync.yaml`, 3 steps each (1 warm-up, 2 measured).",
        "Setup [P-RA 3.1]: synchronous agentic GRPO on Qwen3-8B/32K, 32 H800 (28 rollout,",
        "time-shared with Megatron training; 4 for a dedicated 7B reward LLM), SWE-bench,",
        "batch 128, lock-step ('batched') environment interaction. Every value of the",
        "scenario cites its source; nothing is fitted to the targets below.",
        "",
        "## Must-show: Fig. 3's success-path step",
        "",
        *_main_table(base),
        "",
        f"Lock-step turns per step: {base.turns:.0f} (the longest trajectory's). The paper's",
        "'training' is rlsim's controller + ref (old log-probs) + train + colocated switch +",
        "weight sync; its env.reset and env.step are the lock-step waits split out of",
        "rlsim's gen phase (module docstring).",
        "",
        "## Sensitivity to the values the paper does not state",
        "",
        "One value changed at a time (the committed value in parentheses).",
        "",
        "| change | step (s) | env.reset | env.step | reward | generation | training |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, ov in SENSITIVITY:
        b = results[ov]
        c = b.components
        lines.append(f"| {label} | {b.step_s:.1f} | {c['env.reset']:.1f} | {c['env.step']:.1f} "
                     f"| {c['reward']:.1f} | {c['generation']:.1f} | {c['training']:.1f} |")
    lines += ["", *DISCUSSION, ""]
    return "\n".join(lines)


DISCUSSION = [
    "## Why each miss",
    "",
    "- **Generation (rlsim far slower).** In lock-step every turn lasts as long as its",
    "  longest response of the 128, and a trajectory has 30-50 turns [P-RA Table 1]. The",
    "  per-turn response and observation lengths are not published; the scenario takes",
    "  lengths that fill a 50-turn trajectory to about 30k of the 32,768-token context. The",
    "  sensitivity rows show generation is set by the per-turn response tail (median and",
    "  sigma) and the turn count, i.e. by the workload, not by the engine model: at 30-50",
    "  lock-step turns the paper's 196.9 s leaves about 4-6 s per turn, which needs per-turn",
    "  responses whose longest of 128 is a few hundred tokens. That is an inversion, not a",
    "  reproduction; no value is set to it. The context cap (ROLL's sequence_length 32,768:",
    "  a turn generates at most the room left and a full trajectory ends) trims the tail",
    "  trajectories and takes generation from 548.8 s (no cap) to the committed value.",
    "- **Training (rlsim faster).** ROLL's agentic config trains without sequence packing",
    "  or dynamic batching: every sample is padded to sequence_length 32,768 and Megatron",
    "  runs the padded batch (`train.pad_to`, cited in the scenario); 128 padded",
    "  trajectories are ~4.2M tokens on 28 GPUs, which rlsim prices (update, old-log-prob",
    "  pass, colocated switch) at about half of 84.6 s. Not modelled: ROLL's agentic env",
    "  manager builds step-wise samples (formulate_rollouts: one sample per turn with its",
    "  context, for step_reinforce), which at 30-50 turns per trajectory would train 30-50x",
    "  the samples, far above 84.6 s; the paper does not say which it trained, so rlsim",
    "  trains one sample per trajectory.",
    "- **Reward (rlsim slower).** The committed judge reads each whole trajectory (prompt",
    "  overhead + all response and observation tokens); what the paper's 7B",
    "  reward LLM reads is not published. `reward.judge.reads` sets it: the responses only",
    "  or the last response give the sensitivity rows, bracketing the paper's 9.5 s. ROLL's",
    "  open SWE env scores by running the tests in the sandbox at episode end",
    "  (rock_tb_native_env calculate_reward: rlsim's reward.kind sandbox), no LLM; no",
    "  choice is made here to meet the target.",
    "- **env.reset and env.step** follow from Fig. 5a's distributions alone (the reset's",
    "  median and p90; env.step per trajectory spread over its calls): the longest of 128",
    "  resets and the sum over turns of each turn's longest step.",
]


def jobs() -> list[tuple[str, ...]]:
    return list(dict.fromkeys(ov for _, ov in SENSITIVITY))


def main() -> None:
    jobs_ = jobs()
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    with ProcessPoolExecutor(max_workers=min(workers, 2)) as pool:
        results = dict(zip(jobs_, pool.map(simulate, jobs_), strict=True))
    OUT.write_text(markdown(results), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
