"""Benchmark: draws at scale (issue 39, "Speed"), end to end through the command line.

1. `draws_compare_64`: 64 draws of the quickstart comparison (`make demo`'s three variants)
   over two unknowns (the reward's median latency, lognormal; the batch size, 64-192), on
   the local pool with --jobs 2: 192 runs. Target: <= 20 s of wall time on 2 cores
   (issue 40; issue 39 set 60 s).
2. `draws_ray_kill9_256`: 256 draws of the quickstart run through Ray with 2 local
   workers, killed with `kill -9` (the whole process group) once about a third of the
   draws are journaled, then `--resume`d; beside it the same draws uninterrupted on the
   local pool. Checks: every run journaled before the kill is kept unchanged (its Parquet
   part's mtime), the resume runs only the others (it reports "resuming, K/256"), and the
   answer (DIR/draws.json) is identical to the uninterrupted run's.

Needs every core and Ray (`pip install 'rlsim[ray]'`), so run_all.py does not pin it.
Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ALL_CORES = True  # run_all.py: do not pin this benchmark to one core

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "quickstart.yaml"
OUT = ROOT / "runs" / "bench-draws"
UNKNOWNS = ("unknowns={reward.latency.median: {dist: lognormal, median: 2, sigma: 0.5}, "
            "workload.prompts_per_step: {low: 64, high: 192}}")
VARIANTS = ["policy.name=sync,policy.placement=colocated",
            "policy.name=sync,policy.placement=disaggregated",
            "policy.name=one_off,policy.placement=disaggregated"]
RAY_DRAWS = 256
KILL_AT = RAY_DRAWS // 3


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlsim.cli", *args]


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compare_64() -> dict[str, float]:
    """Wall and CPU seconds of 64 draws of the three-variant comparison, --jobs 2."""
    cpu0, t0 = _cpu_s(), time.perf_counter()
    args = ["compare", str(SCENARIO), "--draws", "64", "--set", UNKNOWNS, "--jobs", "2",
            "--json"]
    for v in VARIANTS:
        args += ["--variant", v]
    proc = subprocess.run(_cli(*args), cwd=ROOT, capture_output=True, text=True, check=True)
    wall, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
    doc = json.loads(proc.stdout)["draws"]
    assert doc["ran"] == 64 and not doc["failures"], doc["failures"]
    return {"wall_s": wall, "cpu_s": cpu}


def _parts(out: Path) -> dict[str, int]:
    results = out / "results"
    if not results.is_dir():
        return {}
    return {p.name: p.stat().st_mtime_ns for p in results.iterdir()
            if p.name.startswith("part-")}


def _ray_stop() -> None:
    """Stop what a killed driver's local Ray left running (raylet, GCS, workers)."""
    ray = Path(sys.executable).with_name("ray")
    subprocess.run([str(ray), "stop", "--force"], capture_output=True, check=False)


def ray_kill9_resume() -> dict[str, float | int]:
    run = ["run", str(SCENARIO), "--draws", str(RAY_DRAWS), "--set", UNKNOWNS]
    local, killed = OUT / "local", OUT / "ray"
    for d in (local, killed):
        shutil.rmtree(d, ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run(_cli(*run, "--jobs", "2", "--out", str(local), "--json"), cwd=ROOT,
                   capture_output=True, text=True, check=True)
    local_s = time.perf_counter() - t0

    ray_args = [*run, "--executor", "ray", "--jobs", "2", "--out", str(killed), "--json"]
    proc = subprocess.Popen(_cli(*ray_args), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    while len(_parts(killed)) < KILL_AT and proc.poll() is None:
        if time.monotonic() > deadline:
            raise TimeoutError("the Ray draws did not reach the kill point in 10 min")
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    _ray_stop()
    before = _parts(killed)
    assert KILL_AT <= len(before) < RAY_DRAWS, f"killed at {len(before)} runs: not midway"

    t0 = time.perf_counter()
    resumed = subprocess.run(_cli(*ray_args, "--resume"), cwd=ROOT, capture_output=True,
                             text=True, check=True)
    resume_s = time.perf_counter() - t0
    _ray_stop()
    after = _parts(killed)
    kept = all(after.get(name) == mtime for name, mtime in before.items())
    said = re.search(r"resuming, (\d+)/(\d+) runs", resumed.stderr)
    same = ((killed / "draws.json").read_text() == (local / "draws.json").read_text())
    return {"runs_at_kill": len(before), "runs_after_resume": len(after),
            "kept_unchanged": int(kept),
            "resume_started_at": int(said.group(1)) if said else -1,
            "identical_to_uninterrupted": int(same),
            "local_uninterrupted_s": local_s, "ray_resume_s": resume_s}


def main() -> dict[str, object]:
    load_1m = os.getloadavg()[0]
    c = compare_64()
    r = ray_kill9_resume()
    out = {"benchmark": "draws", "cores": os.cpu_count() or 1,
           "load_1m_at_start": round(load_1m, 2),
           "compare_64_wall_s": round(c["wall_s"], 2),
           "compare_64_cpu_s": round(c["cpu_s"], 2),
           **{k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
