"""live_engine family: the per-iteration overheads of a running inference engine.

Reads the whole-engine iterations of a small real engine (`engine_decode`, `engine_prefill`,
`engine_mixed`, `engine_trace`: embedding, all layers, LM head, sampling, bookkeeping),
priced by `InferenceCost.step` with every compute constant fitted before (so it runs after
the `joint` refit), and fits the Profile fields `decode_overhead_s`,
`decode_overhead_per_seq_s` and `prefill_overhead_s`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibration.fitting.context import FitContext
from calibration.fitting.predict import ENGINE_BENCHES, Predictor
from calibration.fitting.solvers import Array, fit_relative, fit_total
from calibration.measurements import Measurement
from rlsim.config.hardware import GpuSpec
from rlsim.cost.profile import Profile

BENCHES = ENGINE_BENCHES
# Trace points (iterations of a running engine) enough to fit the engine overheads alone.
MIN_TRACE_POINTS = 20
ENGINE_FIT_NAMES = ("decode_overhead_s", "decode_overhead_per_seq_s")


def _prefills(m: Measurement) -> bool:
    """Whether an engine point's iteration prefills (pays `prefill_overhead_s`)."""
    if m.bench == "engine_decode":
        return False
    if m.bench == "engine_trace":
        return bool(str(m.params["prefill"]))
    return True


def fit_engine_overheads(points: Sequence[Measurement], profile: Profile,
                         device: GpuSpec, total: bool = False
                         ) -> tuple[float, float, float, bool]:
    """(decode_overhead_s, decode_overhead_per_seq_s, prefill_overhead_s, per-seq fitted)
    for `engine_decode` / `engine_prefill` / `engine_mixed` points, every other constant
    from `profile`.

    `InferenceCost.step(...).total_s` is its kernel time plus `decode_overhead_s +
    decode_overhead_per_seq_s * sequences (+ prefill_overhead_s if it prefills)`, so each
    point is priced once with a unit per-sequence overhead (which yields its sequence count)
    and the overheads (>= 0) are fitted by relative soft-L1 least squares. When every point
    has the same sequence count the per-sequence term cannot be told from the fixed one: it
    stays 0 (fourth value False); without both decode-only and prefilling points the prefill
    term cannot be told from the fixed one either, and stays 0.
    """
    if not points:
        raise ValueError("no engine points to fit")
    unit = profile.model_copy(update={"decode_overhead_s": 0.0,
                                      "decode_overhead_per_seq_s": 1.0,
                                      "prefill_overhead_s": 0.0})
    pred = Predictor(unit, device)
    steps = [pred.engine_step(m.bench, m.params) for m in points]
    seqs = np.array([s.overhead_s for s in steps])
    base = np.array([s.linear_s + s.attention_s + s.other_s + s.comm_s for s in steps])
    pre = np.array([1.0 if _prefills(m) else 0.0 for m in points])
    y = np.array([m.median_s for m in points])
    ymin = float(np.min(y))
    per_seq = len(set(seqs.tolist())) >= 2
    with_pre = 0.0 < float(pre.sum()) < len(points)
    smax = float(np.max(seqs))

    def fn(p: Array) -> Array:
        out: Array = base + p[0] + (p[1] * seqs if per_seq else 0.0) \
            + (p[2] * pre if with_pre else 0.0)
        return out

    x0 = [ymin / 10, 0.0, 0.0]
    lower, upper = [0.0, 0.0, 0.0], [1.0, 0.1, 1.0]
    starts = [[0.0, ymin / (10 * smax), 0.0], [ymin / 2, ymin / (2 * smax), ymin / 4]]
    if total:
        x = fit_total(fn, y, x0, lower, upper, starts)
    else:
        x = fit_relative(fn, y, x0, lower, upper, starts=starts)
    return (float(x[0]), float(x[1]) if per_seq else 0.0, float(x[2]) if with_pre else 0.0,
            per_seq)


def fit(ctx: FitContext) -> None:
    """Per-iteration engine overheads on the whole-engine grids, every other constant
    as fitted so far (run after the joint refit).

    What the simulator prices is an iteration of a running engine, whose shape changes
    every iteration. The `engine_trace` points are exactly that; the decode, prefill and
    mixed microbenchmarks repeat one state, with warm caches and a reused allocator, and
    one model cannot fit both: fitted on all of them, the overheads overpriced the
    repeated decode iterations by 17-24% and underpriced the running engine's (the
    trace's by 12-14%, the live job's by 13-23%; docs/validation.md). With at least
    MIN_TRACE_POINTS trace points the overheads are fitted on the trace alone and the
    microbenchmarks stay in the report as held-back checks; without, on every grid.
    The trace is fitted for its total time (absolute error, `fit_total`): a step costs
    the sum of its iterations, and on relative error the many short decode iterations
    outvoted the few long prefill ones (32 prompts admitted at once) that hold much of
    a step's time, leaving the trace's total about 7% under."""
    pts = [m for b in ENGINE_BENCHES for m in ctx.train(b)]
    trace = ctx.train("engine_trace")
    running = len(trace) >= MIN_TRACE_POINTS
    if running:
        pts = trace
    if not pts:
        return
    if len(pts) < 2:
        ctx.notes.append("fewer than 2 engine points: engine overheads are defaults")
        return
    a, b, c, per_seq = fit_engine_overheads(pts, ctx.profile(), ctx.device(),
                                            total=running)
    ctx.consts["decode_overhead_s"] = a
    ctx.consts["decode_overhead_per_seq_s"] = b
    ctx.consts["prefill_overhead_s"] = c
    if not per_seq:
        ctx.notes.append("one sequence count in the engine points: "
                         "decode_overhead_per_seq_s is 0")
