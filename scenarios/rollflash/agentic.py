"""ROLL Flash's agentic results on the paper's own setups: the report section.

Owns the runs and the markdown of two figures of arXiv 2510.11345v1 (shared/PAPER-FACTS.md
section 1b), each point paper vs rlsim with its error:

- **Fig. 9 left**: the controlled simulation. Every environment interaction takes
  Gaussian(10 s, sigma) seconds, sigma 1/3/5/7/10, batch 64/128/256/512; the speedup of
  environment-level async (`policy.env_interaction: per_trajectory`) over batch rollout
  (`batched`, lock-step), both sync (scenarios/rollflash/agentic/fig9-sim.yaml). Met within
  15%.
- **Fig. 11**: SWE, ALFWorld and ShopSimulator in the five configurations of the figure,
  from the scenario pairs swe-sync / swe-async-redundant, alfworld-sync /
  alfworld-async-redundant (this folder) and agentic/shop-sync / shop-async-redundant.
  Hours per 50 steps are the steady-state mean step (1 warm-up, 4 measured; 50-step runs are
  too long here) times 50; met within 25%. The speedups over the baseline are met within 15%.
  "Sync + env-level + redundant" runs the sync file as `tail_batching` without long rounds
  (`long_rounds: false`): 9 groups x 17 launched, the first 8 complete groups of 16 train,
  the rest stop, every step, on-policy: ROLL's redundant environments under sync.
- **Sensitivity**: the headline ratios under each choice the paper does not state (GPU type,
  environment latency model, the sync layout).

Run alone: `python scenarios/rollflash/agentic.py` (about 4 minutes on one core).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIG9 = "agentic/fig9-sim"
SIGMAS_S = (1, 3, 5, 7, 10)
BATCHES = (64, 128, 256, 512)
FIG9_GROUP = 8  # [P-RF Fig. 10]: the simulation's baseline is 32 groups x 8
# [P-RF Fig. 9 left] speedup by batch, at sigma 1/3/5/7/10 (fig-vector, +-0.02)
FIG9_PAPER = {64: (1.16, 1.45, 1.86, 2.04, 2.53), 128: (1.18, 1.46, 2.10, 2.37, 2.55),
              256: (1.14, 1.44, 2.06, 2.40, 2.49), 512: (1.14, 1.41, 2.08, 2.12, 2.46)}
# [P-RF 5.2.1] text: at (10, 10), batch 512, step 892 s (batch rollout) -> 362 s
FIG9_TEXT_S = (892.0, 362.0)

CONFIGS = ("sync + batch rollout", "sync + env-level", "sync + env-level + redundant",
           "async + env-level", "async + env-level + redundant")
# env: (label, sync scenario, async scenario, [P-RF Fig. 11] hours per 50 steps)
ENVS = (
    ("SWE", "swe-sync", "swe-async-redundant", (10.22, 8.32, 7.66, 6.09, 5.65)),
    ("ALFWorld", "alfworld-sync", "alfworld-async-redundant", (13.37, 8.44, 7.85, 5.87, 4.91)),
    ("ShopSimulator", "agentic/shop-sync", "agentic/shop-async-redundant",
     (3.33, 2.54, 2.30, 2.12, 2.00)),
)
STEPS_PER_REPORT = 50  # [P-RF Fig. 11] y-axis: "Wall-clock per 50 Steps (hours)"
RATIO_TOL = 0.15
HOURS_TOL = 0.25
ENV_LEVEL = ("policy.env_interaction=per_trajectory",)
NO_REDUNDANCY = ("policy.asynchronous.extra_groups=0", "policy.asynchronous.extra_per_group=0",
                 "env.workers=128", "env.instances=128")
# ROLL's redundant environments under sync [P-RF A.2]: 9 groups x 17 for 8 x 16, one
# environment each (153); tail_batching's short rounds with nothing queued are exactly that.
SYNC_REDUNDANT = ("policy.name=tail_batching", "policy.env_interaction=per_trajectory",
                  "policy.tail_batching.eta_p=1.125", "policy.tail_batching.eta_r=1.0625",
                  "policy.tail_batching.long_rounds=false", "env.workers=153")
# (label, overrides of the sync file, overrides of the async file, why)
SENSITIVITY: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...] = (
    ("as committed (H800, RollArt SWE env latencies)", (), (), ""),
    ("GPU H20", ("pools.cluster.gpu=H20",), ("pools.rollout.gpu=H20", "pools.train.gpu=H20"),
     "RollArt's other cluster [P-RA 7.1]"),
    ("GPU H100", ("pools.cluster.gpu=H100",),
     ("pools.rollout.gpu=H100", "pools.train.gpu=H100"), "a common alternative"),
    ("env.step 3.8 s per call", ("workload.agentic.env_step.median=3.8",),
     ("workload.agentic.env_step.median=3.8",),
     "[P-RA Fig. 5a] read per call instead of per trajectory"),
    ("env.reset p99 400 s", ("workload.agentic.env_reset.sigma=1.25",),
     ("workload.agentic.env_reset.sigma=1.25",),
     "[P-RA Fig. 5a] tail kept: sigma = ln(400/22)/2.326"),
    ("env Gaussian(10 s, 5 s), no reset",
     ("workload.agentic.env_step={dist: normal, mean: 10, std: 5}",
      "workload.agentic.env_reset=null"),
     ("workload.agentic.env_step={dist: normal, mean: 10, std: 5}",
      "workload.agentic.env_reset=null"), "[P-RF Fig. 9/10]'s own latency model"),
    ("sync disaggregated 32/32", ("disaggregated",), (),
     "[P-RF A.2]'s device mapping with async_generation_ratio 0"),
)
# the sync configurations on the async file's 32/32 pools (the sensitivity row above)
DISAGG_SYNC = ("policy.name=sync", "env.workers=128", "env.instances=null",
               *NO_REDUNDANCY[:2])

Job = tuple[str, tuple[str, ...]]


def _step_s(job: Job) -> float:
    from rlsim.api import simulate_file

    name, overrides = job
    res = simulate_file(HERE / f"{name}.yaml", list(overrides))
    return float(res.summary["step_time_s"]["mean"])


def _fig9_job(batch: int, sigma: int, interaction: str) -> Job:
    return (FIG9, (f"workload.prompts_per_step={batch // FIG9_GROUP}",
                   f"workload.agentic.env_step.std={sigma}",
                   f"policy.env_interaction={interaction}"))


def _fig11_jobs(sync: str, async_: str, s_over: tuple[str, ...],
                a_over: tuple[str, ...]) -> dict[str, Job]:
    """The runs behind one environment's five configurations."""
    if s_over == ("disaggregated",):
        base_sync, s_over = async_, DISAGG_SYNC
        batched: Job = (base_sync, (*s_over, "policy.env_interaction=batched"))
    else:
        base_sync = sync
        batched = (sync, s_over)
    return {
        "batched": batched,
        "env_level": (base_sync, (*s_over, *ENV_LEVEL)),
        "sync_red": (base_sync, (*s_over, *SYNC_REDUNDANT)),
        "async": (async_, (*a_over, *NO_REDUNDANCY)),
        "async_red": (async_, a_over),
    }


