"""One whole transformer layer (Llama-style), a decode step and a prefill, as an engine runs it.

The layer: RMSNorm, fused QKV projection, rotary embedding on q and k, append k/v to a
preallocated KV cache, attention over the cache, output projection, residual add, RMSNorm,
gated MLP (fused gate|up, SiLU*mul, down), residual add. Timing the whole layer captures what
the per-op benchmarks miss: the glue between ops and the per-op launch and dispatch overhead.

`layer_decode` params {batch, context, hidden, heads, kv_heads, head_dim, ffn}: `batch`
sequences each with `context` cached tokens take one step (the new token is written at
position `context`, the same slot on every repetition, so each repetition sees the same
state). `layer_prefill` params {tokens, hidden, heads, kv_heads, head_dim, ffn}: one prompt
of `tokens` tokens, causal.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import partial

import torch
import torch.nn.functional as F

from calibration.benchmarks import attention, common
from calibration.benchmarks.elementwise import rmsnorm
from calibration.benchmarks.model_dims import ModelDims, dims_for, dtype_for
from calibration.measurements import Measurement

BENCHES = ("layer_decode", "layer_prefill")

TOKENS_QUICK = [16, 32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024]
TOKENS_FULL = [16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072]


def decode_grid(device: str, quick: bool) -> list[common.Point]:
    # The attention grid's (batch, context) pairs, so the two fit on the same points.
    return attention.decode_grid(device, quick)


def prefill_grid(device: str, quick: bool) -> list[common.Point]:
    if device.startswith("cuda") and not quick:
        tokens = attention.TOKENS_CUDA
    else:
        tokens = TOKENS_QUICK if quick else TOKENS_FULL
    return [{"tokens": t} for t in tokens]


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Layer:
    """Weights and the two forward passes of one layer; random weights, real arithmetic."""

    def __init__(self, dims: ModelDims, device: str, dtype: torch.dtype, max_positions: int):
        self.dims = dims

        def weight(n: int, k: int) -> torch.Tensor:
            return torch.randn(n, k, device=device, dtype=dtype) / k**0.5

        self.w_qkv = weight(dims.qkv_out, dims.hidden)
        self.w_o = weight(dims.hidden, dims.attn_width)
        self.w_gate_up = weight(2 * dims.ffn, dims.hidden)
        self.w_down = weight(dims.hidden, dims.ffn)
        self.norm_attn = torch.ones(dims.hidden, device=device, dtype=dtype)
        self.norm_mlp = torch.ones(dims.hidden, device=device, dtype=dtype)
        d = dims.head_dim
        inv_freq = 1.0 / 10000 ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d)
        angles = torch.outer(torch.arange(max_positions, device=device, dtype=torch.float32),
                             inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.cos = angles.cos().to(dtype)
        self.sin = angles.sin().to(dtype)

    def _rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        return x * cos + rotate_half(x) * sin

    def _mlp_block(self, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        x = x + F.linear(attn, self.w_o)
        gate, up = F.linear(rmsnorm(x, self.norm_mlp), self.w_gate_up).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, self.w_down)

    def _qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        d = self.dims
        qkv = F.linear(rmsnorm(x, self.norm_attn), self.w_qkv)
        q, k, v = qkv.split([d.attn_width, d.kv_heads * d.head_dim, d.kv_heads * d.head_dim],
                            dim=-1)
        return q, k, v

    def decode(self, x: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
               pos: int) -> torch.Tensor:
        """x (B, hidden); caches (B, KV, pos + 1, D) holding `pos` tokens; returns (B, hidden)."""
        d, b = self.dims, x.shape[0]
        q, k, v = self._qkv(x)
        cos, sin = self.cos[pos], self.sin[pos]
        q = self._rope(q.view(b, d.heads, 1, d.head_dim), cos, sin)
        k = self._rope(k.view(b, d.kv_heads, d.head_dim), cos, sin)
        k_cache[:, :, pos] = k
        v_cache[:, :, pos] = v.view(b, d.kv_heads, d.head_dim)
        attn = attention.decode_attention(q, k_cache[:, :, : pos + 1], v_cache[:, :, : pos + 1])
        return self._mlp_block(x, attn.reshape(b, d.attn_width))

    def prefill(self, x: torch.Tensor, k_cache: torch.Tensor,
                v_cache: torch.Tensor) -> torch.Tensor:
        """x (T, hidden); caches (1, KV, >= T, D) to fill; returns (T, hidden)."""
        d, t = self.dims, x.shape[0]
        q, k, v = self._qkv(x)
        cos, sin = self.cos[:t], self.sin[:t]
        q = self._rope(q.view(t, d.heads, d.head_dim).transpose(0, 1), cos, sin).unsqueeze(0)
        k = self._rope(k.view(t, d.kv_heads, d.head_dim).transpose(0, 1), cos, sin).unsqueeze(0)
        v = v.view(t, d.kv_heads, d.head_dim).transpose(0, 1).unsqueeze(0)
        k_cache[:, :, :t] = k
        v_cache[:, :, :t] = v
        attn = attention.prefill_attention(q, k, v)  # (1, H, T, D)
        return self._mlp_block(x, attn.squeeze(0).transpose(0, 1).reshape(t, d.attn_width))


def layer_params(dims: ModelDims) -> dict[str, int]:
    return dims.params()


def run(device: str, quick: bool, progress: common.Progress | None = None,
        benches: Collection[str] = BENCHES) -> list[Measurement]:
    dims = dims_for(device)
    dtype = dtype_for(device)
    decode_points = common.grid("layer_decode", decode_grid(device, quick))
    prefill_points = common.grid("layer_prefill", prefill_grid(device, quick))
    max_pos = max([int(p["context"]) + 1 for p in decode_points]
                  + [int(p["tokens"]) for p in prefill_points])
    layer = Layer(dims, device, dtype, max_pos)
    out: list[Measurement] = []
    if "layer_decode" in benches:
        out += _run_decode(layer, device, quick, progress, decode_points, dtype)
    if "layer_prefill" in benches:
        out += _run_prefill(layer, device, quick, progress, prefill_points, dtype)
    return out


def _run_decode(layer: Layer, device: str, quick: bool, progress: common.Progress | None,
                points: list[common.Point], dtype: torch.dtype) -> list[Measurement]:
    dims = layer.dims
    per_token = dims.kv_heads * dims.head_dim
    most = max(int(p["batch"]) * (int(p["context"]) + 1) for p in points) * per_token
    k_all = attention.kv_buffer(most, device, dtype)
    v_all = attention.kv_buffer(most, device, dtype)
    out: list[Measurement] = []
    for i, p in enumerate(points):
        b, c = int(p["batch"]), int(p["context"])
        shape = (b, dims.kv_heads, c + 1, dims.head_dim)
        n = b * (c + 1) * per_token
        k, v = k_all[:n].view(shape), v_all[:n].view(shape)
        x = torch.randn(b, dims.hidden, device=device, dtype=dtype)
        params = {"batch": b, "context": c, **layer_params(dims)}
        out.append(common.timed_point(
            "layer_decode", params, partial(layer.decode, x, k, v, c),
            device, quick))
        common.notify(progress, "layer_decode", i + 1, len(points))
    return out


def _run_prefill(layer: Layer, device: str, quick: bool, progress: common.Progress | None,
                 points: list[common.Point], dtype: torch.dtype) -> list[Measurement]:
    dims = layer.dims
    out: list[Measurement] = []
    for i, p in enumerate(points):
        t = int(p["tokens"])
        x = torch.randn(t, dims.hidden, device=device, dtype=dtype)
        k = torch.empty(1, dims.kv_heads, t, dims.head_dim, device=device, dtype=dtype)
        v = torch.empty_like(k)
        params = {"tokens": t, **layer_params(dims)}
        out.append(common.timed_point(
            "layer_prefill", params, partial(layer.prefill, x, k, v),
            device, quick))
        common.notify(progress, "layer_prefill", i + 1, len(points))
    return out
