"""RL-shaped microbenchmarks: what RL frameworks pay that serving and pre-training benchmarks
skip (issue 36, item 4). Ready for a GPU; runs on the CPU at small shapes in the tests.

- `decode_step` params {batch, context, graphs, + dims}: one decode iteration of `batch`
  sequences over a KV cache of `context` tokens each (every layer, the LM head and greedy
  sampling), eager (`graphs` 0: the host dispatches every kernel) or replayed from a
  captured CUDA graph (`graphs` 1, CUDA only). Batch 1 to 256: at small batch the host's
  share, eager minus graphs, is what `decode_overhead_s` and `eager_launch_s` price.
- `seq_train` params {tokens, recompute, entropy, + dims}: one micro-batch of one sequence
  of `tokens` tokens (4k to 32k on a GPU), forward, full-vocabulary log-softmax, the
  sampled tokens' log-probs and (`entropy` 1) the entropy in the loss, and backward: the
  one-sequence micro-batch that dynamic batching makes of a long response. veRL's actor
  adds the entropy only when `entropy_coeff` is not 0 or `calculate_entropy` is set
  (verl/workers/actor/dp_actor.py update_policy). `recompute` 1
  checkpoints every layer (veRL's `enable_gradient_checkpointing`, on in its DAPO
  scripts): the backward runs each layer's forward again.
- `logprob_pass` params {tokens, packing, max_tokens, micro_batch, + dims}: a no-grad
  log-prob pass over a batch of long-tailed lengths (lognormal, log-std 1.0, as RL
  responses are) of about `tokens` tokens in all, packed by dynamic batching (`packing`
  "dynamic": micro-batches of at most `max_tokens`, padding removed) or in micro-batches of
  `micro_batch` sequences padded to their longest (`packing` "fixed"): padding,
  micro-batch count and per-micro-batch cost together, as the log-prob and reference
  passes pay them.

The model is a stack of `layers` Hugging Face-style Llama decoder layers at a real model's
widths (`hidden`, `heads`, `kv_heads`, `ffn`, `vocab`): per-layer costs scale with the layer
count, so a few layers of a 7B model's shape measure its per-layer cost; the LM head and
vocabulary are the model's own. `python -m calibration.benchmarks.rl_shapes --device cuda
--out FILE` runs the GPU grid (about 5 minutes on an H100/H200) and writes the points as a
MeasurementSet JSON; calibration/gpu_rl_shapes.sh runs it on a lent GPU.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from calibration.benchmarks import common
from calibration.benchmarks.host_overhead import DecoderLayer, TinyLM, _rotate_half
from calibration.measurements import Measurement

BENCHES = ("decode_step", "seq_train", "logprob_pass")


@dataclass(frozen=True)
class Dims:
    """A model's widths and how many of its layers are stacked."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int

    def params(self) -> dict[str, int]:
        return {"layers": self.layers, "hidden": self.hidden, "heads": self.heads,
                "kv_heads": self.kv_heads, "ffn": self.ffn, "vocab": self.vocab}


# Qwen2.5-7B's widths (its config.json: hidden 3584, 28 heads, 4 KV heads, ffn 18944,
# vocab 152064), 4 of its 28 layers.
QWEN25_7B = Dims(layers=4, hidden=3584, heads=28, kv_heads=4, ffn=18944, vocab=152064)
# CPU: the same structure at widths a test runs in seconds.
TINY = Dims(layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=512)

GPU_GRID: dict[str, list[common.Point]] = {
    "decode_step": [{"batch": b, "context": 2048, "graphs": g}
                    for b in (1, 2, 4, 8, 16, 32, 64, 128, 256) for g in (0, 1)]
    # the long tail of an RL batch: a few sequences decoding deep into a 16k context
    + [{"batch": b, "context": 16384, "graphs": g} for b in (1, 8, 64) for g in (0, 1)],
    "seq_train": [{"tokens": t, "recompute": 0, "entropy": 1}
                  for t in (4096, 8192, 16384, 32768)]
    + [{"tokens": t, "recompute": 1, "entropy": 1} for t in (8192, 32768)]
    + [{"tokens": t, "recompute": 0, "entropy": 0} for t in (4096, 16384)],
    "logprob_pass": [{"tokens": 65536, "packing": "dynamic", "max_tokens": m,
                      "micro_batch": 0} for m in (16384, 32768)]
    + [{"tokens": 65536, "packing": "fixed", "max_tokens": 0, "micro_batch": k}
       for k in (1, 4, 8)],
}
CPU_GRID: dict[str, list[common.Point]] = {
    "decode_step": [{"batch": b, "context": 64, "graphs": 0} for b in (1, 8, 32)],
    "seq_train": [{"tokens": t, "recompute": 0, "entropy": 1} for t in (64, 256)]
    + [{"tokens": 256, "recompute": 1, "entropy": 1}, {"tokens": 256, "recompute": 0,
                                                       "entropy": 0}],
    "logprob_pass": [{"tokens": 1024, "packing": "dynamic", "max_tokens": 512,
                      "micro_batch": 0},
                     {"tokens": 1024, "packing": "fixed", "max_tokens": 0, "micro_batch": 4}],
}
LENGTH_SIGMA = 1.0  # log-std of the responses' lengths in `logprob_pass`


