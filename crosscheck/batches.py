"""Request batches for the engine cross-checks: (prompt, output) token pairs drawn from a
real RL trace with a fixed seed. Standard library only (it runs in Vidur's environment too).

The trace is PolyTrace's DAPO on Qwen2.5-32B (`packed_lengths_step_*.jsonl`, one line per
prompt: `input` prompt tokens and `output`, the response lengths of its samples), the one
PolyTrace RLVR trace whose responses fit a 4,096-token context (99.6% of them): Llama-2-7B,
the model both simulators know, has a 4,096-token context. A pair whose prompt + output
exceeds the context is dropped (not clipped), and the count is reported.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TRACE_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "polytrace" \
    / "dapo-qwen2.5-32b"


@dataclass(frozen=True, slots=True)
class TracePairs:
    """Every (prompt_tokens, output_tokens) pair of a trace that fits the context."""

    pairs: tuple[tuple[int, int], ...]
    dropped: int  # pairs longer than the context


def load_pairs(trace_dir: Path, context_tokens: int) -> TracePairs:
    """All (prompt, output) pairs of `packed_lengths_step_*.jsonl` in step order; pairs with
    prompt + output > `context_tokens` are dropped and counted."""
    if context_tokens <= 1:
        raise ValueError(f"context_tokens must be > 1, got {context_tokens}")
    files = sorted(trace_dir.glob("packed_lengths_step_*.jsonl"),
                   key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    if not files:
        raise ValueError(f"no packed_lengths_step_*.jsonl in {trace_dir}: pass --trace-dir "
                         "with a PolyTrace RLVR trace folder")
    pairs: list[tuple[int, int]] = []
    dropped = 0
    for path in files:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            prompt = int(row["input"])
            for out in row["output"]:
                out = int(out)
                if prompt < 1 or out < 1 or prompt + out > context_tokens:
                    dropped += 1
                    continue
                pairs.append((prompt, out))
    if not pairs:
        raise ValueError(f"no pair of {trace_dir} fits a {context_tokens}-token context")
    return TracePairs(tuple(pairs), dropped)


def draw_batch(pairs: TracePairs, n: int, seed: int) -> list[tuple[int, int]]:
    """`n` pairs drawn with replacement (a batch may be larger than the trace), with
    `random.Random(seed)`, so both sides and every rerun get the same list."""
    if n <= 0:
        raise ValueError(f"batch size must be > 0, got {n}")
    rng = random.Random(seed)
    return [pairs.pairs[rng.randrange(len(pairs.pairs))] for _ in range(n)]


def write_batch(path: Path, batch: list[tuple[int, int]]) -> None:
    """One JSON object per line: {"prompt": p, "output": o}; all arrive at t = 0."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"prompt": p, "output": o}) + "\n" for p, o in batch))


def read_batch(path: Path) -> list[tuple[int, int]]:
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            out.append((int(row["prompt"]), int(row["output"])))
    return out
