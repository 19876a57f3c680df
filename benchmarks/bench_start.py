"""Benchmark: how fast a small command starts and ends (issue 40, "Fast start").

`rlsim run scenarios/quickstart.yaml --set steps=2`, the whole command as a user types it
(interpreter start, imports, the run, its summary printed), timed by wall clock `RUNS` times
after one warm-up run (the file cache warm), the minimum kept. Beside it: the same run with
`--out DIR --force` (report, records and trace written) and `rlsim --version`, the floor
every command pays (interpreter, typer, rlsim's command table). Target: the run within
0.5 s of wall time. rlsim's byte code must be written (`make setup` does it): without it,
with PYTHONDONTWRITEBYTECODE set, every start compiles ~300 modules (~0.1 s).

run_all.py pins it to one core like the others; the command itself is single-threaded.
Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "quickstart.yaml"
RUNS = 7
REPEATS_ITSELF = True  # run_all.py: the minimum of RUNS runs is kept here
RLSIM = Path(sys.executable).with_name("rlsim")


def wall_s(args: list[str]) -> float:
    """Wall seconds of one `rlsim ARGS`, its output discarded; raises if it fails."""
    t0 = time.perf_counter()
    subprocess.run([str(RLSIM), *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main(runs: int = RUNS) -> dict[str, object]:
    load_1m = os.getloadavg()[0]
    out = Path(tempfile.mkdtemp(prefix="rlsim-bench-start-"))
    run = ["run", str(SCENARIO), "--set", "steps=2"]
    written = [*run, "--out", str(out / "run"), "--force"]
    try:
        wall_s(written)  # warm-up: the file cache
        version = min(wall_s(["--version"]) for _ in range(runs))
        quick = min(wall_s(run) for _ in range(runs))
        files = min(wall_s(written) for _ in range(runs))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {"benchmark": "start", "runs": runs, "load_1m_at_start": round(load_1m, 2),
            "version_wall_s": round(version, 3), "quickstart_run_wall_s": round(quick, 3),
            "quickstart_run_out_wall_s": round(files, 3)}


if __name__ == "__main__":
    print(json.dumps(main()))
