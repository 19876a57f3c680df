"""Public measurements of inference engines' decode speed (validation/engine_points/).

Owns the point type, its loader and its checks: each point is one published inter-token
latency, time per output token or output throughput of vLLM, SGLang, TensorRT-LLM,
LMDeploy or NIM at a stated concurrency (or static batch), with the engine's version, the
GPU, the model, the lengths, the source and the exact quote its numbers come from. The
points calibrate and validate the engine's per-iteration costs as RL frameworks run them
(issue 36, item 2); a point's `side` was fixed by its source before anything was fitted,
and every point of one source is on one side.

Bad input is a ScenarioError naming `FILE:LINE` and the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibration.jsonlines import json_objects
from rlsim.config.errors import ScenarioError

ROOT = Path(__file__).resolve().parents[1]
POINTS_PATH = ROOT / "validation" / "engine_points" / "points.jsonl"

ENGINES = ("vllm", "sglang", "trtllm", "lmdeploy", "nim")
SIDES = ("calibrate", "validate")
# The measured values a point may hold (at least one): milliseconds per output token, or
# output tokens per second (of the run, of one GPU, of one user).
MEASURES = ("tpot_ms_mean", "tpot_ms_median", "tpot_ms", "itl_ms_mean", "itl_ms_median",
            "itl_ms_p99", "output_tok_s", "output_tok_s_per_gpu", "output_tok_s_per_user",
            "e2e_latency_ms_mean", "e2e_latency_ms_median", "itl_fit_intercept_ms")


@dataclass(frozen=True)
class EnginePoint:
    """One published measurement (the module docstring); None where the source is silent."""

    id: str
    source_url: str
    source_group: str
    engine: str
    side: str
    quote: str
    values: dict[str, float]
    gpu: str | None = None
    gpus: int | None = None
    tp: int | None = None
    ep: int | None = None
    """Expert-parallel degree inside the engine, where the source's command sets it."""
    model: str | None = None
    concurrency: int | None = None
    batch_size: int | None = None
    input_len: int | None = None
    output_len: int | None = None
    cuda_graphs: bool | None = None
    num_prompts: int | None = None
    """Requests the client sent in all, where the run states it."""
    dp_attention: bool = False
    """Attention run data-parallel across the engine's GPUs (SGLang --enable-dp-attention,
    TensorRT-LLM attention DP)."""
    fitted: bool = False
    """A fitted intercept or slope of several runs, not one measurement."""
    where: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def load(self) -> int | None:
        """Sequences in flight: the concurrency, or the static batch."""
        return self.concurrency if self.concurrency is not None else self.batch_size


def _int(raw: dict[str, Any], key: str, where: str) -> int | None:
    v = raw.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ScenarioError(where, f"{key} should be a positive integer, got {v!r}")
    return v


def parse_point(raw: dict[str, Any], where: str) -> EnginePoint:
    for key in ("id", "source_url", "source_group", "engine", "side", "quote"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise ScenarioError(where, f"field {key!r} is required (a non-empty string)")
    loc = f"{where} ({raw['id']})"
    if raw["engine"] not in ENGINES:
        raise ScenarioError(loc, f"engine should be one of {', '.join(ENGINES)}")
    if raw["side"] not in SIDES:
        raise ScenarioError(loc, "side should be calibrate or validate")
    values = {}
    for key in MEASURES:
        v = raw.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
            raise ScenarioError(loc, f"{key} should be a positive number, got {v!r}")
        values[key] = float(v)
    if not values:
        raise ScenarioError(loc, f"no measured value; give one of {', '.join(MEASURES)}")
    graphs = raw.get("cuda_graphs")
    if graphs is not None and not isinstance(graphs, bool):
        raise ScenarioError(loc, "cuda_graphs should be true, false or null")
    dp_attention = raw.get("dp_attention", False)
    if not isinstance(dp_attention, bool):
        raise ScenarioError(loc, "dp_attention should be true or false")
    return EnginePoint(
        id=raw["id"], source_url=raw["source_url"], source_group=raw["source_group"],
        engine=raw["engine"], side=raw["side"], quote=raw["quote"], values=values,
        gpu=raw.get("gpu"), gpus=_int(raw, "gpus", loc), tp=_int(raw, "tp", loc),
        ep=_int(raw, "ep", loc), model=raw.get("model"), concurrency=_int(raw, "concurrency", loc),
        batch_size=_int(raw, "batch_size", loc), input_len=_int(raw, "input_len", loc),
        output_len=_int(raw, "output_len", loc), cuda_graphs=graphs,
        num_prompts=_int(raw, "num_prompts", loc), dp_attention=dp_attention,
        fitted=raw.get("value_kind") == "fit", where=where, raw=raw)


def load_points(path: Path = POINTS_PATH) -> list[EnginePoint]:
    """Every point, in file order; ids unique, and one side per source."""
    points: list[EnginePoint] = []
    seen: dict[str, str] = {}
    for where, raw in json_objects(path, path.name):
        p = parse_point(raw, where)
        if p.id in seen:
            raise ScenarioError(where, f"id {p.id} repeats {seen[p.id]}")
        seen[p.id] = where
        points.append(p)
    check_sides(points)
    return points


def check_sides(points: Iterable[EnginePoint]) -> None:
    """A source's points are all on one side (the split is by source, not by point)."""
    sides: dict[str, str] = {}
    for p in points:
        first = sides.setdefault(p.source_group, p.side)
        if first != p.side:
            raise ScenarioError(p.where, f"source {p.source_group} has points on both "
                                "sides; the split is by source")


def renderings(value: float) -> set[str]:
    """How a source may write `value`: as is, with thousands separators, in scientific
    notation, or in seconds where the point stores milliseconds."""
    out = {str(value), f"{value:g}", f"{value:,g}", f"{value:.2e}", f"{value / 1000:g}"}
    if value == int(value):
        out |= {str(int(value)), f"{int(value):,}"}
    else:
        out |= {f"{value:.2f}", f"{value:.1f}"}
    return out


# A number as written: plain (with decimals or an exponent), or with thousands separators
# (a comma before each group of three digits; a CSV's commas are not separators).
# Digits inside a name ("70B", "H100") are not numbers.
_PLAIN = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
_GROUPED = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w.])")


def _quoted_numbers(quote: str) -> list[float]:
    return [float(m.group().replace(",", "")) for pattern in (_PLAIN, _GROUPED)
            for m in pattern.finditer(quote)]


def unquoted(point: EnginePoint) -> list[str]:
    """The measured values whose number the quote does not contain in any rendering (or,
    for full-precision values such as seconds stored as milliseconds, as a number equal to
    it within a part in 10^9)."""
    numbers = _quoted_numbers(point.quote)

    def found(v: float) -> bool:
        if any(re.search(rf"(?<![\w.]){re.escape(r)}(?![\w])", point.quote)
               for r in renderings(v)):
            return True
        return any(abs(n - x) <= 1e-9 * x for n in numbers for x in (v, v / 1000.0))

    return [k for k, v in point.values.items() if not found(v)]
