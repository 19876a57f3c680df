"""The raw measurement record every microbenchmark produces and every fit consumes.

A `Measurement` is one point of one benchmark's grid: its parameters (shape, sizes, dtype),
the median time over repetitions and the spread. `MeasurementSet` is what `rlsim calibrate`
collects: measurements by benchmark, plus the device facts the benchmarks observed. Both are
plain JSON (they are stored verbatim in the profile), and neither imports torch.
"""

from __future__ import annotations

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
