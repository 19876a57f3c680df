"""The live policy: a tiny Llama-style decoder (RMSNorm, fused QKV, rotary, SwiGLU MLP).

`TinyLM.forward(ids)` is the training pass over padded batches (causal). `TinyLM.iterate`
is one engine iteration over a packed mixed batch: one new token for each decoding sequence
(attending to its slot of the KV cache) plus whole prompts of newly admitted sequences
(causal prefill that fills their slots), in one pass of the linear layers, exactly the
iteration rlsim's engine prices (`decode_seqs + prefill_tokens` rows through the GEMMs, one
attention call for the decodes and one for the prefills). `model_spec()` is the same
architecture as an rlsim `ModelSpec`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from rlsim.config.hardware import ModelSpec


@dataclass(frozen=True)
class LMConfig:
    vocab: int
    hidden: int = 128
    layers: int = 3
    heads: int = 4
    ffn: int = 384
    max_positions: int = 256

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def model_spec(self, name: str = "live-tiny") -> ModelSpec:
        return ModelSpec(name=name, layers=self.layers, hidden=self.hidden, heads=self.heads,
                         kv_heads=self.heads, ffn=self.ffn, vocab=self.vocab,
                         tied_embeddings=False, gated_mlp=True)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Block(nn.Module):
    def __init__(self, cfg: LMConfig) -> None:
        super().__init__()
        d = cfg.hidden
        self.cfg = cfg
        self.w_qkv = nn.Parameter(torch.randn(3 * d, d) / d**0.5)
        self.w_o = nn.Parameter(torch.randn(d, d) / d**0.5 / (2 * cfg.layers) ** 0.5)
        self.w_gate_up = nn.Parameter(torch.randn(2 * cfg.ffn, d) / d**0.5)
        self.w_down = nn.Parameter(
            torch.randn(d, cfg.ffn) / cfg.ffn**0.5 / (2 * cfg.layers) ** 0.5)
        self.norm_attn = nn.Parameter(torch.ones(d))
        self.norm_mlp = nn.Parameter(torch.ones(d))

    def mlp(self, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        x = x + F.linear(attn, self.w_o)
        gate, up = F.linear(rmsnorm(x, self.norm_mlp), self.w_gate_up).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, self.w_down)


@dataclass
class Packed:
    """One engine iteration's rows: decodes first (slots 0..B-1), then prefill prompts."""

    ids: torch.Tensor  # (M,) token ids
    positions: torch.Tensor  # (M,)
    decode_seqs: int
    decode_positions: torch.Tensor  # (B,) where each decode's new token goes
    prefill_lens: list[int]
    prefill_index: torch.Tensor | None  # (sum T,) row -> i * Tmax + t in the padded prefill
    sample_rows: torch.Tensor  # (B + P,) rows whose logits are sampled


