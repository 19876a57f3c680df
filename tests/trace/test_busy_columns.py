"""The rollout engines' busy spans, written as columns (issue 40), read back as the `Span`s
a row-by-row writer records: the same fields, of the same types, attributes in the same
order, each in its place among the other spans; and the summary reads them without
building any, to the same floats."""

from __future__ import annotations

import gc
import pickle
from array import array
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlsim.report import metrics
from rlsim.trace import Recorder, Span

ENGINES = [("rollout.engine0", "rollout", 4), ("rollout.engine1", "rollout", 4),
           ("rollout.engine2", "gen2", 2)]

_time = st.one_of(st.floats(0, 100, allow_nan=False), st.integers(0, 100))
_count = st.one_of(st.integers(0, 10**6), st.just(2**70), st.just(True))
# A busy period of engine e, [t0, t0 + dt] (dt of t0's kind), or another span.
_busy_row = st.tuples(st.just("busy"), st.integers(0, len(ENGINES) - 1), _time,
                      st.one_of(st.floats(0, 30, allow_nan=False), st.integers(0, 30)),
                      _count, _count, st.booleans())
_other_row = st.tuples(st.just("other"), st.sampled_from(["controller", "train.trainer"]),
                       st.sampled_from(["step", "gen", "busy"]), _time, st.floats(0, 30),
                       st.sampled_from(["rollout", "train"]))
_rows = st.lists(st.one_of(_busy_row, _other_row), max_size=60)


def _record(rows: list[tuple], rec: Recorder) -> list[Span]:
    """Record `rows` into `rec` (busy periods as an engine writes them) and return the spans
    a row-by-row writer would have listed."""
    cols = rec.busy_columns
    sids = [cols.series_of(*e) for e in ENGINES]
    expected: list[Span] = []
    for row in rows:
        if row[0] == "busy":
            _, e, t0, dt, requests, tokens, cut = row
            cols.append(sids[e], t0, t0 + dt, requests, tokens, cut)
            track, pool, gpus = ENGINES[e]
            attrs = {"pool": pool, "gpus": gpus, "requests": requests, "tokens": tokens}
            if cut:
                attrs["open"] = True
            expected.append(Span(track, "busy", t0, t0 + dt, attrs))
        else:
            _, track, name, t0, dt, pool = row
            attrs = {"pool": pool, "gpus": 8, "work": "train"} if name == "busy" \
                else {"step": 1}
            rec.span_of(track, name, t0, t0 + dt, attrs)
            expected.append(Span(track, name, t0, t0 + dt, attrs))
    return expected


def _exact(spans: list[Span]) -> list[tuple]:
    """Each span's fields with their types, its attributes in order."""
    return [(type(s).__name__, s.track, s.name, type(s.t0), repr(s.t0), type(s.t1),
             repr(s.t1), [(k, type(v), repr(v)) for k, v in s.attrs.items()]) for s in spans]


@given(_rows, st.integers(1, 5))
def test_busy_spans_read_back_in_place(rows, batch):
    """Every busy row comes back as the `Span` an engine used to append, in its place among
    the spans recorded around it, whether read in one go or a few rows at a time; flushed
    every `batch` rows, as a long run's are."""
    rec = Recorder()
    rec.busy_columns  # noqa: B018 (the columns exist before any row)
    expected: list[Span] = []
    for a in range(0, len(rows), batch * 3):
        expected += _record(rows[a:a + batch * 3], rec)
        if a % 2:  # read midway: what is built stays, the rest comes after it
            assert _exact(rec.spans) == _exact(expected)
    listed, cols = rec.spans_apart()
    assert cols.requests_finished() + sum(s.attrs["requests"] for s in listed
                                          if s.track.startswith("rollout.")) \
        == sum(s.attrs["requests"] for s in expected if s.track.startswith("rollout."))
    assert _exact(rec.spans) == _exact(expected)
    assert _exact(rec.spans) == _exact(expected)  # read again: nothing built twice
    assert len(rec.busy_columns) == 0


@given(_rows)
def test_pickled_before_read(rows):
    """A recorder pickled with its busy spans still in columns (a draw's worker sends it
    back) reads back the same spans, and new rows land after them."""
    rec = Recorder()
    expected = _record(rows, rec)
    back = pickle.loads(pickle.dumps(rec))
    more = _record([("busy", 0, 200.0, 1.0, 3, 40, False)], back)
    assert _exact(back.spans) == _exact(expected + more)


