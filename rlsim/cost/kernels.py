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

Plain Python floats only: these run once per simulator event.
"""

from __future__ import annotations

import math

from rlsim.config.hardware import GpuSpec
from rlsim.cost.profile import Profile


class GemmModel:
    """Time of one GEMM (M x K) @ (K x N) on one GPU, with constants bound at construction."""

    __slots__ = ("_bw", "_kmin", "_launch", "_p", "_sms", "_tiles")

    def __init__(self, gpu: GpuSpec, profile: Profile, dtype_bytes: int = 2) -> None:
        per_sm_flops = gpu.bf16_tflops * 1e12 / gpu.sm_count
        self._sms = gpu.sm_count
        # Bytes are converted to seconds through this one factor.
        self._bw = gpu.hbm_bandwidth * profile.hbm_efficiency / dtype_bytes
        self._p = profile.gemm_overlap_exponent
        self._launch = profile.kernel_launch_s
        self._kmin = profile.gemm_splitk_min_k
        tiles = []
        for tm, tn in profile.gemm_tiles:
            eff = profile.gemm_peak_efficiency / (
                1.0 + profile.gemm_tile_overhead_elems * (tm + tn) / (tm * tn)
            )
            # Seconds per unit of K for one tile on one SM.
            tiles.append((tm, tn, 2.0 * tm * tn / (per_sm_flops * eff)))
        self._tiles = tuple(tiles)

    def time_s(self, m: int, n: int, k: int) -> float:
        if m <= 0:
            return 0.0
        t_mem = (k * n + m * k + m * n) / self._bw
        p = self._p
        mem_p = t_mem**p
        sms = self._sms
        best = math.inf
        for tm, tn, s_per_k in self._tiles:
            tiles = -(-m // tm) * -(-n // tn)
            split = min(sms // tiles, k // self._kmin)
            if split < 1:
                split = 1
            waves = -(-(tiles * split) // sms)
            t_c = waves * s_per_k * (k / split)
            t = (t_c**p + mem_p) ** (1.0 / p)
            if t < best:
                best = t
        return best + self._launch


class ElementwiseModel:
    """Time of one memory-bound elementwise kernel (norm, rotary, activation, add)."""

    __slots__ = ("_bw", "_launch")

    def __init__(self, gpu: GpuSpec, profile: Profile) -> None:
        self._bw = gpu.hbm_bandwidth * profile.elementwise_hbm_efficiency
        self._launch = profile.elementwise_launch_s

    def time_s(self, size_bytes: float) -> float:
        if size_bytes <= 0:
            return 0.0
        return size_bytes / self._bw + self._launch
