"""Benchmark: 100 steps of a 1,024-GPU sync disaggregated RLVR job on one core.

Target (issue 2): at most 60 s wall and 2 GB peak memory. Prints one JSON line with wall
time, peak RSS, scheduled events, events per response and events per second.
"""

from __future__ import annotations

import json
from pathlib import Path

from timed_run import timed_run  # benchmarks/ is the script's directory

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "bench" / "large_sync_1024.yaml"


def main() -> dict[str, float]:
    scenario, s, wall, peak_mb = timed_run(SCENARIO)
    responses = s["steps"] * scenario.workload.prompts_per_step * \
        scenario.workload.samples_per_prompt
    out = {
        "benchmark": "large_sync_1024",
        "steps": s["steps"],
        "responses": responses,
        "wall_s": round(wall, 2),
        "peak_rss_mb": peak_mb,
        "events": s["events"],
        "events_per_response": round(s["events"] / responses, 2),
        "events_per_s": round(s["events"] / wall),
        "sim_step_time_s": round(s["step_time_s"]["mean"], 2),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
