"""A fleet run's folder and its printed table.

Owns writing a fleet run's outputs (scenario.resolved.yaml, records.parquet, trace.json,
report.html, then summary.json, whose presence marks a complete folder) and the plain-text
side-by-side table the command line prints for one or several fleet runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from rlsim.config.errors import ScenarioError
from rlsim.fleet import FleetResult
from rlsim.report.fleet import write_fleet_report
from rlsim.report.perfetto import write_chrome_trace
from rlsim.report.text import aligned
from rlsim.trace.sinks import write_parquet


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_fleet_run(result: FleetResult, out_dir: Path, name: str | None = None) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ScenarioError("--out", f"cannot write run folder {str(out_dir)!r}: "
                            f"{err.strerror or err}") from None
    _write_text(out_dir / "scenario.resolved.yaml",
                yaml.safe_dump(result.scenario.dump(), sort_keys=False))
    write_parquet(result.recorder, out_dir / "records.parquet")
    write_chrome_trace(result.recorder, out_dir / "trace.json")
    write_fleet_report(name or result.scenario.name, result.summary, result.recorder,
                       out_dir / "report.html")
    _write_text(out_dir / "summary.json", json.dumps(result.summary, indent=2) + "\n")


def format_fleet_table(summaries: list[dict[str, Any]], names: list[str]) -> str:
    base = summaries[0]["cost"]["samples_per_usd"]
    rows = [
        ("policy", lambda s: str(s["policy"])),
        ("jobs", lambda s: str(s["jobs"])),
        ("run length (h)", lambda s: f"{s['sim_time_s'] / 3600:.2f}"),
        ("cost ($)", lambda s: f"{s['cost']['usd_total']:.1f}"),
        ("cost ($/h)", lambda s: f"{s['cost']['usd_per_hour']:.1f}"),
        ("samples per $", lambda s: f"{s['cost']['samples_per_usd']:.1f}"),
        ("samples/s", lambda s: f"{s['throughput']['samples_per_s']:.2f}"),
        ("SLO attainment", lambda s: f"{s['slo_attainment']:.0%}"),
        ("slowdown mean", lambda s: f"{s['slowdown']['mean']:.3f}"),
        ("slowdown max", lambda s: f"{s['slowdown']['max']:.3f}"),
        ("placements", lambda s: " ".join(f"{k}={v}" for k, v in s["placements"].items())),
        ("peak GPUs", lambda s: " ".join(f"{k}={v}" for k, v in s["gpus_peak"].items())),
        ("busy share", lambda s: " ".join(f"{k}={v:.0%}"
                                          for k, v in s["busy_fraction"].items())),
        ("wall (s)", lambda s: f"{s['wall_s']:.2f}"),
        ("samples per $ vs first", lambda s: f"{s['cost']['samples_per_usd'] / base:.2f}x"
         if base else "-"),
    ]
    table = [["metric", *names]] + [[label, *(fn(s) for s in summaries)] for label, fn in rows]
    return aligned(table)
