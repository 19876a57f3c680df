"""Run every benchmark in benchmarks/ (one process each, pinned to one core when possible)
and rewrite benchmarks/RESULTS.md with the figures, the machine and the commands."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS: dict[str, dict[str, float | tuple[str, float]]] = {
    "large_sync_1024": {"wall_s": 60.0, "peak_rss_mb": 2048.0},
    "async_agentic_1024": {"wall_s": 60.0},
    "validate_quick": {"wall_s": 180.0, "sync_abs_error": 0.10, "one_off_abs_error": 0.10,
                       "speedup_abs_error": 0.10},
    # A target is an upper bound, or (">=", bound) for a figure that must reach it.
    "sweep_grid_24": {"speedup_jobs2": (">=", 1.6)},
    "report_1m_spans": {"render_s": 30.0, "html_mb": 30.0, "downsampled_note": (">=", 1)},
    "rollpacker_runs": {"max_run_wall_s": 10.0},
    "placement_2000": {"decide_s": 1.0},
}


def verdict(value: float, target: float | tuple[str, float] | None) -> str:
    if target is None:
        return ""
    op, bound = target if isinstance(target, tuple) else ("<=", target)
    met = value >= bound if op == ">=" else value <= bound
    return f"{op} {bound:g} " + ("(met)" if met else "(MISSED)")


def main() -> None:
    rows = []
    for script in sorted(HERE.glob("bench_*.py")):
        cmd = [sys.executable, str(script.relative_to(HERE.parent))]
        if os.path.exists("/usr/bin/taskset") and "ALL_CORES = True" not in script.read_text():
            cmd = ["taskset", "-c", "0", *cmd]
        print("running", " ".join(cmd), file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, cwd=HERE.parent, capture_output=True, text=True, check=True)
        rows.append((" ".join(cmd).replace(sys.executable, "python"),
                     json.loads(proc.stdout.strip().splitlines()[-1])))
    cpu = platform.processor() or platform.machine()
    try:
        model = next(line.split(":", 1)[1].strip() for line in
                     Path("/proc/cpuinfo").read_text().splitlines() if "model name" in line)
        cpu = model
    except (OSError, StopIteration):
        pass
    lines = [
        "# Benchmark results",
        "",
        f"Written by `make bench` on {time.strftime('%Y-%m-%d')}; machine: {cpu}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}. Each benchmark runs in its "
        "own process on one core (taskset) unless it needs them all (validate, sweep). "
        "This VM's timings vary 10-40% between runs.",
        "",
    ]
    for cmd, r in rows:
        target = TARGETS.get(r["benchmark"], {})
        lines += [f"## {r['benchmark']}", "", f"Command: `{cmd}`", "",
                  "| figure | value | target |", "|---|---|---|"]
        for key, value in r.items():
            if key == "benchmark":
                continue
            lines.append(f"| {key} | {value} | {verdict(value, target.get(key))} |")
        lines.append("")
    (HERE / "RESULTS.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
