"""The per-track Gantt timeline and its downsampling.

Owns turning any number of spans into a bounded drawing on a ~2000 px wide timeline, and
saying what was lost:
1. a track with more spans than half the pixels is drawn at pixel resolution: each pixel
   takes the color of the span name covering most of it, lighter where spans cover less of
   it (four shades), as a heatmap row; a sparse track (e.g. a trainer busy 20% of every
   pixel) thus looks faint rather than full or empty;
2. on the other tracks, consecutive spans of the same name whose gap is under one pixel
   merge into one bar (idle gaps narrower than a pixel are invisible anyway);
3. if more than `max_bars` bars remain, the tracks with the most bars also go to pixel
   resolution until the rest fit: nothing is silently dropped.
Per-request spans (`*.requests` tracks) are never drawn; trainer `busy` spans that carry a
`work` attribute duplicate the named work span beside them and are skipped.

Bars are drawn as thick line segments separated by `None` in one SVG path per span name
(the standard plotly trick), which renders tens of thousands of bars quickly without WebGL.
Overlapping spans on one track (one_off's phases) go to extra lanes of that track.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlsim.report.columns import REQUESTS_SUFFIX, RunRecords, natural_key
from rlsim.report.series import occupancy, round_to
from rlsim.report.style import SPAN_COLORS, STEP_COLORS, layout, span_color
from rlsim.trace import CONTROLLER

WIDTH_PX = 2000
"""Nominal drawing width: the merge threshold is one pixel of it."""

MAX_BARS = 20_000
"""Default cap on bars per timeline; tracks beyond it are drawn at pixel resolution."""

PIXEL_CELLS = 1_000_000
"""Cap on pixel-resolution cells (tracks x columns): bounds the page size for 10k engines."""

MIN_PIXEL_COLUMNS = 200

MAX_STEP_BARS = 400
"""Above this many steps, the step row shows groups of consecutive steps."""

MIN_BAR_PX = 2.0
"""Narrowest bar drawn, in pixels of the nominal width."""

MAX_MARKERS = 2000
"""Point-event markers drawn per event name."""

_NOT_MARKED = {"responses", "pool", "entity"}  # statistics or cluster facts, not events
_MARKER_STYLE = {"abort": ("x", "#C62828"), "fault": ("star", "#C62828"),
                 "recovered": ("circle", "#2E7D32"), "decision": ("diamond", "#1f2430"),
                 "preempt": ("triangle-down", "#E65100"), "crash": ("star", "#C62828"),
                 "restart": ("circle", "#2E7D32"), "slowdown": ("triangle-up", "#E65100")}

_GROUP_ORDER = ("controller", "rollout", "train", "reward", "env", "link")
_MAX_LANES = 6


@dataclass
class Timeline:
    """A Gantt figure (plotly dict) and what downsampling did to get it."""

    figure: dict[str, Any]
    spans: int
    bars: int
    merge_below_s: float
    merged: bool
    pixel_tracks: list[str]
    pixel_columns: int
    request_spans: int

    @property
    def note(self) -> str | None:
        """One sentence for the page when the drawing is not one bar per span."""
        parts = []
        if self.merged or self.pixel_tracks:
            drawn = [f"{self.bars:,} bars"] if self.bars else []
            if self.pixel_tracks:
                drawn.append(f"{len(self.pixel_tracks):,} pixel-resolution tracks")
            parts.append(f"timeline downsampled: {' and '.join(drawn)} drawn for "
                         f"{self.spans:,} spans")
            if self.merged:
                parts.append(f"bars of the same name closer than {_fmt_s(self.merge_below_s)}"
                             f" (one pixel of a {WIDTH_PX} px wide timeline) merged")
            if self.pixel_tracks:
                shown = ", ".join(self.pixel_tracks[:3])
                more = (f" and {len(self.pixel_tracks) - 3:,} more"
                        if len(self.pixel_tracks) > 3 else "")
                parts.append(f"tracks with too many spans to draw one by one ({shown}{more}) "
                             f"drawn at pixel resolution ({self.pixel_columns:,} columns): "
                             "each pixel colored by the span covering most of it, lighter "
                             "where spans cover less of it")
        if self.request_spans:
            parts.append(f"{self.request_spans:,} per-request spans (*.requests tracks) are "
                         "not drawn")
        return "; ".join(parts) + "." if parts else None


def _fmt_s(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _name_key(name: str) -> tuple[int, str]:
    """Legend order: the order of a step (gen, env, reward, ref, train, sync), then others."""
    order = list(SPAN_COLORS)
    return (order.index(name), name) if name in order else (len(order), name)


def _track_key(track: str) -> tuple[Any, ...]:
    head = track.split(".")[0]
    rank = _GROUP_ORDER.index(head) if head in _GROUP_ORDER else len(_GROUP_ORDER)
    return (rank, natural_key(track))


@dataclass
class _Bars:
    track: np.ndarray     # track code
    name: np.ndarray      # name code
    t0: np.ndarray
    t1: np.ndarray
    count: np.ndarray     # spans merged into the bar (0: pixel-resolution bar)
    first: np.ndarray     # index into recorder.spans of the bar's first span (-1: none)

    def take(self, idx: np.ndarray) -> _Bars:
        return _Bars(self.track[idx], self.name[idx], self.t0[idx], self.t1[idx],
                     self.count[idx], self.first[idx])

    def __len__(self) -> int:
        return len(self.t0)


def _eligible(run: RunRecords) -> tuple[np.ndarray, int]:
    """Indices of the spans the timeline may draw, and how many per-request spans exist."""
    cols = run.spans
    n = len(cols.t0)
    keep = np.ones(n, dtype=bool)
    req_codes = [i for i, t in enumerate(cols.tracks) if t.endswith(REQUESTS_SUFFIX)]
    requests = 0
    if req_codes:
        is_req = np.isin(cols.track, req_codes)
        requests = int(is_req.sum())
        keep &= ~is_req
    step = cols.name_code("step")
    ctrl = cols.track_code(CONTROLLER)
    if step >= 0 and ctrl >= 0:
        keep &= ~((cols.name == step) & (cols.track == ctrl))
    busy = cols.name_code("busy")
    if busy >= 0:
        spans = run.recorder.spans
        # Only tracks with other span names beside `busy` can hold duplicates; checking
        # attrs there alone keeps this cheap for millions of engine busy spans.
        pairs = np.unique(cols.track.astype(np.int64) * len(cols.names) + cols.name)
        mixed = np.flatnonzero(np.bincount(pairs // len(cols.names),
                                           minlength=len(cols.tracks)) > 1)
        idx = np.flatnonzero((cols.name == busy) & np.isin(cols.track, mixed))
        dup = np.fromiter(("work" in spans[i].attrs for i in idx), dtype=bool, count=len(idx))
        keep[idx[dup]] = False
    return np.flatnonzero(keep), requests


def _merge(run: RunRecords, sel: np.ndarray, px: float) -> _Bars:
    """Step 1: merge consecutive same-name spans of a track closer than `px`."""
    cols = run.spans
    tr, nm, a, b = cols.track[sel], cols.name[sel], cols.t0[sel], cols.t1[sel]
    order = np.lexsort((a, tr))
    tr, nm, a, b, src = tr[order], nm[order], a[order], b[order], sel[order]
    if len(a) == 0:
        empty = np.zeros(0)
        return _Bars(empty.astype(np.int32), empty.astype(np.int32), empty, empty,
                     empty.astype(np.int64), empty.astype(np.int64))
    new = np.ones(len(a), dtype=bool)
    new[1:] = (tr[1:] != tr[:-1]) | (nm[1:] != nm[:-1]) | (a[1:] - b[:-1] >= px)
    starts = np.flatnonzero(new)
    count = np.diff(np.append(starts, len(a)))
    return _Bars(tr[starts], nm[starts], a[starts], np.maximum.reduceat(b, starts),
                 count, src[starts])


@dataclass
class _Pixels:
    """A dense track at pixel resolution: dominant name code per pixel (-1: nothing) and
    the shade level 1..LEVELS of how much of the pixel spans cover."""

    track: int
    name: np.ndarray
    level: np.ndarray


LEVELS = 4


def _pixelate(run: RunRecords, mine: np.ndarray, track: int, edges: np.ndarray) -> _Pixels:
    """`mine`: indices of the track's drawable spans."""
    cols = run.spans
    names = np.unique(cols.name[mine])
    cover = np.stack([occupancy(cols.t0[m], cols.t1[m], np.ones(len(m)), edges)
                      for m in (mine[cols.name[mine] == k] for k in names)])
    total = np.clip(cover.sum(axis=0), 0.0, 1.0)
    level = np.ceil(total * LEVELS - 1e-9).astype(np.int64)
    name = np.where(level > 0, names[np.argmax(cover, axis=0)], -1)
    return _Pixels(track, name.astype(np.int64), level)


