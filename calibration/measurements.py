"""The raw measurement record every microbenchmark produces and every fit consumes.

A `Measurement` is one point of one benchmark's grid: its parameters (shape, sizes, dtype),
the median time over repetitions and the spread. `MeasurementSet` is what `rlsim calibrate`
collects: measurements by benchmark, plus the device facts the benchmarks observed. Both are
plain JSON (they are stored verbatim in the profile), and neither imports torch.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Measurement(BaseModel):
    """One grid point: parameters and the median of several timed repetitions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bench: str = Field(description="Benchmark name, e.g. gemm, attention_decode, layer_prefill.")
    params: dict[str, Any] = Field(
        description="Grid point: ints/floats/strings such as m, n, k, dtype, batch, context, "
        "tokens, size_bytes, ranks.")
    median_s: float = Field(ge=0, description="Median time of one call, seconds.")
    p10_s: float = Field(ge=0, description="10th percentile over repetitions, seconds.")
    p90_s: float = Field(ge=0, description="90th percentile over repetitions, seconds.")
    reps: int = Field(gt=0, description="Timed repetitions (after warm-up).")


class DeviceInfo(BaseModel):
    """What the benchmarks learned about the device and software."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = Field(description="'cpu' or 'cuda'.")
    name: str = Field(description="Device name (CUDA device name or CPU model).")
    cores: int = Field(gt=0, description="CPU threads used by torch, or CUDA SM count.")
    memory_bytes: float = Field(gt=0, description="Device memory (GPU HBM or host RAM), bytes.")
    torch_version: str = Field(description="torch.__version__.")
    host: str = Field(description="Host name of the machine measured.")
    dtype: str = Field(description="Dtype of the compute benchmarks, e.g. float32, bfloat16.")
    created: str = Field(description="UTC timestamp of the run, ISO 8601.")


class MeasurementSet(BaseModel):
    """Everything one calibration run measured."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: DeviceInfo
    quick: bool = Field(description="Whether the reduced --quick grids were used.")
    measurements: list[Measurement] = Field(description="All grid points of all benchmarks.")

    def of(self, bench: str) -> list[Measurement]:
        return [m for m in self.measurements if m.bench == bench]


def median_of_passes(passes: list[MeasurementSet]) -> MeasurementSet:
    """One set from several passes of the same benchmarks on one device: each point is the
    measurement of the pass whose median time is the median of its passes (the lower middle
    one for an even count, so one slow pass of two is not kept), whole, so every point stays
    a real measurement. A point is one benchmark's k-th point with the same parameters (a
    trace can repeat a shape); points that a pass lacks are taken from the passes that have
    them. The order is the first pass's, then points only later passes measured.

    A pass is seconds long, so a slowdown of the machine that lasts seconds spoils every
    point of one pass alike; the median over passes taken at different times is what such a
    slowdown cannot move (docs/validation.md)."""
    if not passes:
        raise ValueError("median_of_passes: no passes")
    first = passes[0]

    def machine(s: MeasurementSet) -> DeviceInfo:
        return s.device.model_copy(update={"created": ""})  # every pass has its own time

    for p in passes[1:]:
        if machine(p) != machine(first) or p.quick != first.quick:
            raise ValueError("median_of_passes: passes from different devices or grids "
                             f"({first.device.name} quick={first.quick} against "
                             f"{p.device.name} quick={p.quick})")
    points: dict[tuple[str, str, int], list[Measurement]] = {}
    for p in passes:
        seen: dict[tuple[str, str], int] = {}
        for m in p.measurements:
            shape = (m.bench, json.dumps(m.params, sort_keys=True))
            k = seen.get(shape, 0)
            seen[shape] = k + 1
            points.setdefault((*shape, k), []).append(m)
    kept = []
    for ms in points.values():
        ranked = sorted(ms, key=lambda m: m.median_s)
        kept.append(ranked[(len(ranked) - 1) // 2])
    return first.model_copy(update={"measurements": kept})
