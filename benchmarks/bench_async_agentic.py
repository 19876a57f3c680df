"""Benchmark: 20 steps of a 1,024-GPU async agentic job on one core.

Target (issue 24): at most 40 s of CPU and 500 MB peak RSS for 20 steps of 8,192
trajectories of about 10 turns each (scenarios/bench/async_agentic_1024.yaml: ROLL Flash's
async policy with redundant environments, prefix caching and environment-level async).
Prints one JSON line with wall and CPU time, peak RSS, trajectory attempts (trained, stale,
cancelled or left over), scheduled events and events per CPU second.
"""

from __future__ import annotations

import json
from pathlib import Path

from timed_run import timed_run  # benchmarks/ is the script's directory

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "bench" / "async_agentic_1024.yaml"


def main() -> dict[str, float]:
    run = timed_run(SCENARIO)
    scenario, s = run.scenario, run.summary
    out = {
        "benchmark": "async_agentic_1024",
        "steps": s["steps"],
        "trajectories_per_step": scenario.workload.prompts_per_step *
        scenario.workload.samples_per_prompt,
        **run.figures(),
        "attempts": sum((s["attempts"] or {}).values()),
        "events": s["events"],
        "events_per_cpu_s": round(s["events"] / run.cpu_s),
        "sim_step_time_s": round(s["step_time_s"]["mean"], 2),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
