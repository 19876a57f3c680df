"""A fleet run's figures, computed from its records only.

Owns the multi-job summary: per-job completion, slowdown against running alone (Solo-D) and
SLO; cost as the integral of the allocated nodes' price over the run; samples per dollar;
the placement mix; how busy the allocated nodes were. docs/metrics.md gives the formulas.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from rlsim.trace import Recorder

FLEET = "fleet"


def _integral(points: list[tuple[float, float]], end: float) -> float:
    """Integral over time of a step function given as (t, value) points."""
    total = 0.0
    for (t, v), (t_next, _) in zip(points, [*points[1:], (end, 0.0)], strict=True):
        total += v * max(0.0, t_next - t)
    return total


def summarize_fleet(rec: Recorder, policy: str, wall_s: float,
                    decision_s: float) -> dict[str, Any]:
    done = [i for i in rec.instants if i.track == FLEET and i.name == "job_done"]
    placed = [i for i in rec.instants if i.track == FLEET and i.name == "placement"]
    jobs = sorted((i.attrs for i in done), key=lambda a: str(a["job"]))
    t_first = min((float(a["arrival"]) for a in jobs), default=0.0)
    t_end = max((float(a["finish"]) for a in jobs), default=0.0)
    span_s = max(t_end - t_first, 1e-9)
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for c in rec.counters:
        if c.track == FLEET:
            series[c.name].append((c.t, c.value))
    usd = _integral(series.get("usd_per_hour", []), t_end) / 3600.0
    node_s = {name.split(".", 1)[1]: _integral(pts, t_end)
              for name, pts in series.items() if name.startswith("nodes.")}
    peak_nodes = {name.split(".", 1)[1]: max((v for _, v in pts), default=0.0)
                  for name, pts in series.items() if name.startswith("nodes.")}
    pools = {i.attrs["pool"]: i.attrs for i in rec.instants
             if i.track == "cluster" and i.name == "pool"}
    busy: dict[str, float] = defaultdict(float)
    for s in rec.spans:
        # held nodes only: a migrated tail runs beside the next phase on released nodes
        if s.track.startswith("node.") and s.name != "tail":
            busy[s.track.split(".")[1]] += s.t1 - s.t0
    samples = sum(int(a["samples"]) for a in jobs)
    slowdown = [float(a["slowdown"]) for a in jobs]
    met = [float(a["slowdown"]) <= float(a["slo"]) * (1 + 1e-9) for a in jobs]
    # the scheduler's own promise: time from start to finish, queueing for nodes left out
    run_slow = [(float(a["finish"]) - float(a["start"])) / float(a["solo_jct_s"]) for a in jobs]
    met_run = [r <= float(a["slo"]) * (1 + 1e-9) for r, a in zip(run_slow, jobs, strict=True)]
    waits = [float(a["start"]) - float(a["arrival"]) for a in jobs]
    overhead = [(float(a["finish"]) - float(a["start"])) / float(a["solo_jct_s"]) - 1.0
                for a in jobs]
    return {
        "policy": policy,
        "jobs": len(jobs),
        "sim_time_s": span_s,
        "cost": {
            "usd_total": usd,
            "usd_per_hour": usd / (span_s / 3600.0),
            "samples_per_usd": samples / usd if usd > 0 else 0.0,
        },
        "throughput": {"samples_per_s": samples / span_s, "samples": samples},
        "slo_attainment": float(np.mean(met)) if met else 0.0,
        "slo_attainment_running": float(np.mean(met_run)) if met_run else 0.0,
        "slowdown": _stats(slowdown),
        "queue_wait_s": _stats(waits),
        "overhead_vs_solo": _stats(overhead),
        "placements": dict(sorted(Counter(str(i.attrs["kind"]) for i in placed).items())),
        "groups": len({int(i.attrs["group"]) for i in placed}),
        "gpus_peak": {p: int(peak_nodes.get(p, 0) * pools[p]["gpus_per_node"])
                      for p in sorted(pools)},
        "gpu_hours": {p: node_s.get(p, 0.0) * pools[p]["gpus_per_node"] / 3600.0
                      for p in sorted(pools)},
        "busy_fraction": {p: (busy[p] / node_s[p] if node_s.get(p) else 0.0)
                          for p in sorted(pools)},
        "faults": {"crashes": sum(1 for i in rec.instants
                                  if i.track == FLEET and i.name == "crash")},
        "decision_s": decision_s,
        "wall_s": wall_s,
        "per_job": [{k: a[k] for k in ("job", "group", "kind", "arrival", "start", "finish",
                                       "steps", "samples", "solo_jct_s", "slowdown", "slo")}
                    for a in jobs],
    }


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "min": 0.0, "max": 0.0}
    return {"mean": float(np.mean(values)), "min": float(np.min(values)),
            "max": float(np.max(values))}
