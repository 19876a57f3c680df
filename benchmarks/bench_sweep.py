"""Benchmark: a 24-point, 2-key sweep with --jobs 1 and --jobs 2 (`rlsim sweep`, end to end).

Target (issue 5): --jobs 2 at least 1.6x faster than --jobs 1 on this 2-core machine. Each
point is the quickstart scenario at 25 steps (~1 s), so the figure measures the per-point
overhead of the executor and store, not the simulator. The two settings alternate over the
repeats and the medians are compared, since this VM's timings drift between runs. Needs
every core, so run_all.py does not pin it. Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ALL_CORES = True  # run_all.py: do not pin this benchmark to one core

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "quickstart.yaml"
OUT = ROOT / "runs" / "bench-sweep"
ARGS = ["--set", "steps=25",
        "--grid", "reward.workers=32,64,96,128",
        "--grid", "rollout.max_running_seqs=64,96,128,192,256,384"]
POINTS = 24


def _cpu_s() -> float:
    """CPU seconds of finished child processes (the sweep and, reaped by it, its workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _sweep(jobs: int, out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one sweep."""
    shutil.rmtree(out, ignore_errors=True)
    cpu0, t0 = _cpu_s(), time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "sweep", str(SCENARIO), *ARGS, "--jobs", str(jobs),
         "--out", str(out), "--json"], cwd=ROOT, capture_output=True, text=True, check=True)
    wall, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
    result = json.loads(proc.stdout)
    assert result["done"] == POINTS and result["failed"] == 0, result
    return wall, cpu


def main(repeats: int = 2) -> dict[str, object]:
    import pyarrow.parquet as pq

    load_1m = os.getloadavg()[0]
    walls: dict[int, list[float]] = {1: [], 2: []}
    shares: list[float] = []
    for _ in range(repeats):
        for jobs in (1, 2):
            wall, cpu = _sweep(jobs, OUT / f"jobs{jobs}")
            walls[jobs].append(wall)
            if jobs == 2:
                shares.append(cpu / (2 * wall))
    same = pq.read_table(OUT / "jobs1" / "results").sort_by("point").equals(
        pq.read_table(OUT / "jobs2" / "results").sort_by("point"))
    jobs1, jobs2 = statistics.median(walls[1]), statistics.median(walls[2])
    out = {
        "benchmark": "sweep_grid_24",
        "points": POINTS,
        "cores": os.cpu_count() or 1,
        "repeats": repeats,
        "jobs1_s": round(jobs1, 2),
        "jobs2_s": round(jobs2, 2),
        "point_s_jobs1": round(jobs1 / POINTS, 3),
        "speedup_jobs2": round(jobs1 / jobs2, 3),
        "identical_rows": int(same),
        # Other work on the machine skews the ratio: the share of the two cores the
        # --jobs 2 sweeps got (1.0 minus startup) and the load when this started tell.
        "cpu_share_jobs2": round(statistics.median(shares), 3),
        "load_1m_at_start": round(load_1m, 2),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