def _lanes(t0: np.ndarray, t1: np.ndarray, tol: float) -> np.ndarray:
    """Greedy lane per bar (sorted by t0) so that bars of one lane do not overlap."""
    if len(t0) < 2 or np.all(t0[1:] >= np.maximum.accumulate(t1)[:-1] - tol):
        return np.zeros(len(t0), dtype=np.int64)
    ends: list[float] = []
    lane = np.zeros(len(t0), dtype=np.int64)
    for i in range(len(t0)):
        for k, end in enumerate(ends):
            if t0[i] >= end - tol:
                lane[i] = k
                ends[k] = float(t1[i])
                break
        else:
            k = min(len(ends), _MAX_LANES - 1)
            if k == len(ends):
                ends.append(float(t1[i]))
            else:
                ends[k] = max(ends[k], float(t1[i]))
            lane[i] = k
    return lane


def _step_bars(run: RunRecords) -> tuple[list[float], list[float], list[str]]:
    """The step row: one bar per step, or per group of consecutive steps when many."""
    steps = run.steps
    group = max(1, math.ceil(len(steps) / MAX_STEP_BARS))
    t0s, t1s, labels = [], [], []
    for g in range(0, len(steps), group):
        chunk = steps[g:g + group]
        first, last = chunk[0].attrs.get("step", g), chunk[-1].attrs.get("step", g + group - 1)
        t0s.append(chunk[0].t0)
        t1s.append(chunk[-1].t1)
        dur = chunk[-1].t1 - chunk[0].t0
        labels.append(f"step {first}: {dur:.3g} s" if group == 1
                      else f"steps {first}–{last}: {dur:.3g} s")
    return t0s, t1s, labels


