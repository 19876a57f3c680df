"""Benchmark: a 30-day horizon of the 1,024-GPU sync job at a node MTBF of 6,000 h on one
core (issue 38): 100 steps in detail, the rollout nodes' faults measured in 8 detailed
runs, then 20 replicates of the month's fault process and the checkpoint-interval scan.

Target (issue 38): one horizon run in under 60 s of CPU on 2 cores (it uses one), its 20
replicates included. Prints one JSON line with wall and CPU time, peak RSS and the answers.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "bench" / "large_sync_1024.yaml"
SETS = ["horizon=30 d", "faults.node=[{mtbf: 6000 h}]", "recovery.trainer.checkpoint_every=20"]


def main() -> dict[str, float]:
    from rlsim.config.loading import load_scenario
    from rlsim.horizon import simulate_horizon
    from rlsim.prepare import prepare

    load = os.getloadavg()[0]
    c0, t0 = time.process_time(), time.perf_counter()
    scenario, base = load_scenario(SCENARIO, SETS)
    h = simulate_horizon(prepare(scenario, base, allow_large=True)).summary["horizon"]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out = {
        "benchmark": "horizon_30d_1024",
        "replicates": h["replicates"],
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "load_1m": round(load, 2),
        "ettr_mean": round(h["ettr"]["mean"], 4),
        "lost_gpu_hours_mean": round(h["lost_gpu_hours"]["mean"], 1),
        "restarts_mean": h["restarts"]["mean"],
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
