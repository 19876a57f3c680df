"""`FitContext`: the state one fit passes from stage to stage.

Every family's stage reads the constants fitted before it and adds its own, so the order of
`calibration.fit.STAGES` is a dependency order: the GEMM constants price every later compute
grid, the elementwise fit is bounded by the stream rates GEMM and attention found, the
engine and trainer stages price whole iterations with all compute constants, the warm
reload base subtracts the host link's copy time. What is shared is here, typed:

- `facts`: what the measurement set says about the device (dtype, CUDA or CPU, the
  catalogue GPU a CUDA name matches);
- the reference rates (`ref_flops`, `ref_bw`): every absolute rate is fitted as an
  efficiency relative to them, renormalized at the end (`calibration.fitting.normalize`);
- the link bandwidths and node size the collectives and transfer stages measure;
- `copy_law`: the memcpy fit, kept to price the memcpy points in the report;
- `consts`: the Profile fields fitted so far; `profile()` is the Profile they make with the
  documented defaults; `device()` the GpuSpec of the reference rates;
- `notes` (what could not be fitted, in the order found: they go into the profile's meta)
  and `scaled_defaults` (defaults rescaled to the normalized device, still not fits).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from calibration.fitting.holdout import Split
from calibration.fitting.predict import dtype_bytes
from calibration.measurements import Measurement, MeasurementSet
from rlsim.config.hardware import GPUS, GpuSpec
from rlsim.cost.profile import Profile


def catalogue_gpu(name: str) -> GpuSpec | None:
    """The catalogue GPU whose name appears in a CUDA device name ('NVIDIA H100 80GB')."""
    words = name.upper().replace("-", " ").split()
    for key, spec in GPUS.items():
        if key.upper() in words:
            return spec
    return None


@dataclass(frozen=True)
class DeviceFacts:
    """What the measurement set says about the device before anything is fitted."""

    dtype_bytes: int
    is_cuda: bool
    catalogue: GpuSpec | None  # the catalogue GPU of a CUDA device name; None on CPUs

    @classmethod
    def of(cls, ms: MeasurementSet) -> DeviceFacts:
        is_cuda = ms.device.kind.startswith("cuda")
        return cls(dtype_bytes(ms.device.dtype), is_cuda,
                   catalogue_gpu(ms.device.name) if is_cuda else None)


class CopyLaw(NamedTuple):
    """memcpy's fitted copy time: latency + moved / bandwidth, faster by `cache_speedup`
    for the part resident in a `cache_bytes` cache (`kernels.cache_resident_fraction`)."""

    latency_s: float
    bandwidth: float
    cache_bytes: float
    cache_speedup: float


def default_profile(ms: MeasurementSet, dtype_bytes: int, is_cuda: bool) -> Profile:
    """The documented defaults a fit starts from (docs/cost-model.md)."""
    d = ms.device
    return Profile(
        gpu=d.name, provenance="", dtype_bytes=dtype_bytes,
        hbm_efficiency=0.8, kernel_launch_s=5e-6 if is_cuda else 10e-6,
        gemm_peak_efficiency=0.8, gemm_tile_overhead_elems=10.0, gemm_overlap_exponent=2.0,
        elementwise_hbm_efficiency=0.5, elementwise_launch_s=2e-6 if is_cuda else 5e-6,
        allreduce_latency_s=3e-5, allreduce_bus_efficiency=0.8,
    )


@dataclass
class FitContext:
    """State of one fit: the reference device, the constants so far, notes."""

    ms: MeasurementSet
    split: Mapping[str, Split]
    facts: DeviceFacts
    # Reference rates: absolute rates are fitted as efficiencies relative to these.
    ref_flops: float
    ref_bw: float
    copy_law: CopyLaw | None
    notes: list[str] = field(default_factory=list)
    # Until the collectives and transfer stages measure them, the links run at half the
    # copy bandwidth (one direction of a read + write).
    link_one_way: float = field(init=False)
    pcie: float = field(init=False)
    gpus_per_node: int = 1
    consts: dict[str, Any] = field(default_factory=dict)
    # Documented defaults rescaled to the normalized device (still defaults, not fits).
    scaled_defaults: set[str] = field(default_factory=set)
    _base: Profile | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.link_one_way = self.ref_bw / 2
        self.pcie = self.ref_bw / 2

    def train(self, bench: str) -> list[Measurement]:
        """The points of `bench` the fit may use (its held-back ones excluded)."""
        s = self.split.get(bench)
        return s.train if s is not None else []

    def all(self, bench: str) -> list[Measurement]:
        """Every point of `bench` (for grids that hold none back)."""
        return self.ms.of(bench)

    def fitted(self, name: str) -> bool:
        return name in self.consts and name not in self.scaled_defaults

    def device(self) -> GpuSpec:
        """The device with the reference rates (efficiencies relative to them)."""
        d = self.ms.device
        cat = self.facts.catalogue
        return GpuSpec(
            name=d.name, bf16_tflops=self.ref_flops / 1e12, hbm=d.memory_bytes,
            hbm_bandwidth=self.ref_bw, nvlink_bandwidth=2.0 * self.link_one_way,
            pcie_bandwidth=self.pcie,
            network_bandwidth=cat.network_bandwidth if cat is not None else 50e9,
            sm_count=d.cores,
            gpus_per_node=cat.gpus_per_node if cat is not None else self.gpus_per_node,
            usd_per_gpu_hour=cat.usd_per_gpu_hour if cat is not None else 0.0,
        )

    def profile(self, **update: Any) -> Profile:
        """A profile of the constants so far; unvalidated, so efficiencies may exceed 1
        relative to the reference rates until `normalize`."""
        if self._base is None:
            self._base = default_profile(self.ms, self.facts.dtype_bytes, self.facts.is_cuda)
        return self._base.model_copy(update={**self.consts, **update})


# How a family prices one of its points in the report, from the normalized profile.
PointPrediction = Callable[[Measurement], float]