def build_timeline(run: RunRecords, max_bars: int = MAX_BARS,
                   width_px: int = WIDTH_PX) -> Timeline:
    """The Gantt of one run: a row per track (and lane), bars colored by span name."""
    cols = run.spans
    end = max(run.end_s, float(cols.t1.max()) if len(cols.t1) else 0.0) or 1.0
    px = end / width_px
    sel, requests = _eligible(run)
    per_track = np.bincount(cols.track[sel], minlength=len(cols.tracks))
    dense = per_track > width_px // 2
    merged = _merge(run, sel[~dense[cols.track[sel]]], px)
    if len(merged) > max_bars:
        # Over the bar budget: the tracks with the most bars go to pixel resolution until
        # the rest fit, so no span silently disappears.
        per_track_bars = np.bincount(merged.track, minlength=len(cols.tracks))
        order = np.argsort(-per_track_bars, kind="stable")
        remaining = len(merged) - np.cumsum(per_track_bars[order])
        dense[order[:int(np.argmax(remaining <= max_bars)) + 1]] = True
        merged = merged.take(np.flatnonzero(~dense[merged.track]))
    dense_codes = np.flatnonzero(dense & (per_track > 0))
    columns = min(width_px, max(MIN_PIXEL_COLUMNS, PIXEL_CELLS // max(len(dense_codes), 1)))
    edges = np.linspace(0.0, end, columns + 1)
    # Group the dense tracks' spans once (a mask per track would cost O(spans x tracks)).
    in_dense = sel[dense[cols.track[sel]]]
    in_dense = in_dense[np.argsort(cols.track[in_dense], kind="stable")]
    bounds = np.searchsorted(cols.track[in_dense],
                             np.append(dense_codes, np.iinfo(np.int32).max))
    pixels = [_pixelate(run, in_dense[bounds[i]:bounds[i + 1]], int(code), edges)
              for i, code in enumerate(dense_codes)]
    fig = _figure(run, merged, pixels, end, px)
    return Timeline(fig, spans=len(sel), bars=len(merged), merge_below_s=px,
                    merged=bool((merged.count > 1).any()),
                    pixel_tracks=sorted((cols.tracks[c] for c in dense_codes), key=_track_key),
                    pixel_columns=columns, request_spans=requests)


def _figure(run: RunRecords, bars: _Bars, pixels: list[_Pixels], end: float,
            px: float) -> dict[str, Any]:
    cols = run.spans
    spans = run.recorder.spans
    # Rows: the step row, then each track's lanes in group order.
    rows: list[str] = []
    row_of_bar = np.zeros(len(bars), dtype=np.int64)
    row_of_pixels: dict[int, int] = {}
    if run.steps:
        rows.append("steps")
    pixel_of = {p.track: p for p in pixels}
    track_codes = sorted({int(c) for c in bars.track} | set(pixel_of),
                         key=lambda c: _track_key(cols.tracks[c]))
    for code in track_codes:
        label = cols.tracks[code]
        if code in pixel_of:
            row_of_pixels[code] = len(rows)
            rows.append(label)
            continue
        idx = np.flatnonzero(bars.track == code)
        idx = idx[np.argsort(bars.t0[idx], kind="stable")]
        lanes = _lanes(bars.t0[idx], bars.t1[idx], px)
        base = len(rows)
        rows.extend([label] + [f"{label} [{k + 1}]" for k in range(1, int(lanes.max()) + 1)])
        row_of_bar[idx] = base + lanes
    n_rows = max(len(rows), 1)
    row_px = int(min(24, max(4, 1500 // n_rows)))
    res = px / 20
    traces: list[dict[str, Any]] = []
    if run.steps:
        t0s, t1s, labels = _step_bars(run)
        for parity in (0, 1):
            pick = range(parity, len(t0s), 2)
            traces.append(_segments(
                "step", STEP_COLORS[parity], np.asarray([t0s[i] for i in pick]),
                np.asarray([t1s[i] for i in pick]), np.zeros(len(pick)),
                [labels[i] for i in pick], row_px, res, legend=parity == 0,
                min_width_s=0.0))
    if pixels:
        traces.extend(_heatmaps(cols.names, pixels, row_of_pixels, end, row_px))
    bar_names = {int(c) for c in bars.name}
    pixel_names = {int(n) for p in pixels for n in np.unique(p.name) if n >= 0}
    for code in sorted(bar_names | pixel_names, key=lambda c: _name_key(cols.names[c])):
        name = cols.names[code]
        if code not in bar_names:
            # Legend entry for a name drawn only in pixel rows (heatmaps have no legend).
            traces.append({"type": "scatter", "mode": "lines", "name": name, "x": [None],
                           "y": [None], "line": {"color": span_color(name), "width": 10},
                           "hoverinfo": "skip"})
            continue
        idx = np.flatnonzero(bars.name == code)
        texts = []
        for i in idx:
            track = cols.tracks[bars.track[i]]
            t0, t1 = float(bars.t0[i]), float(bars.t1[i])
            head = f"{track} · {name}"
            n = int(bars.count[i])
            if n > 1:
                head += f" ({n} spans merged)"
            else:
                step = spans[int(bars.first[i])].attrs.get("step")
                if step is not None:
                    head += f" · step {step}"
            texts.append(f"{head}<br>{t0:.4g}–{t1:.4g} s ({t1 - t0:.4g} s)")
        traces.append(_segments(name, span_color(name), bars.t0[idx], bars.t1[idx],
                                row_of_bar[idx], texts, row_px, res, legend=True,
                                min_width_s=MIN_BAR_PX * px))
    traces.extend(_markers(run, rows))
    label_every = max(1, math.ceil(12 / row_px))
    ticktext = [r if i % label_every == 0 else "" for i, r in enumerate(rows)]
    fig_layout = layout(
        "time (s)", "", height_px=n_rows * row_px + 110,
        xaxis={"range": [0, end], "showgrid": True},
        yaxis={"tickvals": list(range(len(rows))), "ticktext": ticktext,
               "showgrid": False, "zeroline": False,
               "ticks": "", "tickfont": {"size": 11},
               "range": [n_rows - 0.5, -0.5]},
        margin={"l": 10, "r": 20, "t": 10, "b": 40},
        legend={"orientation": "h", "y": 1.0, "x": 0, "yanchor": "bottom",
                "font": {"size": 11}, "traceorder": "normal"},
    )
    return {"data": traces, "layout": fig_layout}


def _markers(run: RunRecords, rows: list[str]) -> list[dict[str, Any]]:
    """Point events (aborts, faults, recoveries, policy decisions, preemptions) as markers on
    their track's row; at most MAX_MARKERS per name, evenly thinned."""
    row_of = {label: i for i, label in reversed(list(enumerate(rows)))}
    by_name: dict[str, list[tuple[float, int, str]]] = {}
    for inst in run.recorder.instants:
        if inst.name in _NOT_MARKED or inst.track not in row_of:
            continue
        detail = ", ".join(f"{k}={v}" for k, v in inst.attrs.items())[:160]
        by_name.setdefault(inst.name, []).append(
            (inst.t, row_of[inst.track], f"{inst.track} · {inst.name} at {inst.t:.4g} s"
                                         + (f"<br>{detail}" if detail else "")))
    out = []
    for name in sorted(by_name):
        points = by_name[name]
        if len(points) > MAX_MARKERS:
            points = [points[i] for i in np.linspace(0, len(points) - 1, MAX_MARKERS,
                                                     dtype=np.int64)]
        symbol, color = _MARKER_STYLE.get(name, ("circle-open", "#333333"))
        out.append({"type": "scatter", "mode": "markers", "name": name,
                    "x": [p[0] for p in points], "y": [p[1] for p in points],
                    "text": [p[2] for p in points], "hoverinfo": "text",
                    "marker": {"symbol": symbol, "color": color, "size": 9,
                               "line": {"width": 1, "color": "#ffffff"}}})
    return out


def _shade(hex_color: str, alpha: float) -> str:
    """The color drawn at opacity `alpha` over white, as an opaque color."""
    h = hex_color.lstrip("#")
    r, g, b = (round(255 - (255 - int(h[i:i + 2], 16)) * alpha) for i in (0, 2, 4))
    return f"#{r:02x}{g:02x}{b:02x}"


def _heatmaps(names: list[str], pixels: list[_Pixels], row_of: dict[int, int], end: float,
              row_px: int) -> list[dict[str, Any]]:
    """Pixel-resolution rows as heatmaps, one per block of adjacent rows. Cell value =
    palette index of (name, shade), -1 for an empty pixel; a stepwise colorscale maps each
    index to its color and -1 to transparent (-1 is shorter JSON than null)."""
    used = sorted({int(n) for p in pixels for n in np.unique(p.name) if n >= 0})
    if not used:
        return []
    slots = len(used) * LEVELS + 1  # slot 0: empty
    scale: list[list[Any]] = [[0.0, "rgba(0,0,0,0)"], [1 / slots, "rgba(0,0,0,0)"]]
    for i, n in enumerate(used):
        for lv in range(1, LEVELS + 1):
            color = _shade(span_color(names[n]), 0.3 + 0.7 * lv / LEVELS)
            slot = 1 + i * LEVELS + lv - 1
            scale += [[slot / slots, color], [(slot + 1) / slots, color]]
    ordered = sorted(pixels, key=lambda p: row_of[p.track])
    blocks: list[list[_Pixels]] = []
    for p in ordered:
        if blocks and row_of[blocks[-1][-1].track] == row_of[p.track] - 1:
            blocks[-1].append(p)
        else:
            blocks.append([p])
    width = len(ordered[0].name)
    lut = np.zeros(max(used) + 2, dtype=np.int64)  # name code -> palette index
    lut[used] = np.arange(len(used))
    out = []
    for block in blocks:
        z = np.stack([np.where(p.level > 0, lut[p.name] * LEVELS + p.level - 1, -1)
                      for p in block])
        out.append({"type": "heatmap", "z": z.tolist(), "x0": end / width / 2,
                    "dx": end / width, "y0": row_of[block[0].track], "dy": 1,
                    "zmin": -1.5, "zmax": slots - 1.5, "colorscale": scale,
                    "showscale": False, "ygap": max(1, round(row_px * 0.28)),
                    "hovertemplate": "%{x:.4g} s (pixel-resolution row)<extra></extra>"})
    return out


def _segments(name: str, color: str, t0: np.ndarray, t1: np.ndarray, rows: np.ndarray,
              texts: list[str], row_px: int, res: float, legend: bool,
              min_width_s: float) -> dict[str, Any]:
    """One scatter trace drawing bars as thick segments: x = t0, mid, t1, None per bar (the
    middle point gives hover a target inside long bars)."""
    n = len(t0)
    # Spans shorter than MIN_BAR_PX (weight syncs, short switches) would vanish; draw them
    # that wide (hover still gives the real times).
    t1 = np.maximum(t1, t0 + min_width_s)
    x = np.empty(4 * n, dtype=object)
    x[0::4] = round_to(t0, res).tolist()
    x[1::4] = round_to((t0 + t1) / 2, res).tolist()
    x[2::4] = round_to(t1, res).tolist()
    x[3::4] = None
    y = np.empty(4 * n, dtype=object)
    y[0::4] = y[1::4] = y[2::4] = rows.astype(np.int64).tolist()
    y[3::4] = None
    text = np.empty(4 * n, dtype=object)
    text[0::4] = text[1::4] = text[2::4] = texts
    text[3::4] = None
    return {
        "type": "scatter", "mode": "lines", "name": name, "legendgroup": name,
        "showlegend": legend, "x": x.tolist(), "y": y.tolist(), "text": text.tolist(),
        "hoverinfo": "text", "line": {"color": color, "width": max(1.0, row_px * 0.72)},
        "connectgaps": False,
    }
