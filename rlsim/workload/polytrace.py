"""Reading PolyTrace packed-length traces (Zhou-jiecheng/PolyTrace).

Owns the file format: one JSON object per line and per prompt, with `input` (prompt tokens)
and `output` (one response length per sample); lines with `validate: true` are evaluation
prompts, not training, and are skipped. A trace path is one packed_lengths_step_*.jsonl file
or a directory whose such files are read in step order. Every user mistake raises with the
file and line: FileNotFoundError for a missing path, ValueError for bad content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsim.workload.jsonl import json_record


@dataclass(frozen=True, slots=True)
class TracePrompt:
    """One training prompt of a trace, with where it came from (for error messages)."""

    prompt_tokens: int
    response_tokens: tuple[int, ...]
    file: Path
    line: int


def trace_files(path: Path, prefix: str = "packed_lengths") -> list[Path]:
    """The step files (`<prefix>_step_<k>.jsonl`) of a trace path, in step order (numeric:
    step 10 after step 9); a file path is the trace's only file."""
    if not path.exists():
        raise FileNotFoundError(f"trace {path} not found")
    if path.is_file():
        return [path]
    glob = f"{prefix}_step_*.jsonl"
    number = re.compile(rf"{re.escape(prefix)}_step_(\d+)\.jsonl$")
    numbered = sorted(
        (int(match.group(1)), p)
        for p in path.glob(glob)
        if (match := number.search(p.name)) is not None
    )
    if not numbered:
        raise FileNotFoundError(f"trace directory {path} has no {glob} files")
    return [p for _, p in numbered]


def read_polytrace(path: Path, min_samples: int = 1) -> list[TracePrompt]:
    """Every training prompt of the trace, in order; each with >= min_samples responses."""
    prompts: list[TracePrompt] = []
    for file in trace_files(path):
        prompts.extend(_read_file(file, min_samples))
    if not prompts:
        raise ValueError(f"trace {path}: no training prompts (every line is validate: true)")
    return prompts


def load_polytrace(path: str | Path, min_samples: int = 1) -> list[tuple[int, tuple[int, ...]]]:
    """(prompt tokens, response lengths) of every training prompt of a trace, in order."""
    return [(p.prompt_tokens, p.response_tokens) for p in read_polytrace(Path(path), min_samples)]


def _read_file(file: Path, min_samples: int) -> list[TracePrompt]:
    text = file.read_text(encoding="utf-8")
    if not text.strip():
        raise ValueError(f"{file}: line 1: empty trace file")
    prompts = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = json_record(line, f"{file}:{lineno}")
        if record.get("validate", False):
            continue
        prompt = _count(record.get("input"), file, lineno, "input")
        outputs = record.get("output")
        if not isinstance(outputs, list) or not outputs:
            raise ValueError(f"{file}:{lineno}: `output` must be a non-empty list of lengths")
        responses = tuple(_count(n, file, lineno, "output") for n in outputs)
        if len(responses) < min_samples:
            raise ValueError(
                f"{file}:{lineno}: output has {len(responses)} responses but "
                f"samples_per_prompt is {min_samples}; lower samples_per_prompt to at most "
                f"{len(responses)} or use a trace with more samples per prompt"
            )
        prompts.append(TracePrompt(prompt, responses, file, lineno))
    return prompts


def _count(value: Any, file: Path, lineno: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"{file}:{lineno}: `{field}` must hold non-negative integer token counts, "
            f"got {value!r}"
        )
    return value
