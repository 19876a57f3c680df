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
    steps = [s for s in recorder.spans if s.track == CONTROLLER and s.name == "step"]
    n_steps = len(steps)
    sim_time = max((s.t1 for s in steps), default=0.0)
    per_phase: dict[str, float] = defaultdict(float)
    samples = tokens = 0
    stale_sum = 0.0
    stale_max = 0
    for s in recorder.spans:
        if s.track != CONTROLLER:
            continue
        if s.name in PHASES:
            per_phase[s.name] += s.t1 - s.t0
        if s.name == "train":
            n = int(s.attrs.get("samples", 0))
            samples += n
            tokens += int(s.attrs.get("tokens", 0))
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
    faults = [i for i in recorder.instants if i.name == "fault"]
    recovered = [i for i in recorder.instants if i.name == "recovered"]
    lost = sum((float(i.attrs.get("lost_work_s", 0.0)) for i in recovered), 0.0)
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
            "usd_per_1k_samples": run_usd / samples * 1000 if samples else 0.0,
        },
        "staleness": {"mean": stale_sum / samples if samples else 0.0, "max": stale_max},
        "faults": {"injected": len(faults), "recovered": len(recovered), "lost_work_s": lost},
        "goodput_samples_per_s": samples / sim_time if sim_time > 0 else 0.0,
        "slo_attainment": None,
        # async: how every sample attempt ended (None for policies that drop nothing)
        "attempts": attempts,
        "profiles": {name: {"source": p.get("profile"), "hash": p.get("profile_hash")}
                     for name, p in sorted(pools.items())},
        "wall_s": wall_s,
        "events": events,
    }
