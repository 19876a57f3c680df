"""GEMM: the calibration layer's four linear layers over a grid of token counts m, by dtype.

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

BENCHES = ("gemm", "gemm_dtype")

M_QUICK = [1, 2, 8, 32, 96, 256, 512, 1024]
M_FULL = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048]
M_CUDA_EXTRA = [4096, 8192]  # prefill chunks an H100/H200 engine runs; cheap there


def default_grid(device: str, quick: bool) -> list[common.Point]:
    ms = list(M_QUICK if quick else M_FULL)
    if device.startswith("cuda"):
        ms += M_CUDA_EXTRA
    return [{"m": m, "n": n, "k": k}
            for n, k in linear_shapes(dims_for(device)).values() for m in ms]


# `gemm_dtype`: the same shapes in the other dtypes an engine might serve in, on a few token
# counts. Recorded raw in the profile (throughput by dtype); the fit uses only the device's
# serving dtype (`gemm`), since one profile prices one dtype.
M_DTYPE_QUICK = [1, 256]
M_DTYPE_FULL = [1, 32, 256, 1024]


def other_dtypes(device: str) -> list[torch.dtype]:
    serving = dtype_for(device)
    return [d for d in (torch.float32, torch.bfloat16, torch.float16) if d != serving
            and (device.startswith("cuda") or d != torch.float16)]  # no fp16 GEMM path on CPU


def dtype_grid(device: str, quick: bool) -> list[common.Point]:
    ms = M_DTYPE_QUICK if quick else M_DTYPE_FULL
    return [{"m": m, "n": n, "k": k, "dtype": dtype_name(d)} for d in other_dtypes(device)
            for n, k in linear_shapes(dims_for(device)).values() for m in ms]


def run(device: str, quick: bool, progress: common.Progress | None = None,
        benches: tuple[str, ...] = BENCHES) -> list[Measurement]:
    out: list[Measurement] = []
    if "gemm" in benches:
        out += _run_grid("gemm", device, quick, default_grid(device, quick), progress)
    if "gemm_dtype" in benches:
        out += _run_grid("gemm_dtype", device, quick, dtype_grid(device, quick), progress)
    return out


def _run_grid(bench: str, device: str, quick: bool, grid: list[common.Point],
              progress: common.Progress | None) -> list[Measurement]:
    serving = dtype_for(device)
    dtypes = {dtype_name(d): d for d in (torch.float32, torch.bfloat16, torch.float16)}
    points = common.grid(bench, grid)
    out: list[Measurement] = []
    weights: dict[tuple[int, int, torch.dtype], torch.Tensor] = {}
    for i, p in enumerate(points):
        m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
        dtype = dtypes[str(p["dtype"])] if "dtype" in p else serving
        if (n, k, dtype) not in weights:
            weights[(n, k, dtype)] = torch.randn(n, k, device=device, dtype=dtype) / k**0.5
        w = weights[(n, k, dtype)]
        x = torch.randn(m, k, device=device, dtype=dtype)
        params = {"m": m, "n": n, "k": k, "dtype": dtype_name(dtype)}
        out.append(common.timed_point(bench, params, partial(F.linear, x, w),
                                      device, quick))
        common.notify(progress, bench, i + 1, len(points))
    return out
