"""Host (CPU) cost of eager PyTorch training: seconds and ATen ops per decoder layer per pass.

A stack of `layers` Llama-style decoder layers written as Hugging Face's `LlamaDecoderLayer`
runs them (what veRL's FSDP actor trains: RMSNorm in fp32 and back, separate q/k/v/o
projections, rotary by rotate_half, grouped-query K/V repeated, SDPA, gated SiLU MLP, two
residual adds), then the log-prob head (final norm, LM head, log-softmax, gather), at shapes
so small that the arithmetic is negligible (hidden 32, 4 tokens, fp32, one thread: a GEMM
of that size takes 1.3 us against 1.0 us for a 1 x 8 x 8 one here). What is left is what
every op pays on any device before its kernel runs: the Python module call, the ATen
dispatcher, autograd's graph recording and the backward engine. The time is taken in fp32
(CPU bf16 GEMMs are not negligible: ~35 us each through oneDNN here); the op counts are
taken on a bf16 copy, as a GPU trainer runs it (RMSNorm's and the logits' casts are real
ops in bf16, no-ops in fp32).

`host_overhead` params {pass, layers, hidden, tokens, timed_ops, aten_ops, kernels}: `pass` is
`forward` (no_grad: a log-prob / reference pass), `forward_grad` (the same with autograd
recording, the forward of a train micro-batch) or `train` (forward_grad + loss.backward());
`timed_ops` counts the ATen ops the timed fp32 call dispatches (a `TorchDispatchMode` sees
every op below autograd, the backward's included), `aten_ops` and `kernels` the ops of the
same call in bf16 and those of them that would launch a device kernel (views and
allocations excluded). The slope over `layers` of the time and of the counts is
the per-layer cost (`fit_points`); the intercept is the per-micro-batch head.

Run alone: `python -m calibration.benchmarks.host_overhead [--quick]` prints the fitted
constants (docs/calibration.md, "Host overhead").
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from calibration.benchmarks import common
from calibration.measurements import Measurement

BENCHES = ("host_overhead",)
PASSES = ("forward", "forward_grad", "train")

# Tiny Llama shapes: grouped-query attention (4 query heads, 2 KV heads) so repeat_kv runs.
HIDDEN = 32
HEADS = 4
KV_HEADS = 2
FFN = 64
VOCAB = 128
TOKENS = 4
LAYERS_QUICK = [1, 2, 4, 8]
LAYERS_FULL = [1, 2, 4, 8, 16]


def default_grid(device: str, quick: bool) -> list[common.Point]:
    layers = LAYERS_QUICK if quick else LAYERS_FULL
    return [{"pass": p, "layers": n} for p in PASSES for n in layers]


# ----------------------------------------------------------------------------- the model

class RMSNorm(nn.Module):
    """Hugging Face LlamaRMSNorm: computed in fp32, cast back to the input dtype."""

    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class DecoderLayer(nn.Module):
    """One Llama decoder layer, op for op as Hugging Face's eager implementation runs it."""

    def __init__(self, hidden: int, heads: int, kv_heads: int, ffn: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        d = self.head_dim
        self.input_layernorm = RMSNorm(hidden)
        self.q_proj = nn.Linear(hidden, heads * d, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * d, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * d, bias=False)
        self.o_proj = nn.Linear(heads * d, hidden, bias=False)
        self.post_attention_layernorm = RMSNorm(hidden)
        self.gate_proj = nn.Linear(hidden, ffn, bias=False)
        self.up_proj = nn.Linear(hidden, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        d = self.head_dim
        residual = x
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.heads, d).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.kv_heads, d).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.kv_heads, d).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        if rep > 1:  # HF repeat_kv
            k = k[:, :, None].expand(b, self.kv_heads, rep, t, d).reshape(b, self.heads, t, d)
            v = v[:, :, None].expand(b, self.kv_heads, rep, t, d).reshape(b, self.heads, t, d)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(b, t, self.heads * d)
        x = residual + self.o_proj(a)
        residual = x
        h = self.post_attention_layernorm(x)
        h = self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))
        return residual + h


