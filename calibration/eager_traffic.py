"""HBM bytes the memory-bound kernels of an eager Hugging Face Llama move per token.

veRL's FSDP actor trains the Hugging Face model in eager PyTorch: RMSNorm is six ATen ops
in fp32 and back, rotary is rotate_half's slice / neg / cat and three multiply-adds, grouped
K/V are copied to every query head (repeat_kv), SwiGLU is silu then mul, and autograd runs
each op's backward separately. Megatron-Core with Transformer Engine fuses the same work into
a handful of kernels (what `TrainCost._elementwise` prices). This counts the eager traffic
exactly: a `TorchDispatchMode` sums, for every ATen op that launches a kernel other than a
GEMM or the attention kernel, the bytes of its tensor inputs (at most their storage: a
broadcast or expanded operand is read once) and outputs, on a bf16 copy of the layer that
calibration/benchmarks/host_overhead.py times (the same code, op for op). The count is a
property of the code, not of the machine: it is the same on a CPU as on a GPU.

Bytes grow linearly with the tokens and with the layer's widths, so per token and layer
they are `a * hidden + b * kv_dim + c * ffn` (q_dim = hidden for Llama): `fit()` solves for
(a, b, c) from four small layer shapes (exactly: the residual is printed), separately for a
no-grad forward (log-probs), a forward under autograd and its backward; and the head's bytes
per token (final norm, LM head's fp32 log-softmax and gather, embedding) as
`v * vocab + w * hidden`.

Run: `python -m calibration.eager_traffic` (prints the coefficients that
rlsim/cost/backends.py HF_LLAMA_EAGER_TRAFFIC holds; docs/cost-model.md section 3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from calibration.benchmarks.host_overhead import TinyLM, _launches_kernel

# Ops that are not memory-bound elementwise work: GEMMs and the attention kernel (priced by
# the GEMM and attention models), and the embedding lookup (a gather of `hidden` per token,
# counted in the head below by its own rule).
_COMPUTE = ("mm", "addmm", "bmm", "baddbmm", "addmv", "mv", "dot")
# Views whose schema does not mark the alias (no data moves; the linear layer's reshape of
# a 3-D input around its GEMM).
_VIEWS = ("_unsafe_view",)
_EXCLUDED_SUBSTRINGS = ("scaled_dot_product", "flash_attention", "efficient_attention")

TOKENS = 64
# (hidden, heads, kv_heads, ffn): four shapes that separate hidden, kv_dim and ffn (GQA kept
# in every one so repeat_kv runs, as in Llama 3 / Qwen2.5).
SHAPES = ((64, 4, 2, 128), (64, 4, 2, 256), (128, 8, 4, 128), (128, 8, 2, 192))
PASSES = ("forward", "forward_grad", "backward")


def _is_compute(func: Any) -> bool:
    name = str(func.__name__ if hasattr(func, "__name__") else func).split(".")[0]
    return (name in _COMPUTE or name in _VIEWS
            or any(s in name for s in _EXCLUDED_SUBSTRINGS))


def _nbytes(t: torch.Tensor) -> int:
    logical = t.numel() * t.element_size()
    try:
        return min(logical, t.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):
        return logical


class _ByteCounter(TorchDispatchMode):
    """Bytes read and written by the memory-bound kernels dispatched inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0
        self.kernels = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if _launches_kernel(func) and not _is_compute(func):
            self.kernels += 1
            flat = list(args) + list((kwargs or {}).values())
            outs = out if isinstance(out, (tuple, list)) else [out]
            for t in flat + list(outs):
                if isinstance(t, torch.Tensor):
                    self.bytes += _nbytes(t)
                elif isinstance(t, (tuple, list)):
                    self.bytes += sum(_nbytes(x) for x in t if isinstance(x, torch.Tensor))
        return out


def _count(fn: Callable[[], object]) -> tuple[int, int]:
    counter = _ByteCounter()
    with counter:
        fn()
    return counter.bytes, counter.kernels


def pass_bytes(layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int,
               kind: str, tokens: int = TOKENS) -> tuple[int, int]:
    """(bytes, kernels) of the memory-bound kernels of one pass of a bf16 model."""
    torch.manual_seed(0)
    model = TinyLM(layers, hidden, heads, kv_heads, ffn, vocab).to(torch.bfloat16)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (1, tokens), generator=gen)
    labels = torch.randint(0, vocab, (1, tokens), generator=gen)
    if kind == "forward":
        with torch.no_grad():
            return _count(lambda: model.log_probs(ids, labels))
    if kind == "forward_grad":
        return _count(lambda: model.log_probs(ids, labels))
    if kind == "backward":
        loss = -model.log_probs(ids, labels).float().mean()
        return _count(loss.backward)
    raise ValueError(f"unknown pass {kind!r}; expected one of {', '.join(PASSES)}")


def _solve(rows: list[list[float]], ys: list[float]) -> tuple[list[float], float]:
    """Least squares (normal equations, tiny and well conditioned); returns (x, max
    relative residual)."""
    a = torch.tensor(rows, dtype=torch.float64)
    y = torch.tensor(ys, dtype=torch.float64)
    x = torch.linalg.lstsq(a, y[:, None]).solution[:, 0]
    resid = ((a @ x - y).abs() / y.abs()).max().item()
    return [float(v) for v in x], resid


def fit(vocab: int = 256) -> dict[str, dict[str, float]]:
    """Per-token bytes of one layer (a, b, c on hidden, kv_dim, ffn) and of the head (v, w
    on vocab, hidden) for each pass, and the kernels per layer."""
    out: dict[str, dict[str, float]] = {}
    for kind in PASSES:
        rows: list[list[float]] = []
        ys: list[float] = []
        kern: list[int] = []
        head_rows: list[list[float]] = []
        head_ys: list[float] = []
        for h, nh, kvh, f in SHAPES:
            one, k1 = pass_bytes(1, h, nh, kvh, f, vocab, kind)
            two, k2 = pass_bytes(2, h, nh, kvh, f, vocab, kind)
            kv = kvh * (h // nh)
            rows.append([h, kv, f])
            ys.append((two - one) / TOKENS)
            kern.append(k2 - k1)
            for v in (vocab, 2 * vocab):
                b1, _ = pass_bytes(1, h, nh, kvh, f, v, kind)
                head_rows.append([v, h])
                head_ys.append((b1 - (two - one)) / TOKENS)
        (a, b, c), resid = _solve(rows, ys)
        (vocab_b, hidden_b), head_resid = _solve(head_rows, head_ys)
        out[kind] = {"hidden": a, "kv_dim": b, "ffn": c, "layer_residual": resid,
                     "kernels_per_layer": max(kern), "head_vocab": vocab_b, "head_hidden": hidden_b,
                     "head_residual": head_resid}
    return out


def main() -> None:
    for kind, coef in fit().items():
        print(kind, {k: round(v, 3) for k, v in coef.items()})


if __name__ == "__main__":
    main()
