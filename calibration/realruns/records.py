"""Loads the measured public RL runs (tests/data/real-runs/runs.jsonl) into typed records.

Owns the record type and its timing keys; what a record means for a simulation is
translate.py's job. A value the source did not state is None, never a default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsim.workload.jsonl import json_record

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PATH = ROOT / "tests" / "data" / "real-runs" / "runs.jsonl"

# The phases a record may time, in seconds (the collection's README): veRL's timing_s keys,
# NeMo-RL's and slime's mapped onto them by the collector.
TIMING_KEYS = ("gen", "reward", "old_log_prob", "ref", "adv", "update_actor",
               "update_weights", "step", "testing")


@dataclass(frozen=True)
class RunRecord:
    """One measured run: the fields the translator reads, typed; the rest kept in `raw`."""

    id: str
    source_url: str
    framework: str
    complete: bool
    timing_s: dict[str, float]
    gpu: str | None = None
    gpus_total: int | None = None
    model: str | None = None
    algorithm: str | None = None
    train_batch_size: int | None = None   # prompts per step
    rollout_n: int | None = None          # responses per prompt
    max_prompt_len: int | None = None
    max_response_len: int | None = None
    response_len_mean: float | None = None
    rollout_tp: int | None = None
    actor_tp: int | None = None
    actor_pp: int | None = None
    train_backend: str | None = None
    use_kl: bool | None = None
    mode: str | None = None
    multi_turn: bool | None = None
    notes: str = ""
    missing: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def _opt(raw: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{where}: field {key!r} should be {kind.__name__}, got {value!r}; "
                         "fix the record")
    return value


def parse_record(raw: dict[str, Any], where: str = "record") -> RunRecord:
    """A RunRecord from one JSON object; ValueError naming the record and field if bad."""
    for key in ("id", "source_url", "framework"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ValueError(f"{where}: field {key!r} is required (a non-empty string)")
    where = f"{where} ({raw['id']})"
    timing = raw.get("timing") or {}
    if not isinstance(timing, dict):
        raise ValueError(f"{where}: field 'timing' should be an object of seconds")
    unknown = sorted(set(timing) - set(TIMING_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown timing key(s) {', '.join(unknown)}; known: "
                         f"{', '.join(TIMING_KEYS)}")
    for key, value in timing.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"{where}: timing.{key} should be seconds >= 0, got {value!r}")
    complete = raw.get("complete", False)
    if not isinstance(complete, bool):
        raise ValueError(f"{where}: field 'complete' should be true or false")
    return RunRecord(
        id=raw["id"], source_url=raw["source_url"], framework=raw["framework"],
        complete=complete, timing_s={k: float(v) for k, v in timing.items()},
        gpu=_opt(raw, "gpu", str, where), gpus_total=_opt(raw, "gpus_total", int, where),
        model=_opt(raw, "model", str, where), algorithm=_opt(raw, "algorithm", str, where),
        train_batch_size=_opt(raw, "train_batch_size", int, where),
        rollout_n=_opt(raw, "rollout_n", int, where),
        max_prompt_len=_opt(raw, "max_prompt_len", int, where),
        max_response_len=_opt(raw, "max_response_len", int, where),
        response_len_mean=_opt(raw, "response_len_mean", float, where),
        rollout_tp=_opt(raw, "rollout_tp", int, where),
        actor_tp=_opt(raw, "actor_tp", int, where), actor_pp=_opt(raw, "actor_pp", int, where),
        train_backend=_opt(raw, "train_backend", str, where),
        use_kl=_opt(raw, "use_kl", bool, where), mode=_opt(raw, "mode", str, where),
        multi_turn=_opt(raw, "multi_turn", bool, where),
        notes=_opt(raw, "notes", str, where) or "",
        missing=tuple(_opt(raw, "missing", list, where) or ()),
        raw=raw,
    )


def load_records(path: Path = DEFAULT_PATH) -> list[RunRecord]:
    """Every record of a runs.jsonl file, in file order; ids must be unique."""
    records: list[RunRecord] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            raw = json_record(line, f"{path}:{lineno}")
            records.append(parse_record(raw, f"{path.name}:{lineno}"))
    ids = [r.id for r in records]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"{path}: repeated record id(s) {', '.join(dupes)}")
    return records
