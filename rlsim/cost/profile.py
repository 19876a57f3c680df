"""Calibrated hardware profile: every efficiency and overhead constant the cost models use.

Owns the `Profile` schema (frozen pydantic, with provenance, fit error and a content hash),
the built-in per-GPU profiles shipped as package data in `rlsim/cost/profiles/*.json`
(written offline by `rlsim/cost/fit_vidur.py`; nothing is fitted at simulation start), and
loading of user profiles. Peaks and bandwidths are not here: they come from `GpuSpec`; a
profile only says which fraction of them real kernels achieve, so one fitted profile
transfers to GPUs of the same architecture with other spec numbers.
Sources of every default are in docs/cost-model.md.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlsim.config.hardware import GpuSpec

PROFILE_DIR = Path(__file__).with_name("profiles")
GENERIC_PROFILE = "generic"

# Output-tile shapes (tokens x weight columns) of BF16 GEMM kernels on Ampere/Hopper. The
# 8-32-token tiles are the small-M ("swap-AB") kernels libraries use for decode GEMMs, where
# the token dimension becomes the MMA's narrow N side (mma n8 / wgmma N>=8). The model picks
# the fastest tile, as the library heuristics try to.
DEFAULT_GEMM_TILES: tuple[tuple[int, int], ...] = (
    (8, 128), (16, 128), (32, 128), (64, 64), (64, 128), (128, 128), (128, 256), (256, 128),
)


class Profile(BaseModel):
    """Efficiencies and fixed overheads for one GPU type (see docs/cost-model.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu: str = Field(description="GPU type the constants were fitted or chosen for.")
    provenance: str = Field(description="Where the constants come from (data, script, date).")
    fit_error: dict[str, float] = Field(
        default_factory=dict,
        description="Fit quality, e.g. linear-layer MAPE per TP degree (fractions, not %).",
    )

    # --- GEMM (linear layers): tile/wave quantization + weight streaming + launch ---
    hbm_efficiency: float = Field(
        gt=0, le=1,
        description="Achieved fraction of HBM bandwidth when streaming weights or KV cache.",
    )
    kernel_launch_s: float = Field(
        ge=0, description="Fixed per-kernel latency of a GEMM or attention kernel, seconds."
    )
    gemm_peak_efficiency: float = Field(
        gt=0, le=1, description="Tensor-core efficiency of an infinitely large output tile."
    )
    gemm_tile_overhead_elems: float = Field(
        ge=0,
        description=(
            "Per-k-step operand cost of a tile in elements: tile efficiency = "
            "gemm_peak_efficiency / (1 + this * (tm + tn) / (tm * tn))."
        ),
    )
    gemm_overlap_exponent: float = Field(
        ge=1,
        description=(
            "p of the smooth max (t_compute^p + t_memory^p)^(1/p): imperfect overlap of the "
            "tile compute and weight streaming pipelines (p -> inf is a plain roofline)."
        ),
    )
    gemm_tiles: tuple[tuple[int, int], ...] = Field(
        default=DEFAULT_GEMM_TILES, min_length=1,
        description="Candidate output tiles (tokens x weight columns) of the GEMM kernels.",
    )
    gemm_splitk_min_k: int = Field(
        default=256, gt=0,
        description="Smallest K slice of a split-K GEMM (skinny GEMMs split K to fill SMs).",
    )

    # --- elementwise kernels: activation, norms, rotary, residual adds, embedding ---
    elementwise_hbm_efficiency: float = Field(
        gt=0, le=1, description="Achieved fraction of HBM bandwidth of elementwise kernels."
    )
    elementwise_launch_s: float = Field(
        ge=0, description="Fixed per-kernel latency of an elementwise kernel, seconds."
    )

    # --- attention ---
    attention_flops_efficiency: float = Field(
        default=0.5, gt=0, le=1,
        description="Achieved fraction of BF16 peak of prefill attention (FlashAttention).",
    )

    # --- communication ---
    allreduce_latency_s: float = Field(
        ge=0, description="Fixed latency of one NCCL all-reduce inside a node, seconds."
    )
    allreduce_bus_efficiency: float = Field(
        gt=0, le=1,
        description="Achieved fraction of one-direction NVLink bandwidth by ring all-reduce.",
    )
    pcie_efficiency: float = Field(
        default=0.8, gt=0, le=1, description="Achieved fraction of PCIe host<->device bandwidth."
    )
    network_efficiency: float = Field(
        default=0.8, gt=0, le=1, description="Achieved fraction of inter-node network bandwidth."
    )

    # --- rollout engine ---
    decode_overhead_s: float = Field(
        default=2e-3, gt=0,
        description="Fixed CPU/scheduler time per engine iteration (vLLM-like), seconds.",
    )
    engine_memory_reserve_bytes: float = Field(
        default=3.0 * 2**30, ge=0,
        description=(
            "Per-GPU memory an engine keeps out of the KV cache: peak activations of the "
            "profile run, CUDA-graph pool, NCCL/cuBLAS workspaces, bytes."
        ),
    )
    engine_cold_start_s: float = Field(
        default=80.0, ge=0,
        description=(
            "Fixed part of an engine cold start (process, CUDA/NCCL init, profiling, graph "
            "capture), seconds; checkpoint loading is added on top."
        ),
    )
    checkpoint_load_bandwidth_bytes_per_s: float = Field(
        default=2e9, gt=0,
        description="Rate an engine reads its checkpoint from storage on a cold start, B/s.",
    )
    engine_warm_start_base_s: float = Field(
        default=1.5, ge=0,
        description="Fixed part of a warm start from host memory (wake, re-map), seconds.",
    )

    # --- trainer ---
    train_mfu: float = Field(
        default=0.40, gt=0, le=1,
        description="Achieved fraction of BF16 peak on executed training FLOPs.",
    )
    train_comm_overlap_fraction: float = Field(
        default=0.8, ge=0, le=1,
        description="Fraction of the DP gradient/parameter traffic overlapped with compute.",
    )
    train_dp_comm_bytes_per_param: float = Field(
        default=6.0, gt=0,
        description="DP traffic per parameter: fp32 gradient reduce-scatter + bf16 all-gather.",
    )
    train_state_bytes_per_param: float = Field(
        default=16.0, gt=0,
        description="Trainer state per parameter: bf16 params+grads, fp32 master + Adam m, v.",
    )
    train_optimizer_bytes_per_param: float = Field(
        default=30.0, gt=0,
        description="HBM traffic of one Adam update per parameter (reads + writes), bytes.",
    )

    def content_hash(self) -> str:
        """sha256 of the canonical JSON of the constants (provenance and fit error excluded)."""
        data = self.model_dump(mode="json", exclude={"provenance", "fit_error"})
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=False) + "\n"