class TinyLM(nn.Module):
    cos: torch.Tensor
    sin: torch.Tensor

    def __init__(self, cfg: LMConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Parameter(torch.randn(cfg.vocab, cfg.hidden) * 0.02)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = nn.Parameter(torch.ones(cfg.hidden))
        self.lm_head = nn.Parameter(torch.randn(cfg.vocab, cfg.hidden) / cfg.hidden**0.5)
        dh = cfg.head_dim
        inv = 1.0 / 10000 ** (torch.arange(0, dh, 2, dtype=torch.float32) / dh)
        ang = torch.outer(torch.arange(cfg.max_positions, dtype=torch.float32), inv)
        ang = torch.cat((ang, ang), dim=-1)
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def layers(self) -> list[Block]:
        return [cast(Block, b) for b in self.blocks]

    # ------------------------------------------------------------------ training
    def forward(self, ids: torch.Tensor, positions: torch.Tensor | None = None,
                attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, T, V) of a batch (B, T). Without `attn_mask`: right-padded rows,
        causal. With it (B, 1, T, T bool, True = attend) and `positions` (B, T): rows that
        pack several sequences, each attending causally within itself."""
        cfg = self.cfg
        b, t = ids.shape
        h, dh = cfg.heads, cfg.head_dim
        if positions is None:
            cos, sin = self.cos[:t], self.sin[:t]
        else:
            cos, sin = self.cos[positions].unsqueeze(1), self.sin[positions].unsqueeze(1)
        x = F.embedding(ids, self.embed)
        for blk in self.layers():
            qkv = F.linear(rmsnorm(x, blk.norm_attn), blk.w_qkv).view(b, t, 3, h, dh)
            q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if attn_mask is None:
                attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                attn = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
            x = blk.mlp(x, attn.transpose(1, 2).reshape(b, t, cfg.hidden))
        return F.linear(rmsnorm(x, self.norm), self.lm_head)

    def token_logprobs(self, ids: torch.Tensor) -> torch.Tensor:
        """log p(ids[:, i+1] | ids[:, :i+1]) for every position, shape (B, T-1)."""
        logits = self(ids[:, :-1])
        return torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)

    # ------------------------------------------------------------------ serving
    def new_cache(self, slots: int, length: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        shape = (slots, self.cfg.heads, length, self.cfg.head_dim)
        return [(torch.zeros(shape), torch.zeros(shape)) for _ in range(self.cfg.layers)]

    @torch.inference_mode()
    def iterate(self, p: Packed, cache: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """One engine iteration; returns the logits (B + P, V) of the rows to sample. Under
        inference mode, as serving engines run (vLLM): about 10% faster than no_grad at
        these sizes, and the mode every engine benchmark of the calibration times."""
        cfg = self.cfg
        h, dh, d = cfg.heads, cfg.head_dim, cfg.hidden
        nd = p.decode_seqs
        cos = self.cos[p.positions].unsqueeze(1)
        sin = self.sin[p.positions].unsqueeze(1)
        x = F.embedding(p.ids, self.embed)
        npre = len(p.prefill_lens)
        tmax = max(p.prefill_lens, default=0)
        if nd:
            slots = torch.arange(nd)
            ctx = int(p.decode_positions.max()) + 1
            mask = (torch.arange(ctx)[None, :] <= p.decode_positions[:, None])[:, None, None]
        for blk, (kc, vc) in zip(self.layers(), cache, strict=True):
            qkv = F.linear(rmsnorm(x, blk.norm_attn), blk.w_qkv).view(-1, 3, h, dh)
            q, k, v = qkv.unbind(1)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            parts = []
            if nd:
                kc[slots, :, p.decode_positions] = k[:nd]
                vc[slots, :, p.decode_positions] = v[:nd]
                out = F.scaled_dot_product_attention(
                    q[:nd, :, None], kc[:nd, :, :ctx], vc[:nd, :, :ctx], attn_mask=mask)
                parts.append(out.reshape(nd, d))
            if npre:
                qp, kp, vp = (self._pad(z[nd:], p, npre, tmax) for z in (q, k, v))
                kc[nd:nd + npre, :, :tmax] = kp
                vc[nd:nd + npre, :, :tmax] = vp
                out = F.scaled_dot_product_attention(qp, kp, vp, is_causal=True)
                out = out.transpose(1, 2).reshape(npre * tmax, d)
                parts.append(out if p.prefill_index is None else out[p.prefill_index])
            attn = parts[0] if len(parts) == 1 else torch.cat(parts)
            x = blk.mlp(x, attn)
        x = rmsnorm(x[p.sample_rows], self.norm)
        return F.linear(x, self.lm_head)

    def _pad(self, rows: torch.Tensor, p: Packed, npre: int, tmax: int) -> torch.Tensor:
        """Prefill rows (sum T, H, Dh) -> right-padded (P, H, Tmax, Dh)."""
        if p.prefill_index is not None:
            padded = rows.new_zeros(npre * tmax, *rows.shape[1:])
            padded[p.prefill_index] = rows
            rows = padded
        return rows.view(npre, tmax, *rows.shape[1:]).transpose(1, 2)


def flat_params(model: nn.Module) -> list[torch.Tensor]:
    """Parameters in a fixed order (what a weight sync copies)."""
    return [p for _, p in sorted(model.named_parameters())]


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