class TinyLM(nn.Module):
    """Embedding, `layers` decoder layers, final norm and LM head; `log_probs` is what veRL's
    actor computes per micro-batch (log-softmax of the logits gathered at the labels)."""

    def __init__(self, layers: int, hidden: int = HIDDEN, heads: int = HEADS,
                 kv_heads: int = KV_HEADS, ffn: int = FFN, vocab: int = VOCAB) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(DecoderLayer(hidden, heads, kv_heads, ffn)
                                    for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        d = hidden // heads
        inv_freq = 1.0 / 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
        self.inv_freq: torch.Tensor
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def log_probs(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        x = self.embed(ids)
        # Rotary angles once per forward (HF LlamaRotaryEmbedding), shared by the layers.
        ang = torch.outer(torch.arange(t, dtype=torch.float32, device=ids.device),
                          self.inv_freq.to(ids.device))
        ang = torch.cat((ang, ang), dim=-1)
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits = self.lm_head(self.norm(x)).float()
        return torch.gather(F.log_softmax(logits, dim=-1), -1, labels[..., None]).squeeze(-1)


# ----------------------------------------------------------------------------- counting

def _launches_kernel(func: Any) -> bool:
    """Whether an ATen op runs a device kernel: views (outputs alias an input without
    writing it) and bare allocations do not."""
    name = func.__name__ if hasattr(func, "__name__") else str(func)
    if name.split(".")[0] in ("empty", "empty_strided", "empty_like", "detach", "alias",
                              "lift_fresh"):
        return False
    returns = func._schema.returns
    return not any(r.alias_info is not None and not r.alias_info.is_write for r in returns)


class _OpCounter(TorchDispatchMode):
    """Counts the ATen ops dispatched inside it, and those that launch a kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.kernels = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        self.ops += 1
        if _launches_kernel(func):
            self.kernels += 1
        return func(*args, **(kwargs or {}))


def count_ops(fn: Callable[[], object]) -> tuple[int, int]:
    """(ATen ops, of which kernel launches) one call of `fn` dispatches."""
    counter = _OpCounter()
    with counter:
        fn()
    return counter.ops, counter.kernels


# ----------------------------------------------------------------------------- the bench

@contextmanager
def _one_thread() -> Iterator[None]:
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def make_pass(model: TinyLM, kind: str, device: str, tokens: int = TOKENS,
              dtype: torch.dtype = torch.float32) -> Callable[[], object]:
    """One micro-batch of `kind` (see PASSES) over one sequence of `tokens` tokens."""
    if kind not in PASSES:
        raise ValueError(f"unknown pass {kind!r}; expected one of {', '.join(PASSES)}")
    if tokens < 1:
        raise ValueError(f"tokens must be >= 1, got {tokens}")
    gen = torch.Generator().manual_seed(0)
    vocab = model.lm_head.out_features
    ids = torch.randint(0, vocab, (1, tokens), generator=gen).to(device)
    labels = torch.randint(0, vocab, (1, tokens), generator=gen).to(device)
    model.to(device=device, dtype=dtype)

    # The timer runs under inference_mode (calibration.timing); each pass sets the autograd
    # mode a trainer runs it in: no_grad for log-probs, grad recording for training.
    if kind == "forward":
        def forward() -> object:
            with torch.inference_mode(False), torch.no_grad():
                return model.log_probs(ids, labels)
        return forward
    if kind == "forward_grad":
        def forward_grad() -> object:
            with torch.inference_mode(False), torch.enable_grad():
                return model.log_probs(ids, labels)
        return forward_grad

    def train() -> object:
        with torch.inference_mode(False), torch.enable_grad():
            loss = -model.log_probs(ids, labels).mean()
            loss.backward()
        return loss
    return train


def run(device: str, quick: bool, progress: common.Progress | None = None) -> list[Measurement]:
    points = common.grid("host_overhead", default_grid(device, quick))
    out: list[Measurement] = []
    torch.manual_seed(0)
    with _one_thread():
        for i, p in enumerate(points):
            kind, layers = str(p["pass"]), int(p["layers"])
            model = TinyLM(layers)
            fn = make_pass(model, kind, device, dtype=torch.bfloat16)
            fn()  # first call: lazy initialization stays out of the counts
            ops, kernels = count_ops(fn)
            model.zero_grad(set_to_none=True)
            fn = make_pass(model, kind, device, dtype=torch.float32)
            fn()
            timed_ops, _ = count_ops(fn)
            params = {"pass": kind, "layers": layers, "hidden": HIDDEN, "tokens": TOKENS,
                      "timed_ops": timed_ops, "aten_ops": ops, "kernels": kernels}
            out.append(common.timed_point("host_overhead", params, fn, device, quick))
            model.zero_grad(set_to_none=True)
            common.notify(progress, "host_overhead", i + 1, len(points))
    return out


# ----------------------------------------------------------------------------- the fit

@dataclass(frozen=True)
class HostPass:
    """Per-layer host cost of one pass: slopes over the layer count; `head_s` the intercept
    (embedding, rotary angles, final norm, LM head, log-prob, loss)."""

    layer_s: float
    layer_ops: float  # bf16, what a GPU trainer dispatches
    layer_kernels: float  # bf16, of which kernel launches
    head_s: float
    head_ops: float
    layer_timed_ops: float  # fp32, the ops the timed call dispatched
    head_kernels: float = 0.0

    @property
    def op_s(self) -> float:
        """Host seconds per dispatched ATen op (of the timed fp32 call)."""
        return self.layer_s / self.layer_timed_ops if self.layer_timed_ops else 0.0


def _median(values: Sequence[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _line(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """(intercept, slope) of y over x by Theil-Sen: the median of the pairwise slopes, so one
    point a neighbour process stretched does not tilt the line (exact for exact counts)."""
    pairs = [(y[j] - y[i]) / (x[j] - x[i]) for i in range(len(x)) for j in range(i + 1, len(x))
             if x[j] != x[i]]
    if not pairs:
        raise ValueError("host_overhead needs points at two or more layer counts")
    slope = _median(pairs)
    return _median([b - slope * a for a, b in zip(x, y, strict=True)]), slope


def fit_points(points: Sequence[Measurement]) -> dict[str, HostPass]:
    """Per pass, the line through (layers, median time) and (layers, op counts); plus
    `backward` = train - forward_grad (what loss.backward() adds per layer)."""
    out: dict[str, HostPass] = {}
    for kind in PASSES:
        pts = [m for m in points if m.bench == "host_overhead" and m.params["pass"] == kind]
        if not pts:
            continue
        x = [float(m.params["layers"]) for m in pts]
        # p10, not the median: a neighbour process only ever adds time (calibration.timing),
        # and this bench's points on a shared 2-core box are spread by exactly that.
        b_s, a_s = _line(x, [m.p10_s for m in pts])
        b_o, a_o = _line(x, [float(m.params["aten_ops"]) for m in pts])
        b_k, a_k = _line(x, [float(m.params["kernels"]) for m in pts])
        _, a_t = _line(x, [float(m.params["timed_ops"]) for m in pts])
        out[kind] = HostPass(layer_s=a_s, layer_ops=a_o, layer_kernels=a_k, head_s=b_s,
                             head_ops=b_o, layer_timed_ops=a_t, head_kernels=b_k)
    if "train" in out and "forward_grad" in out:
        t, f = out["train"], out["forward_grad"]
        out["backward"] = HostPass(t.layer_s - f.layer_s, t.layer_ops - f.layer_ops,
                                   t.layer_kernels - f.layer_kernels, t.head_s - f.head_s,
                                   t.head_ops - f.head_ops,
                                   t.layer_timed_ops - f.layer_timed_ops,
                                   t.head_kernels - f.head_kernels)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", help="write the measurements and the fit as JSON here")
    args = ap.parse_args(argv)
    points = run(args.device, args.quick)
    fit = fit_points(points)
    for kind, hp in fit.items():
        print(f"{kind:13s} {hp.layer_s * 1e6:8.1f} us/layer  {hp.layer_timed_ops:6.1f} fp32 ops  "
              f"{hp.layer_ops:6.1f} bf16 ops/layer  "
              f"{hp.layer_kernels:6.1f} kernels/layer  {hp.op_s * 1e6:5.2f} us/op  "
              f"head {hp.head_s * 1e6:7.1f} us, {hp.head_ops:5.1f} ops, "
              f"{hp.head_kernels:5.1f} kernels")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": args.device, "torch": torch.__version__,
                       "measurements": [m.model_dump(mode="json") for m in points],
                       "fit": {k: asdict(v) for k, v in fit.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
