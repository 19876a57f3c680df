"""engine_start family: an engine's cold start and warm weight reload.

Reads the `cold_start` points (weights_bytes; a fresh process reads its weights from disk)
and fits `engine_cold_start_s` + weights / `checkpoint_load_bandwidth_bytes_per_s`; reads
the `warm_reload` points (weights already in host memory) and fits
`engine_warm_start_base_s`, what the largest reload leaves after its copy at the host link
bandwidth (`InferenceCost.warm_start_s`), so it runs after `transfer`.
"""

from __future__ import annotations

import numpy as np

from calibration.fitting.context import FitContext, PointPrediction
from calibration.fitting.solvers import affine, arrays
from rlsim.config.hardware import GpuSpec
from rlsim.cost.profile import Profile

BENCHES = ("cold_start", "warm_reload")


def fit(ctx: FitContext) -> None:
    """Cold start base and checkpoint read bandwidth; warm reload base."""
    cold = ctx.all("cold_start")
    if len(cold) >= 2:
        w, y = arrays(cold, "weights_bytes")
        base, inv_bw = affine(w, y, relative=False)
        ctx.consts["engine_cold_start_s"] = base
        ctx.consts["checkpoint_load_bandwidth_bytes_per_s"] = 1.0 / max(inv_bw, 1e-30)
    warm = ctx.all("warm_reload")
    if warm:
        # InferenceCost.warm_start_s = base + weights / (pcie * pcie_efficiency); the base
        # is what the largest reload leaves after the copy.
        w, y = arrays(warm, "weights_bytes")
        i = int(np.argmax(w))
        ctx.consts["engine_warm_start_base_s"] = max(0.0, float(y[i] - w[i] / ctx.pcie))


def prediction(bench: str, prof: Profile, device: GpuSpec,
               ctx: FitContext) -> PointPrediction | None:
    """A start's point by the formula its constants feed."""
    p = prof
    if bench == "cold_start":
        return lambda m: p.engine_cold_start_s + float(m.params["weights_bytes"]) \
            / p.checkpoint_load_bandwidth_bytes_per_s
    if bench == "warm_reload":
        return lambda m: p.engine_warm_start_base_s + float(m.params["weights_bytes"]) / (
            device.pcie_bandwidth * p.pcie_efficiency)
    return None
