"""memcpy family: the device's memory bandwidth, the reference every stream rate is relative to.

Reads the `memcpy` points (size_bytes; a copy reads and writes each byte). Fits latency +
moved / bandwidth with the kernels' cache residency law (`kernels.cache_resident_fraction`,
its own cache size and speed-up: the small copies of the grid run from cache), so only the
bandwidth of copies that miss the cache becomes `FitContext.ref_bw`, and so
`device.hbm_bandwidth` after normalization. Runs before every stage (it makes the context);
without points the bandwidth is the catalogue GPU's or 1e10 B/s. The fitted law prices the
memcpy points in the report.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibration.fitting.context import CopyLaw, DeviceFacts, FitContext, PointPrediction
from calibration.fitting.solvers import Array, arrays, fit_relative
from calibration.measurements import Measurement
from rlsim.config.hardware import GpuSpec
from rlsim.cost.kernels import cache_resident_fraction
from rlsim.cost.profile import Profile

BENCHES = ("memcpy",)


def reference_bandwidth(points: Sequence[Measurement], facts: DeviceFacts,
                        notes: list[str]) -> tuple[float, CopyLaw | None]:
    """(copy bandwidth in bytes read + written per second of copies that miss the cache,
    the fitted copy law or None without 2 points)."""
    if len(points) < 2:
        notes.append("no memcpy points: memory bandwidth from the catalogue or 1e10 B/s")
        cat = facts.catalogue
        return (cat.hbm_bandwidth if cat is not None else 1e10), None
    size, y = arrays(points, "size_bytes")
    moved = 2.0 * size
    bw0 = float(np.max(moved / y))

    def fn(x: Array) -> Array:
        h = np.array([cache_resident_fraction(b, x[2]) for b in moved])
        out: Array = x[0] + moved / x[1] * (1.0 - h + h / x[3])
        return out

    big = float(np.max(moved))
    starts = [[0.0, bw0 / f, c, 4.0] for f in (2.0, 8.0) for c in (big / 64, big / 8)]
    x = fit_relative(fn, y, [float(np.min(y)) / 4, bw0, 0.0, 1.0], [0.0, 1e6, 0.0, 1.0],
                     [1.0, 1e15, big, 100.0], starts)
    law = CopyLaw(*(float(v) for v in x))
    return float(x[1]), law


def prediction(bench: str, prof: Profile, device: GpuSpec,
               ctx: FitContext) -> PointPrediction | None:
    """A memcpy point by the fitted copy law (none when there was no fit)."""
    if ctx.copy_law is None:
        return None
    lat, bw, cache, speedup = ctx.copy_law

    def memcpy(m: Measurement) -> float:
        moved = 2.0 * float(m.params["size_bytes"])
        h = cache_resident_fraction(moved, cache)
        return lat + moved / bw * (1.0 - h + h / speedup)
    return memcpy