def _one_line(err: ValidationError) -> str:
    parts = []
    for item in err.errors():
        loc = ".".join(str(x) for x in item["loc"]) or "(root)"
        parts.append(f"{loc}: {item['msg']}")
    return "; ".join(parts)


def load_profile(path: str | Path) -> Profile:
    """Load a profile JSON; ValueError with a one-line reason on any bad content."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as exc:
        raise ValueError(f"cannot read profile {p}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"profile {p} is not valid JSON: {exc.msg} at line {exc.lineno}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"profile {p} must be a JSON object, got {type(data).__name__}")
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"bad profile {p}: {_one_line(exc)}") from exc


_BUILTIN_CACHE: dict[str, Profile] = {}


def _builtin(name: str) -> Profile:
    prof = _BUILTIN_CACHE.get(name)
    if prof is None:
        prof = load_profile(PROFILE_DIR / f"{name}.json")
        _BUILTIN_CACHE[name] = prof
    return prof


def builtin_profile(gpu: GpuSpec) -> Profile:
    """Built-in profile of a catalogue GPU type; the generic profile for any other GPU."""
    name = gpu.name.lower()
    # Compare against the shipped file names instead of building a path from user input.
    shipped = {f.stem for f in PROFILE_DIR.glob("*.json")}
    return _builtin(name if name in shipped else GENERIC_PROFILE)
