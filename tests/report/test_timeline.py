"""Timeline downsampling: merges, lanes, pixel-resolution rows, the bar cap; and the series
reductions behind the other plots."""

from __future__ import annotations

import numpy as np

from rlsim.report.columns import RunRecords
from rlsim.report.series import binned_step_mean, cdf_points, occupancy
from rlsim.report.timeline import WIDTH_PX, build_timeline
from rlsim.trace import Recorder


def _bars(tl, name):
    """(row label, t0, t1) of each drawn bar of a span name."""
    fig = tl.figure
    labels = fig["layout"]["yaxis"]["ticktext"]
    trace = next(t for t in fig["data"] if t.get("name") == name and t["type"] == "scatter"
                 and t["x"] != [None])
    x, y = trace["x"], trace["y"]
    return [(labels[y[i]], x[i], x[i + 2]) for i in range(0, len(x), 4)]


def test_close_bars_merge_and_far_ones_do_not():
    rec = Recorder()
    px = 100.0 / WIDTH_PX
    rec.span("rollout.engine0", "busy", 0.0, 10.0, pool="p", gpus=1)
    rec.span("rollout.engine0", "busy", 10.0 + px / 2, 20.0, pool="p", gpus=1)  # merged
    rec.span("rollout.engine0", "busy", 30.0, 40.0, pool="p", gpus=1)           # separate
    rec.span("controller", "step", 0.0, 100.0, step=0)
    tl = build_timeline(RunRecords(rec))
    bars = _bars(tl, "busy")
    assert [(b[1], b[2]) for b in bars] == [(0.0, 20.0), (30.0, 40.0)]
    assert tl.merged and "timeline downsampled" in (tl.note or "")


def test_no_note_when_every_span_is_a_bar():
    rec = Recorder()
    rec.span("rollout.engine0", "busy", 0.0, 10.0, pool="p", gpus=1)
    rec.span("rollout.engine0", "busy", 20.0, 30.0, pool="p", gpus=1)
    assert build_timeline(RunRecords(rec)).note is None


def test_overlapping_spans_get_lanes():
    rec = Recorder()
    rec.span("controller", "gen", 0.0, 10.0, step=1)
    rec.span("controller", "train", 5.0, 8.0, step=0)
    rec.span("controller", "gen", 10.0, 12.0, step=2)
    tl = build_timeline(RunRecords(rec))
    rows = {b[0] for b in _bars(tl, "gen")} | {b[0] for b in _bars(tl, "train")}
    assert rows == {"controller", "controller [2]"}


def test_dense_track_is_drawn_at_pixel_resolution_with_shades():
    rec = Recorder()
    end = 2000.0
    # A trainer busy 20% of every pixel (1 s period, pixel = 1 s): faint, not full.
    for k in range(WIDTH_PX):
        rec.span("train.trainer", "train", k, k + 0.2)
    # An engine busy all the time in many tiny spans: full shade.
    for k in range(4 * WIDTH_PX):
        rec.span("rollout.engine0", "busy", k / 4, (k + 1) / 4, pool="p", gpus=1)
    rec.span("controller", "step", 0.0, end, step=0)
    tl = build_timeline(RunRecords(rec))
    assert tl.pixel_tracks == ["rollout.engine0", "train.trainer"]
    heat = [t for t in tl.figure["data"] if t["type"] == "heatmap"]
    assert len(heat) == 1 and len(heat[0]["z"]) == 2  # adjacent rows: one block
    engine_row, trainer_row = heat[0]["z"]
    assert len(set(engine_row)) == 1 and len(set(trainer_row)) == 1
    # Shades are palette index * 4 + level - 1; the trainer's level is 1 of 4, the engine's 4.
    assert engine_row[0] % 4 == 3 and trainer_row[0] % 4 == 0
    assert engine_row[0] != trainer_row[0] and -1 not in engine_row
    legend = {t["name"] for t in tl.figure["data"] if t.get("showlegend", True) and "name" in t}
    assert {"busy", "train"} <= legend
    assert "pixel resolution" in (tl.note or "")


def test_over_the_bar_budget_the_busiest_tracks_go_to_pixel_resolution():
    rec = Recorder()
    for e, n in enumerate((300, 100, 100, 50)):  # each under half the pixels
        for k in range(n):
            rec.span(f"rollout.engine{e}", "busy", 2.0 * k, 2.0 * k + 1.0, pool="p", gpus=1)
    tl = build_timeline(RunRecords(rec), max_bars=200)
    assert tl.pixel_tracks == ["rollout.engine0", "rollout.engine1"]
    assert tl.bars == 150  # engines 2 and 3 still one bar per span
    assert "pixel resolution" in (tl.note or "")


def test_pixel_columns_shrink_for_thousands_of_tracks(monkeypatch):
    """The cells budget (tracks x columns) bounds the page: scaled down here for speed."""
    from rlsim.report import timeline

    monkeypatch.setattr(timeline, "PIXEL_CELLS", 3000)
    monkeypatch.setattr(timeline, "MIN_PIXEL_COLUMNS", 10)
    rec = Recorder()
    for e in range(300):
        for k in range(0, 120, 2):
            rec.span(f"rollout.engine{e}", "busy", k, k + 1.0, pool="p", gpus=1)
    tl = build_timeline(RunRecords(rec), width_px=100)
    assert len(tl.pixel_tracks) == 300 and tl.pixel_columns == 10
    cells = sum(len(r) for t in tl.figure["data"] if t["type"] == "heatmap" for r in t["z"])
    assert cells == 3000


def test_occupancy_matches_brute_force():
    rng = np.random.default_rng(1)
    t0 = rng.uniform(0, 90, 200)
    t1 = t0 + rng.exponential(5, 200)
    w = rng.integers(1, 8, 200).astype(float)
    edges = np.linspace(0, 100, 51)
    fine = np.linspace(0, 100, 100_001)[:-1] + 0.0005
    level = ((fine[:, None] >= t0) & (fine[:, None] < t1)) @ w
    brute = level.reshape(50, -1).mean(axis=1)
    assert np.allclose(occupancy(t0, t1, w, edges), brute, rtol=0, atol=0.02)


def test_binned_step_mean_and_cdf():
    t = np.array([0.0, 1.0, 3.0])
    v = np.array([2.0, 4.0, 0.0])
    assert binned_step_mean(t, v, np.array([0.0, 2.0, 4.0])).tolist() == [3.0, 2.0]
    x, p = cdf_points(np.array([3.0, 1.0, 2.0]))
    assert x.tolist() == [1.0, 1.0, 2.0, 3.0] and p[0] == 0 and p[-1] == 1
    x, p = cdf_points(np.arange(10_000.0), points=100)
    assert len(x) == 100 and x[-1] == 9999.0
