"""Reading recorded rollouts ("rlsim rollouts", JSON lines): what a live RL run produced.

Owns the file format. One JSON object per line and per prompt group, in step order:

    {"step": 0, "prompt_tokens": 17, "samples": [
        {"turns": [{"response_tokens": 9, "env_s": 0.004, "obs_tokens": 6},
                   {"response_tokens": 5}],
         "reward_s": 0.0002}, ...]}

Every turn but the last is followed by an environment step of `env_s` seconds that appends
`obs_tokens` observation tokens (both default 0); the last turn has none. `reward_s`, the
measured reward latency, is optional. Steps are 0..N-1, contiguous and non-decreasing in file
order. Other keys of a line or a sample (a prompt id, the reward value) are ignored; a turn
accepts only its three keys, so a misspelt latency is an error rather than a silent 0.
Every mistake raises with the file and line: FileNotFoundError for a missing path,
ValueError for bad content. Lengths are returned as recorded; caps are the workload's job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsim.workload.groups import Turn
from rlsim.workload.jsonl import json_record

_TURN_KEYS = frozenset({"response_tokens", "env_s", "obs_tokens"})


@dataclass(frozen=True, slots=True)
class RecordedSample:
    """One recorded response: its turns and, if measured, its reward latency."""

    turns: tuple[Turn, ...]
    reward_s: float | None


@dataclass(frozen=True, slots=True)
class RecordedGroup:
    """One prompt group of a recorded step, with where it came from (for error messages)."""

    step: int
    prompt_tokens: int
    samples: tuple[RecordedSample, ...]
    file: Path
    line: int


def read_rollouts(path: Path) -> list[list[RecordedGroup]]:
    """The recorded groups of each step: element k holds step k's groups in file order."""
    if not path.exists():
        raise FileNotFoundError(f"rollouts file {path} not found")
    if path.is_dir():
        raise ValueError(f"{path} is a directory; the rollouts format reads one .jsonl file")
    text = path.read_text(encoding="utf-8")
    steps: list[list[RecordedGroup]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        group = _group(line, path, lineno)
        expected = len(steps) - 1
        if group.step == expected + 1:
            steps.append([])
        elif group.step != expected:
            want = "0" if not steps else f"{expected} or {expected + 1}"
            raise ValueError(
                f"{path}:{lineno}: step {group.step} where step {want} was expected; steps "
                "must run 0..N-1 in file order without gaps"
            )
        steps[-1].append(group)
    if not steps:
        raise ValueError(f"{path}:1: empty rollouts file")
    return steps


def load_rollouts(path: str | Path) -> list[list[RecordedGroup]]:
    """The recorded groups of each step of a rollouts file (see `read_rollouts`)."""
    return read_rollouts(Path(path))


def _group(line: str, file: Path, lineno: int) -> RecordedGroup:
    where = f"{file}:{lineno}"
    record = json_record(line, where)
    step = _count(record.get("step"), where, "step", minimum=0)
    prompt = _count(record.get("prompt_tokens"), where, "prompt_tokens", minimum=1)
    raw = record.get("samples")
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: `samples` must be a non-empty list of sample objects")
    samples = tuple(_sample(s, where, f"samples[{i}]") for i, s in enumerate(raw))
    return RecordedGroup(step, prompt, samples, file, lineno)


def _sample(raw: Any, where: str, field: str) -> RecordedSample:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: `{field}` must be an object with `turns`")
    turns = raw.get("turns")
    if not isinstance(turns, list) or not turns:
        raise ValueError(f"{where}: `{field}.turns` must be a non-empty list of turn objects")
    last = len(turns) - 1
    parsed = tuple(_turn(t, where, f"{field}.turns[{i}]", i == last)
                   for i, t in enumerate(turns))
    reward = raw.get("reward_s")
    reward_s = None if reward is None else _seconds(reward, where, f"{field}.reward_s")
    return RecordedSample(parsed, reward_s)


def _turn(raw: Any, where: str, field: str, last: bool) -> Turn:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: `{field}` must be an object with `response_tokens`")
    unknown = sorted(set(raw) - _TURN_KEYS)
    if unknown:
        raise ValueError(f"{where}: `{field}` has unknown key(s) {', '.join(unknown)}; a turn "
                         "takes response_tokens, env_s and obs_tokens")
    response = _count(raw.get("response_tokens"), where, f"{field}.response_tokens", minimum=1)
    env_s = _seconds(raw.get("env_s", 0.0), where, f"{field}.env_s")
    obs = _count(raw.get("obs_tokens", 0), where, f"{field}.obs_tokens", minimum=0)
    if last and (env_s > 0 or obs > 0):
        raise ValueError(
            f"{where}: `{field}` is the sample's last turn but has env_s={env_s} / "
            f"obs_tokens={obs}; an environment step follows every turn except the last, so "
            "drop them or record the turn that followed"
        )
    return Turn(response, env_s, obs)


def _count(value: Any, where: str, field: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{where}: `{field}` must be an integer >= {minimum}, got {value!r}")
    return value


def _seconds(value: Any, where: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: `{field}` must be a number of seconds >= 0, got {value!r}")
    return float(value)
