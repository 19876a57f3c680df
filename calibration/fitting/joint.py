"""The compute grids together: GEMM, cache, attention and layer constants refined at once.

Reads the fitted points of every compute grid (`predict.COMPUTE_BENCHES`: gemm, attention
decode and prefill, layer decode and prefill) and refines, from the values the gemm,
attention and layer stages found, every one of their Profile fields already fitted
(`gemm.GEMM_FIT_NAMES`, `attention.ATTENTION_FIT_NAMES`, `layer_overhead_s`). Runs only
with layer points and a fitted cache law. The single-kernel benchmarks run with warm caches
and the layer benchmarks cold, so only together do they separate cache speed-up from memory
bandwidth: the GEMM grid alone cannot tell a resident weight from a fast stream.
"""

from __future__ import annotations

import numpy as np

from calibration.fitting.attention import ATTENTION_FIT_BOUNDS, ATTENTION_FIT_NAMES
from calibration.fitting.context import FitContext
from calibration.fitting.gemm import GEMM_FIT_BOUNDS, GEMM_FIT_NAMES
from calibration.fitting.predict import COMPUTE_BENCHES, Predictor
from calibration.fitting.solvers import Array, fit_relative

BENCHES = COMPUTE_BENCHES


def fit(ctx: FitContext) -> None:
    """Refine the GEMM, cache, attention and layer constants on all compute grids at once."""
    pts = [m for b in COMPUTE_BENCHES for m in ctx.train(b)]
    if not ctx.train("layer_decode") + ctx.train("layer_prefill") or "cache_bytes" \
            not in ctx.consts:
        return
    names = [k for k in (*GEMM_FIT_NAMES, *ATTENTION_FIT_NAMES, "layer_overhead_s")
             if k in ctx.consts]
    y = np.array([m.median_s for m in pts])
    device = ctx.device()

    def fn(x: Array) -> Array:
        pred = Predictor(ctx.profile(**dict(zip(names, x, strict=True))), device)
        return np.array([pred(m.bench, m.params) for m in pts])

    bounds = {**GEMM_FIT_BOUNDS, **ATTENTION_FIT_BOUNDS, "layer_overhead_s": (0.0, 1.0)}
    ws_max = float(ctx.consts["cache_bytes"]) * 4 + 1.0
    lower = [bounds[k][0] for k in names]
    upper = [bounds[k][1] if k != "cache_bytes" else max(ws_max, 1.0) for k in names]
    x0 = [float(ctx.consts[k]) for k in names]
    ci = names.index("cache_bytes")
    starts = []
    for scale in (0.25, 0.5):
        alt = list(x0)
        alt[ci] = x0[ci] * scale
        starts.append(alt)
    x = fit_relative(fn, y, x0, lower, upper, starts)
    ctx.consts.update({k: float(v) for k, v in zip(names, x, strict=True)})