def jobs() -> list[Job]:
    """Every run the section needs."""
    out = [_fig9_job(b, s, i) for b in BATCHES for s in SIGMAS_S
           for i in ("batched", "per_trajectory")]
    for _, sync, async_, _ in ENVS:
        for _, s_over, a_over, _ in SENSITIVITY:
            out += _fig11_jobs(sync, async_, s_over, a_over).values()
    return list(dict.fromkeys(out))


def run_all(workers: int = 1) -> dict[Job, float]:
    todo = jobs()
    if workers <= 1:
        return {j: _step_s(j) for j in todo}
    with ProcessPoolExecutor(workers) as pool:
        return dict(zip(todo, pool.map(_step_s, todo), strict=True))


def _hours(step_s: float) -> float:
    return step_s * STEPS_PER_REPORT / 3600.0


def _verdict(err: float, tol: float) -> str:
    return "met" if abs(err) <= tol else "missed"


def five_configs(steps: dict[Job, float], sync: str, async_: str,
                 s_over: tuple[str, ...] = (), a_over: tuple[str, ...] = ()) -> list[float]:
    """Mean step (s) of Fig. 11's five configurations."""
    j = _fig11_jobs(sync, async_, s_over, a_over)
    return [steps[j[k]] for k in ("batched", "env_level", "sync_red", "async", "async_red")]


