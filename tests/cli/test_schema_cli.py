"""`rlsim schema`: the printed JSON Schemas accept every shipped scenario file as written
(unit strings, fleet templates and traces) and reject what loading rejects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlsim.config.fleet_loading import is_fleet
from tests.cli.test_bad_input import run_cli

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
FILES = sorted(p for p in SCENARIOS.rglob("*.yaml")
               if "job-types" not in p.name and not p.name.endswith(".model.yaml"))
FLEETS = [p for p in FILES if is_fleet(yaml.safe_load(p.read_text()))]


def _schema(monkeypatch, capsys, *flags: str) -> Any:
    """A validator of the schema `rlsim schema FLAGS` prints, once that schema is checked
    against its metaschema (jsonschema is a dev dependency of ray's; skip without it).
    Checked once per schema, not per file: the check was most of this module's 40 s."""
    jsonschema = pytest.importorskip("jsonschema")
    code, out, err = run_cli(["schema", *flags], monkeypatch, capsys)
    assert code == 0, err
    schema = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator: Any, data: object) -> list[str]:
    """The validation errors of `data`."""
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(data)]


def test_shipped_scenarios_validate_against_the_printed_schemas(monkeypatch, capsys):
    single = _schema(monkeypatch, capsys)
    fleet = _schema(monkeypatch, capsys, "--fleet")
    assert len(FLEETS) >= 5 and len(FILES) > len(FLEETS)
    for path in FILES:
        data = yaml.safe_load(path.read_text())
        schema = fleet if path in FLEETS else single
        assert _errors(schema, data) == [], path
    # each kind's schema is its own: a fleet file is not a single job, nor the reverse
    assert _errors(single, yaml.safe_load(FLEETS[0].read_text()))
    assert _errors(fleet, yaml.safe_load((SCENARIOS / "quickstart.yaml").read_text()))


def test_fleet_schema_names_fleet_fields_and_rejects_bad_jobs(monkeypatch, capsys):
    fleet = _schema(monkeypatch, capsys, "--fleet")
    assert {"kind", "pools", "policy", "templates", "jobs", "trace"} <= set(
        fleet.schema["properties"])
    data = yaml.safe_load((SCENARIOS / "rollmux" / "temporal-rollmux.yaml").read_text())
    data["jobs"][0]["slo"] = "fast"
    data["jobs"].append({"name": "no-template"})  # a full job needs its own fields
    data["jobs"].append({"name": "t", "template": "type-a", "modle": "x"})
    errors = " ".join(_errors(fleet, data))
    assert "'fast' is not of type 'number'" in errors
    assert "'model' is a required property" in errors and "'modle' was unexpected" in errors
    data = yaml.safe_load((SCENARIOS / "quickstart.yaml").read_text())
    data["reward"]["timeout"] = True
    assert _errors(_schema(monkeypatch, capsys), data)


def test_schema_markdown_fleet_section(monkeypatch, capsys):
    code, whole, _ = run_cli(["schema", "--markdown"], monkeypatch, capsys)
    assert code == 0 and "## Fleet scenarios" in whole and "| `rollout.tp` |" in whole
    code, part, _ = run_cli(["schema", "--markdown", "--fleet"], monkeypatch, capsys)
    assert code == 0 and part.startswith("## Fleet scenarios") and whole.endswith(part)
    assert "| `profile_steps` |" in part
