"""Reading a fleet scenario: templates merged into jobs, a job-arrival trace expanded.

Owns the steps between a fleet YAML file and a validated `FleetScenario`: `--set`
overrides, `jobs[].template` (a deep merge of the named template under the job's own
fields), and `trace` (a CSV or Parquet file whose rows become jobs). Errors name the field
or the trace row, as `ScenarioError`.
"""

from __future__ import annotations

import copy
import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from rlsim.config.errors import ScenarioError
from rlsim.config.loading import (
    apply_override,
    format_validation_error,
    parse_yaml,
    read_text_file,
    read_yaml_file,
    reject_bool_numbers,
)

if TYPE_CHECKING:
    from rlsim.config.fleet import FleetScenario

_RESERVED = {"name", "arrival_s", "template", "slo", "steps", "duration_h"}


def is_fleet(data: Any) -> bool:
    """Whether a parsed scenario mapping is a multi-job (fleet) scenario."""
    return isinstance(data, dict) and data.get("kind") == "fleet"


def merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`base` with `top` merged in, mapping by mapping (a copy; neither is changed): what a
    fleet job gives over its template, and an `rlsim import --set` mapping over the
    config's."""
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _from_template(job: dict[str, Any], templates: dict[str, Any], where: str) -> dict[str, Any]:
    name = job.get("template")
    if name is None:
        return job
    if not isinstance(name, str) or name not in templates:
        raise ScenarioError(f"{where}.template", f"no template named {name!r}; templates: "
                            f"{', '.join(sorted(map(str, templates))) or 'none'}")
    if not isinstance(templates[name], dict):
        raise ScenarioError(f"templates.{name}", "must be a mapping of job fields (a partial "
                            "job)")
    rest = {k: v for k, v in job.items() if k != "template"}
    return merged(templates[name], rest)


def _read_templates(path: Path) -> Any:
    try:
        return read_yaml_file(path, "templates")
    except ScenarioError as err:
        raise ScenarioError("templates", f"cannot read {path}: {err.message}") from None


def _cell(text: str) -> Any:
    """A CSV cell as a YAML scalar (numbers, booleans, lists), or the text itself."""
    try:
        return parse_yaml(text, "")
    except ScenarioError:
        return text


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """The trace's rows; a ScenarioError naming the file (and row) when it is not a CSV or
    Parquet table."""
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            return [dict(r) for r in pq.read_table(path).to_pylist()]
        except (OSError, pa.ArrowException) as err:
            raise ScenarioError("trace.path", f"{path} is not a readable Parquet file "
                                f"({str(err).splitlines()[0]}); give a CSV or Parquet table") \
                from None
    try:
        text = read_text_file(path, "trace").encode("utf-8", "replace").decode("utf-8")
    except ScenarioError as err:
        raise ScenarioError("trace.path", f"{path}: {err.message}") from None
    if "\ufffd" in text:
        raise ScenarioError("trace.path", f"{path} is not UTF-8 text; give a CSV or Parquet "
                            "table")
    rows: list[dict[str, Any]] = []
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        for i, row in enumerate(reader):
            if None in row or None in row.values():
                raise ScenarioError(f"trace row {i + 1}", f"{path} line {reader.line_num}: "
                                    "a different number of cells than the header has "
                                    "columns; give one cell per column")
            rows.append({str(k): _cell(v) if v != "" else None for k, v in row.items()})
    except csv.Error as err:
        raise ScenarioError("trace.path", f"{path} line {reader.line_num}: malformed CSV "
                            f"({err})") from None
    return rows


def _trace_jobs(spec: Any, base: Path) -> list[dict[str, Any]]:
    if not isinstance(spec, dict) or "path" not in spec or set(spec) - {"path"}:
        raise ScenarioError("trace", "give `trace: {path: FILE.csv}` (CSV or Parquet)")
    path = base / str(spec["path"])
    if not path.is_file():
        raise ScenarioError("trace.path", f"{path} not found or not a regular file; give a "
                            "CSV or Parquet file relative to the scenario")
    jobs = []
    for i, row in enumerate(_read_rows(path)):
        where = f"trace row {i + 1}"
        if row.get("name") is None or row.get("template") is None:
            raise ScenarioError(where, "needs `name` and `template` columns")
        job: dict[str, Any] = {"name": str(row["name"]), "template": row["template"]}
        # Values go to the schema as written, so a bad one is reported there, not coerced.
        for column, field in (("arrival_s", "arrival"), ("slo", "slo"), ("steps", "steps")):
            if row.get(column) is not None:
                job[field] = row[column]
        if row.get("duration_h") is not None:
            hours = row["duration_h"]
            if isinstance(hours, bool) or not isinstance(hours, int | float):
                raise ScenarioError(f"{where}.duration_h", f"expected a number of hours, got "
                                    f"{hours!r}")
            job["duration"] = float(hours) * 3600.0
        for key, value in row.items():
            if key not in _RESERVED and value is not None:
                try:
                    apply_override(job, f"{key}={yaml.safe_dump(value).strip()}")
                except ScenarioError as err:
                    raise ScenarioError(f"{where}.{key}", err.message) from None
        jobs.append(job)
    if not jobs:
        raise ScenarioError("trace.path", f"{path} has no rows")
    return jobs


def fleet_from_dict(data: dict[str, Any], overrides: list[str] | None = None,
                    base_dir: Path | None = None,
                    source: str | None = None) -> tuple[FleetScenario, Path]:
    """Validate a fleet mapping (after overrides, templates and trace expansion)."""
    data = copy.deepcopy(data)
    base = base_dir or Path.cwd()
    try:
        for assignment in overrides or []:
            apply_override(data, assignment)
        templates = data.get("templates") or {}
        if isinstance(templates, str):
            templates = _read_templates(base / templates)
            data["templates"] = templates
        if not isinstance(templates, dict):
            raise ScenarioError("templates", "must be a mapping of name -> partial job, or a "
                                "YAML file of them")
        jobs = data.get("jobs") or []
        if not isinstance(jobs, list):
            raise ScenarioError("jobs", "must be a list of jobs")
        if "trace" in data:
            jobs = jobs + _trace_jobs(data.pop("trace"), base)
        data["jobs"] = [_from_template(j, templates, f"jobs.{i}") if isinstance(j, dict) else j
                        for i, j in enumerate(jobs)]
        # Imported here: `is_fleet` is asked by every command, most of them on single jobs.
        from rlsim.config.fleet import FleetScenario

        reject_bool_numbers(FleetScenario, data)
        scenario = FleetScenario.model_validate(data)
    except ValidationError as err:
        e = format_validation_error(err)
        field, message = e.field, e.message
        head, sep, rest = message.partition(": ")
        if field == "scenario" and sep and " " not in head:  # a cross-field check's path
            field, message = head, rest
        raise ScenarioError(field, message, source) from None
    except ScenarioError as err:
        raise ScenarioError(err.field, err.message, err.source or source) from None
    return scenario, base


def load_fleet(path: str | Path, overrides: list[str] | None = None
               ) -> tuple[FleetScenario, Path]:
    """Read and validate a fleet scenario file; returns it with its base directory."""
    p = Path(path)
    data = read_yaml_file(p)
    if not is_fleet(data):
        raise ScenarioError("kind", "a fleet scenario needs `kind: fleet`", str(path))
    return fleet_from_dict(data, overrides, p.resolve().parent, str(path))
