"""GEMM: the calibration layer's four linear layers over a grid of token counts m.

A point is `F.linear(x, w)` with x (m, k) and a weight w (n, k), as an engine runs its
projections; params {m, n, k, dtype}. The m grid spans decode batches (m = 1..64, memory
bound on the weight) up to prefill chunks (compute bound), with non-powers of two among them
so held-back points test the fit between the powers.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F

from calibration.benchmarks import common
from calibration.benchmarks.model_dims import dims_for, dtype_for, dtype_name, linear_shapes
from calibration.measurements import Measurement

BENCHES = ("gemm",)

M_QUICK = [1, 2, 8, 32, 96, 256, 512, 1024]
M_FULL = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048]
M_CUDA_EXTRA = [4096, 8192]  # prefill chunks an H100/H200 engine runs; cheap there


def default_grid(device: str, quick: bool) -> list[common.Point]:
    ms = list(M_QUICK if quick else M_FULL)
    if device.startswith("cuda"):
        ms += M_CUDA_EXTRA
    return [{"m": m, "n": n, "k": k}
            for n, k in linear_shapes(dims_for(device)).values() for m in ms]


def run(device: str, quick: bool, progress: common.Progress | None = None) -> list[Measurement]:
    dtype = dtype_for(device)
    points = common.grid("gemm", default_grid(device, quick))
    out: list[Measurement] = []
    weights: dict[tuple[int, int], torch.Tensor] = {}
    for i, p in enumerate(points):
        m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
        if (n, k) not in weights:
            weights[(n, k)] = torch.randn(n, k, device=device, dtype=dtype) / k**0.5
        w = weights[(n, k)]
        x = torch.randn(m, k, device=device, dtype=dtype)
        params = {"m": m, "n": n, "k": k, "dtype": dtype_name(dtype)}
        out.append(common.timed_point("gemm", params, partial(F.linear, x, w),
                                      device, quick))
        common.notify(progress, "gemm", i + 1, len(points))
    return out
