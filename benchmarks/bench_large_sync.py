"""Benchmark: 100 steps of a 1,024-GPU sync disaggregated RLVR job on one core.

Target (issue 2): at most 60 s wall and 2 GB peak memory. Prints one JSON line with wall
time, peak RSS, scheduled events, events per response and events per second.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "bench" / "large_sync_1024.yaml"


def main() -> dict[str, float]:
    from rlsim.api import simulate
    from rlsim.config.loading import load_scenario

    scenario, base = load_scenario(SCENARIO, sys.argv[1:])
    t0 = time.perf_counter()
    result = simulate(scenario, base)
    wall = time.perf_counter() - t0
    s = result.summary
    responses = s["steps"] * scenario.workload.prompts_per_step * \
        scenario.workload.samples_per_prompt
    out = {
        "benchmark": "large_sync_1024",
        "steps": s["steps"],
        "responses": responses,
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "events": s["events"],
        "events_per_response": round(s["events"] / responses, 2),
        "events_per_s": round(s["events"] / wall),
        "sim_step_time_s": round(s["step_time_s"]["mean"], 2),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
