"""Reading scenarios: YAML files, `--set key=value` overrides, and one-line error messages.

Owns turning a file plus overrides into a validated `Scenario`, and turning every way that
can fail (missing file, bad YAML, unknown key, wrong unit, impossible placement) into a
`ScenarioError` naming the field path and the fix. Validation has no side effects.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import math
import os
import types
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from rlsim.config.errors import ScenarioError
from rlsim.config.placement import check_placement
from rlsim.config.profiles import resolve_pool_profiles
from rlsim.config.scenario import Scenario
from rlsim.config.unknowns import check_unknowns
from rlsim.config.yamlfile import (  # noqa: F401  (re-exported: callers import them here)
    MAX_SCENARIO_BYTES,
    MAX_YAML_ALIASES,
    MAX_YAML_DEPTH,
    parse_yaml,
    read_text_file,
    read_yaml_file,
)

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


def _numeric(annotation: Any) -> bool:
    """Whether a field annotation takes a number and not a boolean (bool is an int)."""
    args = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    return bool({int, float} & set(args)) and bool not in args


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def reject_bool_numbers(model: Any, data: Any, path: str = "") -> None:
    """A ScenarioError for a YAML boolean (`steps: true`) where `model` has a number field.

    pydantic's lax mode reads true as 1, so the mistake would run silently; strict mode would
    refuse it but also refuse '250 ms' strings and paths as text. Walks `data` along the
    model's fields (nested models, lists, dicts and unions of them).
    """
    if not isinstance(data, dict):
        return
    fields = getattr(model, "model_fields", {})
    for key, value in data.items():
        if key in fields:
            _check_value(fields[key].annotation, value, f"{path}{key}")


def _check_value(annotation: Any, value: Any, path: str) -> None:
    if isinstance(value, bool):
        if _numeric(annotation):
            raise ScenarioError(path, f"expected a number, got {str(value).lower()} (a YAML "
                                "boolean); write a number")
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        _check_value(args[0], value, path)
    elif _is_union(annotation):
        members = [a for a in args if a is not type(None)]
        models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
        if isinstance(value, dict) and models:
            tag = value.get("dist")  # the length distributions' discriminator
            for m in models:
                field = m.model_fields.get("dist")
                if tag is None or field is None or tag in typing.get_args(field.annotation):
                    reject_bool_numbers(m, value, f"{path}.")
                    return
        else:
            for m in members:
                if typing.get_origin(m) in (list, dict, typing.Annotated):
                    _check_value(m, value, path)
    elif origin is list and isinstance(value, list) and args:
        for i, item in enumerate(value):
            _check_value(args[0], item, f"{path}.{i}")
    elif origin is dict and isinstance(value, dict) and len(args) == 2:
        for k, item in value.items():
            _check_value(args[1], item, f"{path}.{k}")
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        reject_bool_numbers(annotation, value, f"{path}.")


def _float_text(value: Any) -> float | None:
    """`value` as a float when it is text that reads as a finite number, else None."""
    if not isinstance(value, str):
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _rank(error: Any) -> int:
    """Which pydantic error to report first: an unknown key (a misspelled one also makes
    its intended field "missing": the typo is the news), then errors on the path the user
    wrote, then a union member's type mismatch."""
    if error["type"] == "extra_forbidden":
        return 0
    return 2 if error["type"] in {"string_type", "model_type", "dict_type"} else 1


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field annotation may hold (through Optional, unions,
    Annotated, list and dict values)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _models(args[0])
    if origin is dict and len(args) == 2:
        return _models(args[1])
    if origin is list or _is_union(annotation):
        return [m for a in args for m in _models(a)]
    return []


def known_keys(model: type[BaseModel], loc: list[str]) -> list[str]:
    """The keys a mapping at `loc` (a path of field names, list indices and pydantic's union
    tags) accepts, aliases included; [] where the path leaves the schema."""
    models = [model]
    for part in loc:
        if part.isdigit() or not models:
            continue  # a list item: the same models
        inner = [m for m in models if part in m.model_fields]
        if inner:
            models = [n for m in inner for n in _models(m.model_fields[part].annotation)]
        else:  # a union member's name or tag in the path: keep the member it names
            named = [m for m in models if m.__name__ == part or part in typing.get_args(
                getattr(m.model_fields.get("dist"), "annotation", None))]
            models = named or models
    keys: list[str] = []
    for m in models:
        for name, field in m.model_fields.items():
            keys.append(name)
            alias = field.validation_alias
            keys += [a for a in getattr(alias, "choices", []) if isinstance(a, str)]
    return list(dict.fromkeys(keys))


def _unknown_key(loc: list[str], raw_loc: list[str]) -> str:
    """The message for an unknown key at `loc`: the closest known key, if one is close."""
    known = known_keys(Scenario, raw_loc[:-1])
    close = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.6) if loc else []
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown field; {hint}check the spelling (rlsim schema lists every field)"


