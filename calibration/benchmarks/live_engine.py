"""Whole iterations of the live system's engine (`calibration.live.engine`), as it runs them.

The operator benchmarks price a model's GEMMs, attention and element-wise kernels; what they
cannot see is the engine around them: packing the batch, the KV-cache writes, sampling, and
the per-sequence Python bookkeeping. These points measure whole iterations of the real
engine with the live policy's architecture, so the fit can attribute the rest to the
engine's per-iteration and per-sequence overhead (`decode_overhead_s`,
`decode_overhead_per_seq_s`), as Vidur profiles its scheduler and sampler.

`engine_decode` params {batch, context, + model dims, layers, vocab}: `batch` running
sequences each holding `context` tokens take one decode iteration (the batch is restored
after every call, so each repetition sees the same state). `engine_prefill` params
{tokens, + dims}: one iteration that admits and prefills one prompt of `tokens` tokens.
`engine_mixed` params {batch, context, prefills, tokens, + dims}: the iteration continuous
batching runs most: `batch` decodes plus `prefills` newly admitted prompts of `tokens`.
`engine_trace` params {decode, kv_tokens, prefill (comma-separated prompt lengths), + dims}:
every iteration of a synthetic continuous-batching job (random prompts, lengths and
follow-up turns; nothing from any RL run), each timed once as it runs. Microbenchmarks
repeat one state and so see warm caches and allocator reuse; a running engine changes shape
every iteration, and these points carry that cost into the fit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection

import torch

from calibration.benchmarks import common
from calibration.live.engine import Engine, GenRequest
from calibration.live.model import LMConfig, TinyLM
from calibration.measurements import Measurement

BENCHES = ("engine_decode", "engine_prefill", "engine_mixed", "engine_trace")

BATCH_QUICK = [1, 4, 16, 32]
BATCH_FULL = [1, 2, 4, 8, 16, 32, 64]
CONTEXT_QUICK = [16, 64, 128]
CONTEXT_FULL = [8, 16, 32, 64, 96, 128, 192]
PREFILL_QUICK = [4, 16, 64, 128]
PREFILL_FULL = [2, 4, 8, 16, 32, 64, 96, 128, 192]
MIXED_QUICK = [(b, 32, p, t) for b in (8, 24) for p in (1, 4, 8) for t in (8, 24)]
MIXED_FULL = [(b, c, p, t) for b in (4, 16, 32) for c in (16, 64) for p in (1, 2, 4, 8, 16)
              for t in (8, 24)]

# The live policy the engine family measures by default; `validate` passes its own.
live_config: LMConfig | None = None


def config() -> LMConfig:
    from calibration.live.tokenizer import Tokenizer

    return live_config or LMConfig(vocab=Tokenizer().vocab_size)


def model_params(cfg: LMConfig) -> dict[str, int]:
    return {"hidden": cfg.hidden, "heads": cfg.heads, "kv_heads": cfg.heads,
            "head_dim": cfg.head_dim, "ffn": cfg.ffn, "layers": cfg.layers, "vocab": cfg.vocab}


def _decode_points(quick: bool) -> list[common.Point]:
    batches, contexts = (BATCH_QUICK, CONTEXT_QUICK) if quick else (BATCH_FULL, CONTEXT_FULL)
    return common.grid("engine_decode",
                       [{"batch": b, "context": c} for b in batches for c in contexts])


def _prefill_points(quick: bool) -> list[common.Point]:
    return common.grid("engine_prefill",
                       [{"tokens": t} for t in (PREFILL_QUICK if quick else PREFILL_FULL)])


def run(device: str, quick: bool, progress: common.Progress | None = None,
        benches: Collection[str] = BENCHES) -> list[Measurement]:
    if device != "cpu":
        return []  # the live system runs on the CPU only (calibration/live)
    cfg = config()
    torch.manual_seed(0)
    model = TinyLM(cfg)
    model.requires_grad_(False)
    gen = torch.Generator().manual_seed(0)
    out: list[Measurement] = []
    if "engine_decode" in benches:
        points = _decode_points(quick)
        for i, p in enumerate(points):
            out.append(_decode_point(model, cfg, gen, int(p["batch"]), int(p["context"]),
                                     quick))
            common.notify(progress, "engine_decode", i + 1, len(points))
    if "engine_prefill" in benches:
        points = _prefill_points(quick)
        for i, p in enumerate(points):
            out.append(_prefill_point(model, cfg, gen, int(p["tokens"]), quick))
            common.notify(progress, "engine_prefill", i + 1, len(points))
    if "engine_mixed" in benches:
        grid = MIXED_QUICK if quick else MIXED_FULL
        points = common.grid("engine_mixed", [{"batch": b, "context": c, "prefills": p,
                                               "tokens": t} for b, c, p, t in grid])
        for i, p in enumerate(points):
            out.append(_mixed_point(model, cfg, gen, int(p["batch"]), int(p["context"]),
                                    int(p["prefills"]), int(p["tokens"]), quick))
            common.notify(progress, "engine_mixed", i + 1, len(points))
    if "engine_trace" in benches:
        trace = _trace(model, cfg, gen, quick)
        out += trace
        common.notify(progress, "engine_trace", len(trace), len(trace))
    return out


# The synthetic job of `engine_trace`: the live engine's own limits.
TRACE_MAX_RUNNING = 32
TRACE_MAX_LEN = 160
TRACE_REQUESTS_QUICK = 96
TRACE_REQUESTS_FULL = 256


def _trace(model: TinyLM, cfg: LMConfig, gen: torch.Generator,
           quick: bool) -> list[Measurement]:
    rng = torch.Generator().manual_seed(1)
    max_len = min(TRACE_MAX_LEN, cfg.max_positions)
    engine = Engine(model, TRACE_MAX_RUNNING, max_len, generator=gen, stop_on_eos=False)
    follow_ups = [0]

    def done(r: GenRequest) -> None:
        # A third of the requests come back for another turn (prompt + output + 6 tokens).
        if r.rid % 3 == 0 and follow_ups[0] < 40 and r.context + 6 < max_len - 8:
            follow_ups[0] += 1
            engine.submit(GenRequest(r.rid + 1, r.prompt + r.output + [3] * 6,
                                     max_new=_length(rng), on_done=done))

    n = TRACE_REQUESTS_QUICK if quick else TRACE_REQUESTS_FULL
    for k in range(n):
        prompt = [3] * int(torch.randint(4, 25, (1,), generator=rng))
        engine.submit(GenRequest(3 * k, prompt, max_new=_length(rng), on_done=done))
    out: list[Measurement] = []
    dims = model_params(cfg)
    while not engine.idle:
        nd = len(engine.running)
        kv = sum(r.context for r in engine.running)
        lens = [len(r.prompt) for r in list(engine.waiting)[: engine.max_running - nd]]
        t0 = time.perf_counter()
        engine.step()
        dt = time.perf_counter() - t0
        params = {"decode": nd, "kv_tokens": kv, "prefill": ",".join(map(str, lens)), **dims}
        out.append(common.sample_measurement("engine_trace", params, [dt]))
    return out


def _length(rng: torch.Generator) -> int:
    """Response lengths: lognormal, median 6 tokens, capped at 40 (a long tail)."""
    return min(40, max(1, int(6 * math.exp(0.8 * float(torch.randn(1, generator=rng))))))


def _mixed_point(model: TinyLM, cfg: LMConfig, gen: torch.Generator, batch: int,
                 context: int, prefills: int, tokens: int, quick: bool) -> Measurement:
    engine = Engine(model, batch + prefills, max(context, tokens) + 2, generator=gen,
                    stop_on_eos=False)
    for k in range(batch):
        engine.submit(GenRequest(k, [3] * (context - 1), max_new=1 << 20))
    engine.step()
    prompt = [3] * tokens

    def iteration() -> None:
        for k in range(prefills):
            engine.submit(GenRequest(batch + k, prompt, max_new=1 << 20))
        engine.step()
        del engine.running[batch:]
        for r in engine.running:
            del r.output[1:]

    params = {"batch": batch, "context": context, "prefills": prefills, "tokens": tokens,
              **model_params(cfg)}
    return common.timed_point("engine_mixed", params, iteration, "cpu", quick)


def _decode_point(model: TinyLM, cfg: LMConfig, gen: torch.Generator, batch: int,
                  context: int, quick: bool) -> Measurement:
    engine = Engine(model, batch, context + 2, generator=gen, stop_on_eos=False)
    for k in range(batch):
        engine.submit(GenRequest(k, [3] * (context - 1), max_new=1 << 20))
    engine.step()  # the prefill: every sequence now holds `context` tokens
    for c in (kc for layer in engine.cache for kc in layer):
        c.normal_()

    def iteration() -> None:
        engine.step()
        for r in engine.running:
            del r.output[1:]

    params = {"batch": batch, "context": context, **model_params(cfg)}
    return common.timed_point("engine_decode", params, iteration, "cpu", quick)


def _prefill_point(model: TinyLM, cfg: LMConfig, gen: torch.Generator, tokens: int,
                   quick: bool) -> Measurement:
    engine = Engine(model, 1, tokens + 2, generator=gen, stop_on_eos=False)
    prompt = [3] * tokens

    def iteration() -> None:
        engine.running.clear()
        engine.submit(GenRequest(0, prompt, max_new=1 << 20))
        engine.step()

    params = {"tokens": tokens, **model_params(cfg)}
    return common.timed_point("engine_prefill", params, iteration, "cpu", quick)
