"""Reading PolyTrace multi-turn traces (`multiturn_workload_step_*.jsonl`, e.g. Search-R1).

Owns the file format of PolyTrace's agentic rollouts: one JSON object per line and per
sample, with `step`, `prompt_group_id`, `prompt_len` and `turns` (per turn
`completion_tokens`, `generation_prompt_len`, `total_len_after`), and `tool_calls` (per call
the `turn` it follows and its `latency_s`). Lines with `validate: true` are evaluation
samples and are skipped. Other keys (engine latencies, cached tokens, finish reasons) are
ignored: the simulator prices generation itself.

Each sample becomes a recorded trajectory (`RecordedSample`):
- turn t generates `completion_tokens` tokens;
- the environment step after turn t (every turn but the last) takes the summed latency of
  the tool calls made after turn t (Search-R1 issues them in one batch; a turn without a
  call has a 0 s step), and appends the tokens between the turn's end and the next turn's
  prompt: next `generation_prompt_len` - `total_len_after`, i.e. the tool's response plus
  the chat template's framing, exactly what the next prefill sees;
- tool calls after the last turn (a sample stopped by the turn or length limit) have no
  turn to feed and are dropped.
Samples are grouped into prompt groups by (`step`, `prompt_group_id`), in order of first
appearance. A group with fewer samples than a GRPO group needs (a step cut off mid-way, as
PolyTrace's step 5 is) is skipped, and the count of skipped groups is returned. Every
mistake raises with the file and line: FileNotFoundError for a missing path, ValueError for
bad content.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsim.workload.groups import Turn
from rlsim.workload.jsonl import json_record
from rlsim.workload.polytrace import trace_files
from rlsim.workload.rollouts import RecordedGroup, RecordedSample

FILE_PREFIX = "multiturn_workload"


@dataclass(frozen=True, slots=True)
class MultiTurnTrace:
    """The complete prompt groups of a trace, and how many incomplete ones were skipped."""

    groups: list[RecordedGroup]
    skipped_groups: int


def read_multiturn(path: Path, min_samples: int = 1) -> MultiTurnTrace:
    """Every training prompt group of the trace with >= min_samples samples, in order."""
    pending: dict[tuple[int, int], list[tuple[RecordedSample, int, Path, int]]] = {}
    for file in trace_files(path, FILE_PREFIX):
        text = file.read_text(encoding="utf-8")
        if not text.strip():
            raise ValueError(f"{file}:1: empty trace file")
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{file}:{lineno}"
            record = json_record(line, where)
            if record.get("validate", False):
                continue
            key = (_int(record.get("step"), where, "step", 0),
                   _int(record.get("prompt_group_id"), where, "prompt_group_id", 0))
            prompt = _int(record.get("prompt_len"), where, "prompt_len", 1)
            pending.setdefault(key, []).append((_sample(record, where), prompt, file, lineno))
    groups, skipped, widest = [], 0, 0
    for (step, _), samples in pending.items():
        widest = max(widest, len(samples))
        if len(samples) < min_samples:
            skipped += 1
            continue
        _, prompt, file, lineno = samples[0]
        groups.append(RecordedGroup(step, prompt, tuple(s for s, *_ in samples), file, lineno))
    if not groups:
        if not pending:
            raise ValueError(f"trace {path}: no training samples (every line is validate: true)")
        raise ValueError(
            f"trace {path}: no prompt group has {min_samples} samples (the largest has "
            f"{widest}); lower samples_per_prompt to at most {widest}")
    return MultiTurnTrace(groups, skipped)


def _sample(record: dict[str, Any], where: str) -> RecordedSample:
    raw_turns = record.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns:
        raise ValueError(f"{where}: `turns` must be a non-empty list of turn objects")
    env_s = [0.0] * len(raw_turns)
    calls = record.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ValueError(f"{where}: `tool_calls` must be a list of call objects")
    for i, call in enumerate(calls):
        if not isinstance(call, dict):
            raise ValueError(f"{where}: `tool_calls[{i}]` must be an object")
        turn = _int(call.get("turn"), where, f"tool_calls[{i}].turn", 0)
        latency = call.get("latency_s")
        if isinstance(latency, bool) or not isinstance(latency, int | float) or \
                not math.isfinite(latency) or latency < 0:
            raise ValueError(f"{where}: `tool_calls[{i}].latency_s` must be a number of "
                             f"seconds >= 0, got {latency!r}")
        if turn >= len(raw_turns):
            raise ValueError(f"{where}: `tool_calls[{i}].turn` is {turn} but the sample has "
                             f"{len(raw_turns)} turns")
        env_s[turn] += float(latency)
    turns = []
    for t, raw in enumerate(raw_turns):
        field = f"turns[{t}]"
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: `{field}` must be an object")
        # 0 generated tokens is possible in a log; the workload clamps every turn to >= 1.
        response = _int(raw.get("completion_tokens"), where, f"{field}.completion_tokens", 0)
        if t == len(raw_turns) - 1:
            turns.append(Turn(response))
            continue
        after = _int(raw.get("total_len_after"), where, f"{field}.total_len_after", 1)
        nxt = raw_turns[t + 1]
        following = _int(nxt.get("generation_prompt_len") if isinstance(nxt, dict) else None,
                         where, f"turns[{t + 1}].generation_prompt_len", 1)
        if following < after:
            raise ValueError(
                f"{where}: `turns[{t + 1}].generation_prompt_len` ({following}) is below "
                f"`{field}.total_len_after` ({after}); a turn's prompt holds every earlier token")
        turns.append(Turn(response, env_s[t], following - after))
    return RecordedSample(tuple(turns), None)


def _int(value: Any, where: str, field: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{where}: `{field}` must be an integer >= {minimum}, got {value!r}")
    return value
