"""Attention alone: one decode step over a KV cache, and causal prefill over one sequence.

`attention_decode` params {batch, context, heads, kv_heads, head_dim}: q (batch, heads, 1,
head_dim) against `context` cached tokens per sequence. `attention_prefill` params {tokens,
heads, kv_heads, head_dim}: causal attention of one `tokens`-long sequence over itself. Both
use torch's scaled_dot_product_attention, the kernel an eager engine would call.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import partial

import torch
import torch.nn.functional as F

from calibration.benchmarks import common
from calibration.benchmarks.model_dims import ModelDims, dims_for, dtype_for
from calibration.measurements import Measurement

BENCHES = ("attention_decode", "attention_prefill")

BATCH_QUICK = [1, 2, 8, 32, 64]
CONTEXT_QUICK = [128, 512, 1024, 2048]
BATCH_FULL = [1, 2, 4, 8, 16, 32, 64]
CONTEXT_FULL = [64, 128, 256, 512, 1024, 2048, 4096]
TOKENS_QUICK = [16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536]
TOKENS_FULL = [16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096]

# The GPU grid reaches the batch and context sizes a 7B decode engine runs, up to a KV cache
# of CUDA_MAX_KV_TOKENS tokens (16 GB at 7B dims in bf16), well inside one H100/H200.
BATCH_CUDA = [1, 2, 4, 8, 16, 32, 64, 128, 256]
CONTEXT_CUDA = [128, 256, 512, 1024, 2048, 4096, 8192, 16384]
TOKENS_CUDA = [*TOKENS_FULL, 6144, 8192, 12288, 16384]
CUDA_MAX_KV_TOKENS = 1 << 20


def decode_grid(device: str, quick: bool) -> list[common.Point]:
    if device.startswith("cuda") and not quick:
        pairs = [(b, c) for b in BATCH_CUDA for c in CONTEXT_CUDA if b * c <= CUDA_MAX_KV_TOKENS]
    elif quick:
        pairs = [(b, c) for b in BATCH_QUICK for c in CONTEXT_QUICK]
    else:
        pairs = [(b, c) for b in BATCH_FULL for c in CONTEXT_FULL]
    return [{"batch": b, "context": c} for b, c in pairs]


def prefill_grid(device: str, quick: bool) -> list[common.Point]:
    tokens = TOKENS_CUDA if device.startswith("cuda") else TOKENS_FULL
    if quick:
        tokens = TOKENS_QUICK
    return [{"tokens": t} for t in tokens]


def head_params(dims: ModelDims) -> dict[str, int]:
    return {"heads": dims.heads, "kv_heads": dims.kv_heads, "head_dim": dims.head_dim}


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """One decode step with grouped-query attention: q (B, H, 1, D), k/v (B, KV, C, D).

    The G = H/KV query heads sharing a KV head become G query rows against that head, so the
    cache is read once rather than expanded G times (what GQA decode kernels do); a single
    new token attends to the whole cache, so no mask is needed. Returns (B, H, 1, D).
    """
    b, h, _, d = q.shape
    kv = k.shape[1]
    out = F.scaled_dot_product_attention(q.reshape(b, kv, h // kv, d), k, v)
    return out.reshape(b, h, 1, d)


def prefill_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal attention of a sequence over itself: q (1, H, T, D), k/v (1, KV, T, D)."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                          enable_gqa=k.shape[1] != q.shape[1])


def kv_buffer(elements: int, device: str, dtype: torch.dtype) -> torch.Tensor:
    """One flat random buffer; each grid point views a contiguous prefix of it as its cache,
    so the grid allocates (and fills) the largest cache once."""
    return torch.empty(elements, device=device, dtype=dtype).uniform_(-1.0, 1.0)


def run(device: str, quick: bool, progress: common.Progress | None = None,
        benches: Collection[str] = BENCHES) -> list[Measurement]:
    dims = dims_for(device)
    dtype = dtype_for(device)
    out: list[Measurement] = []
    if "attention_decode" in benches:
        out += _run_decode(device, quick, progress, dims, dtype)
    if "attention_prefill" in benches:
        out += _run_prefill(device, quick, progress, dims, dtype)
    return out


def _run_decode(device: str, quick: bool, progress: common.Progress | None, dims: ModelDims,
                dtype: torch.dtype) -> list[Measurement]:
    points = common.grid("attention_decode", decode_grid(device, quick))
    per_token = dims.kv_heads * dims.head_dim
    most = max(int(p["batch"]) * int(p["context"]) for p in points) * per_token
    k_all, v_all = kv_buffer(most, device, dtype), kv_buffer(most, device, dtype)
    out: list[Measurement] = []
    for i, p in enumerate(points):
        b, c = int(p["batch"]), int(p["context"])
        shape = (b, dims.kv_heads, c, dims.head_dim)
        k = k_all[: b * c * per_token].view(shape)
        v = v_all[: b * c * per_token].view(shape)
        q = torch.randn(b, dims.heads, 1, dims.head_dim, device=device, dtype=dtype)
        params = {"batch": b, "context": c, **head_params(dims)}
        out.append(common.timed_point("attention_decode", params,
                                      partial(decode_attention, q, k, v),
                                      device, quick))
        common.notify(progress, "attention_decode", i + 1, len(points))
    return out


def _run_prefill(device: str, quick: bool, progress: common.Progress | None, dims: ModelDims,
                 dtype: torch.dtype) -> list[Measurement]:
    points = common.grid("attention_prefill", prefill_grid(device, quick))
    out: list[Measurement] = []
    for i, p in enumerate(points):
        t = int(p["tokens"])
        q = torch.randn(1, dims.heads, t, dims.head_dim, device=device, dtype=dtype)
        k = torch.randn(1, dims.kv_heads, t, dims.head_dim, device=device, dtype=dtype)
        v = torch.randn(1, dims.kv_heads, t, dims.head_dim, device=device, dtype=dtype)
        params = {"tokens": t, **head_params(dims)}
        out.append(common.timed_point("attention_prefill", params,
                                      partial(prefill_attention, q, k, v),
                                      device, quick))
        common.notify(progress, "attention_prefill", i + 1, len(points))
    return out
