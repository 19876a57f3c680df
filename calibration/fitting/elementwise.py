"""elementwise family: an efficiency and a launch latency per kind of elementwise kernel.

Reads the `elementwise` points (op, size_bytes of the output), priced by `ElementwiseModel`
with the bytes per output byte of `predict.ELEMENTWISE_BYTES_PER_OUTPUT_BYTE`, and fits per
op the Profile fields of `ELEMENTWISE_CONSTANT` / `ELEMENTWISE_LAUNCH`: silu_mul ->
`activation_hbm_efficiency`, `activation_launch_s`; add -> `elementwise_hbm_efficiency`,
`elementwise_launch_s`; rmsnorm -> `norm_hbm_efficiency`, `norm_launch_s`. No op streams
faster than the best stream rate fitted before it (`hbm_efficiency` from gemm,
`attention_decode_hbm_efficiency` from attention), so it runs after those, and again after
`joint` (which moves the cache constants the grid is read with).
"""

from __future__ import annotations

import numpy as np

from calibration.fitting.context import FitContext
from calibration.fitting.predict import ELEMENTWISE_CONSTANT, ELEMENTWISE_LAUNCH, Predictor
from calibration.fitting.solvers import Array, fit_relative

BENCHES = ("elementwise",)


def fit(ctx: FitContext) -> None:
    """An efficiency and a launch latency per kind of elementwise kernel."""
    pts = ctx.train("elementwise")
    if len(pts) < 2:
        ctx.notes.append("no elementwise points: elementwise constants are defaults")
        return
    ops = sorted({str(m.params["op"]) for m in pts})
    names = [ELEMENTWISE_CONSTANT[op] for op in ops] + [ELEMENTWISE_LAUNCH[op] for op in ops]
    y = np.array([m.median_s for m in pts])
    device = ctx.device()

    def fn(x: Array) -> Array:
        pred = Predictor(ctx.profile(**dict(zip(names, x, strict=True))), device)
        return np.array([pred.elementwise_s(m.params) for m in pts])

    n = len(ops)
    ymin = float(np.min(y))
    # No elementwise kernel streams faster than the best stream already fitted (large
    # copies, GEMM weights, KV reads): that rate is the device's memory bandwidth.
    top = max([1.0, *(float(ctx.consts[k]) for k in ("hbm_efficiency",
               "attention_decode_hbm_efficiency") if ctx.consts.get(k) is not None)])
    x = fit_relative(fn, y, [min(0.5, top)] * n + [ymin / 2] * n, [1e-3] * n + [0.0] * n,
                     [top] * n + [1e-2] * n, starts=[[0.1] * n + [ymin / 10] * n])
    ctx.consts.update({k: float(v) for k, v in zip(names, x, strict=True)})
    if "add" not in ops:
        # The generic constants (embedding, logits, rotary) fall back to the first op's.
        ctx.consts["elementwise_hbm_efficiency"] = ctx.consts[names[0]]
        ctx.consts["elementwise_launch_s"] = ctx.consts[names[n]]
