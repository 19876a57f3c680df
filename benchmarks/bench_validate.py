"""Live validation as a benchmark: `rlsim validate --quick`, its errors against the 10% bound.

Prints one JSON line: wall time and the absolute end-to-end errors (sync, one_off, and the
one_off speedup). Needs every core (the live job runs two processes), so run_all.py does
not pin it; the bound is checked here and in reports/validation.md, never in a unit test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ALL_CORES = True  # run_all.py: do not pin this benchmark to one core


def main() -> None:
    out = Path("runs/bench-validate")
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "validate", "--quick", "--json", "--out", str(out),
         "--report", str(out / "validation.md")],
        capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    data = json.loads(proc.stdout)
    modes = data["modes"]
    print(json.dumps({
        "benchmark": "validate_quick",
        "wall_s": round(wall, 1),
        "sync_abs_error": round(abs(modes["sync"]["error"]), 4),
        "one_off_abs_error": round(abs(modes["one_off"]["error"]), 4),
        "speedup_abs_error": round(abs(data["speedup_one_off"]["error"]), 4),
        "live_sync_step_s": round(modes["sync"]["live_step_s"], 4),
        "live_one_off_step_s": round(modes["one_off"]["live_step_s"], 4),
    }))


if __name__ == "__main__":
    main()
