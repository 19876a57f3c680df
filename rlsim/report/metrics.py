"""summary.json as a pure function of the records (formulas in docs/metrics.md).

Owns every summary metric. It reads only `rlsim.trace` records plus two run facts that are
not simulated quantities (`wall_s`, `events`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from rlsim.trace import CONTROLLER, Recorder

PHASES = ("gen", "env", "reward", "ref", "train", "weight_sync", "switch", "recovery")


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0}
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "p50": float(np.percentile(arr, 50)),
            "p99": float(np.percentile(arr, 99))}


def summarize(recorder: Recorder, wall_s: float, events: int) -> dict[str, Any]:
    """The run summary; every simulated figure comes from the records."""
    rollbacks = [(i.t, int(i.attrs["to_step"])) for i in recorder.instants
                 if i.track == CONTROLLER and i.name == "rollback"]

    def kept(span: Any) -> bool:
        """Whether a step's span counts: no job restart after it rolled its step back."""
        step = int(span.attrs.get("step", -1))
        return not any(t >= span.t1 and step >= to for t, to in rollbacks)

    all_steps = [s for s in recorder.spans if s.track == CONTROLLER and s.name == "step"]
    sim_time = max((s.t1 for s in all_steps), default=0.0)
    steps = [s for s in all_steps if kept(s)] if rollbacks else all_steps
    n_steps = len(steps)
    per_phase: dict[str, float] = defaultdict(float)
    samples = tokens = good = 0  # trained; of them, in steps a job restart did not undo
    stale_sum = 0.0
    stale_max = 0
    for s in recorder.spans:
        if s.track != CONTROLLER:
            continue
        # a rolled-back step's phases are lost work, not a step's cost; restarts count
        counts = not rollbacks or s.name == "recovery" or kept(s)
        if s.name in PHASES and counts:
            per_phase[s.name] += s.t1 - s.t0
        if s.name == "train":
            n = int(s.attrs.get("samples", 0))
            samples += n
            tokens += int(s.attrs.get("tokens", 0))
            if counts:
                good += n
            stale_sum += float(s.attrs.get("staleness_mean", 0.0)) * n
            stale_max = max(stale_max, int(s.attrs.get("staleness_max", 0)))
    pools = {i.attrs["pool"]: i.attrs for i in recorder.instants
             if i.track == "cluster" and i.name == "pool"}
    busy: dict[str, float] = defaultdict(float)
    for s in recorder.spans:
        if s.name == "busy":
            busy[str(s.attrs["pool"])] += (s.t1 - s.t0) * float(s.attrs["gpus"])
    util = {name: (busy[name] / (p["gpus"] * sim_time) if sim_time > 0 else 0.0)
            for name, p in sorted(pools.items())}
    usd_per_hour = sum(p["gpus"] * p["usd_per_gpu_hour"] for p in pools.values())
    run_usd = usd_per_hour * sim_time / 3600.0
    fault_summary = _faults(recorder, busy)
    ends = [i.attrs for i in recorder.instants if i.track == CONTROLLER
            and i.name == "outcomes"]
    attempts = ({k: int(ends[-1][k]) for k in ("trained", "stale", "cancelled", "leftover")}
                if ends else None)
    return {
        "steps": n_steps,
        "sim_time_s": sim_time,
        "step_time_s": _stats([s.t1 - s.t0 for s in steps]),
        "phase_time_s": {p: (per_phase[p] / n_steps if n_steps else 0.0) for p in PHASES},
        "throughput": {
            "samples_per_s": samples / sim_time if sim_time > 0 else 0.0,
            "tokens_per_s": tokens / sim_time if sim_time > 0 else 0.0,
        },
        "gpu_util": util,
        "cost": {
            "usd_per_hour": usd_per_hour,
            "usd_per_1k_samples": run_usd / good * 1000 if good else 0.0,
        },
        "staleness": {"mean": stale_sum / samples if samples else 0.0, "max": stale_max},
        "faults": fault_summary,
        "goodput_samples_per_s": good / sim_time if sim_time > 0 else 0.0,
        "effective_training_time_ratio": (sum(s.t1 - s.t0 for s in steps) / sim_time
                                          if sim_time > 0 else 0.0),
        "slo_attainment": None,
        # async: how every sample attempt ended (None for policies that drop nothing)
        "attempts": attempts,
        "profiles": {name: {"source": p.get("profile"), "hash": p.get("profile_hash")}
                     for name, p in sorted(pools.items())},
        "wall_s": wall_s,
        "events": events,
    }


def _faults(recorder: Recorder, busy: dict[str, float]) -> dict[str, Any]:
    """Faults injected and recovered, per kind, with what they cost (docs/metrics.md)."""
    faults = [i for i in recorder.instants if i.track == "faults" and i.name == "fault"]
    recovered = [i for i in recorder.instants if i.track == "faults" and i.name == "recovered"]
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in sorted({str(i.attrs["kind"]) for i in faults}):
        mine = [i for i in recovered if i.attrs["kind"] == kind]
        times = [float(i.attrs["recovery_s"]) for i in mine]
        by_kind[kind] = {
            "injected": sum(1 for i in faults if i.attrs["kind"] == kind),
            "recovered": len(mine),
            "recovery_s": {**_stats(times), "max": max(times, default=0.0)},
        }
    # work redone: tokens generated again (priced at the run's rollout GPU-seconds per
    # generated token), GPUs idle while a component was down, trainer work rolled back
    tokens = sum(int(i.attrs.get("lost_tokens", 0)) for i in faults + recovered)
    generated = sum(int(s.attrs.get("tokens", 0)) for s in recorder.spans
                    if s.name == "busy" and str(s.track).startswith("rollout."))
    rollout_pools = {str(i.attrs["pool"]) for i in recorder.instants
                     if i.track == "cluster" and i.name == "entity"
                     and i.attrs.get("kind") == "engine"}
    rollout_busy = sum(busy[p] for p in rollout_pools)
    per_token = rollout_busy / generated if generated else 0.0
    down = sum(float(i.attrs["recovery_s"]) * float(i.attrs.get("gpus", 0))
               for i in recovered if i.attrs["kind"] == "engine"
               and i.attrs.get("mitigation") is None and i.attrs.get("by") is None)
    rolled = sum(float(i.attrs.get("lost_work_s", 0.0)) * float(i.attrs.get("gpus", 0))
                 for i in recovered if i.attrs["kind"] == "trainer")
    waits = [float(i.attrs["wait_s"]) for i in recorder.instants
             if i.track == "faults" and i.name == "checkpoint_wait"]
    return {
        "injected": len(faults),
        "recovered": len(recovered),
        "open": len(faults) - len(recovered),
        "by_kind": by_kind,
        "lost_tokens": tokens,
        "lost_env_s": sum(float(i.attrs.get("lost_env_s", 0.0)) for i in faults),
        "lost_work_gpu_s": tokens * per_token + down + rolled,
        "env_checkpoints": sum(1 for i in recorder.instants
                               if i.track == "faults" and i.name == "checkpoint"),
        "env_checkpoint_wait_s": sum(waits),
    }
