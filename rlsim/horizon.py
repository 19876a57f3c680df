"""A job's whole span at its fault rates (`horizon:`): detailed runs, then the job-level
fault process over the span on what they measured.

Owns `simulate_horizon` and how a scenario becomes a `JobModel` (`rlsim.faults.horizon`):
- **The steady step.** The scenario runs in detail with its timed faults (engine, trainer,
  link, GPU, node) taken out and no checkpoints; environment faults stay in, being part of
  a step. The gaps between step completions after the warm-up are the steady steps the
  horizon draws from; the first completion over their mean is a (re)start's extra time.
- **Restart costs** come from the same functions as the detailed recovery's
  (`policies.recovery.costs`): detection (`recovery.trainer.detect_s`, or a hang's
  `recovery.node.hang_timeout_s`) plus the job restart. What a checkpoint write delays the
  job by is measured (`_visible_write_s`): a pipeline's rollouts generate through it.
- **Fault classes.** Each rate-based spec's instances split into those that restart the
  job (the trainer, training GPUs and nodes, every GPU and node when colocated) and those
  the job rides through (rollout engines and their GPUs and nodes when disaggregated,
  fail-slow faults, the trainer restarted alone under `recovery.scope: role`). What one of
  the latter costs is measured: `horizon.penalty_runs` detailed runs, each with one fault
  of the class at a different point of a steady step, against the same run without it
  (instances of a class are taken as alike: the first one is measured).
- **Answers** (`summary["horizon"]`, docs/metrics.md): ETTR (the fault-free time of the
  steps trained over the wall time), goodput, steps, lost GPU-hours, the cost of failures
  per day and per 1,000 steps, each with the mean's 95% confidence interval and the 5th to
  95th percentile over the replicates, and Young's and Daly's checkpoint intervals beside
  the best of a scan of intervals run on common random numbers (`checkpoint_scan`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from rlsim.api import RunResult, simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.faults import FaultsConfig, FaultSpec
from rlsim.config.placement import Placement
from rlsim.config.scenario import Scenario
from rlsim.config.streams import rng
from rlsim.faults.horizon import (
    FaultClass,
    JobModel,
    JobRun,
    daly_interval_s,
    run_job,
    young_interval_s,
)
from rlsim.policies.recovery.costs import engine_cold_start_s, restart_costs
from rlsim.prepare import PreparedJob, prepare
from rlsim.trace import CONTROLLER

TIMED = ("engine", "trainer", "link", "gpu", "node")
MAX_PENALTY_STEPS = 400
"""A penalty run covers at most this many steps of a fault's effect (a slowdown longer than
that is measured over that window only)."""
PENALTY_SPREAD_STEPS = 4
"""Penalty runs place their one fault over this many steady steps (steps differ)."""
PENALTY_TAIL_STEPS = 3
CHECKPOINT_PROBE_STEPS = 8
"""Steps past the warm-up the visible checkpoint write is measured over."""
"""Steps a penalty run goes on after the fault's effect, for the delay to settle."""


def simulate_horizon(job: PreparedJob) -> RunResult:
    """The steady run's result, its summary with a `horizon` section."""
    sc = job.scenario
    h = sc.horizon
    if h is None:
        raise ValueError("simulate_horizon needs a scenario with a horizon")
    for kind in TIMED:
        for i, spec in enumerate(getattr(sc.faults, kind)):
            if spec.times:
                raise ScenarioError(f"faults.{kind}.{i}.times", "a horizon draws faults "
                                    "from their rates: give mtbf, or drop horizon to inject "
                                    "faults at given times")
    steady = simulate(prepare(_quiet(sc), job.base_dir))
    ends = _step_ends(steady)
    warm = min(sc.output.warmup_steps, len(ends) - 2)
    if warm < 0:
        raise ScenarioError("steps", f"a horizon needs at least 2 steps in detail to measure "
                            f"the steady step (steps is {sc.steps})")
    gaps = np.diff(np.asarray(ends))[max(warm, 0):]
    mean_step = float(gaps.mean())
    model = _model(job, tuple(float(g) for g in gaps), max(0.0, ends[0] - mean_step),
                   ends[warm] if warm > 0 else 0.0)
    if sc.recovery.scope != "role" and model.checkpoint_write_s > 0:
        model = replace(model, checkpoint_write_s=_visible_write_s(
            job, ends, model.checkpoint_write_s))
    runs = _replicates(sc, model)
    summary = dict(steady.summary)
    answers = _answers(sc, model, runs, job.placement.gpus,
                       float(steady.summary["cost"]["usd_per_hour"]))
    answers["checkpoint_scan"] = _scan(sc, model)
    summary["horizon"] = answers
    return RunResult(sc, steady.recorder, summary, steady.base_dir)


