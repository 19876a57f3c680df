"""One calibration run: pick the device, describe it, run the benchmark families, collect points.

`measure()` is what `rlsim calibrate` calls; it returns a `MeasurementSet` and leaves fitting
to calibration.fit. Families run in FAMILIES order; `only` selects families or single
benchmark names.
"""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from types import ModuleType

import torch

from calibration.benchmarks import (
    attention,
    collectives,
    common,
    elementwise,
    engine_start,
    gemm,
    layer,
    live_engine,
    live_trainer,
    memcpy,
    sandbox,
    transfer,
)
from calibration.benchmarks.model_dims import ModelDims, dtype_for, dtype_name, use_dims
from calibration.live.model import LMConfig
from calibration.measurements import DeviceInfo, Measurement, MeasurementSet

FAMILIES: dict[str, ModuleType] = {
    "gemm": gemm,
    "elementwise": elementwise,
    "memcpy": memcpy,
    "attention": attention,
    "layer": layer,
    "transfer": transfer,
    "collectives": collectives,
    "engine_start": engine_start,
    "sandbox": sandbox,
    "live_engine": live_engine,
    "live_trainer": live_trainer,
}

# Seconds a run may spend re-measuring points a neighbour process disturbed (CPU only); sized
# so a run on a busy machine still ends inside its budget (quick ~2 min, full ~13 min).
RETRY_ALLOWANCE_QUICK_S = 30.0
RETRY_ALLOWANCE_FULL_S = 180.0

BENCHES: tuple[str, ...] = tuple(b for mod in FAMILIES.values() for b in mod.BENCHES)


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' when available else 'cpu'; 'cuda' without CUDA is an error."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" or device.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ValueError(f"--device {device}: torch {torch.__version__} sees no CUDA device "
                             "(CPU-only build or no GPU); use --device cpu or auto")
        return "cuda"
    if device == "cpu":
        return "cpu"
    raise ValueError(f"unknown device {device!r}; expected auto, cpu or cuda")


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def host_memory_bytes() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 1.0  # unknown; DeviceInfo needs a positive number


def device_info(device: str) -> DeviceInfo:
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        name, cores, memory = props.name, props.multi_processor_count, float(props.total_memory)
    else:
        name, cores, memory = cpu_name(), torch.get_num_threads(), host_memory_bytes()
    return DeviceInfo(kind=device, name=name, cores=cores, memory_bytes=memory,
                      torch_version=torch.__version__, host=socket.gethostname(),
                      dtype=dtype_name(dtype_for(device)),
                      created=datetime.now(UTC).isoformat(timespec="seconds"))


def selected(only: Collection[str] | None) -> dict[str, tuple[str, ...]]:
    """Family -> benchmark names to run, from family or benchmark names in `only`."""
    if only is None:
        return {fam: tuple(mod.BENCHES) for fam, mod in FAMILIES.items()}
    unknown = sorted(set(only) - set(FAMILIES) - set(BENCHES))
    if unknown:
        raise ValueError(f"unknown benchmark(s) {', '.join(unknown)}; known: "
                         f"{', '.join(BENCHES)} (or families {', '.join(FAMILIES)})")
    out: dict[str, tuple[str, ...]] = {}
    for fam, mod in FAMILIES.items():
        benches = tuple(b for b in mod.BENCHES if fam in only or b in only)
        if benches:
            out[fam] = benches
    return out


def measure(device: str = "auto", quick: bool = False, only: list[str] | None = None,
            progress: Callable[[str, int, int], None] | None = None,
            dims: ModelDims | None = None, live: LMConfig | None = None) -> MeasurementSet:
    """Run the selected benchmarks on `device` ('auto', 'cpu' or 'cuda').

    `dims` measures the operator benchmarks at those layer shapes instead of the device's
    calibration model; `live` is the live policy the live_engine/live_trainer families run
    (default: the live system's default policy)."""
    dev = resolve_device(device)
    plan = selected(only)
    info = device_info(dev)
    common.allow_retries(RETRY_ALLOWANCE_QUICK_S if quick else RETRY_ALLOWANCE_FULL_S)
    points: list[Measurement] = []
    saved = live_engine.live_config
    live_engine.live_config = live
    try:
        with use_dims(dims):
            for fam, benches in plan.items():
                points += run_family(fam, dev, quick, benches, progress)
    finally:
        live_engine.live_config = saved
    return MeasurementSet(device=info, quick=quick, measurements=points)


def run_family(family: str, device: str, quick: bool, benches: tuple[str, ...],
               progress: common.Progress | None) -> list[Measurement]:
    mod = FAMILIES[family]
    if len(mod.BENCHES) == 1:
        result: list[Measurement] = mod.run(device, quick, progress)
    else:
        result = mod.run(device, quick, progress, benches=benches)
    if device == "cuda":
        torch.cuda.empty_cache()  # give the next family the whole memory back
    return result
