"""One timed simulation of a benchmark scenario, shared by the bench_* scripts.

Loads the scenario (with `--set`-style overrides from the command line), simulates it once
and returns what every benchmark reports: the scenario, the run's summary, the wall time
of the simulation alone (loading excluded) and the process's peak RSS.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path
from typing import Any


def timed_run(path: Path) -> tuple[Any, dict[str, Any], float, float]:
    """(scenario, summary, wall seconds, peak RSS in MB) of one run of `path`."""
    from rlsim.api import simulate
    from rlsim.config.loading import load_scenario

    scenario, base = load_scenario(path, sys.argv[1:])
    t0 = time.perf_counter()
    result = simulate(scenario, base)
    wall = time.perf_counter() - t0
    peak_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return scenario, result.summary, wall, peak_mb
