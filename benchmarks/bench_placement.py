"""Benchmark: RollMux placement decisions for 2,000 arriving jobs, on one core.

Target (issue 8): every decision for 2,000 arriving jobs in at most 1 s of wall time in
total. The jobs are make_trace.py's generator at 2,000 jobs, spread over 140 days so the
cluster carries the same load as the 200-job trace. Setup (profiling each job shape with
the single-job model) is not timed. The replay runs arrivals and departures in time order
without phases: a placed job leaves after its solo run time times its SLO (the latest it
may finish), and a job that finds no room waits for the next departure. Only
`GroupScheduler.decide` is timed. Prints one JSON line.
"""

from __future__ import annotations

import heapq
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "scenarios" / "rollmux"
JOBS, DAYS = 2000, 140.0


def main() -> dict[str, object]:
    sys.path.insert(0, str(HERE))
    import make_trace  # scenarios/rollmux/make_trace.py

    from rlsim.config.fleet_loading import load_fleet
    from rlsim.fleet import profile_jobs
    from rlsim.fleet.runtime import FleetRun
    from rlsim.trace import Recorder

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        make_trace.write(make_trace.rows(JOBS, 0, DAYS), d / "jobs.csv")
        data = yaml.safe_load((HERE / "trace-200-jobs.yaml").read_text())
        data.update(templates=str(HERE / "trace-job-types.yaml"), trace={"path": "jobs.csv"})
        data["pools"] = [{**p, "nodes": 400} for p in data["pools"]]
        (d / "fleet.yaml").write_text(yaml.safe_dump(data))
        scenario, _ = load_fleet(d / "fleet.yaml")
        t0 = time.perf_counter()
        profiles = profile_jobs(scenario, HERE)  # the trace's lengths paths are relative here
        profile_s = time.perf_counter() - t0
    fleet = FleetRun(scenario, profiles, Recorder())
    sched = fleet.sched
    events: list[tuple[float, int, int, str]] = []
    for i, run in enumerate(fleet.runs):
        heapq.heappush(events, (run.job.arrival, 1, i, "arrive"))
    waiting: list[int] = []
    decide_s, decisions, placed = 0.0, 0, 0
    kinds: dict[str, int] = {}

    def place(i: int, now: float) -> bool:
        nonlocal decide_s, decisions, placed
        run = fleet.runs[i]
        demand = fleet._demand(run)
        t = time.perf_counter()
        p = sched.decide(demand)
        decide_s += time.perf_counter() - t
        decisions += 1
        if p is None:
            return False
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
    out = {
        "benchmark": "placement_2000",
        "jobs": JOBS,
        "decisions": decisions,
        "decide_s": round(decide_s, 3),
        "per_decision_ms": round(1000 * decide_s / max(decisions, 1), 3),
        "placements": " ".join(f"{k}={v}" for k, v in sorted(kinds.items())),
        "profile_setup_s": round(profile_s, 1),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
