"""A saved run as the report reads it: summary, resolved scenario and records.

Owns reading a run folder (`rlsim run --out DIR`) and refusing an incomplete one with a
one-line ScenarioError (summary.json is written last, so its absence means the run never
finished writing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlsim.config.errors import ScenarioError
from rlsim.trace import Recorder
from rlsim.trace.sinks import read_parquet


@dataclass
class RunData:
    """One run for the report. `scenario` is the resolved scenario as a plain dict."""

    name: str
    summary: dict[str, Any]
    recorder: Recorder
    scenario: dict[str, Any]


def is_run_dir(path: Path) -> bool:
    return (path / "summary.json").is_file()


def load_run(run_dir: Path) -> RunData:
    """Read a run folder; a folder without summary.json or records is a user mistake."""
    run_dir = Path(run_dir)
    if not is_run_dir(run_dir):
        raise ScenarioError("RUN_DIR", f"{run_dir} has no summary.json: not a complete rlsim "
                            "run folder; run `rlsim run ... --out DIR` first")
    records = run_dir / "records.parquet"
    if not records.is_file():
        raise ScenarioError("RUN_DIR", f"{run_dir} has no records.parquet: not a complete "
                            "rlsim run folder; run `rlsim run ... --out DIR` again")
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ScenarioError("RUN_DIR", f"{run_dir}/summary.json is unreadable ({err}); run "
                            "`rlsim run ... --out DIR` again") from None
    scenario_path = run_dir / "scenario.resolved.yaml"
    scenario: dict[str, Any] = {}
    if scenario_path.is_file():
        loaded = yaml.safe_load(scenario_path.read_text(encoding="utf-8"))
        scenario = loaded if isinstance(loaded, dict) else {}
    try:
        recorder = read_parquet(records)
    except (OSError, ValueError) as err:
        raise ScenarioError("RUN_DIR", f"{records} is unreadable ({err}); run "
                            "`rlsim run ... --out DIR` again") from None
    name = run_dir.resolve().name or str(scenario.get("name", "run"))
    return RunData(name=name, summary=summary, recorder=recorder, scenario=scenario)
