"""gemm family: GEMM efficiencies, the GEMV row limit, the cache law and the FLOP reference.

Reads the `gemm` points (m, n, k, dtype; `gemm_dtype` is kept raw, not fitted: one profile
prices one dtype). `reference_flops` is the best measured GEMM rate, `FitContext.ref_flops`
(and so `device.bf16_tflops` after normalization). `fit` fits, through `GemmModel`, the
Profile fields GEMM_FIT_NAMES (`hbm_efficiency`, `kernel_launch_s`, `gemm_overlap_exponent`,
`gemm_peak_efficiency`, `gemm_tile_overhead_elems`, `gemm_weight_passes`, `cache_bytes`,
`cache_speedup`, `gemm_pack_row_elems` on CPUs) and `gemm_gemv_max_rows`; on a CPU it also
sets the CPU BLAS structure (`gemm_tiles`, `gemm_splitk_min_k`). Every later compute stage
prices its GEMMs with these constants; `joint` refines them with the layer grids.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibration.fitting.context import DeviceFacts, FitContext
from calibration.fitting.predict import Predictor, dtype_bytes
from calibration.fitting.solvers import Array, fit_relative, mape
from calibration.measurements import Measurement

BENCHES = ("gemm",)

# Output tiles (rows x columns) of the CPU GEMM model: a CPU BLAS splits the output into
# blocks over its threads, and the register micro-kernel of AVX2/AVX-512 sgemm is a few rows
# by 16-64 columns, so narrow-row blocks exist for GEMV-like small m (unlike a GPU's 8-row
# minimum). Same model as on GPUs, with cores for SMs (docs/calibration.md).
CPU_GEMM_TILES: tuple[tuple[int, int], ...] = (
    (1, 64), (4, 64), (8, 64), (16, 64), (32, 64), (64, 64), (128, 128), (256, 256),
)
CPU_SPLITK_MIN_K = 1 << 30  # CPU BLAS parallelizes over the output, not over K
# Row counts up to which a CPU BLAS may run a GEMM as one GEMV per row; the fit picks the one
# that explains the small-M points best (0: no GEMV path).
CPU_GEMV_ROW_CANDIDATES = (0, 1, 3)

GEMM_FIT_NAMES = ("hbm_efficiency", "kernel_launch_s", "gemm_overlap_exponent",
                  "gemm_peak_efficiency", "gemm_tile_overhead_elems", "gemm_weight_passes",
                  "cache_bytes", "cache_speedup", "gemm_pack_row_elems")
# Fit bounds; efficiencies are relative to the reference rates (may exceed 1 until
# normalization), cache_bytes' upper bound is set from the grid.
GEMM_FIT_BOUNDS = {"hbm_efficiency": (0.05, 20.0), "kernel_launch_s": (0.0, 1e-3),
                   "gemm_overlap_exponent": (1.0, 20.0), "gemm_peak_efficiency": (0.05, 20.0),
                   "gemm_tile_overhead_elems": (0.0, 500.0), "gemm_weight_passes": (0.5, 10.0),
                   "cache_bytes": (0.0, np.inf), "cache_speedup": (1.0, 20.0),
                   "gemm_pack_row_elems": (0.0, 1e5)}


def reference_flops(points: Sequence[Measurement], facts: DeviceFacts) -> float:
    """The best measured GEMM rate (FLOP/s) of the fitted points; without points the
    catalogue GPU's peak, else a nominal 1e11 (CPU) or 3e14 (CUDA)."""
    if points:
        return max(2.0 * m.params["m"] * m.params["n"] * m.params["k"] / m.median_s
                   for m in points)
    if facts.catalogue is not None:
        return facts.catalogue.bf16_tflops * 1e12
    return 1e11 if not facts.is_cuda else 3e14


def fit(ctx: FitContext) -> None:
    """GEMM constants, the GEMV row limit and the cache law, on the GEMM grid.

    On a CPU the blocked (non-GEMV) path's weight cost is split between whole weight
    passes (`gemm_weight_passes`) and a fixed packing cost per weight row
    (`gemm_pack_row_elems`, independent of K): the data decide how much of each.
    """
    pts = ctx.train("gemm")
    if len(pts) < 5:
        ctx.notes.append("fewer than 5 GEMM points: GEMM constants are defaults")
        return
    is_cuda = ctx.facts.is_cuda
    if is_cuda:
        gemv_candidates: tuple[int, ...] = (0,)
    else:
        ctx.consts["gemm_tiles"] = CPU_GEMM_TILES
        ctx.consts["gemm_splitk_min_k"] = CPU_SPLITK_MIN_K
        gemv_candidates = CPU_GEMV_ROW_CANDIDATES
    # GPU GEMMs read the weights in place: no per-row packing cost to fit (it stays 0).
    names = tuple(k for k in GEMM_FIT_NAMES
                  if not (is_cuda and k == "gemm_pack_row_elems"))
    y = np.array([m.median_s for m in pts])
    device = ctx.device()
    ws = [(m.params["k"] * m.params["n"] + m.params["m"] * (m.params["k"] + m.params["n"]))
          * dtype_bytes(str(m.params.get("dtype", ctx.ms.device.dtype))) for m in pts]
    ws_max = float(max(ws))
    launch0 = float(np.min(y)) / 4
    lower = [GEMM_FIT_BOUNDS[k][0] for k in names]
    upper = [GEMM_FIT_BOUNDS[k][1] if k != "cache_bytes" else 2.0 * ws_max for k in names]
    # Starts in GEMM_FIT_NAMES order; the last value (gemm_pack_row_elems) is dropped on
    # CUDA. The third start puts the blocked path's weight cost in the per-row packing.
    x0 = [1.0, launch0, 2.0, 1.0, 10.0, 1.0, ws_max / 8, 2.0, 0.0][:len(names)]
    starts = [s[:len(names)] for s in (
        [1.0, launch0, 1.2, 1.0, 5.0, 3.0, ws_max / 4, 3.0, 0.0],
        [0.7, launch0, 4.0, 1.2, 40.0, 1.0, ws_max / 2, 1.5, 0.0],
        [1.0, launch0, 1.2, 1.0, 5.0, 1.0, ws_max / 4, 3.0, 2000.0])]
    if is_cuda:
        starts = starts[:2]
    best: tuple[float, int, Array] | None = None
    for rows in gemv_candidates:
        def fn(x: Array, rows: int = rows) -> Array:
            prof = ctx.profile(**dict(zip(names, x, strict=True)), gemm_gemv_max_rows=rows)
            pred = Predictor(prof, device)
            return np.array([pred.gemm_s(m.params) for m in pts])

        x = fit_relative(fn, y, x0, lower, upper, starts)
        err = mape(list(fn(x)), list(y))
        if best is None or err < best[0] - 1e-9:
            best = (err, rows, x)
    assert best is not None
    ctx.consts.update({k: float(v) for k, v in zip(names, best[2], strict=True)})
    ctx.consts["gemm_gemv_max_rows"] = best[1]