def _model(dims: Dims, device: str, dtype: torch.dtype) -> TinyLM:
    torch.manual_seed(0)
    model = TinyLM(dims.layers, dims.hidden, dims.heads, dims.kv_heads, dims.ffn, dims.vocab)
    return model.to(device=device, dtype=dtype).eval()


def _decode_fn(model: TinyLM, batch: int, context: int, device: str, dtype: torch.dtype,
               graphs: bool) -> Callable[[], object]:
    """One decode iteration: the new token of each of `batch` sequences attends to its
    `context` cached keys and values and itself, through every layer; then the LM head and
    a greedy pick."""
    layer0: DecoderLayer = model.layers[0]  # type: ignore[assignment]
    kvh, d = layer0.kv_heads, layer0.head_dim
    caches = [(torch.randn(batch, kvh, context, d, device=device, dtype=dtype),
               torch.randn(batch, kvh, context, d, device=device, dtype=dtype))
              for _ in model.layers]
    ids = torch.zeros(batch, 1, dtype=torch.long, device=device)
    ang = context * model.inv_freq.to(device)
    ang = torch.cat((ang, ang))
    cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)

    def step() -> torch.Tensor:
        x = model.embed(ids)
        for layer, (kc, vc) in zip(model.layers, caches, strict=True):
            x = _decode_layer(layer, x, kc, vc, cos, sin)  # type: ignore[arg-type]
        logits = model.lm_head(model.norm(x))
        return logits.argmax(-1)

    if not graphs:
        return step
    with torch.no_grad():
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
    return graph.replay


