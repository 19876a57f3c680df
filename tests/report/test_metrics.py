"""Metrics are pure functions of records: hand-made records give hand-computed figures."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlsim.report.metrics import summarize
from rlsim.report.perfetto import chrome_trace
from rlsim.trace import Recorder


def _records() -> Recorder:
    rec = Recorder()
    rec.instant("cluster", "pool", 0.0, pool="p", gpu="H100", gpus=8, usd_per_gpu_hour=3.0)
    rec.span("controller", "gen", 0.0, 60.0, step=0)
    rec.span("controller", "train", 60.0, 100.0, step=0, samples=10, tokens=1000,
             staleness_mean=0.0, staleness_max=0)
    rec.span("controller", "step", 0.0, 100.0, step=0)
    rec.span("controller", "gen", 100.0, 130.0, step=1)
    rec.span("controller", "train", 130.0, 200.0, step=1, samples=30, tokens=3000,
             staleness_mean=1.0, staleness_max=1)
    rec.span("controller", "step", 100.0, 200.0, step=1)
    rec.span("rollout.engine0", "busy", 0.0, 50.0, pool="p", gpus=4)
    rec.span("train.trainer", "busy", 60.0, 100.0, pool="p", gpus=8)
    return rec


def test_summary_formulas():
    s = summarize(_records(), wall_s=0.1, events=7)
    assert s["steps"] == 2 and s["sim_time_s"] == 200.0
    assert s["step_time_s"]["mean"] == 100.0
    assert s["phase_time_s"]["gen"] == pytest.approx(45.0)
    assert s["phase_time_s"]["train"] == pytest.approx(55.0)
    assert s["throughput"]["samples_per_s"] == pytest.approx(40 / 200)
    assert s["throughput"]["tokens_per_s"] == pytest.approx(4000 / 200)
    assert s["gpu_util"]["p"] == pytest.approx((50 * 4 + 40 * 8) / (8 * 200))
    assert s["cost"]["usd_per_hour"] == 24.0
    assert s["cost"]["usd_per_1k_samples"] == pytest.approx(24 * 200 / 3600 / 40 * 1000)
    assert s["staleness"] == {"mean": pytest.approx(0.75), "max": 1}
    assert s["events"] == 7 and s["wall_s"] == 0.1


def test_chrome_trace_tracks_and_pool_counter():
    trace = chrome_trace(_records())
    threads = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"controller", "rollout.engine0", "train.trainer"} <= threads
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == 8 and all(e["dur"] >= 0 for e in spans)
    busy = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "busy_gpus"]
    assert [e["args"]["busy_gpus"] for e in busy] == [4, 0, 8, 0]


def test_warm_up_window_by_hand():
    """With a `run` instant naming one warm-up step, the headline figures are step 1's,
    over [100, 200]; busy time is clipped to the window; the whole run is kept beside."""
    rec = _records()
    rec.instant("cluster", "run", 0.0, steps=2, warmup_steps=1, policy="sync")
    rec.span("rollout.engine0", "busy", 90.0, 150.0, pool="p", gpus=4)  # straddles 100
    s = summarize(rec, wall_s=0.1, events=7)
    assert s["steady_state"] == {"warmup_steps": 1, "steps": 1, "start_s": 100.0,
                                 "end_s": 200.0}
    assert s["step_time_s"]["mean"] == 100.0
    assert s["phase_time_s"]["gen"] == pytest.approx(30.0)
    assert s["throughput"]["samples_per_s"] == pytest.approx(30 / 100)
    assert s["gpu_util"]["p"] == pytest.approx(50 * 4 / (8 * 100))
    assert s["cost"]["usd_per_1k_samples"] == pytest.approx(24 * 100 / 3600 / 30 * 1000)
    assert s["effective_training_time_ratio"] == pytest.approx(1.0)
    # staleness too (issue 34): step 1's samples only; step 0's fresher ones whole-run
    assert s["staleness"] == {"mean": pytest.approx(1.0), "max": 1}
    whole = s["whole_run"]
    assert whole["throughput"]["samples_per_s"] == pytest.approx(40 / 200)
    assert whole["gpu_util"]["p"] == pytest.approx((50 * 4 + 60 * 4 + 40 * 8) / (8 * 200))
    assert whole["staleness"] == {"mean": pytest.approx(0.75), "max": 1}
    assert s["warnings"] == []


def test_staleness_max_leaves_the_warm_up_out_too():
    """A warm-up step whose samples are staler than any later step's (here by hand): the
    steady state's max is the later steps' own; the whole run keeps the warm-up's."""
    rec = Recorder()
    rec.instant("cluster", "pool", 0.0, pool="p", gpu="H100", gpus=8, usd_per_gpu_hour=3.0)
    rec.instant("cluster", "run", 0.0, steps=3, warmup_steps=1, policy="async")
    for k, (mean, most, n) in enumerate([(2.5, 4, 10), (0.5, 1, 10), (1.0, 1, 30)]):
        rec.span("controller", "train", 10.0 * k + 5, 10.0 * k + 10, step=k, samples=n,
                 tokens=100, staleness_mean=mean, staleness_max=most)
        rec.span("controller", "step", 10.0 * k, 10.0 * k + 10, step=k)
    s = summarize(rec, wall_s=0.1, events=1)
    assert s["staleness"] == {"mean": pytest.approx((0.5 * 10 + 1.0 * 30) / 40), "max": 1}
    assert s["whole_run"]["staleness"] == {
        "mean": pytest.approx((2.5 * 10 + 0.5 * 10 + 1.0 * 30) / 50), "max": 4}


