"""One timed simulation of a benchmark scenario, shared by the bench_* scripts.

Loads the scenario (with `--set`-style overrides from the command line), simulates it once
and returns what every benchmark reports: the scenario, the run's summary, the wall and CPU
time of the simulation alone (loading excluded), the whole process's CPU time so far
(imports and loading included) and its peak RSS. CPU time is what the targets are set on:
these VMs are shared, and wall time ran up to 2.5x CPU time on a busy one (issue 24).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Timed:
    scenario: Any
    summary: dict[str, Any]
    wall_s: float  # the simulation alone
    cpu_s: float  # the simulation alone (process time: user + system)
    process_cpu_s: float  # the process so far: imports, loading, the simulation
    peak_rss_mb: float
    load_1m: float  # the 1-minute load average when the simulation started

    def figures(self) -> dict[str, float]:
        """The timing figures every benchmark prints."""
        return {"wall_s": round(self.wall_s, 2), "cpu_s": round(self.cpu_s, 2),
                "process_cpu_s": round(self.process_cpu_s, 2),
                "peak_rss_mb": self.peak_rss_mb, "load_1m": round(self.load_1m, 2)}


def timed_run(path: Path) -> Timed:
    """One run of `path`, timed."""
    from rlsim.api import simulate
    from rlsim.config.loading import load_scenario

    scenario, base = load_scenario(path, sys.argv[1:])
    load = os.getloadavg()[0]
    c0, t0 = time.process_time(), time.perf_counter()
    result = simulate(scenario, base)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return Timed(scenario, result.summary, wall, cpu, usage.ru_utime + usage.ru_stime,
                 round(usage.ru_maxrss / 1024, 1), load)