def _decode_layer(layer: DecoderLayer, x: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor,
                  cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    b = x.shape[0]
    d, heads, kvh = layer.head_dim, layer.heads, layer.kv_heads
    residual = x
    h = layer.input_layernorm(x)
    q = layer.q_proj(h).view(b, 1, heads, d).transpose(1, 2)
    k = layer.k_proj(h).view(b, 1, kvh, d).transpose(1, 2)
    v = layer.v_proj(h).view(b, 1, kvh, d).transpose(1, 2)
    q = q * cos + _rotate_half(q) * sin
    k = k * cos + _rotate_half(k) * sin
    keys, values = torch.cat((kc, k), dim=2), torch.cat((vc, v), dim=2)
    rep = heads // kvh
    if rep > 1:
        t = keys.shape[2]
        keys = keys[:, :, None].expand(b, kvh, rep, t, d).reshape(b, heads, t, d)
        values = values[:, :, None].expand(b, kvh, rep, t, d).reshape(b, heads, t, d)
    a = F.scaled_dot_product_attention(q, keys, values)
    x = residual + layer.o_proj(a.transpose(1, 2).reshape(b, 1, heads * d))
    residual = x
    h = layer.post_attention_layernorm(x)
    return residual + layer.down_proj(F.silu(layer.gate_proj(h)) * layer.up_proj(h))


def _logits(model: TinyLM, ids: torch.Tensor, recompute: bool = False) -> torch.Tensor:
    t = ids.shape[1]
    x = model.embed(ids)
    ang = torch.outer(torch.arange(t, device=ids.device, dtype=torch.float32),
                      model.inv_freq.to(ids.device))
    ang = torch.cat((ang, ang), dim=-1)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    for layer in model.layers:
        x = (checkpoint(layer, x, cos, sin, use_reentrant=False) if recompute
             else layer(x, cos, sin))
    return model.lm_head(model.norm(x)).float()


def _seq_train_fn(model: TinyLM, tokens: int, device: str, recompute: bool,
                  entropy: bool = True) -> Callable[[], object]:
    """Forward, full-vocabulary log-softmax, log-probs (and entropy), backward (each layer's
    forward run again in the backward when `recompute`)."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.lm_head.out_features, (1, tokens), generator=gen).to(device)

    def run() -> object:
        model.zero_grad(set_to_none=True)
        with torch.inference_mode(False), torch.enable_grad():
            logp = F.log_softmax(_logits(model, ids, recompute), dim=-1)
            taken = torch.gather(logp, -1, ids[..., None]).squeeze(-1)
            loss = -taken.mean()
            if entropy:
                loss = loss + 1e-3 * (logp.exp() * logp).sum(-1).mean()
            loss.backward()
        return None

    return run


def lengths(tokens: int, seed: int = 0) -> list[int]:
    """Long-tailed lengths (lognormal, log-std LENGTH_SIGMA) adding up to about `tokens`."""
    gen = torch.Generator().manual_seed(seed)
    median = max(2.0, tokens / 64 * math.exp(-LENGTH_SIGMA ** 2 / 2))
    out: list[int] = []
    while sum(out) < tokens:
        z = float(torch.randn(1, generator=gen))
        out.append(max(2, round(median * math.exp(LENGTH_SIGMA * z))))
    return out


def pack(lens: list[int], packing: str, max_tokens: int, micro_batch: int) -> list[list[int]]:
    """Micro-batches of sequence lengths: dynamic batching (greedy, in order, at most
    `max_tokens` tokens each, a longer sequence alone) or `micro_batch` sequences each."""
    if packing == "fixed":
        return [lens[i:i + micro_batch] for i in range(0, len(lens), micro_batch)]
    out: list[list[int]] = [[]]
    for n in lens:
        if out[-1] and sum(out[-1]) + n > max_tokens:
            out.append([])
        out[-1].append(n)
    return out


def _logprob_fn(model: TinyLM, params: dict[str, object], device: str
                ) -> tuple[Callable[[], object], dict[str, int]]:
    lens = lengths(int(str(params["tokens"])))
    batches = pack(lens, str(params["packing"]), int(str(params["max_tokens"])),
                   int(str(params["micro_batch"])))
    vocab = model.lm_head.out_features
    # Dynamic batching removes the padding (veRL's use_remove_padding): a micro-batch is one
    # row of its sequences back to back. Causal attention over the row is an upper bound
    # on the varlen kernel's per-sequence attention; the linear layers and the LM head,
    # most of the cost, are exact. Fixed micro-batches pad every sequence to the longest.
    dynamic = params["packing"] == "dynamic"
    padded = [torch.randint(0, vocab, (1, sum(mb)) if dynamic else (len(mb), max(mb)),
                            device=device) for mb in batches]

    def run() -> object:
        with torch.no_grad():
            for ids in padded:
                logp = F.log_softmax(_logits(model, ids), dim=-1)
                torch.gather(logp, -1, ids[..., None])
        return None

    return run, {"micro_batches": len(batches),
                 "padded_tokens": sum(int(ids.numel()) for ids in padded),
                 "real_tokens": sum(lens)}


def run(device: str, quick: bool, progress: common.Progress | None = None,
        benches: Collection[str] = BENCHES, dims: Dims | None = None) -> list[Measurement]:
    """The points of `benches` on `device` (the GPU grid at Qwen2.5-7B's widths on CUDA,
    the small grid at TINY's on the CPU)."""
    cuda = device.startswith("cuda")
    dims = dims or (QWEN25_7B if cuda else TINY)
    dtype = torch.bfloat16 if cuda else torch.float32
    model = _model(dims, device, dtype)
    grids = GPU_GRID if cuda else CPU_GRID
    out: list[Measurement] = []
    for bench in (b for b in BENCHES if b in benches):
        points = common.grid(bench, grids[bench])
        for i, p in enumerate(points):
            extra: dict[str, int] = {}
            if bench == "decode_step":
                if p["graphs"] and not cuda:
                    continue  # CUDA graphs need CUDA
                fn = _decode_fn(model, int(p["batch"]), int(p["context"]), device, dtype,
                                bool(p["graphs"]))
            elif bench == "seq_train":
                fn = _seq_train_fn(model.train(), int(p["tokens"]), device,
                                   bool(p["recompute"]), bool(p.get("entropy", 1)))
            else:
                fn, extra = _logprob_fn(model.eval(), dict(p), device)
            params = {**p, **extra, **dims.params(), "dtype": str(dtype).split(".")[-1]}
            try:
                with torch.no_grad() if bench != "seq_train" else torch.enable_grad():
                    out.append(common.timed_point(bench, params, fn, device, quick))
            except torch.OutOfMemoryError:
                print(f"{bench} {p}: out of memory, skipped", file=sys.stderr)
            if cuda:
                torch.cuda.empty_cache()
            common.notify(progress, bench, i + 1, len(points))
    return out


def main(argv: list[str] | None = None) -> int:
    from calibration.measurements import MeasurementSet
    from calibration.run import device_info, resolve_device

    ap = argparse.ArgumentParser(prog="python -m calibration.benchmarks.rl_shapes",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="auto", help="auto, cpu or cuda")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions per point")
    ap.add_argument("--out", required=True, help="the MeasurementSet JSON to write")
    args = ap.parse_args(argv)
    dev = resolve_device(args.device)
    points = run(dev, args.quick, lambda b, i, n: print(f"{b} {i}/{n}", file=sys.stderr))
    result = MeasurementSet(device=device_info(dev), quick=args.quick, measurements=points)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(result.model_dump_json(indent=1))
    print(f"wrote {args.out} ({len(points)} points)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