def test_controller_phase_is_reported_in_step_order():
    from rlsim.report.metrics import PHASES
    from rlsim.report.style import SPAN_COLORS

    # the driver's work sits between reward and the log-prob passes, as the policies run it
    assert PHASES.index("reward") < PHASES.index("controller") < PHASES.index("ref")
    assert "controller" in SPAN_COLORS
    rec = _records()
    rec.span("controller", "controller", 60.0, 60.5, step=0, calls=4)
    rec.span("controller", "controller", 130.0, 131.5, step=1, calls=4)
    s = summarize(rec, wall_s=0.1, events=7)
    assert s["phase_time_s"]["controller"] == pytest.approx(1.0)


def _loop_busy(spans: list, t0: float | None = None, t1: float | None = None) -> dict:
    """GPU-seconds busy per pool as a plain loop over the spans (what `_BusySpans` must
    equal bit for bit): whole spans, or each clipped to [t0, t1]."""
    out: dict[str, float] = {}
    for s in spans:
        if s.name != "busy":
            continue
        if t0 is None or t1 is None:
            dur = s.t1 - s.t0
        else:
            dur = min(s.t1, t1) - max(s.t0, t0)
            if not dur > 0:
                continue
        pool = str(s.attrs["pool"])
        out[pool] = out.get(pool, 0.0) + dur * float(s.attrs["gpus"])
    return out


@given(st.lists(st.tuples(st.sampled_from(["rollout.e0", "rollout.e1", "train.t"]),
                          st.sampled_from(["busy", "abort"]),
                          st.one_of(st.integers(0, 50), st.floats(0, 50)),
                          st.floats(0, 30), st.sampled_from(["a", "b", "c"]),
                          st.integers(1, 8), st.integers(0, 10**6)), max_size=40),
       st.floats(0, 60), st.floats(0, 60))
def test_busy_time_sums_exactly_as_a_loop(rows, w0, w1):
    """Busy time read as columns, a few spans at a time, gives the very floats a loop over
    the spans gives, per pool, whole or clipped to each window, and the rollout engines'
    generated tokens (issue 40)."""
    from rlsim.report import metrics
    from rlsim.trace import Span

    spans = [Span(track, name, t0, t0 + dt, {"pool": pool, "gpus": gpus, "tokens": tokens})
             for track, name, t0, dt, pool, gpus, tokens in rows]
    # 3 a time: running totals carried across chunks
    busy = metrics.busy_time(spans, [(w0, w1), (0.0, 60.0)], chunk=3)
    assert busy.whole == _loop_busy(spans)
    assert busy.within == [_loop_busy(spans, w0, w1), _loop_busy(spans, 0.0, 60.0)]
    assert busy.rollout_tokens == sum(s.attrs["tokens"] for s in spans
                                      if s.name == "busy" and s.track.startswith("rollout."))


@given(st.lists(st.one_of(st.floats(allow_nan=False, width=64),
                          st.floats(0, 1e4), st.integers(0, 5).map(float)),
                min_size=1, max_size=60),
       st.one_of(st.sampled_from([0.0, 50.0, 99.0, 100.0]), st.floats(0, 100)))
def test_percentile_is_numpys(values, q):
    """The summary's percentile gives the float `np.percentile` gives (its default method),
    ties, infinities and a NaN among the values included; it does not import numpy.ma
    (issue 40: a small run's start)."""
    import math

    import numpy as np

    from rlsim.report.metrics import percentile

    for xs in (values, [*values, math.nan]):
        with np.errstate(invalid="ignore"):  # inf - inf, as in ours
            want = float(np.percentile(np.asarray(xs, dtype=float), q))
        got = percentile(sorted(xs), q)
        assert got == want or (math.isnan(got) and math.isnan(want)), (xs, q, got, want)


def test_a_summary_does_not_import_numpy_ma():
    """numpy's percentile would (issue 40): the summary's stays out of it."""
    import subprocess
    import sys

    code = ("import sys; from rlsim.report.metrics import _stats; "
            "_stats([3.0, 1.0, 2.0]); print('numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "False"
