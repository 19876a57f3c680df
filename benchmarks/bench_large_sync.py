"""Benchmark: 100 steps of a 1,024-GPU sync disaggregated RLVR job on one core.

Target (issue 24): at most 10 s of CPU (issue 2: 60 s wall, 2 GB peak memory). Prints one
JSON line with wall and CPU time, peak RSS, scheduled events, events per response and
events per CPU second.
"""

from __future__ import annotations

import json
from pathlib import Path

from timed_run import timed_run  # benchmarks/ is the script's directory

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "bench" / "large_sync_1024.yaml"


def main() -> dict[str, float]:
    run = timed_run(SCENARIO)
    scenario, s = run.scenario, run.summary
    responses = s["steps"] * scenario.workload.prompts_per_step * \
        scenario.workload.samples_per_prompt
    out = {
        "benchmark": "large_sync_1024",
        "steps": s["steps"],
        "responses": responses,
        **run.figures(),
        "events": s["events"],
        "events_per_response": round(s["events"] / responses, 2),
        "events_per_cpu_s": round(s["events"] / run.cpu_s),
        "sim_step_time_s": round(s["step_time_s"]["mean"], 2),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
