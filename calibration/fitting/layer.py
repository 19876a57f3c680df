"""layer family: the fixed per-layer overhead of a whole decoder layer.

Reads the `layer_decode` (batch, context + layer dims) and `layer_prefill` (tokens + layer
dims) points, priced by `InferenceCost.layer_step_s` with every GEMM, attention and
elementwise constant fitted before, and fits the Profile field `layer_overhead_s` (what a
layer costs beyond its kernels). Runs after gemm, attention and elementwise, and again after
`joint`.
"""

from __future__ import annotations

import numpy as np

from calibration.fitting.context import FitContext
from calibration.fitting.predict import Predictor
from calibration.fitting.solvers import Array, fit_relative

BENCHES = ("layer_decode", "layer_prefill")


def fit(ctx: FitContext) -> None:
    """`layer_overhead_s` on the layer grids, every kernel constant as fitted so far."""
    pts = ctx.train("layer_decode") + ctx.train("layer_prefill")
    if not pts:
        ctx.notes.append("no layer points: layer_overhead_s is 0")
        return
    y = np.array([m.median_s for m in pts])
    device = ctx.device()

    def fn(x: Array) -> Array:
        pred = Predictor(ctx.profile(layer_overhead_s=float(x[0])), device)
        return np.array([pred(m.bench, m.params) for m in pts])

    x = fit_relative(fn, y, [0.0], [0.0], [1.0], starts=[[float(np.min(y)) / 10]])
    ctx.consts["layer_overhead_s"] = float(x[0])
