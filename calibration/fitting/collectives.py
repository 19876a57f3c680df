"""collectives family: ring latency and bus bandwidth of the tensor-parallel link.

Reads the `allreduce` and `allgather` points (size_bytes, ranks) together, with the ring
formulas of `rlsim.cost.network` (2(n-1)/n and (n-1)/n of the buffer cross each link; two
collectives pin the latency down better than one noisy grid), and fits
`allreduce_latency_s`, the one-way link bandwidth (`FitContext.link_one_way`, stored as
`device.nvlink_bandwidth` with `allreduce_bus_efficiency` 1) and the node size
(`gpus_per_node`, at least the most ranks measured). `broadcast` is predicted in the report,
not fitted. Needs no other stage.
"""

from __future__ import annotations

import numpy as np

from calibration.fitting.context import FitContext, PointPrediction
from calibration.fitting.solvers import affine, arrays
from calibration.measurements import Measurement
from rlsim.config.hardware import GpuSpec
from rlsim.cost.profile import Profile

BENCHES = ("allreduce", "allgather", "broadcast")


def fit(ctx: FitContext) -> None:
    """Ring latency and bus bandwidth on the all-reduce and all-gather grids together."""
    pts = ctx.all("allreduce") + ctx.all("allgather")
    if len(pts) < 2:
        ctx.notes.append("no all-reduce points: TP link = memory bandwidth, default latency")
        return
    ranks, size, y = arrays(pts, "ranks", "size_bytes")
    ring = np.array([2.0 if m.bench == "allreduce" else 1.0 for m in pts])
    lat, inv_bw = affine(ring * (ranks - 1) / ranks * size, y)
    ctx.link_one_way = 1.0 / max(inv_bw, 1e-30)
    ctx.gpus_per_node = max(ctx.gpus_per_node, int(np.max(ranks)))
    ctx.consts["allreduce_latency_s"] = lat
    ctx.consts["allreduce_bus_efficiency"] = 1.0


def prediction(bench: str, prof: Profile, device: GpuSpec,
               ctx: FitContext) -> PointPrediction | None:
    """A collective's point by the ring formula its constants feed."""
    p = prof
    if bench == "allreduce":
        one_way = device.nvlink_bandwidth / 2 * p.allreduce_bus_efficiency

        def allreduce(m: Measurement) -> float:
            n = float(m.params["ranks"])
            return p.allreduce_latency_s + 2 * (n - 1) / n * float(m.params["size_bytes"]) \
                / one_way
        return allreduce
    if bench in ("allgather", "broadcast"):
        one_way = device.nvlink_bandwidth / 2 * p.allreduce_bus_efficiency
        # Ring all-gather of a size_bytes OUTPUT: (n-1)/n of it crosses each link; a
        # pipelined ring broadcast moves the same (reported, not fitted).
        return lambda m: p.allreduce_latency_s + (float(m.params["ranks"]) - 1) / float(
            m.params["ranks"]) * float(m.params["size_bytes"]) / one_way
    return None