def _visible_write_s(job: PreparedJob, ends: list[float], write_s: float) -> float:
    """What a checkpoint write delays the job by, measured: the first steps in detail with
    a checkpoint after every one, against the same steps without (`ends`). A write blocks
    the step loop, but a pipeline's rollouts (one_off, async) go on generating meanwhile,
    so a step can lose less than the write (nothing, when the trainer waits for rollouts
    anyway); a synchronous job loses all of it."""
    sc = job.scenario
    n = min(len(ends), sc.output.warmup_steps + CHECKPOINT_PROBE_STEPS)
    if n < 2:
        return write_s
    rec = sc.recovery
    probe = _quiet(sc).model_copy(update={"steps": n, "recovery": rec.model_copy(update={
        "trainer": rec.trainer.model_copy(update={"checkpoint_every": 1})})})
    with_writes = float(simulate(prepare(probe, job.base_dir)).summary["sim_time_s"])
    return min(write_s, max(0.0, (with_writes - ends[n - 1]) / (n - 1)))


def _replicates(sc: Scenario, model: JobModel) -> list[JobRun]:
    """The replicates of the fault process; replicate r draws from the same stream
    whatever the model (common random numbers across checkpoint intervals)."""
    h = sc.horizon
    assert h is not None
    seed = sc.faults.stream_seed(sc.seed)
    return [run_job(model, rng(seed, "horizon", r), span_s=h.span, steps=h.steps)
            for r in range(h.replicates)]


SCAN_FACTORS = (0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0)
"""Checkpoint intervals the horizon tries, as multiples of Young's."""


def _scan(sc: Scenario, model: JobModel) -> dict[str, Any] | None:
    """ETTR over checkpoint intervals around Young's (`SCAN_FACTORS`, and the scenario's
    own) on common random numbers, and the best of them; None without faults that
    restart the job or without a checkpoint cost."""
    rate = model.restart_rate_per_s
    write = model.checkpoint_write_s
    if rate <= 0 or write <= 0 or sc.recovery.scope == "role":
        return None
    young = young_interval_s(write, 1.0 / rate) / model.mean_step_s
    every = sorted({max(1, round(young * f)) for f in SCAN_FACTORS}
                   | ({model.checkpoint_every} if model.checkpoint_every else set()))
    curve = []
    for k in every:
        runs = _replicates(sc, replace(model, checkpoint_every=k))
        curve.append({"every": k, "ettr": float(np.mean([r.steps * model.mean_step_s
                                                          / r.wall_s for r in runs]))})
    best = max(curve, key=lambda c: c["ettr"])
    return {"curve": curve, "best_every": best["every"], "best_ettr": best["ettr"]}


def _quiet(sc: Scenario, **faults: list[FaultSpec]) -> Scenario:
    """`sc` with only its environment faults (and `faults`), no horizon, and checkpoints
    only where the scheme needs them in every step (scope role)."""
    f = sc.faults
    rec = sc.recovery
    if rec.scope != "role":
        rec = rec.model_copy(update={"trainer": rec.trainer.model_copy(
            update={"checkpoint_every": None})})
    quiet = FaultsConfig(env=f.env, scale=f.scale, **faults)
    return sc.model_copy(update={"faults": quiet, "recovery": rec, "horizon": None})


