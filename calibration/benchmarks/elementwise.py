"""Element-wise ops of a transformer layer: SiLU*mul, residual add and RMSNorm by tensor size.

params {size_bytes, op}; `size_bytes` is the bytes of the op's OUTPUT tensor, shaped
(rows, hidden) of the calibration model. Bytes moved per op: silu_mul reads 2x and writes
1x (its input is the fused gate|up activation), add reads 2x and writes 1x, rmsnorm reads 1x
and writes 1x (plus a hidden-sized weight).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from calibration.benchmarks import common
from calibration.benchmarks.model_dims import dims_for, dtype_for
from calibration.measurements import Measurement

BENCHES = ("elementwise",)
OPS = ("silu_mul", "add", "rmsnorm")

SIZES_QUICK = [16 * common.KB, 256 * common.KB, 4 * common.MB, 32 * common.MB]
SIZES_FULL = common.pow2_range(4 * common.KB, 256 * common.MB, 4)


def default_grid(device: str, quick: bool) -> list[common.Point]:
    return [{"size_bytes": s, "op": op} for op in OPS
            for s in (SIZES_QUICK if quick else SIZES_FULL)]


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Llama's RMSNorm, in the compute dtype (engines fuse it; eager torch is what we have)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def make_op(op: str, rows: int, width: int, device: str,
            dtype: torch.dtype) -> Callable[[], torch.Tensor]:
    if op == "silu_mul":
        gate_up = torch.randn(rows, 2 * width, device=device, dtype=dtype)

        def silu_mul() -> torch.Tensor:
            gate, up = gate_up.chunk(2, dim=-1)
            return F.silu(gate) * up
        return silu_mul
    if op == "add":
        a = torch.randn(rows, width, device=device, dtype=dtype)
        b = torch.randn(rows, width, device=device, dtype=dtype)
        return lambda: a + b
    if op == "rmsnorm":
        x = torch.randn(rows, width, device=device, dtype=dtype)
        w = torch.ones(width, device=device, dtype=dtype)
        return lambda: rmsnorm(x, w)
    raise ValueError(f"unknown elementwise op {op!r}; expected one of {OPS}")


def run(device: str, quick: bool, progress: common.Progress | None = None) -> list[Measurement]:
    dtype = dtype_for(device)
    width = dims_for(device).hidden
    row_bytes = width * torch.empty((), dtype=dtype).element_size()
    points = common.grid("elementwise", default_grid(device, quick))
    out: list[Measurement] = []
    for i, p in enumerate(points):
        rows = max(1, int(p["size_bytes"]) // row_bytes)
        op = str(p["op"])
        params = {"size_bytes": rows * row_bytes, "op": op}
        fn = make_op(op, rows, width, device, dtype)
        out.append(common.timed_point("elementwise", params, fn, device, quick))
        common.notify(progress, "elementwise", i + 1, len(points))
    return out
