"""Run every benchmark in benchmarks/ (one process each, pinned to one core when possible)
and rewrite benchmarks/RESULTS.md with the figures, the machine and the commands.

`python benchmarks/run_all.py bench_placement ...` runs only the named scripts and keeps the
other benchmarks' sections of RESULTS.md as they were (each section says its own date)."""

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
    "placement_2000": {"decide_s": 0.4},  # CPU seconds of the decisions (issue 24)
}


def verdict(value: float, target: float | tuple[str, float] | None) -> str:
    if target is None:
        return ""
    op, bound = target if isinstance(target, tuple) else ("<=", target)
    met = value >= bound if op == ">=" else value <= bound
    return f"{op} {bound:g} " + ("(met)" if met else "(MISSED)")


def _kept_sections(names: set[str]) -> dict[str, list[str]]:
    """The sections of the current RESULTS.md whose benchmark is not re-run."""
    path = HERE / "RESULTS.md"
    if not path.exists():
        return {}
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), [])
        if current is not None:
            current.append(line)
    return {k: v for k, v in sections.items() if k not in names}


def main() -> None:
    only = set(sys.argv[1:])
    rows = []
    for script in sorted(HERE.glob("bench_*.py")):
        if only and script.stem not in only:
            continue
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
        f"Written by `make bench` on {time.strftime('%Y-%m-%d')} (a section re-run alone with "
        f"`python benchmarks/run_all.py NAME` gives its own date); machine: {cpu}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}. Each benchmark runs in its "
        "own process on one core (taskset) unless it needs them all (validate, sweep). "
        "This VM's timings vary 10-40% between runs.",
        "",
    ]
    fresh: dict[str, list[str]] = {}
    for cmd, r in rows:
        target = TARGETS.get(r["benchmark"], {})
        section = [f"## {r['benchmark']}", "", f"Command: `{cmd}` ({time.strftime('%Y-%m-%d')})",
                   "", "| figure | value | target |", "|---|---|---|"]
        for key, value in r.items():
            if key == "benchmark":
                continue
            section.append(f"| {key} | {value} | {verdict(value, target.get(key))} |")
        section.append("")
        fresh[r["benchmark"]] = section
    sections = {**(_kept_sections(set(fresh)) if only else {}), **fresh}
    for name in sorted(sections):
        lines += sections[name]
        if sections[name][-1] != "":
            lines.append("")
    (HERE / "RESULTS.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
