"""Synthetic MeasurementSets generated from known constants through rlsim's own formulas.

The grids mirror the CPU quick grids of calibration/benchmarks (same shapes and points), so
a fit that recovers the constants here is exercised on the structure real data has. Noise is
multiplicative (log-normal, `noise` = its sigma), seeded. `synthetic_set(whole=True)` adds
whole-engine iterations and whole trainer steps of a small model (`MODEL_DIMS`), priced with
the true engine and trainer constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calibration.fit import (
    CPU_ATTENTION_KV_BLOCK,
    CPU_ATTENTION_Q_BLOCK_TIERS,
    CPU_GEMM_TILES,
    CPU_SPLITK_MIN_K,
    Predictor,
)
from calibration.measurements import DeviceInfo, Measurement, MeasurementSet
from rlsim.config.hardware import GpuSpec
from rlsim.cost.kernels import cache_resident_fraction
from rlsim.cost.profile import Profile

DIMS = {"hidden": 1024, "heads": 16, "kv_heads": 4, "head_dim": 64, "ffn": 2816}
HEADS = {k: DIMS[k] for k in ("heads", "kv_heads", "head_dim")}
MB = 1 << 20

TRUE_DEVICE = GpuSpec(
    name="Synthetic CPU", bf16_tflops=0.07, hbm=24e9, hbm_bandwidth=16e9,
    nvlink_bandwidth=2 * 3e9, pcie_bandwidth=4e9, sm_count=2, gpus_per_node=2,
    usd_per_gpu_hour=0.0,
)

# Shaped like the fit of this machine's measurements (tests/data/calibration), rounded.
TRUE_PROFILE = Profile(
    gpu="Synthetic CPU", provenance="synthetic truth", dtype_bytes=4,
    hbm_efficiency=0.9, kernel_launch_s=10e-6, gemm_peak_efficiency=0.9,
    gemm_tile_overhead_elems=2.0, gemm_overlap_exponent=1.5,
    gemm_tiles=CPU_GEMM_TILES, gemm_splitk_min_k=CPU_SPLITK_MIN_K,
    gemm_gemv_max_rows=3, gemm_weight_passes=4.0, cache_bytes=5e6, cache_speedup=4.0,
    elementwise_hbm_efficiency=0.6, elementwise_launch_s=4e-6,
    activation_hbm_efficiency=0.2, activation_launch_s=20e-6,
    norm_hbm_efficiency=0.15, norm_launch_s=40e-6,
    attention_flops_efficiency=0.75, attention_decode_flops_efficiency=0.4,
    attention_decode_hbm_efficiency=0.45, attention_launch_s=55e-6,
    attention_decode_launch_s=30e-6, attention_q_block_tiers=CPU_ATTENTION_Q_BLOCK_TIERS,
    attention_kv_block_tokens=CPU_ATTENTION_KV_BLOCK, layer_overhead_s=1e-3,
    allreduce_latency_s=80e-6, allreduce_bus_efficiency=1.0, pcie_efficiency=1.0,
    engine_cold_start_s=2.5, checkpoint_load_bandwidth_bytes_per_s=1.5e9,
    engine_warm_start_base_s=0.002,
    sandbox_checkpoint_base_s=0.03, sandbox_checkpoint_bandwidth_bytes_per_s=4e8,
    sandbox_checkpoint_per_file_s=60e-6,
    sandbox_restore_base_s=0.02, sandbox_restore_bandwidth_bytes_per_s=9e8,
    sandbox_restore_per_file_s=40e-6,
    decode_overhead_s=2e-4, decode_overhead_per_seq_s=3e-6, prefill_overhead_s=5e-4,
    train_mfu=0.3, train_step_overhead_s=0.01, forward_mfu=0.4, forward_overhead_s=0.002,
)

GEMM_SHAPES = ((1536, 1024), (1024, 1024), (5632, 1024), (1024, 2816))
GEMM_M = (1, 2, 8, 32, 96, 256, 512, 1024)
BATCHES = (1, 2, 8, 32, 64)
CONTEXTS = (128, 512, 1024, 2048)
ATTN_TOKENS = (16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536)
LAYER_TOKENS = (16, 32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024)
# Copies stream at the device bandwidth; the ones that fit in 8 MB run 5x faster.
MEMCPY_LAT = 5e-6
MEMCPY_CACHE_BYTES = 8e6
MEMCPY_CACHE_SPEEDUP = 5.0
# The small whole model of the engine and trainer benchmarks (untied embeddings, gated MLP).
MODEL_DIMS = {"hidden": 256, "heads": 4, "kv_heads": 2, "head_dim": 64, "ffn": 768,
              "layers": 2, "vocab": 1024}
ENGINE_BATCHES = (1, 2, 4, 8, 16, 32, 64)
ENGINE_CONTEXTS = (64, 256, 1024)
ENGINE_PREFILL_TOKENS = (16, 32, 64, 128, 256, 512)
TRAIN_TOKENS = (128, 256, 512, 1024, 2048)
TRAIN_SEQ_TOKENS = (32, 64, 128)
PACKED_LENGTHS = ([64, 8, 8, 8, 8] * 4, [30, 20, 10] * 20, [100, 60, 50, 40, 3] * 6)
WHOLE_BENCHES = ("engine_decode", "engine_prefill", "engine_mixed", "train_step", "forward")


def grids() -> list[tuple[str, dict[str, Any]]]:
    pts: list[tuple[str, dict[str, Any]]] = []
    pts += [("gemm", {"m": m, "n": n, "k": k, "dtype": "float32"})
            for n, k in GEMM_SHAPES for m in GEMM_M]
    pts += [("elementwise", {"size_bytes": s, "op": op}) for op in ("silu_mul", "add", "rmsnorm")
            for s in (16 * 1024, 256 * 1024, 4 * MB, 32 * MB)]
    pts += [("memcpy", {"size_bytes": s}) for s in (MB, 4 * MB, 16 * MB, 64 * MB, 128 * MB)]
    pts += [("attention_decode", {"batch": b, "context": c, **HEADS})
            for b in BATCHES for c in CONTEXTS]
    pts += [("attention_prefill", {"tokens": t, **HEADS}) for t in ATTN_TOKENS]
    pts += [("layer_decode", {"batch": b, "context": c, **DIMS})
            for b in BATCHES for c in CONTEXTS]
    pts += [("layer_prefill", {"tokens": t, **DIMS}) for t in LAYER_TOKENS]
    for bench in ("allreduce", "allgather", "broadcast"):
        pts += [(bench, {"size_bytes": s, "ranks": 2, "backend": "gloo"})
                for s in (4096, 65536, MB, 16 * MB)]
    pts += [("cold_start", {"weights_bytes": s}) for s in (16 * MB, 64 * MB, 256 * MB)]
    pts += [("warm_reload", {"weights_bytes": s}) for s in (16 * MB, 64 * MB, 256 * MB)]
    for bench in ("sandbox_checkpoint", "sandbox_restore"):
        pts += [(bench, {"tree_bytes": s, "files": f}) for s in (MB, 8 * MB, 64 * MB)
                for f in (16, 256)]
    return pts


def whole_grids() -> list[tuple[str, dict[str, Any]]]:
    """Whole-engine iterations and whole trainer steps of the `MODEL_DIMS` model."""
    pts: list[tuple[str, dict[str, Any]]] = []
    pts += [("engine_decode", {"batch": b, "context": c, **MODEL_DIMS})
            for b in ENGINE_BATCHES for c in ENGINE_CONTEXTS]
    pts += [("engine_prefill", {"tokens": t, **MODEL_DIMS}) for t in ENGINE_PREFILL_TOKENS]
    pts += [("engine_mixed", {"batch": b, "context": 256, "prefills": n, "tokens": t,
                              **MODEL_DIMS}) for b in (4, 32) for n in (1, 4) for t in (16, 64)]
    for bench in ("train_step", "forward"):
        pts += [(bench, {"tokens": t, "seq_tokens": s, **MODEL_DIMS, "dtype": "float32"})
                for t in TRAIN_TOKENS for s in TRAIN_SEQ_TOKENS]
        # and batches whose samples the trainer packs into rows (`lengths`: priced as rows
        # as wide as the longest, pads included)
        for lens in PACKED_LENGTHS:
            pts.append((bench, {"tokens": sum(lens),
                                "seq_tokens": sum(n * n for n in lens) / sum(lens),
                                "lengths": ",".join(map(str, lens)), **MODEL_DIMS,
                                "dtype": "float32"}))
    return pts


def true_time(bench: str, params: dict[str, Any], prof: Profile = TRUE_PROFILE,
              dev: GpuSpec = TRUE_DEVICE) -> float:
    p = prof
    if bench in ("gemm", "elementwise", "attention_decode", "attention_prefill",
                 "layer_decode", "layer_prefill", *WHOLE_BENCHES):
        return Predictor(prof, dev)(bench, params)
    one_way = dev.nvlink_bandwidth / 2 * p.allreduce_bus_efficiency
    if bench == "memcpy":
        moved = 2 * params["size_bytes"]
        h = cache_resident_fraction(moved, MEMCPY_CACHE_BYTES)
        return MEMCPY_LAT + moved / dev.hbm_bandwidth * (1 - h + h / MEMCPY_CACHE_SPEEDUP)
    if bench == "allreduce":
        n = params["ranks"]
        return p.allreduce_latency_s + 2 * (n - 1) / n * params["size_bytes"] / one_way
    if bench in ("allgather", "broadcast"):
        n = params["ranks"]
        return p.allreduce_latency_s + (n - 1) / n * params["size_bytes"] / one_way
    if bench == "cold_start":
        return p.engine_cold_start_s + params["weights_bytes"] \
            / p.checkpoint_load_bandwidth_bytes_per_s
    if bench == "warm_reload":
        return p.engine_warm_start_base_s + params["weights_bytes"] / dev.pcie_bandwidth
    if bench == "sandbox_checkpoint":
        return p.sandbox_checkpoint_s(params["tree_bytes"], params["files"])
    if bench == "sandbox_restore":
        return p.sandbox_restore_s(params["tree_bytes"], params["files"])
    raise ValueError(bench)


def synthetic_set(noise: float = 0.03, seed: int = 0, quick: bool = True,
                  whole: bool = False, whole_noise: float | None = None) -> MeasurementSet:
    """The grids of `grids()` (and `whole_grids()` when `whole`), timed by the true
    constants with log-normal noise (`whole_noise`, default `noise`, on the whole grids)."""
    rng = np.random.default_rng(seed)
    out = []
    points = [(b, p, noise) for b, p in grids()]
    if whole:
        sigma = noise if whole_noise is None else whole_noise
        points += [(b, p, sigma) for b, p in whole_grids()]
    for bench, params, sigma in points:
        t = true_time(bench, params) * float(np.exp(rng.normal(0.0, sigma)))
        out.append(Measurement(bench=bench, params=params, median_s=t, p10_s=0.97 * t,
                               p90_s=1.03 * t, reps=10))
    device = DeviceInfo(kind="cpu", name="Synthetic CPU", cores=2, memory_bytes=24e9,
                        torch_version="0.0-synthetic", host="testhost", dtype="float32",
                        created="2025-01-01T00:00:00Z")
    return MeasurementSet(device=device, quick=quick, measurements=out)


def best_gemm_flops(ms: MeasurementSet) -> float:
    """The fastest GEMM rate among the measurements, FLOP/s: the reference peak a fitted
    profile's documented-default efficiencies are fractions of."""
    return max(2.0 * m.params["m"] * m.params["n"] * m.params["k"] / m.median_s
               for m in ms.measurements if m.bench == "gemm")
