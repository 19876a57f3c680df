"""Benchmark: RollMux placement decisions for 2,000 arriving jobs, on one core.

Target (issue 24): every decision for 2,000 arriving jobs in at most 0.4 s of CPU time in
total (issue 8's was 1 s of wall time). The jobs are make_trace.py's generator at 2,000 jobs,
spread over 140 days so the cluster carries the same load as the 200-job trace. Setup
(profiling each job shape with the single-job model) is not timed. The replay runs arrivals
and departures in time order without phases: a placed job leaves after its solo run time
times its SLO (the latest it may finish), and a job that finds no room waits for the next
departure. Only `GroupScheduler.decide` is timed, as CPU time (`time.process_time`, which
another process on the core cannot inflate) and wall time; the replay runs `REPEATS` times
on a fresh scheduler and each figure keeps its minimum. `decisions_sha256` hashes every
decision (job, group id, kind, nodes, new nodes, marginal $/h; None when the pools had no
room), so two versions of the scheduler can be checked for identical decisions. Prints one
JSON line (`decide_s` is the CPU minimum, the figure the target is on).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "scenarios" / "rollmux"
JOBS, DAYS = 2000, 140.0
REPEATS = 3
REPEATS_ITSELF = True  # run_all.py: the replays repeat here, the minimum kept


def setup() -> tuple[Any, Any, float]:
    """(fleet scenario, job profiles, seconds the profiling took)."""
    sys.path.insert(0, str(HERE))
    import make_trace  # scenarios/rollmux/make_trace.py

    from rlsim.config.fleet_loading import load_fleet
    from rlsim.fleet import profile_jobs

    params = replace(make_trace.TraceParams(), jobs=JOBS, days=DAYS)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        make_trace.write(make_trace.rows(params, 0), d / "jobs.csv")
        data = yaml.safe_load((HERE / "trace-200-jobs.yaml").read_text())
        data.update(templates=str(HERE / "trace-job-types.yaml"), trace={"path": "jobs.csv"})
        data["pools"] = [{**p, "nodes": 400} for p in data["pools"]]
        (d / "fleet.yaml").write_text(yaml.safe_dump(data))
        scenario, _ = load_fleet(d / "fleet.yaml")
        t0 = time.perf_counter()
        profiles = profile_jobs(scenario, HERE)  # the trace's lengths paths are relative here
        profile_s = time.perf_counter() - t0
    return scenario, profiles, profile_s


def replay(scenario: Any, profiles: Any) -> dict[str, Any]:
    """One pass over the trace on a fresh scheduler: the decisions' CPU and wall seconds,
    their count, the placement kinds and the hash of every decision."""
    from rlsim.fleet.runtime import FleetRun
    from rlsim.trace import Recorder

    fleet = FleetRun(scenario, profiles, Recorder())
    sched = fleet.sched
    events: list[tuple[float, int, int, str]] = []
    for i, run in enumerate(fleet.runs):
        heapq.heappush(events, (run.job.arrival, 1, i, "arrive"))
    waiting: list[int] = []
    cpu_s, wall_s, decisions, placed = 0.0, 0.0, 0, 0
    kinds: dict[str, int] = {}
    digest = hashlib.sha256()
    cpu, wall = time.process_time, time.perf_counter

    def place(i: int, now: float) -> bool:
        nonlocal cpu_s, wall_s, decisions, placed
        run = fleet.runs[i]
        demand = fleet._demand(run)
        c, w = cpu(), wall()
        p = sched.decide(demand)
        wall_s += wall() - w
        cpu_s += cpu() - c
        decisions += 1
        if p is None:
            digest.update(f"{demand.name} None\n".encode())
            return False
        digest.update(f"{p.job} {p.gid} {p.kind} {p.roll} {p.train} {p.new_roll} "
                      f"{p.new_train} {p.delta_usd_per_hour!r}\n".encode())
        sched.admit(demand, p)
        placed += 1
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
        heapq.heappush(events, (now + run.solo_jct_s * run.job.slo, 0, i, "leave"))
        return True

    while events:
        now, _, i, what = heapq.heappop(events)
        if what == "arrive":
            if not place(i, now):
                waiting.append(i)
        else:
            sched.depart(fleet.runs[i].job.name)
            waiting = [j for j in waiting if not place(j, now)]
    return {"cpu_s": cpu_s, "wall_s": wall_s, "decisions": decisions, "placed": placed,
            "kinds": kinds, "sha256": digest.hexdigest()}


def main() -> dict[str, object]:
    scenario, profiles, profile_s = setup()
    load_start = os.getloadavg()[0]
    runs = [replay(scenario, profiles) for _ in range(REPEATS)]
    load_end = os.getloadavg()[0]
    if len({r["sha256"] for r in runs}) != 1:
        raise RuntimeError("placement decisions differ between repeats: "
                           "the scheduler is not deterministic")
    first = runs[0]
    cpu_s = min(r["cpu_s"] for r in runs)
    out = {
        "benchmark": "placement_2000",
        "jobs": JOBS,
        "decisions": first["decisions"],
        "decide_s": round(cpu_s, 3),
        "decide_cpu_s": round(cpu_s, 3),
        "decide_cpu_max_s": round(max(r["cpu_s"] for r in runs), 3),
        "decide_wall_s": round(min(r["wall_s"] for r in runs), 3),
        "repeats": REPEATS,
        "per_decision_ms": round(1000 * cpu_s / max(first["decisions"], 1), 3),
        "placements": " ".join(f"{k}={v}" for k, v in sorted(first["kinds"].items())),
        "decisions_sha256": first["sha256"],
        "load_1m_at_start": round(load_start, 2),
        "load_1m_at_end": round(load_end, 2),
        "profile_setup_s": round(profile_s, 1),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
