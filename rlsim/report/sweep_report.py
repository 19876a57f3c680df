"""report.html of a parameter sweep: each metric against each swept key, and heatmaps.

Owns reading a sweep folder (DIR/sweep.json with the swept `keys` and `reps`, and the
Parquet dataset DIR/results/ with one row per point and replicate) and the sweep page:
a points table, per key one plot per main metric (mean over replicates, error bars from
the replicates' min to max; one line per value of the other key when two keys are swept),
a chooser over every other metric that varies, a heatmap per pair of keys, and the rows
that failed. A key with many distinct numeric values (random search) is drawn as a scatter
of every row instead of lines.

Tokens/s is the default metric (first, and the one the points are sorted by); a fault sweep
(`is_fault_sweep`, or rows that ran a horizon) puts the horizon's ETTR, then goodput,
first. The best setting per ranked metric is named above the table, ties as ties
(`best_of`). Scale-like keys (`LOG_KEYS`, or all values positive and spanning `LOG_SPAN`x)
are drawn on a log axis, a value 0 of such a key (faults.scale=0: no
faults) as a dashed reference line. A heatmap whose cells differ by less than
`FLAT_HEATMAP` says so in its title and does not stretch its colours over the difference.
A sweep with fewer rows than points is marked partial.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from rlsim.config.errors import ScenarioError
from rlsim.config.limits import format_duration
from rlsim.report.page import Page, esc, table, write_atomic
from rlsim.report.style import layout, run_color

MAIN_METRICS = ("throughput.tokens_per_s", "throughput.samples_per_s", "goodput",
                "step_time_s.mean", "cost.usd_per_1k_samples")
"""Plotted first, in this order (prefix match); then gpu_util.*, then the rest. Tokens/s
is the default metric: samples/s ranks settings that train shorter responses higher."""
FAULT_MAIN_METRICS = ("horizon.ettr.mean", "horizon.goodput_samples_per_s.mean",
                      "horizon.lost_gpu_hours.mean", "goodput", "throughput.tokens_per_s",
                      "throughput.samples_per_s", "cost.usd_per_1k_samples",
                      "step_time_s.mean")
"""The order for a fault sweep (`is_fault_sweep`): goodput first, since step time leaves
the time lost to faults and restarts between steps out."""

RANKED = (("throughput.tokens_per_s", "max"), ("throughput.samples_per_s", "max"),
          ("goodput_samples_per_s", "max"), ("step_time_s.mean", "min"),
          ("cost.usd_per_1k_samples", "min"))
"""Metrics for which the best setting is named (sweep summary and report), and which way is
better."""
FAULT_RANKED = (("horizon.ettr.mean", "max"), ("horizon.lost_gpu_hours.mean", "min"),
                ("goodput_samples_per_s", "max"), ("throughput.tokens_per_s", "max"),
                ("cost.usd_per_1k_samples", "min"))
"""A fault sweep's: not step time, which does not count restarts (the fewest steps done
between faults would look best), nor samples/s, which counts samples later lost."""
HORIZON_ETTR = "horizon.ettr.mean"
"""A sweep whose rows ran a horizon (`rlsim.horizon`) is a fault sweep, ranked by ETTR."""
TIE_RTOL = 1e-9
"""Settings whose means are this close (relative) tie for best: they are all named."""
SCALE_KEY = "faults.scale"
LOG_KEYS = (SCALE_KEY,)
"""Keys drawn on a log axis whatever their values (a rate multiplier)."""
LOG_SPAN = 10.0
"""A numeric key whose values are all positive and span this factor or more is drawn on a
log axis too."""
FLAT_HEATMAP = 0.01
"""A heatmap whose cells differ by less than this fraction of their largest magnitude says
so, and its colour range is widened to +-FLAT_COLOUR_RANGE of the mean so that the
difference does not fill the colour scale."""
FLAT_COLOUR_RANGE = 0.05


def is_fault_sweep(keys: Sequence[str], overrides: Sequence[str],
                   injected: Sequence[Any]) -> bool:
    """A sweep of failures: a swept key or a --set override under `faults.`, or a finished
    point that injected a fault (`injected`: the rows' `faults.injected`)."""
    if any(k.startswith("faults.") for k in keys):
        return True
    if any(str(o).split("=", 1)[0].strip().startswith("faults.") for o in overrides):
        return True
    return any(bool(v) for v in injected if v is not None)


def best_of(means: dict[Any, float], better: str) -> list[Any]:
    """Every setting whose mean is the best (within TIE_RTOL), in the order given."""
    finite = {g: m for g, m in means.items() if math.isfinite(m)}
    if not finite:
        return []
    top = max(finite.values()) if better == "max" else min(finite.values())
    tol = TIE_RTOL * max(abs(top), 1e-300)
    return [g for g, m in finite.items() if abs(m - top) <= tol]

_NOT_METRICS = {"point", "replicate", "seed", "error",
                # a horizon's echo of its inputs, not a result
                "horizon.replicates", "horizon.checkpoint_every"}
_LAST = ("wall_s", "events")  # facts about the simulation, not the simulated system
CONTINUOUS_MIN_VALUES = 12
"""A numeric key with more distinct values than this, nearly one per point, is continuous."""
MAX_LINES = 8
MAX_POINTS_ROWS = 30

METRIC_LABELS = {
    "step_time_s.mean": "step time mean (s)",
    "step_time_s.p50": "step time p50 (s)",
    "step_time_s.p99": "step time p99 (s)",
    "throughput.samples_per_s": "samples/s",
    "throughput.tokens_per_s": "tokens/s",
    "cost.usd_per_1k_samples": "$ per 1k samples",
    "cost.usd_per_hour": "$ per hour",
    "goodput_samples_per_s": "goodput (samples/s)",
    "phase_time_s.gen": "gen time per step (s; in full, incl. time overlapping other phases)",
    "gen_critical_path_s": "gen on the step's critical path, per step (s)",
}


def metric_label(name: str) -> str:
    if name in METRIC_LABELS:
        return METRIC_LABELS[name]
    if name.startswith("gpu_util."):
        return f"GPU util {name.removeprefix('gpu_util.')} (fraction)"
    if name.startswith("phase_time_s."):
        return f"{name.removeprefix('phase_time_s.')} time per step (s)"
    return name


def is_sweep_dir(path: Path) -> bool:
    """A sweep folder has sweep.json (its spec); a run folder has summary.json instead."""
    return (Path(path) / "sweep.json").is_file()


@dataclass
class Sweep:
    """A sweep's spec and results as columns (lists, one entry per row)."""

    path: Path
    spec: dict[str, Any]
    keys: list[str]
    columns: dict[str, list[Any]]
    numeric: set[str]
    _rates: list[tuple[str, float]] | None = None

    @property
    def rows(self) -> int:
        return len(self.columns.get("point", []))

    @property
    def fault(self) -> bool:
        """A fault sweep: ranked by the horizon's ETTR or goodput (see `is_fault_sweep`)."""
        ok = self.ok_rows()
        injected = [v for v, good in zip(self.columns.get("faults.injected", []), ok,
                                         strict=False) if good]
        return HORIZON_ETTR in self.columns or is_fault_sweep(
            self.keys, [str(o) for o in self.spec.get("overrides") or []], injected)

    def ranked(self) -> tuple[tuple[str, str], ...]:
        return FAULT_RANKED if self.fault else RANKED

    def label(self, key: str, value: Any) -> str:
        """`key=value` as the points table and the axes show it: a faults.scale value with
        the MTBFs it gives (`scale_mtbf`)."""
        text = f"{key}={_fmt(value)}"
        if key == SCALE_KEY and isinstance(value, int | float):
            mtbf = scale_mtbf(self.base_rates(), float(value))
            if mtbf:
                text += f" ({mtbf})"
        return text

    def base_rates(self) -> list[tuple[str, float]]:
        """(fault spec, MTBF in seconds) of every rate-based fault of the swept scenario at
        scale 1, read from the scenario file and --set overrides sweep.json names; empty
        when the file is gone or no longer loads (the report then shows the scale alone)."""
        if self._rates is None:
            self._rates = _base_rates(self.spec)
        return self._rates

    def ok_rows(self) -> np.ndarray:
        errors = self.columns.get("error") or [None] * self.rows
        return np.asarray([not e for e in errors], dtype=bool)

    def metrics(self) -> list[str]:
        """Numeric metric columns that vary across successful rows, main ones first."""
        ok = self.ok_rows()
        out = []
        for name in self.columns:
            if name in _NOT_METRICS or name in self.keys or name not in self.numeric:
                continue
            v = _floats(self.columns[name])[ok]
            v = v[np.isfinite(v)]
            if len(v) and np.ptp(v) > 1e-12 * max(1.0, float(np.abs(v).max())):
                out.append(name)

        order = FAULT_MAIN_METRICS if self.fault else MAIN_METRICS

        def rank(m: str) -> tuple[int, int, str]:
            for i, prefix in enumerate(order):
                if m.startswith(prefix):
                    return (0, i, m)
            if m.startswith("gpu_util."):
                return (1, 0, m)
            return (3 if m in _LAST else 2, 0, m)

        return sorted(out, key=rank)

    def main_metrics(self) -> list[str]:
        main = FAULT_MAIN_METRICS if self.fault else MAIN_METRICS
        return [m for m in self.metrics()
                if m.startswith(main) or m.startswith("gpu_util.")]

    def values(self, key: str) -> list[Any]:
        """Distinct values of a key in plotting order (numeric ascending, else first seen)."""
        seen = list(dict.fromkeys(v for v in self.columns[key] if v is not None))
        if key in self.numeric:
            return sorted(seen)
        return seen

    def continuous(self, key: str) -> bool:
        """A key drawn at random (`--random N --range key=lo:hi`, listed under the spec's
        `ranges`) is continuous: plotted as a scatter. Without that record, a numeric key
        with many distinct values (more than half the settings) is taken as one."""
        ranges = self.spec.get("ranges")
        if isinstance(ranges, dict):
            return key in ranges and key in self.numeric
        n = len(self.values(key))
        reps = max(1, len(set(self.columns.get("replicate", [0]))))
        settings = self.rows / reps
        return key in self.numeric and n > CONTINUOUS_MIN_VALUES and n > settings / 2


def _base_rates(spec: dict[str, Any]) -> list[tuple[str, float]]:
    from rlsim.config.loading import load_scenario

    path = spec.get("scenario")
    if not path or not Path(str(path)).is_file():
        return []
    sets = [str(o) for o in spec.get("overrides") or [] if not str(o).startswith(SCALE_KEY)]
    try:
        scenario, _ = load_scenario(str(path), sets)
    except ScenarioError:
        return []
    f = scenario.faults
    return [(f"{kind}" + (f".{i}" if len(specs) > 1 else ""), float(x.mtbf))
            for kind in ("node", "gpu", "engine", "trainer", "link")
            for specs in [getattr(f, kind, [])]
            for i, x in enumerate(specs) if x.mtbf is not None]


def scale_mtbf(rates: Sequence[tuple[str, float]], scale: float) -> str:
    """The MTBFs `faults.scale` = `scale` gives (each spec's divided by it): 'gpu MTBF
    5 h', 'no rate-based faults' at 0, '' without rate-based faults."""
    if not rates:
        return ""
    if scale == 0:
        return "no rate-based faults"
    return ", ".join(f"{name} MTBF {format_duration(mtbf / scale)}" for name, mtbf in rates)


def _floats(values: list[Any]) -> np.ndarray:
    return np.asarray([np.nan if v is None else float(v) for v in values], dtype=float)


def load_sweep(sweep_dir: Path) -> Sweep:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sweep_dir = Path(sweep_dir)
    if not is_sweep_dir(sweep_dir):
        raise ScenarioError("SWEEP_DIR", f"{sweep_dir} has no sweep.json: not an rlsim sweep "
                            "folder; run `rlsim sweep ... --out DIR` first")
    try:
        spec = json.loads((sweep_dir / "sweep.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ScenarioError("SWEEP_DIR", f"{sweep_dir}/sweep.json is unreadable ({err})") from None
    keys = [str(k) for k in spec.get("keys") or []]
    results = sweep_dir / "results"
    columns: dict[str, list[Any]] = {}
    numeric: set[str] = set()
    has_files = results.is_dir() and any(results.glob("*.parquet"))
    if has_files:
        try:
            tbl = pq.read_table(results)
        except (OSError, ValueError) as err:
            raise ScenarioError("SWEEP_DIR", f"{results} is unreadable ({err})") from None
        for name in tbl.column_names:
            columns[name] = tbl.column(name).to_pylist()
            typ = tbl.schema.field(name).type
            if pa.types.is_integer(typ) or pa.types.is_floating(typ):
                numeric.add(name)
    return Sweep(sweep_dir, spec, keys, columns, numeric)


# ---------------------------------------------------------------- aggregation
def _stats(sw: Sweep, metric: str, by: list[str], ok: np.ndarray
           ) -> dict[tuple[Any, ...], tuple[float, float, float, int]]:
    """Group successful rows by the values of `by`: (mean, min, max, rows) of the metric."""
    vals = _floats(sw.columns[metric])
    groups: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    cols = [sw.columns[k] for k in by]
    for i in np.flatnonzero(ok & np.isfinite(vals)):
        groups[tuple(c[i] for c in cols)].append(float(vals[i]))
    return {k: (float(np.mean(v)), float(np.min(v)), float(np.max(v)), len(v))
            for k, v in groups.items()}


def _order(values: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    """Numbers ascending, then anything else by its text (keys may mix types)."""
    return tuple((0, v) if isinstance(v, int | float) and not isinstance(v, bool)
                 else (1, str(v)) for v in values)


def _anchor(key: str) -> str:
    """An id usable in CSS selectors and URLs (swept keys contain dots)."""
    return "key-" + re.sub(r"[^A-Za-z0-9_-]", "-", key)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _series_figure(sw: Sweep, metric: str, key: str) -> dict[str, Any]:
    """The metric against one key (lines or scatter); see the module docstring."""
    ok = sw.ok_rows()
    others = [k for k in sw.keys if k != key]
    traces: list[dict[str, Any]] = []
    xs = sw.values(key)
    if sw.continuous(key):
        color_key = others[0] if len(others) == 1 and len(sw.values(others[0])) <= MAX_LINES \
            else None
        col = sw.columns[key]
        y = _floats(sw.columns[metric])
        levels = sw.values(color_key) if color_key else [None]
        for i, level in enumerate(levels):
            pick = [j for j in np.flatnonzero(ok & np.isfinite(y))
                    if color_key is None or sw.columns[color_key][j] == level]
            traces.append({"type": "scatter", "mode": "markers",
                           "name": f"{color_key}={_fmt(level)}" if color_key else metric,
                           "x": [col[j] for j in pick], "y": [float(y[j]) for j in pick],
                           "marker": {"color": run_color(i), "size": 7, "opacity": 0.75}})
    else:
        if others and len(others) <= 2:
            combos = sorted({tuple(sw.columns[o][j] for o in others)
                             for j in np.flatnonzero(ok)}, key=_order)
        else:
            combos = []
        by_line = len(combos) <= MAX_LINES and combos
        stats = _stats(sw, metric, [key, *others] if by_line else [key], ok)
        lines = combos if by_line else [()]
        for i, combo in enumerate(lines):
            pts = [(x, stats[(x, *combo)]) for x in xs if (x, *combo) in stats]
            if not pts:
                continue
            name = (", ".join(sw.label(o, v) for o, v in zip(others, combo, strict=True))
                    if combo else ("mean over the other keys" if others else metric))
            means = [p[1][0] for p in pts]
            traces.append({
                "type": "scatter", "mode": "lines+markers", "name": name,
                "x": [p[0] if key in sw.numeric else str(p[0]) for p in pts], "y": means,
                "error_y": {"type": "data", "symmetric": False,
                            "array": [p[1][2] - p[1][0] for p in pts],
                            "arrayminus": [p[1][0] - p[1][1] for p in pts],
                            "thickness": 1.2, "width": 4},
                "customdata": [[p[1][1], p[1][2], p[1][3]] for p in pts],
                "hovertemplate": f"{esc(key)}=%{{x}}<br>mean %{{y:.4g}}<br>"
                                 "min %{customdata[0]:.4g} · max %{customdata[1]:.4g} "
                                 "(%{customdata[2]} rows)<extra>%{fullData.name}</extra>",
                "line": {"color": run_color(i), "width": 2},
                "marker": {"color": run_color(i), "size": 7}})
    xaxis: dict[str, Any] = {}
    if key not in sw.numeric:
        xaxis = {"type": "category"}
    elif log_axis(key, xs):
        positive = [x for x in xs if x > 0]
        traces = _log_traces(traces, key, positive)
        xaxis = {"type": "log"}
        if not sw.continuous(key):  # ticked at the grid
            xaxis.update(tickvals=positive, ticktext=[_tick(sw, key, x) for x in positive])
    return {"data": traces, "layout": layout(_axis_title(sw, key), metric_label(metric),
                                             height_px=300,
                                             xaxis=xaxis, showlegend=len(traces) > 1)}


def _tick(sw: Sweep, key: str, x: Any) -> str:
    """A grid value's tick: a faults.scale value as the MTBF it gives (one rate-based
    spec), else the value."""
    rates = sw.base_rates() if key == SCALE_KEY else []
    if len(rates) == 1:
        return format_duration(rates[0][1] / float(x))
    return _fmt(x)


def _axis_title(sw: Sweep, key: str) -> str:
    rates = sw.base_rates() if key == SCALE_KEY else []
    if len(rates) == 1:
        name, mtbf = rates[0]
        return f"{name} MTBF ({key}: {format_duration(mtbf)} / scale)"
    return key


def log_axis(key: str, values: list[Any]) -> bool:
    """Scale-like: a LOG_KEYS key with two positive values or more, or numeric values all
    positive spanning LOG_SPAN times or more."""
    nums = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    positive = [v for v in nums if v > 0]
    if key in LOG_KEYS:
        return len(positive) >= 2
    return len(positive) == len(nums) >= 2 and max(positive) / min(positive) >= LOG_SPAN


def _log_traces(traces: list[dict[str, Any]], key: str,
                positive: list[Any]) -> list[dict[str, Any]]:
    """A log axis cannot place x <= 0 (faults.scale=0, no faults): such points become a
    dashed horizontal line at their value, across the positive values, named for them."""
    out = []
    for tr in traces:
        xs, ys = tr.get("x", []), tr.get("y", [])
        keep = [i for i, x in enumerate(xs) if x > 0]
        out.append({**tr, "x": [xs[i] for i in keep], "y": [ys[i] for i in keep],
                    **({"customdata": [tr["customdata"][i] for i in keep]}
                       if "customdata" in tr else {}),
                    **({"error_y": {**tr["error_y"],
                                    "array": [tr["error_y"]["array"][i] for i in keep],
                                    "arrayminus": [tr["error_y"]["arrayminus"][i]
                                                   for i in keep]}}
                       if "error_y" in tr else {})})
        color = (tr.get("line") or tr.get("marker") or {}).get("color")
        for i, x in enumerate(xs):
            if x <= 0:
                out.append({"type": "scatter", "mode": "lines",
                            "name": f"{tr.get('name', '')} at {key}={_fmt(x)}".strip(),
                            "x": [min(positive), max(positive)], "y": [ys[i], ys[i]],
                            "line": {"color": color, "width": 1.5, "dash": "dash"},
                            "hovertemplate": f"{esc(key)}={_fmt(x)}: %{{y:.4g}}"
                                             "<extra></extra>"})
    return out


def _chooser_figure(sw: Sweep, metrics: list[str], key: str) -> dict[str, Any]:
    """Every listed metric against one key in one figure, with a menu choosing the metric."""
    data: list[dict[str, Any]] = []
    spans = []
    for m in metrics:
        fig = _series_figure(sw, m, key)
        spans.append((len(data), len(fig["data"])))
        data.extend(fig["data"])
    buttons = []
    for m, (start, n) in zip(metrics, spans, strict=True):
        visible = [start <= i < start + n for i in range(len(data))]
        buttons.append({"label": metric_label(m), "method": "update",
                        "args": [{"visible": visible},
                                 {"yaxis.title.text": metric_label(m)}]})
    for i, tr in enumerate(data):
        tr["visible"] = i < spans[0][1]
    base = _series_figure(sw, metrics[0], key)["layout"]
    base["height"] = 360
    # The menu sits above the plot on the left; the legend moves to the right of it.
    base["margin"] = {**base["margin"], "t": 50}
    base["legend"] = {"orientation": "v", "x": 1.02, "y": 1, "xanchor": "left",
                      "yanchor": "top", "font": {"size": 11}}
    base["updatemenus"] = [{"buttons": buttons, "direction": "down", "x": 0, "y": 1.04,
                            "xanchor": "left", "yanchor": "bottom", "showactive": True}]
    return {"data": data, "layout": base}


def heatmap_spread(z: list[list[float | None]]) -> float | None:
    """(max - min) / largest magnitude of the cells; None when fewer than two cells."""
    cells = [v for row in z for v in row if v is not None and math.isfinite(v)]
    if len(cells) < 2:
        return None
    top = max(abs(v) for v in cells)
    return (max(cells) - min(cells)) / top if top > 0 else 0.0


def _heatmap(sw: Sweep, metric: str, kx: str, ky: str) -> dict[str, Any]:
    ok = sw.ok_rows()
    stats = _stats(sw, metric, [kx, ky], ok)
    xs, ys = sw.values(kx), sw.values(ky)
    z = [[stats[(x, y)][0] if (x, y) in stats else None for x in xs] for y in ys]
    trace: dict[str, Any] = {
        "type": "heatmap", "x": [_fmt(x) for x in xs], "y": [_fmt(y) for y in ys],
        "z": z, "colorscale": "Viridis", "texttemplate": "%{z:.4g}",
        "hovertemplate": f"{esc(kx)}=%{{x}}<br>{esc(ky)}=%{{y}}<br>mean %{{z:.4g}}"
                         "<extra></extra>",
        "colorbar": {"thickness": 12}}
    fig_layout = layout(kx, ky, height_px=320, xaxis={"type": "category"},
                        yaxis={"type": "category"})
    spread = heatmap_spread(z)
    if spread is not None and spread < FLAT_HEATMAP:
        # Plotly stretches any range over the whole scale: a 0.1% difference would span
        # yellow to purple. Pin the range around the mean so it takes a sliver of it.
        cells = [v for row in z for v in row if v is not None and math.isfinite(v)]
        mid = sum(cells) / len(cells)
        half = FLAT_COLOUR_RANGE * max(abs(mid), max(abs(v) for v in cells), 1e-300)
        trace.update(zmin=mid - half, zmax=mid + half, zauto=False)
        fig_layout["title"] = {"text": f"flat: all cells within {100 * spread:.2g}% of each "
                                       f"other (colours span ±{100 * FLAT_COLOUR_RANGE:.0f}%)",
                               "font": {"size": 12}}
        fig_layout["margin"] = {**fig_layout.get("margin", {}), "t": 36}
    return {"data": [trace], "layout": fig_layout}


def flat_note(spread: float | None) -> str:
    return (f" (flat: within {100 * spread:.2g}%)" if spread is not None
            and spread < FLAT_HEATMAP else "")


# ---------------------------------------------------------------- page
def _points_table(sw: Sweep, metrics: list[str]) -> str:
    ok = sw.ok_rows()
    if not metrics or not ok.any():
        return ""
    stats = {m: _stats(sw, m, sw.keys, ok) for m in metrics}
    combos = sorted(stats[metrics[0]], key=_order)  # ties keep the grid order
    sign = 1.0 if _better(metrics[0]) == "min" else -1.0
    combos.sort(key=lambda c: sign * stats[metrics[0]][c][0])
    shown = combos[:MAX_POINTS_ROWS]
    rows = [[esc(", ".join(sw.label(k, v) for k, v in zip(sw.keys, c, strict=True)))]
            + [esc(f"{stats[m][c][0]:.4g}") if c in stats[m] else "–" for m in metrics]
            + [str(stats[metrics[0]][c][3])] for c in shown]
    head = ["point (sorted by " + esc(metric_label(metrics[0])) + ")",
            *(esc(metric_label(m)) for m in metrics), "rows"]
    more = (f'<p class="caption">Best {len(shown)} of {len(combos)} points shown.</p>'
            if len(combos) > len(shown) else "")
    return table(head, rows) + more


def _better(metric: str) -> str:
    ranked = dict(RANKED + FAULT_RANKED)
    if metric in ranked:
        return ranked[metric]
    # the same figure over the whole run ranks the same way; staleness: fresher is better
    return "min" if metric.removeprefix("whole_run.").startswith((
        "step_time", "cost", "phase_time", "gen_critical_path", "staleness")) else "max"


def _best_lines(sw: Sweep) -> str:
    """The best setting per ranked metric (mean over replicates), ties named as ties."""
    ok = sw.ok_rows()
    items = []
    for metric, better in sw.ranked():
        if metric not in sw.columns or metric not in sw.numeric:
            continue
        means = {c: v[0] for c, v in sorted(_stats(sw, metric, sw.keys, ok).items(),
                                             key=lambda kv: _order(kv[0]))}
        best = best_of(means, better)
        if not best:
            continue
        settings = "; ".join(", ".join(sw.label(k, v) for k, v in zip(sw.keys, c,
                                                                         strict=True))
                             for c in best[:4]) + (" …" if len(best) > 4 else "")
        tie = (f" — all {len(best)} settings tie" if len(best) == len(means) > 1 else
               f" — tie of {len(best)} settings" if len(best) > 1 else "")
        items.append(f"<li>{esc(metric_label(metric))} ({'higher' if better == 'max' else 'lower'}"
                     f" is better): {esc(settings)} at {esc(_fmt(means[best[0]]))}{esc(tie)}</li>")
    if not items:
        return ""
    first = "the horizon's ETTR" if HORIZON_ETTR in sw.columns else "goodput"
    note = (f" Fault sweep: ranked by {first}; step time leaves the time lost to faults out, "
            "so it is not ranked." if sw.fault else "")
    return f'<p class="caption">Best per metric.{esc(note)}</p><ul>{"".join(items)}</ul>'


def _errors_table(sw: Sweep) -> str:
    errors = sw.columns.get("error") or []
    bad = [i for i, e in enumerate(errors) if e]
    if not bad:
        return ""
    rows = [[esc(sw.columns["point"][i]), esc(sw.columns.get("replicate", [""] * sw.rows)[i]),
             esc(", ".join(f"{k}={_fmt(sw.columns[k][i])}" for k in sw.keys)),
             f'<span style="text-align:left">{esc(errors[i])}</span>'] for i in bad[:200]]
    return table(["point", "replicate", "values", "error"], rows)


def render_sweep(sweep_dir: Path) -> str:
    """The sweep page (raises ScenarioError for a folder that is not a sweep)."""
    sw = load_sweep(sweep_dir)
    spec = sw.spec
    scenario = spec.get("scenario") or spec.get("name") or sw.path.name
    if isinstance(scenario, dict):
        scenario = scenario.get("name", sw.path.name)
    scenario = Path(str(scenario)).name  # the file, not where this machine keeps it
    overrides = spec.get("overrides") or []
    chips = [("keys", ", ".join(sw.keys) or "none")]
    for k in sw.keys:
        if k in sw.columns:
            chips.append((k, ", ".join(_fmt(v) for v in sw.values(k)[:12])
                          + (" …" if len(sw.values(k)) > 12 else "")))
    if "reps" in spec:
        chips.append(("replicates", str(spec["reps"])))
    errors = int((~sw.ok_rows()).sum()) if sw.rows else 0
    chips.append(("rows", f"{sw.rows} ({errors} failed)"))
    planned = spec.get("points")
    if isinstance(planned, int) and sw.rows < planned:
        chips.append(("partial", f"{sw.rows} of {planned} points done; rlsim sweep ... "
                      "--resume continues it"))
    fixed = f" with --set {' '.join(map(str, overrides))}" if overrides else ""
    page = Page(f"rlsim sweep · {scenario}", f"Sweep folder {sw.path}{fixed}", chips)
    metrics = sw.metrics()
    main = sw.main_metrics() or metrics[:4]
    page.section("points", "Points",
                 "Mean over replicates of the main metrics at each point of the grid.")
    if sw.rows == 0:
        page.absent("No results yet: results/ holds no Parquet files.")
        return page.html()
    if not metrics:
        # Nothing varies: say so, and still show the values (that the swept keys made no
        # difference is itself the finding).
        page.absent("No metric varies across the successful rows: the swept keys made no "
                    "difference to any of them.")
        main = [c for c in sw.columns if c in sw.numeric and c.startswith(MAIN_METRICS)]
    page.raw(_best_lines(sw) + _points_table(sw, main))
    for key in sw.keys if metrics else []:
        if key not in sw.columns:
            page.section(_anchor(key), f"Metrics vs {key}")
            page.absent(f"The results have no column {key!r}.")
            continue
        cont = sw.continuous(key)
        caption = ("Every successful row as a point (the key takes many distinct values)."
                   if cont else
                   "Mean over replicates; error bars span the replicates' min to max. "
                   + ("One line per value of the other key." if len(sw.keys) == 2 else
                      "One line per combination of the other keys (or their mean when there "
                      "are too many: the error bars then also span the other keys)."
                      if len(sw.keys) > 2 else ""))
        page.section(_anchor(key), f"Metrics vs {key}", esc(caption))
        page.grid([page.plot_html(_series_figure(sw, m, key), metric_label(m))
                   for m in main])
        rest = [m for m in metrics if m not in main]
        if rest:
            page.sub("Other metrics", "Choose the metric in the menu at the top left.")
            page.plot(_chooser_figure(sw, rest, key))
    # Random (continuous) keys have no grid to lay cells on: they are scatters above.
    pairs = [(a, b) for a, b in combinations(sw.keys, 2)
             if a in sw.columns and b in sw.columns
             and not sw.continuous(a) and not sw.continuous(b)]
    if pairs and metrics:
        page.section("heatmaps", "Heatmaps",
                     "Mean over replicates (and over any other keys) for each pair of keys; "
                     "blank cells were not run or failed.")
        for a, b in pairs:
            page.sub(f"{a} × {b}")
            figs = [(m, _heatmap(sw, m, a, b)) for m in main[:6]]
            page.grid([page.plot_html(fig, metric_label(m) + flat_note(
                heatmap_spread(fig["data"][0]["z"]))) for m, fig in figs])
    page.section("errors", "Failed rows",
                 "Points whose simulation raised an error (they are left out of the plots).")
    errs = _errors_table(sw)
    if errs:
        page.raw(errs)
    else:
        page.absent("No failed rows.")
    return page.html()


def write_sweep_report(sweep_dir: Path, path: Path) -> None:
    write_atomic(render_sweep(sweep_dir), Path(path))