def test_assigning_spans_drops_the_columns_rows():
    rec = Recorder()
    _record([("busy", 0, 1.0, 1.0, 1, 10, False), ("other", "controller", "step", 0.0, 2.0,
                                                   "rollout")], rec)
    kept = Span("controller", "step", 0.0, 1.0, {})
    rec.spans = [kept]
    assert rec.spans == [kept] and len(rec.busy_columns) == 0
    rec.spans = rec.spans  # its own spans: kept
    assert rec.spans == [kept]


def test_a_busy_span_ending_before_it_starts_is_refused():
    rec = Recorder()
    cols = rec.busy_columns
    with pytest.raises(ValueError, match=r"rollout\.engine0/busy ends before it starts"):
        cols.append(cols.series_of(*ENGINES[0]), 2.0, 1.0, 0, 0, False)
    assert rec.spans == []


@given(_rows, st.floats(0, 130), st.floats(0, 130), st.integers(1, 7))
def test_busy_time_from_columns_is_the_same_float(rows, w0, w1, chunk):
    """Busy time summed from the columns and the spans listed around them gives the very
    floats (per pool, whole and per window) and tokens that the built spans give, a pool
    shared between an engine and a trainer included (its terms added in recorded order)."""
    rec = Recorder()
    expected = _record(rows, rec)
    listed, cols = rec.spans_apart()
    busy = metrics.busy_time(listed, [(w0, w1), (0.0, 130.0)], chunk=chunk, columns=cols)
    built = metrics.busy_time(expected, [(w0, w1), (0.0, 130.0)], chunk=chunk)
    assert busy == built
    assert busy.rollout_tokens == sum(int(s.attrs["tokens"]) for s in expected
                                      if s.name == "busy" and s.track.startswith("rollout."))


def test_columns_keep_no_object_per_row():
    """What the change is for: a busy row adds bytes to arrays, not objects the garbage
    collector walks (issue 40)."""
    rec = Recorder()
    cols = rec.busy_columns
    sid = cols.series_of(*ENGINES[0])
    gc.collect()
    before = len(gc.get_objects())
    for i in range(20_000):
        cols.append(sid, float(i), i + 0.5, 3, 1000 + i, False)
    cols.flush()
    assert len(gc.get_objects()) - before < 100
    assert isinstance(cols.t0, array) and len(cols) == 20_000
    assert np.frombuffer(cols.tokens, dtype=np.longlong)[-1] == 20_999


def test_a_run_summarized_from_columns_is_summarized_from_spans():
    """A run's summary, read from the engines' columns without a `Span` built, is the one
    its built spans give; and the engines left their busy periods in the columns."""
    from rlsim.api import simulate
    from rlsim.config.loading import load_scenario

    root = Path(__file__).resolve().parents[2]
    scenario, base = load_scenario(root / "scenarios" / "quickstart.yaml", ["steps=2"])
    result = simulate(scenario, base)
    rec = result.recorder
    listed, cols = rec.spans_apart()
    n_rows = len(cols)
    assert n_rows > 0 and not any(s.name == "busy" and s.track.startswith("rollout.")
                                     for s in listed)
    from_columns = metrics.summarize(rec, 1.0, 10)
    spans = rec.spans  # built now
    assert sum(s.name == "busy" and s.track.startswith("rollout.") for s in spans) == n_rows
    assert len(rec.busy_columns) == 0
    assert metrics.summarize(rec, 1.0, 10) == from_columns


def test_busy_time_adds_in_recorded_order():
    """Two engine rows then a trainer's busy span in the same pool: 1 + 1 + 1e16 is
    1e16 + 2 in that order, and 1e16 added first loses both ones."""
    rec = Recorder()
    cols = rec.busy_columns
    sid = cols.series_of("rollout.engine0", "shared", 4)
    cols.append(sid, 0.0, 0.25, 1, 1, False)
    cols.append(sid, 0.25, 0.5, 1, 1, False)
    rec.span_of("train.trainer", "busy", 0.0, 1.25e15, {"pool": "shared", "gpus": 8})
    listed, cols = rec.spans_apart()
    busy = metrics.busy_time(listed, [(0.0, 2e15)], columns=cols)
    assert busy.whole == {"shared": 1e16 + 2} == metrics.busy_time(rec.spans, []).whole
