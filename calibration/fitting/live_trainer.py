"""live_trainer family: the MFUs and fixed overheads of a real trainer's steps.

Reads the whole steps of a small real trainer, `train_step` (forward + backward + optimizer)
and `forward` (a log-prob pass), each on its own grid (tokens, seq_tokens + model dims; with
the samples' `lengths`, the packed rows the trainer computes, as `train.pack_rows` prices
them), priced by `TrainCost` on one GPU without recomputation, and fits the Profile fields
`train_mfu` and `train_step_overhead_s` from `train_step`, `forward_mfu` and
`forward_overhead_s` from `forward`. The MFUs are relative to the reference peak
(`FitContext.ref_flops`, rescaled with the other efficiencies by normalization); the
optimizer's memory traffic uses the constants fitted before, so it runs after the compute
stages.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibration.fitting.context import FitContext
from calibration.fitting.predict import TRAINER_BENCHES, Predictor
from calibration.fitting.solvers import Array, fit_relative
from calibration.measurements import Measurement
from rlsim.config.hardware import GpuSpec
from rlsim.cost.profile import Profile

BENCHES = TRAINER_BENCHES
TRAIN_FIT_NAMES = {"train_step": ("train_mfu", "train_step_overhead_s"),
                   "forward": ("forward_mfu", "forward_overhead_s")}


def fit_trainer_constants(bench: str, points: Sequence[Measurement], profile: Profile,
                          device: GpuSpec) -> tuple[float, float]:
    """(MFU, fixed overhead seconds) of `train_step` (train_mfu, train_step_overhead_s) or
    `forward` (forward_mfu, forward_overhead_s) points, priced by `TrainCost` on one GPU
    without recomputation; the MFU is relative to `device.bf16_tflops`, the optimizer's
    traffic uses `profile`'s constants. With a single distinct point shape the overhead
    cannot be told from the FLOP time: it stays 0."""
    if bench not in TRAIN_FIT_NAMES:
        raise ValueError(f"{bench!r} is not a trainer benchmark")
    if not points:
        raise ValueError(f"no {bench} points to fit")
    mfu_name, overhead_name = TRAIN_FIT_NAMES[bench]
    y = np.array([m.median_s for m in points])
    ymin = float(np.min(y))
    shapes = {tuple(sorted((k, str(v)) for k, v in m.params.items())) for m in points}
    with_overhead = len(shapes) >= 2

    def fn(x: Array) -> Array:
        update = {mfu_name: float(x[0]), overhead_name: float(x[1]) if with_overhead else 0.0}
        pred = Predictor(profile.model_copy(update=update), device)
        return np.array([pred(m.bench, m.params) for m in points])

    starts = [[mfu, oh] for mfu in (0.1, 0.5, 2.0) for oh in (0.0, ymin / 4)]
    x = fit_relative(fn, y, starts[0], [1e-4, 0.0], [100.0, 10.0], starts=starts[1:])
    return float(x[0]), float(x[1]) if with_overhead else 0.0


def fit(ctx: FitContext) -> None:
    """MFU and fixed overhead of a training step and of a forward pass, each on its own
    grid, relative to the reference peak (rescaled with the others by normalization)."""
    for bench in TRAINER_BENCHES:
        pts = ctx.train(bench)
        if not pts:
            continue
        if len(pts) < 2:
            ctx.notes.append(f"fewer than 2 {bench} points: its constants are defaults")
            continue
        mfu, overhead = fit_trainer_constants(bench, pts, ctx.profile(), ctx.device())
        mfu_name, overhead_name = TRAIN_FIT_NAMES[bench]
        ctx.consts[mfu_name] = mfu
        ctx.consts[overhead_name] = overhead
