"""`make validate-quick-check`: `rlsim validate --quick` several times in a row, each run's
end-to-end error per mode, and whether every one is within the limit.

The acceptance check of the live validation (docs/validation.md): on an idle machine, three
quick runs in a row each predict every mode's step time within 10%. Each run is a fresh
`rlsim validate --quick` (its own calibration, its own live repeats) in `OUT/run-N/`; this
script only reads their `validation.json`. Exit 0 when all are within the limit, 1 if not.

    .venv/bin/python -m calibration.live.check_quick [--runs 3] [--limit 0.10] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def run_once(out: Path) -> dict[str, Any]:
    """One `rlsim validate --quick` into `out`; its JSON result."""
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "validate", "--quick", "--json",
                           "--out", str(out)], stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"check_quick: rlsim validate exited {proc.returncode} ({out})")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def verdict(results: list[dict[str, Any]], limit: float) -> tuple[list[str], bool]:
    """One line per run (each mode's error, live spread and neighbours' load) and whether
    every mode of every run is within `limit`."""
    lines, ok = [], True
    for i, data in enumerate(results):
        cells = []
        for mode, r in data["modes"].items():
            err = r["error"]
            ok = ok and err is not None and abs(err) <= limit
            other = [x for x in r.get("other_cores_each", []) if x is not None]
            shown = "n/a" if err is None else f"{err * 100:+.1f}%"
            cells.append(f"{mode} {shown} (live spread "
                         f"{r.get('live_step_s_spread', 0.0) * 100:.0f}%"
                         + (f", others {max(other):.2f} cores" if other else "") + ")")
        lines.append(f"run {i + 1}: " + ", ".join(cells))
    return lines, ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=float, default=0.10, help="largest |error| per mode")
    ap.add_argument("--out", type=Path, default=Path("runs/validate-quick-check"))
    args = ap.parse_args(argv)
    results = []
    for i in range(args.runs):
        t0 = time.perf_counter()
        results.append(run_once(args.out / f"run-{i + 1}"))
        lines, _ = verdict(results[-1:], args.limit)
        print(lines[0].replace("run 1", f"run {i + 1}") +
              f" [{time.perf_counter() - t0:.0f} s]", flush=True)
    _, ok = verdict(results, args.limit)
    print(f"{'PASS' if ok else 'FAIL'}: every mode of {args.runs} runs in a row "
          f"{'within' if ok else 'NOT all within'} {args.limit * 100:.0f}%")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
