"""attention family: attention launch latencies and efficiencies.

Reads the `attention_decode` (batch, context, heads, kv_heads, head_dim) and
`attention_prefill` (tokens, heads, ...) points together, priced by
`InferenceCost.decode_attention_s / prefill_attention_s`, and fits the Profile fields
`attention_launch_s` and `attention_flops_efficiency` (prefill), `attention_decode_launch_s`,
`attention_decode_flops_efficiency` and `attention_decode_hbm_efficiency` (decode). Sets the
flash-attention block structure of the device kind (`attention_q_block_tiers`,
`attention_kv_block_tokens`) whether or not there are points. Runs after `gemm`; `joint`
refines these constants with the layer grids.
"""

from __future__ import annotations

import numpy as np

from calibration.fitting.context import FitContext
from calibration.fitting.predict import Predictor
from calibration.fitting.solvers import Array, fit_relative

BENCHES = ("attention_decode", "attention_prefill")

# Prefill attention blocks of torch's CPU flash-attention kernel (aten FlashAttentionKernel:
# query blocks of 32 rows below 192 tokens, 64 below 768, then 256; key blocks of 512).
CPU_ATTENTION_Q_BLOCK_TIERS: tuple[tuple[int, int], ...] = ((0, 32), (192, 64), (768, 256))
CPU_ATTENTION_KV_BLOCK = 512
# FlashAttention-2 forward blocks on CUDA (128 query rows x 64 keys for head_dim 128).
CUDA_ATTENTION_Q_BLOCK_TIERS: tuple[tuple[int, int], ...] = ((0, 128),)
CUDA_ATTENTION_KV_BLOCK = 64

ATTENTION_FIT_NAMES = ("attention_launch_s", "attention_decode_launch_s",
                       "attention_flops_efficiency", "attention_decode_flops_efficiency",
                       "attention_decode_hbm_efficiency")
ATTENTION_FIT_BOUNDS = {"attention_launch_s": (0.0, 1.0), "attention_decode_launch_s": (0.0, 1.0),
                        "attention_flops_efficiency": (1e-3, 100.0),
                        "attention_decode_flops_efficiency": (1e-3, 100.0),
                        "attention_decode_hbm_efficiency": (1e-3, 100.0)}


def fit(ctx: FitContext) -> None:
    """Attention launch and efficiencies on the decode and prefill grids together."""
    dec, pre = ctx.train("attention_decode"), ctx.train("attention_prefill")
    if ctx.facts.is_cuda:
        ctx.consts["attention_q_block_tiers"] = CUDA_ATTENTION_Q_BLOCK_TIERS
        ctx.consts["attention_kv_block_tokens"] = CUDA_ATTENTION_KV_BLOCK
    else:
        ctx.consts["attention_q_block_tiers"] = CPU_ATTENTION_Q_BLOCK_TIERS
        ctx.consts["attention_kv_block_tokens"] = CPU_ATTENTION_KV_BLOCK
    pts = dec + pre
    if len(pts) < 3:
        ctx.notes.append("too few attention points: attention constants are defaults")
        return
    launches, effs = [], []
    if pre:
        launches.append("attention_launch_s")
        effs.append("attention_flops_efficiency")
    if dec:
        launches.append("attention_decode_launch_s")
        effs += ["attention_decode_flops_efficiency", "attention_decode_hbm_efficiency"]
    names = launches + effs
    y = np.array([m.median_s for m in pts])
    device = ctx.device()

    def fn(x: Array) -> Array:
        pred = Predictor(ctx.profile(**dict(zip(names, x, strict=True))), device)
        return np.array([pred(m.bench, m.params) for m in pts])

    nl, ne = len(launches), len(effs)
    ymin = float(np.min(y))
    # Decode is compute- or memory-bound depending on whether its KV sits in cache, so
    # the objective has separate basins: start from a small grid of efficiencies.
    grid = [[a] * (ne - 2 * bool(dec)) + ([b, c] if dec else [])
            for a in (0.5,) for b in (0.2, 0.5, 1.0) for c in (0.2, 0.5, 1.0)]
    starts = [[ymin / 2] * nl + g for g in grid] + [[ymin / 10] * nl + [1.0] * ne]
    x = fit_relative(fn, y, starts[0], [0.0] * (nl + ne), [1.0] * nl + [100.0] * ne,
                     starts=starts[1:])
    ctx.consts.update({k: float(v) for k, v in zip(names, x, strict=True)})
    if not pre:
        ctx.consts["attention_launch_s"] = ctx.consts["attention_decode_launch_s"]
