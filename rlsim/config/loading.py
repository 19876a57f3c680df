"""Reading scenarios: YAML files, `--set key=value` overrides, and one-line error messages.

Owns turning a file plus overrides into a validated `Scenario`, and turning every way that
can fail (missing file, bad YAML, unknown key, wrong unit, impossible placement) into a
`ScenarioError` naming the field path and the fix. Validation has no side effects.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from rlsim.config.errors import ScenarioError
from rlsim.config.placement import check_placement
from rlsim.config.profiles import resolve_pool_profiles
from rlsim.config.scenario import Scenario

# Union members and discriminator tags that pydantic puts in error locations; a user
# thinks in field paths, so they are dropped from the path we print.
_UNION_TAGS = {"str", "GpuSpec", "ModelSpec", "int", "float", "function-after", "list[int]"}


def split_overrides(text: str) -> list[str]:
    """Split 'a=1,b=[1,2],c="x,y"' on commas outside brackets and quoted values.

    A quote opens a quoted value only where a YAML scalar starts (after '=', ',', '[', '{',
    ':' or a space), so an apostrophe inside a word ("it's") is plain text. Unbalanced
    brackets or quotes are an error rather than a silent merge of overrides.
    """
    parts: list[str] = []
    depth, quote = 0, ""
    cur: list[str] = []
    prev = "="
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'" and prev in "=,[{: ":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                raise ScenarioError("--set", f"unbalanced {ch!r} in {text!r}")
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            prev = ","
            continue
        cur.append(ch)
        prev = ch
    if quote or depth:
        raise ScenarioError("--set", f"unclosed {'quote' if quote else 'bracket'} in {text!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply one 'dotted.path=value' in place; list items are picked by index or `name`."""
    if "=" not in assignment:
        raise ScenarioError("--set", f"expected key=value, got {assignment!r}")
    key, raw = assignment.split("=", 1)
    key = key.strip()
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    parts = key.split(".")
    if not key or any(not p for p in parts):
        raise ScenarioError("--set", f"bad key {key!r}: use a dotted path like rollout.tp")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        node = _child(node, part, ".".join(parts[: i + 1]), create=True)
    last = parts[-1]
    if isinstance(node, list):
        idx = _list_index(node, last, key)
        node[idx] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ScenarioError(key, f"cannot set a field inside a {type(node).__name__}")


def _list_index(items: list[Any], part: str, path: str) -> int:
    if part.isdigit():
        idx = int(part)
        if idx >= len(items):
            raise ScenarioError(path, f"index {idx} out of range (list has {len(items)} items)")
        return idx
    for idx, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == part:
            return idx
    names = [str(i.get("name")) for i in items if isinstance(i, dict)]
    raise ScenarioError(path, f"no item named {part!r}; names: {', '.join(names) or 'none'}")


def _child(node: Any, part: str, path: str, create: bool) -> Any:
    if isinstance(node, list):
        return node[_list_index(node, part, path)]
    if not isinstance(node, dict):
        raise ScenarioError(path, f"cannot descend into a {type(node).__name__}")
    if part not in node or node[part] is None:
        if not create:
            raise ScenarioError(path, "no such field")
        node[part] = {}
    return node[part]


def format_validation_error(err: ValidationError) -> ScenarioError:
    """The first pydantic error as a ScenarioError with a dotted field path."""
    errors = err.errors()
    # Prefer an error on the path the user wrote over a union member's type mismatch.
    errors.sort(key=lambda e: 1 if e["type"] in {"string_type", "model_type", "dict_type"} else 0)
    first = errors[0]
    loc = [str(p) for p in first["loc"] if str(p) not in _UNION_TAGS]
    loc = [p for p in loc if not p.startswith(("tagged-union", "function-"))]
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown field; check the spelling (rlsim schema lists every field)"
    elif first["type"] == "missing":
        message = "required field is missing"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ScenarioError(".".join(loc) or "scenario", message + more)


def scenario_from_dict(
    data: Any, overrides: list[str] | None = None, base_dir: Path | None = None,
    source: str | None = None,
) -> tuple[Scenario, Path]:
    """Validate a scenario mapping (after overrides); returns it with its base directory."""
    if not isinstance(data, dict):
        raise ScenarioError("", "a scenario must be a YAML mapping of fields", source)
    data = copy.deepcopy(data)
    try:
        for assignment in overrides or []:
            apply_override(data, assignment)
        scenario = Scenario.model_validate(data)
        base = base_dir or Path.cwd()
        scenario = resolve_pool_profiles(scenario, base)
        check_placement(scenario, base)
    except ValidationError as err:
        raise _with_source(format_validation_error(err), source) from None
    except ScenarioError as err:
        raise _with_source(err, source) from None
    return scenario, base


def _with_source(err: ScenarioError, source: str | None) -> ScenarioError:
    return ScenarioError(err.field, err.message, err.source or source)


def load_scenario(path: str | Path, overrides: list[str] | None = None) -> tuple[Scenario, Path]:
    """Read, override and validate a scenario file; returns it with its base directory."""
    p = Path(path)
    src = str(path)
    if not p.exists():
        raise ScenarioError("", "file not found; `rlsim list scenarios` shows the shipped ones",
                            src)
    if p.is_dir():
        raise ScenarioError("", "is a directory; give a scenario .yaml file", src)
    text = p.read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        raise ScenarioError("", "file is empty; a scenario needs at least model, pools, "
                            "rollout, train and workload", src)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown place"
        problem = getattr(err, "problem", None) or "syntax error"
        raise ScenarioError("", f"invalid YAML at {where}: {problem}", src) from None
    return scenario_from_dict(data, overrides, p.resolve().parent, src)
