"""Reference rates -> the device spec and efficiencies <= 1, with the same products.

Every absolute rate is fitted as an efficiency relative to a reference (the best GEMM rate,
the copy bandwidth). At the end the device's peak FLOP/s becomes the highest fitted compute
rate (GEMM peak, attention, trainer MFUs) and its memory bandwidth the highest fitted stream
rate (large copies, GEMM weight streams, KV reads, elementwise), so every efficiency is
<= 1 and the products the formulas use are unchanged.
"""

from __future__ import annotations

from calibration.fitting.context import FitContext
from rlsim.config.hardware import GpuSpec
from rlsim.cost.profile import Profile

BANDWIDTH_EFFICIENCIES = ("hbm_efficiency", "attention_decode_hbm_efficiency",
                          "elementwise_hbm_efficiency", "activation_hbm_efficiency",
                          "norm_hbm_efficiency", "rotary_hbm_efficiency")
FLOP_EFFICIENCIES = ("gemm_peak_efficiency", "attention_flops_efficiency",
                     "attention_decode_flops_efficiency", "train_mfu", "forward_mfu")


def normalized(ctx: FitContext) -> tuple[Profile, GpuSpec]:
    """Device = the highest fitted rates; efficiencies rescaled to <= 1 (same products).

    Updates `ctx` (its reference rates, constants and scaled defaults) to the result."""
    c = dict(ctx.consts)
    bw_effs = [k for k in BANDWIDTH_EFFICIENCIES if c.get(k) is not None]
    flop_effs = [k for k in FLOP_EFFICIENCIES if c.get(k) is not None]
    bw_scale = max([1.0, *(c[k] for k in bw_effs)])
    flop_scale = max([1.0, *(c[k] for k in flop_effs)])
    for k in bw_effs:
        c[k] = min(1.0, c[k] / bw_scale)
    for k in flop_effs:
        c[k] = min(1.0, c[k] / flop_scale)
    ctx.ref_bw *= bw_scale
    ctx.ref_flops *= flop_scale
    if "hbm_efficiency" not in c:
        c["hbm_efficiency"] = min(1.0, 1.0 / bw_scale)
    # A documented default that no benchmark measured (train_mfu without a train_step
    # point) is a fraction of the reference peak (the best measured GEMM); the device peak
    # just grew by flop_scale, so the default shrinks by it to keep the same FLOP/s.
    if "train_mfu" not in c:
        c["train_mfu"] = Profile.model_fields["train_mfu"].default / flop_scale
        ctx.scaled_defaults.add("train_mfu")
    device = ctx.device()
    ctx.consts = c
    base = ctx.profile().model_dump()
    return Profile.model_validate({**base, "device": device.model_dump()}), device