def _fig9_table(steps: dict[Job, float]) -> list[str]:
    lines = ["| batch | sigma (s) | batch rollout step (s) | env-level step (s) | rlsim speedup "
             "| paper | error | within 15% |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
    met = 0
    for b in BATCHES:
        for k, sigma in enumerate(SIGMAS_S):
            lock = steps[_fig9_job(b, sigma, "batched")]
            free = steps[_fig9_job(b, sigma, "per_trajectory")]
            paper = FIG9_PAPER[b][k]
            err = lock / free / paper - 1
            met += abs(err) <= RATIO_TOL
            lines.append(f"| {b} | {sigma} | {lock:.0f} | {free:.0f} | {lock / free:.2f}x | "
                         f"{paper:.2f}x | {err:+.0%} | {_verdict(err, RATIO_TOL)} |")
    lock = steps[_fig9_job(512, 10, "batched")]
    free = steps[_fig9_job(512, 10, "per_trajectory")]
    lines += ["", f"Met: {met} of {len(BATCHES) * len(SIGMAS_S)} points. Absolute step at "
              f"(10, 10), batch 512 (a check, not a target): rlsim {lock:.0f} s -> {free:.0f} s, "
              f"paper {FIG9_TEXT_S[0]:.0f} s -> {FIG9_TEXT_S[1]:.0f} s [P-RF 5.2.1]."]
    return lines


def _fig11_tables(steps: dict[Job, float]) -> list[str]:
    hours = ["| environment | configuration | paper (h / 50 steps) | rlsim | error | within 25% |",
             "|---|---|---:|---:|---:|---|"]
    ratios = ["| environment | configuration | paper speedup | rlsim speedup | error "
              "| within 15% |", "|---|---|---:|---:|---:|---|"]
    for label, sync, async_, paper in ENVS:
        five = [_hours(s) for s in five_configs(steps, sync, async_)]
        for k, cfg in enumerate(CONFIGS):
            err = five[k] / paper[k] - 1
            hours.append(f"| {label} | {cfg} | {paper[k]:.2f} | {five[k]:.2f} | "
                         f"{err:+.0%} | {_verdict(err, HOURS_TOL)} |")
            if k:
                p, r = paper[0] / paper[k], five[0] / five[k]
                ratios.append(f"| {label} | {cfg} | {p:.2f}x | {r:.2f}x | {r / p - 1:+.0%} "
                              f"| {_verdict(r / p - 1, RATIO_TOL)} |")
    return ["Hours per 50 steps (mean steady-state step x 50):", "", *hours, "",
            "Speedup of each configuration over sync + batch rollout (the last row of each "
            "environment is the headline: 1.81x SWE, 2.72x ALFWorld, 1.67x ShopSimulator):",
            "", *ratios]


def _sensitivity_table(steps: dict[Job, float]) -> list[str]:
    lines = ["| environment | change | why | env-level (sync) | async + env-level | "
             "async + redundant (headline) | headline error |", "|---|---|---|---:|---:|---:|---:|"]
    for label, sync, async_, paper in ENVS:
        for change, s_over, a_over, why in SENSITIVITY:
            five = five_configs(steps, sync, async_, s_over, a_over)
            head = five[0] / five[4]
            lines.append(f"| {label} | {change} | {why} | {five[0] / five[1]:.2f}x | "
                         f"{five[0] / five[3]:.2f}x | {head:.2f}x | "
                         f"{head / (paper[0] / paper[4]) - 1:+.0%} |")
        lines.append(f"| {label}, paper | | | {paper[0] / paper[1]:.2f}x | "
                     f"{paper[0] / paper[3]:.2f}x | {paper[0] / paper[4]:.2f}x | |")
    return lines


def markdown(steps: dict[Job, float]) -> str:
    """The section from the runs' mean step times."""
    return "\n".join([
        "## Agentic: the paper's own setups (Fig. 9 left, Fig. 11)",
        "",
        "Scenarios: `scenarios/rollflash/agentic/fig9-sim.yaml`, `swe-sync.yaml` / "
        "`swe-async-redundant.yaml`, `alfworld-sync.yaml` / `alfworld-async-redundant.yaml`, "
        "`agentic/shop-sync.yaml` / `agentic/shop-async-redundant.yaml`; every field cites its "
        "source. Setup [P-RF A.2]: 64 GPUs, batch 128 = 8 groups x 16, redundancy 9 x 17, "
        "async ratio 1 on 32 train / 32 rollout GPUs, sequence_length 32,768; SWE Qwen3-14B "
        "(50 turns, 8,192 tokens per turn at most), ALFWorld Qwen3-8B (30 / 4,096), "
        "ShopSimulator Qwen3-8B (30 / 2,048). Sync runs as ROLL's sync agentic examples do: "
        "rollout and training time-share all 64 GPUs. Not in the paper, taken from the closest "
        "primary sources and varied below: the GPU (H800, RollArt's cluster [P-RA 7.1]); "
        "environment latencies (RollArt's measured SWE env.reset and env.step [P-RA Fig. 5a], "
        "used for all three environments); turns (SWE 30-50 [P-RA Table 1]; ALFWorld and "
        "ShopSimulator 5-30, RollArt's WebShop range); per-turn lengths (SWE as "
        "scenarios/rollart; ALFWorld and ShopSimulator from PolyTrace's tool-calling fit). "
        "Each simulation runs 5 steps (1 warm-up); hours per 50 steps = mean step x 50.",
        "",
        "### Fig. 9 left: env-level async over batch rollout, Gaussian(10 s, sigma)",
        "",
        *_fig9_table(steps),
        "",
        "### Fig. 11: real environments, five configurations",
        "",
        *_fig11_tables(steps),
        "",
        "\"Sync + env-level + redundant\" runs the sync scenario as `tail_batching` with "
        "`long_rounds: false`: 9 groups x 17 launched, the first 8 complete groups of 16 "
        "train and the rest stop, on-policy, every step (ROLL's redundant environments "
        "under sync).",
        "",
        "### Sensitivity of the headline ratios to what the paper does not state",
        "",
        "Speedups over each row's own sync + batch rollout; one change at a time.",
        "",
        *_sensitivity_table(steps),
        "",
        *DISCUSSION,
    ])


DISCUSSION = (
    "### Why the gaps",
    "",
    "- **Fig. 9.** Lock-step pays, every turn, the slowest of the batch's interactions "
    "(about mu + 2.4 sigma at 64 environments, mu + 3 sigma at 512), env-level async the "
    "slowest trajectory's sum; so the speedup grows with sigma as in the paper. The turn "
    "count and per-turn lengths of the simulation are not stated; ours are the ALFWorld "
    "scenario's (up to 30 turns).",
    "- **Fig. 11, async.** rlsim's async runs take a third to a fifth of the paper's hours, "
    "so its speedups over the sync baseline are 2-3x the paper's. Not from overlapping "
    "batches: each trajectory holds one of the 153 (128 without redundancy) environment "
    "instances from its reset to its end, as ROLL's environment managers do "
    "(`env.instances`); the cap binds (about 40% of trajectory starts wait for an instance) "
    "but moves the headline ratios by 1-5% only. What the paper's async step spends its "
    "hours on is not in the paper (Fig. 11 gives totals only); rlsim's is about 60% waiting "
    "for rollout and the rest log-probs, training and weight sync, and its Megatron update "
    "is about a third faster than ROLL's measured one in Fig. 3a (the RLVR sections), "
    "which alone cannot close a 3-5x gap. The turn counts and environment latencies below "
    "decide the rest.",
    "- **Absolute hours.** They rest on per-turn lengths and environment latencies that "
    "neither paper publishes; the sensitivity table shows how far each moves them.",
    "- **Redundancy.** rlsim gains far more from redundant environments than the paper "
    "(7-16%): with turn counts drawn uniformly from 5-30, dropping each group's slowest "
    "trajectory and the slowest group cuts much of the tail, while in real ALFWorld and SWE "
    "many failed episodes run to the turn cap, which redundancy cannot avoid. The paper "
    "gives no turn-count distribution.",
)


def section(workers: int = 1) -> str:
    """Simulate every run (`workers` processes) and return the markdown section."""
    return markdown(run_all(workers))


if __name__ == "__main__":
    print(section())
