"""Benchmark: `rlsim advise` with 100 trials of a 64-GPU job on 2 cores (issue 25).

The job is scenarios/examples/llama3-70b-grpo-64xh100.yaml (Llama-3.1-70B GRPO, 64 H100,
`steps: 10`; advise runs each point 11 steps, the warm-up plus async alpha 4's five-step
cycle twice). 100 trials, 3 replicates of the 3 finalists and of the scenario as given,
local executor with 2 workers. Target: at most 180 s of wall time. Prints one JSON line
with wall time, the CPU time of this process and of its workers, the simulations run and
the time per trial.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "examples" / "llama3-70b-grpo-64xh100.yaml"
TRIALS = 100
CORES = 2
ALL_CORES = True  # run_all.py: not pinned to one core


def main() -> dict[str, float | int | str]:
    from rlsim.advise.run import AdviseOptions, advise

    tmp = Path(tempfile.mkdtemp(prefix="rlsim-advise-trials-"))
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        advice = advise(AdviseOptions(scenario=str(SCENARIO), out=str(tmp / "out"),
                                      trials=TRIALS, reps=3, jobs=CORES),
                        log=lambda s: print(s, file=sys.stderr))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    out: dict[str, float | int | str] = {
        "benchmark": "advise_trials",
        "trials": TRIALS,
        "cores": CORES,
        "steps_per_run": advice.space["steps"],
        "wall_s": round(wall, 1),
        "main_cpu_s": round(cpu, 1),
        "workers_cpu_s": round(children.ru_utime + children.ru_stime, 1),
        "simulations": advice.evaluations,
        "wall_s_per_trial": round(wall / TRIALS, 2),
        "recommended": advice.recommended["description"],
        "load_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
