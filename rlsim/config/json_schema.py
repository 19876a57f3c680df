"""The JSON Schema of a scenario file as a user writes it (`rlsim schema`).

Owns what the pydantic models' own schema leaves out: unit strings ('2 s', '80 GiB') where a
model field takes numbers after parsing, and a fleet file's own forms (`templates:` as a
file, `jobs[].template` with the other fields optional, a `trace:`) that loading expands
before the fleet model sees them.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from rlsim.config import units
from rlsim.config.fleet import FleetScenario
from rlsim.config.scenario import Scenario


def scenario_json_schema(fleet: bool = False) -> dict[str, Any]:
    """The JSON Schema of a scenario file as written: unit strings ('2 s', '80 GiB') where
    the model takes numbers and, for a fleet, the file's own forms (`templates:` a YAML
    file, `jobs[].template`, a `trace:`) that loading expands before the model sees them."""
    examples = {units.parse_duration: "a duration with a unit, e.g. '250 ms', '2 min'",
                units.parse_size: "a size with a unit, e.g. '80 GiB', '512 MB'",
                units.parse_bandwidth: "a bandwidth with a unit, e.g. '400 Gb/s'"}

    class WithUnits(GenerateJsonSchema):
        def function_before_schema(self, schema: Any) -> Any:
            inner = super().function_before_schema(schema)
            fn = schema.get("function", {}).get("function")
            if fn in examples:
                return {"anyOf": [inner, {"type": "string", "description": examples[fn]}]}
            return inner

    if not fleet:
        out: dict[str, Any] = Scenario.model_json_schema(schema_generator=WithUnits)
        return out
    out = FleetScenario.model_json_schema(schema_generator=WithUnits)
    defs = out["$defs"]
    partial = _partial_def("JobConfig", defs)
    defs[partial]["properties"]["template"] = {
        "type": "string", "description": "Name of a `templates` entry this job starts from "
        "(a deep merge: the job's own fields win)."}
    props = out["properties"]
    props["templates"] = {
        "description": props["templates"].get("description", ""),
        "anyOf": [{"type": "object", "additionalProperties": {"$ref": f"#/$defs/{partial}"}},
                  {"type": "string", "description": "a YAML file of templates, relative to "
                   "the scenario"}]}
    props["jobs"]["items"] = {"if": {"type": "object", "required": ["template"]},
                              "then": {"$ref": f"#/$defs/{partial}", "required": ["name"]},
                              "else": {"$ref": "#/$defs/JobConfig"}}
    props["trace"] = {
        "type": "object", "additionalProperties": False, "required": ["path"],
        "properties": {"path": {"type": "string"}},
        "description": "A CSV or Parquet file (relative to the scenario) of one job per row: "
        "name, arrival_s, template, slo, steps or duration_h, dotted job fields as columns."}
    out["required"] = [r for r in out.get("required", []) if r != "jobs"]
    out["anyOf"] = [{"required": ["jobs"]}, {"required": ["trace"]}]
    return out


def _partial_def(name: str, defs: dict[str, Any]) -> str:
    """Add `<name>Partial` to `defs`: the same object schema with no field required at any
    depth (a template, or a job that names one, gives only some fields). Its name."""
    target = f"{name}Partial"
    if target in defs:
        return target
    defs[target] = {}  # placeholder: a recursive reference finds it

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: strip(v) for k, v in node.items()
                   if not (k == "required" and isinstance(v, list))}
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                out["$ref"] = f"#/$defs/{_partial_def(ref.removeprefix('#/$defs/'), defs)}"
            return out
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    defs[target] = strip(copy.deepcopy(defs[name]))
    return target