def format_validation_error(err: ValidationError) -> ScenarioError:
    """The first pydantic error as a ScenarioError with a dotted field path (an unknown key
    first, with the closest known key)."""
    errors = err.errors()
    errors.sort(key=_rank)
    first = errors[0]
    raw_loc = [str(p) for p in first["loc"]]
    loc = [p for p in raw_loc if p not in _UNION_TAGS]
    loc = [p for p in loc if not p.startswith(("tagged-union", "function-"))]
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = _unknown_key(loc, raw_loc)
    elif first["type"] == "missing":
        message = "required field is missing"
    elif first["type"] == "int_parsing" and _float_text(first.get("input")) is not None:
        # YAML 1.1 reads 1e8 (no decimal point) as text, not as a number
        whole = _float_text(first.get("input"))
        message = (f"expected a whole number, got the text {first['input']!r}; write it out"
                   + (f", e.g. {whole:.0f}" if whole is not None and whole.is_integer()
                      and abs(whole) < 1e18 else ""))
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
        base = base_dir or Path.cwd()
        reject_bool_numbers(Scenario, data)
        # The base directory resolves relative files in fields, e.g. a `model:` file.
        scenario = Scenario.model_validate(data, context={"base_dir": base})
        scenario = resolve_pool_profiles(scenario, base)
        check_placement(scenario, base)
        if scenario.unknowns:
            check_unknowns(scenario, data, lambda trial: scenario_from_dict(trial, None, base),
                           apply_override)
    except ValidationError as err:
        raise _with_source(format_validation_error(err), source) from None
    except ScenarioError as err:
        raise _with_source(err, source) from None
    return scenario, base


def _with_source(err: ScenarioError, source: str | None) -> ScenarioError:
    return ScenarioError(err.field, err.message, err.source or source)


FILE_KEYS: tuple[str, ...] = ("path", "model", "profile")
"""Scenario keys whose value may name a file, relative to the scenario's folder: `path`
always, `model` and `profile` when such a file exists (else a catalogue entry)."""


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in blocks (a trace may be large): the hash `--resume`
    compares for the scenario file and every file it names."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def named_file_digests(data: dict[str, Any], base: Path, overrides: tuple[str, ...] = (),
                       assignments: tuple[str, ...] = ()) -> dict[str, str]:
    """Resolved path -> sha256 of every file a scenario mapping names under `FILE_KEYS`
    (traces, profiles, model files; every file under a folder it names, such as a trace
    folder), with its `--set` `overrides` applied, and of every file one of the
    `assignments` (grid settings, each alone) names. What `--resume`
    compares beside the scenario file's own hash: an edited trace or profile would
    otherwise mix results of two inputs in one set of runs. An override that cannot be
    applied is skipped (the runs report it)."""
    node = copy.deepcopy(data)
    for assignment in overrides:
        try:
            apply_override(node, assignment)
        except ScenarioError:
            continue
    found: set[Path] = set()

    def add(value: Any) -> None:
        if isinstance(value, str) and value:
            p = Path(value)
            p = p if p.is_absolute() else base / p
            if p.is_file():
                found.add(p.resolve())
            elif p.is_dir():
                found.update(f.resolve() for f in p.rglob("*") if f.is_file())

    def walk(n: Any) -> None:
        if isinstance(n, dict):
            for k, v in n.items():
                if k in FILE_KEYS:
                    add(v)
                else:
                    walk(v)
        elif isinstance(n, list):
            for v in n:
                walk(v)

    walk(node)
    for assignment in assignments:
        key, _, raw = assignment.partition("=")
        if key.strip().rsplit(".", 1)[-1] in FILE_KEYS:
            try:
                add(yaml.safe_load(raw) if raw.strip() else None)
            except yaml.YAMLError:
                add(raw)
    return {str(p): file_sha256(p) for p in sorted(found)}


def rebase_paths(node: Any, base: Path, to: Path | None = None,
                 keys: tuple[str, ...] = ("path",)) -> Any:
    """`node` (a scenario mapping) for a file written in another folder: each relative
    `path` value, resolved against `base`, made absolute, or relative to the folder `to`.
    Other `keys` (`model`, `profile`) name a file or a catalogue entry: they are rebased only
    when the file exists under `base`."""
    def moved(key: str, value: str) -> str:
        p = Path(value)
        if p.is_absolute() or (key != "path" and not (base / p).exists()):
            return value
        target = (base / p).resolve()
        return os.path.relpath(target, to.resolve()) if to is not None else str(target)

    if isinstance(node, dict):
        return {k: moved(k, v) if k in keys and isinstance(v, str)
                else rebase_paths(v, base, to, keys) for k, v in node.items()}
    if isinstance(node, list):
        return [rebase_paths(v, base, to, keys) for v in node]
    return node


def load_scenario(path: str | Path, overrides: list[str] | None = None) -> tuple[Scenario, Path]:
    """Read, override and validate a scenario file; returns it with its base directory."""
    p = Path(path)
    src = str(path)
    text = read_text_file(p)
    if not text.strip():
        raise ScenarioError("", "file is empty; a scenario needs at least model, pools, "
                            "rollout, train and workload", src)
    data = parse_yaml(text, src)
    return scenario_from_dict(data, overrides, p.resolve().parent, src)
