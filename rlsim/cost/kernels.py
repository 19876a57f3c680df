"""Kernel-level time models: one GEMM and one elementwise kernel on one GPU.

Owns the shape-dependent GEMM model that the inference and training costs build on:

    t(M, N, K) = (t_compute^p + t_memory^p)^(1/p) + kernel_launch_s

- t_memory streams the weight matrix and the activations once from HBM:
  (K*N + M*K + M*N) * dtype / (hbm_bandwidth * hbm_efficiency).
- t_compute quantizes the output matrix (M tokens x N columns) into tiles of tm x tn; the
  tiles run on the SMs in waves = ceil(tiles * split / SMs), each tile taking
  2*tm*tn*K/split FLOPs at (peak / SMs) * tile efficiency. Tile efficiency grows with the
  tile's operand reuse: e = gemm_peak_efficiency / (1 + c * (tm + tn) / (tm * tn)). Skinny
  GEMMs (fewer tiles than SMs) split K to fill the SMs (split-K), as cuBLAS does.
- The kernel picks the fastest tile, as the library heuristics try to.
- CPU BLAS structure (profile constants, neutral on GPUs): GEMMs of at most
  `gemm_gemv_max_rows` rows run as one GEMV per row, each streaming all weights; larger ones
  stream the weights `gemm_weight_passes` times (packing into a blocked copy first) plus
  `gemm_pack_row_elems` elements per weight row (output column), a fixed cost of packing each
  row whatever its length K: short rows (small K) cost more per weight element.
- `warm_cache=True` is for microbenchmarks that repeat one kernel on the same operands: the
  part of the working set that fits in `cache_bytes` streams `cache_speedup` times faster
  (`stream_factor`). The simulator never passes it: a model's weights and KV cache do not
  fit in any cache between two uses.

Plain Python floats only: these run once per simulator event.
"""

from __future__ import annotations

import math

from rlsim.config.hardware import GpuSpec
from rlsim.cost.profile import Profile

# Sharpness of the cache-residency transition: about 94% of a working set half the cache
# size stays resident, 6% of one twice its size (replacement is not a perfect LRU, and
# other processes share the cache).
CACHE_SHARPNESS = 4.0


def cache_resident_fraction(working_set_bytes: float, cache_bytes: float) -> float:
    """Fraction of a repeatedly used working set that the cache holds between uses."""
    if cache_bytes <= 0.0:
        return 0.0
    if working_set_bytes <= 0.0:
        return 1.0
    return 1.0 / (1.0 + (working_set_bytes / cache_bytes) ** CACHE_SHARPNESS)


def stream_factor(working_set_bytes: float, profile: Profile) -> float:
    """Multiplier (<= 1) on the memory-stream time of a kernel repeated on warm operands."""
    h = cache_resident_fraction(working_set_bytes, profile.cache_bytes)
    return 1.0 - h + h / profile.cache_speedup


class GemmModel:
    """Time of one GEMM (M x K) @ (K x N) on one GPU, with constants bound at construction."""

    __slots__ = ("_bw", "_d", "_gemv_rows", "_kmin", "_launch", "_p", "_pack_row", "_passes",
                 "_profile", "_sms", "_tiles")

    def __init__(self, gpu: GpuSpec, profile: Profile, dtype_bytes: int | None = None) -> None:
        if dtype_bytes is None:
            dtype_bytes = profile.dtype_bytes
        # bf16_tflops is the peak of the profile's compute dtype (float32 on a CPU profile).
        per_sm_flops = gpu.bf16_tflops * 1e12 / gpu.sm_count
        self._sms = gpu.sm_count
        # Bytes are converted to seconds through this one factor.
        self._bw = gpu.hbm_bandwidth * profile.hbm_efficiency / dtype_bytes
        self._p = profile.gemm_overlap_exponent
        self._launch = profile.kernel_launch_s
        self._kmin = profile.gemm_splitk_min_k
        self._gemv_rows = profile.gemm_gemv_max_rows
        self._passes = profile.gemm_weight_passes
        self._pack_row = profile.gemm_pack_row_elems
        self._d = dtype_bytes
        self._profile = profile
        tiles = []
        for tm, tn in profile.gemm_tiles:
            eff = profile.gemm_peak_efficiency / (
                1.0 + profile.gemm_tile_overhead_elems * (tm + tn) / (tm * tn)
            )
            # Seconds per unit of K for one tile on one SM.
            tiles.append((tm, tn, 2.0 * tm * tn / (per_sm_flops * eff)))
        self._tiles = tuple(tiles)

    def time_s(self, m: int, n: int, k: int, warm_cache: bool = False) -> float:
        """Seconds of (m x k) @ (k x n); `warm_cache`: operands left in cache by a repeat."""
        if m <= 0:
            return 0.0
        bw = self._bw
        if warm_cache:
            bw /= stream_factor((k * n + m * k + m * n) * self._d, self._profile)
        if m <= self._gemv_rows:
            # One GEMV per row, each streaming all weights once.
            return m * self._tiled(1, n, k, 1.0, bw) + self._launch
        return self._tiled(m, n, k, self._passes, bw, self._pack_row) + self._launch

    def _tiled(self, m: int, n: int, k: int, passes: float, bw: float,
               pack_row: float = 0.0) -> float:
        if pack_row:
            t_mem = (passes * k * n + pack_row * n + m * k + m * n) / bw
        else:
            t_mem = (passes * k * n + m * k + m * n) / bw
        sms = self._sms
        k_splits = k // self._kmin
        # (t_c**p + t_mem**p) ** (1/p) grows with t_c, so the best tile is the one of least
        # compute time: pick it first, then blend once (the hot path of per-micro-batch
        # training pricing; two powers per GEMM instead of two per tile).
        best_c = math.inf
        for tm, tn, s_per_k in self._tiles:
            tiles = -(-m // tm) * -(-n // tn)
            split = min(sms // tiles, k_splits)
            if split < 1:
                split = 1
            t_c = -(-(tiles * split) // sms) * s_per_k * (k / split)  # waves x per wave
            if t_c < best_c:
                best_c = t_c
        p = self._p
        return (best_c**p + t_mem**p) ** (1.0 / p)


class ElementwiseModel:
    """Time of one memory-bound elementwise kernel (norm, rotary, activation, add).

    `efficiency` and `launch_s` override the profile's elementwise_hbm_efficiency and
    elementwise_launch_s for one kind of kernel (activation, norm, rotary); None keeps them.
    """

    __slots__ = ("_bw", "_launch", "_profile")

    def __init__(self, gpu: GpuSpec, profile: Profile, efficiency: float | None = None,
                 launch_s: float | None = None) -> None:
        eff = profile.elementwise_hbm_efficiency if efficiency is None else efficiency
        self._bw = gpu.hbm_bandwidth * eff
        self._profile = profile
        self._launch = profile.elementwise_launch_s if launch_s is None else launch_s

    def time_s(self, size_bytes: float, warm_cache: bool = False) -> float:
        """Seconds to move `size_bytes`; `warm_cache`: a repeat on operands left in cache."""
        if size_bytes <= 0:
            return 0.0
        t = size_bytes / self._bw
        if warm_cache:
            t *= stream_factor(size_bytes, self._profile)
        return t + self._launch
