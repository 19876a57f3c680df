"""Benchmark: wall time of the RollPacker reproduction runs (20 steps each), on one core.

Target (issue 6): each 20-step reproduction run in at most 10 s wall. Prints one JSON line
with the slowest run's wall seconds and each pair's simulated speedup (informative only:
the reproduction is still a draft, see docs/research/rollpacker.md).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIR = ROOT / "scenarios" / "rollpacker"
PAIRS = ("qwen2.5-7b-8k", "qwen2.5-14b-16k", "qwen2.5-32b-32k")


def main() -> dict[str, float]:
    from rlsim.api import simulate
    from rlsim.config.loading import load_scenario

    out: dict[str, float] = {}
    slowest = 0.0
    for key in PAIRS:
        step_s = {}
        for system in ("verl", "rollpacker"):
            scenario, base = load_scenario(DIR / f"{system}-{key}.yaml")
            t0 = time.perf_counter()
            result = simulate(scenario, base)
            wall = time.perf_counter() - t0
            slowest = max(slowest, wall)
            out[f"{system}_{key}_wall_s"] = round(wall, 2)
            step_s[system] = result.summary["step_time_s"]["mean"]
        out[f"speedup_{key}"] = round(step_s["verl"] / step_s["rollpacker"], 3)
    result_line = {"benchmark": "rollpacker_runs", "max_run_wall_s": round(slowest, 2), **out}
    print(json.dumps(result_line))
    return result_line


if __name__ == "__main__":
    main()