def _step_ends(result: RunResult) -> list[float]:
    return sorted(s.t1 for s in result.recorder.spans
                  if s.track == CONTROLLER and s.name == "step")


def _model(job: PreparedJob, gaps: tuple[float, ...], first_extra_s: float,
           warm_end_s: float) -> JobModel:
    sc, place = job.scenario, job.placement
    rec = sc.recovery
    cold_s = engine_cold_start_s(job.costs.engine_cost, rec)
    costs = restart_costs(job.costs.train_cost, place.train_gpus, rec, cold_s)
    down_s = rec.trainer.detect_s + costs.job_restart_s
    role = rec.scope == "role"
    mean_step = float(np.mean(gaps))
    classes: list[FaultClass] = []
    for kind in TIMED:
        for si, raw in enumerate(getattr(sc.faults, kind)):
            spec = sc.faults.scaled(raw)
            if spec is None or spec.mtbf is None:
                continue
            for label, members, trainer in _groups(f"faults.{kind}.{si}", kind, place):
                if not members:
                    continue
                rate = len(members) / spec.mtbf
                if trainer and not role and spec.mode in ("stop", "hang"):
                    hang = (max(0.0, rec.node.hang_timeout_s - rec.trainer.detect_s)
                            if spec.mode == "hang" else 0.0)
                    classes.append(FaultClass(label, rate, True, down_s + hang,
                                              node=kind == "node"))
                    continue
                effect = (spec.duration if spec.mode == "slow" else
                          rec.engine.detect_s + cold_s + rec.node.swap_s
                          + (rec.trainer.detect_s + costs.role_restart_s if trainer else 0.0))
                penalties = _penalties(job, kind, spec, members, effect, mean_step,
                                       warm_end_s)
                classes.append(FaultClass(label, rate, False, penalties_s=penalties))
    return JobModel(
        step_s=gaps, first_step_extra_s=first_extra_s,
        checkpoint_every=1 if role else rec.trainer.checkpoint_every,
        # scope role writes its per-step checkpoint inside the measured steps
        checkpoint_write_s=0.0 if role else costs.checkpoint_write_s,
        classes=tuple(classes), node_recovery=rec.node)


def _groups(name: str, kind: str, place: Placement) -> list[tuple[str, list[int], bool]]:
    """A spec's instances as (label, instances, whether they hit the trainer): a GPU or
    node spec splits into the training ones (every one when colocated) and the rollout
    ones; an engine, trainer or link spec is one group."""
    count = place.instances(kind)
    if kind not in ("gpu", "node"):
        return [(name, list(range(count)), kind == "trainer")]
    first = 0 if place.colocated else (place.rollout_gpus if kind == "gpu"
                                       else place.rollout_nodes)
    return [(f"{name} ({'all' if place.colocated else 'training'} {kind}s)",
             list(range(first, count)), True),
            (f"{name} (rollout {kind}s)", list(range(first)), False)]


