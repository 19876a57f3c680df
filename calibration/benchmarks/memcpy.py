"""Device memory bandwidth: a device-to-device copy of one large tensor.

params {size_bytes}; one `dst.copy_(src)` reads and writes `size_bytes` each, so the fit's
bandwidth is 2 * size_bytes / time. Sizes start at 1 MB so caches do not dominate.
"""

from __future__ import annotations

from functools import partial

import torch

from calibration.benchmarks import common
from calibration.measurements import Measurement

BENCHES = ("memcpy",)

SIZES_QUICK = [1 * common.MB, 4 * common.MB, 16 * common.MB, 64 * common.MB, 128 * common.MB]
SIZES_FULL = common.pow2_range(1 * common.MB, 512 * common.MB)
SIZES_CUDA_FULL = common.pow2_range(1 * common.MB, 2048 * common.MB)


def default_grid(device: str, quick: bool) -> list[common.Point]:
    sizes = SIZES_CUDA_FULL if device.startswith("cuda") else SIZES_FULL
    if quick:
        sizes = SIZES_QUICK
    return [{"size_bytes": s} for s in sizes]


def run(device: str, quick: bool, progress: common.Progress | None = None) -> list[Measurement]:
    points = common.grid("memcpy", default_grid(device, quick))
    out: list[Measurement] = []
    for i, p in enumerate(points):
        size = int(p["size_bytes"])
        src = torch.ones(size, dtype=torch.uint8, device=device)
        dst = torch.zeros_like(src)  # touched now, so page faults stay out of the timing
        out.append(common.timed_point("memcpy", {"size_bytes": size}, partial(dst.copy_, src),
                                      device, quick))
        del src, dst
        common.notify(progress, "memcpy", i + 1, len(points))
    return out
