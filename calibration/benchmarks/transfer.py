"""Host<->device copies over PCIe/NVLink-C2C: `h2d` and `d2h`, pinned and pageable host memory.

params {size_bytes, pinned}. CUDA only: on a CPU device there is no copy to measure, so the
family returns no points. Pinned copies are issued non_blocking (DMA straight from the page-
locked buffer, as weight loading and offload do); pageable ones go through a staging buffer.
"""

from __future__ import annotations

from collections.abc import Collection

import torch

from calibration.benchmarks import common
from calibration.measurements import Measurement

BENCHES = ("h2d", "d2h")

SIZES_QUICK = [64 * common.KB, 1 * common.MB, 16 * common.MB, 256 * common.MB]
SIZES_FULL = common.pow2_range(4 * common.KB, 1024 * common.MB, 4)


def default_grid(device: str, quick: bool) -> list[common.Point]:
    return [{"size_bytes": s, "pinned": pinned} for pinned in (True, False)
            for s in (SIZES_QUICK if quick else SIZES_FULL)]


def run(device: str, quick: bool, progress: common.Progress | None = None,
        benches: Collection[str] = BENCHES) -> list[Measurement]:
    if not device.startswith("cuda"):
        return []
    out: list[Measurement] = []
    for bench in BENCHES:
        if bench not in benches:
            continue
        points = common.grid(bench, default_grid(device, quick))
        for i, p in enumerate(points):
            size, pinned = int(p["size_bytes"]), bool(p["pinned"])
            host = torch.ones(size, dtype=torch.uint8, pin_memory=pinned)
            dev = torch.zeros(size, dtype=torch.uint8, device=device)
            if bench == "h2d":
                def fn(dev: torch.Tensor = dev, host: torch.Tensor = host,
                       pinned: bool = pinned) -> object:
                    return dev.copy_(host, non_blocking=pinned)
            else:
                def fn(dev: torch.Tensor = dev, host: torch.Tensor = host,
                       pinned: bool = pinned) -> object:
                    return host.copy_(dev, non_blocking=pinned)
            out.append(common.timed_point(bench, {"size_bytes": size, "pinned": pinned}, fn,
                                          device, quick))
            del host, dev
            common.notify(progress, bench, i + 1, len(points))
    return out