def _penalties(job: PreparedJob, kind: str, spec: FaultSpec, members: list[int],
               effect_s: float, mean_step: float, warm_end_s: float) -> tuple[float, ...]:
    """What one fault of `spec` delays the job by, measured in detail: `penalty_runs` runs,
    each with one fault, spread over `PENALTY_SPREAD_STEPS` steady steps and over the
    class's instances in turn, each against the same run without it, at the end of a run
    long enough for the fault's effect and `PENALTY_TAIL_STEPS` more (a pipeline passes a
    delay on or absorbs it a step or two later)."""
    sc = job.scenario
    assert sc.horizon is not None
    k = sc.horizon.penalty_runs
    spread = min(k, PENALTY_SPREAD_STEPS)
    effect = min(MAX_PENALTY_STEPS, math.ceil(effect_s / max(mean_step, 1e-9)))
    steps = sc.output.warmup_steps + spread + effect + PENALTY_TAIL_STEPS
    plain = simulate(prepare(_quiet(sc).model_copy(update={"steps": steps}), job.base_dir))
    base_s = float(plain.summary["sim_time_s"])
    out = []
    for i in range(k):
        t = warm_end_s + (i + 0.5) / k * spread * mean_step
        one = FaultSpec(mode=spec.mode, times=[t], targets=[members[i % len(members)]],
                        factor=spec.factor, duration=spec.duration)
        faulted = _quiet(sc, **{kind: [one]}).model_copy(update={"steps": steps})
        res = simulate(prepare(faulted, job.base_dir))
        out.append(max(0.0, float(res.summary["sim_time_s"]) - base_s))
    return tuple(out)


def _interval(values: list[float]) -> dict[str, float]:
    """Mean, its 95% confidence interval (Student's t), and the 5th-95th percentiles."""
    x = np.asarray(values, dtype=float)
    mean = float(x.mean())
    from scipy import stats  # lazy: scipy costs ~0.1 s of every command's start

    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))) \
        if len(x) > 1 else 0.0
    low = mean - half
    if x.min() >= 0:
        low = max(0.0, low)  # a count or a cost: the interval stays where values can be
    return {"mean": mean, "ci95_low": low, "ci95_high": mean + half,
            "p5": float(np.percentile(x, 5)), "p95": float(np.percentile(x, 95))}


def _answers(sc: Scenario, model: JobModel, runs: list[JobRun], gpus: int,
             usd_h: float) -> dict[str, Any]:
    step = model.mean_step_s
    samples = sc.workload.prompts_per_step * sc.workload.samples_per_prompt
    failure_s = [r.lost_work_s + r.down_s + r.penalty_s + r.restart_extra_s for r in runs]
    days = [r.wall_s / 86400.0 for r in runs]
    mtbf = 1.0 / model.restart_rate_per_s if model.restart_rate_per_s > 0 else math.inf
    write = model.checkpoint_write_s
    intervals = {}
    if math.isfinite(mtbf) and write > 0:
        intervals = {"young_steps": young_interval_s(write, mtbf) / step,
                     "daly_steps": daly_interval_s(write, mtbf) / step}
    return {
        "span_s": _interval([r.wall_s for r in runs]),
        "replicates": len(runs),
        "steady_step_s": step,
        "checkpoint_every": model.checkpoint_every,
        "checkpoint_write_s": write,
        "job_restart_mtbf_s": mtbf,
        "ettr": _interval([r.steps * step / r.wall_s for r in runs]),
        "goodput_samples_per_s": _interval([r.steps * samples / r.wall_s for r in runs]),
        "steps": _interval([float(r.steps) for r in runs]),
        "restarts": _interval([float(r.restarts) for r in runs]),
        "penalty_faults": _interval([float(r.penalties) for r in runs]),
        "lost_gpu_hours": _interval([(r.wall_s - r.steps * step) * gpus / 3600.0
                                     for r in runs]),
        "failure_gpu_hours": _interval([f * gpus / 3600.0 for f in failure_s]),
        "failure_usd_per_day": _interval([f / 3600.0 * usd_h / d
                                          for f, d in zip(failure_s, days, strict=True)]),
        "failure_usd_per_1k_steps": _interval([
            f / 3600.0 * usd_h / r.steps * 1000.0 if r.steps else math.inf
            for f, r in zip(failure_s, runs, strict=True)]),
        "checkpoint_intervals": intervals,
        "classes": [{"name": c.name, "per_day": c.rate_per_s * 86400.0,
                     "restarts_job": c.restarts,
                     "cost_s": c.down_s if c.restarts else
                     (float(np.mean(c.penalties_s)) if c.penalties_s else 0.0)}
                    for c in model.classes],
    }

