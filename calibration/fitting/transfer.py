"""transfer family: the host<->device link bandwidth.

Reads the pinned `h2d` points (size_bytes) and fits the link's achieved bandwidth on
absolute error (GB-scale weight moves are priced far beyond the grid), stored as
`device.pcie_bandwidth` (`FitContext.pcie`) with `pcie_efficiency` 1. A CPU has no such
link: there "reloading weights" is a host memory copy into fresh tensors, which is what the
`warm_reload` points of engine_start measure, so their slope is the bandwidth instead.
Without either it stays half the copy bandwidth. Needs no other stage; engine_start's warm
reload base reads the bandwidth found here.
"""

from __future__ import annotations

from calibration.fitting.context import FitContext, PointPrediction
from calibration.fitting.solvers import affine, arrays
from rlsim.config.hardware import GpuSpec
from rlsim.cost.profile import Profile

BENCHES = ("h2d", "d2h")


def fit(ctx: FitContext) -> None:
    """The host link's bandwidth from pinned copies (or a CPU's warm reloads)."""
    pinned = [m for m in ctx.all("h2d") if m.params.get("pinned", True)]
    if len(pinned) >= 2:
        size, y = arrays(pinned, "size_bytes")
        _, inv_bw = affine(size, y, relative=False)
        ctx.pcie = 1.0 / max(inv_bw, 1e-30)
        ctx.consts["pcie_efficiency"] = 1.0
        return
    warm = ctx.all("warm_reload")
    if not ctx.facts.is_cuda and len(warm) >= 2:
        # No host<->device link on a CPU: "reloading weights" is a host memory copy into
        # fresh tensors, which is what the warm reload measures.
        w, y = arrays(warm, "weights_bytes")
        _, inv_bw = affine(w, y, relative=False)
        ctx.pcie = 1.0 / max(inv_bw, 1e-30)
    ctx.consts["pcie_efficiency"] = 1.0


def prediction(bench: str, prof: Profile, device: GpuSpec,
               ctx: FitContext) -> PointPrediction | None:
    """A copy's point: size over the link bandwidth (no latency term)."""
    p = prof
    if bench in ("h2d", "d2h"):
        return lambda m: float(m.params["size_bytes"]) / (device.pcie_bandwidth
                                                          * p.pcie_efficiency)
    return None
