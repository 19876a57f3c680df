"""Reports of fleet (multi-job) runs, from their records and summaries only.

Owns the fleet page (`render_fleet`): headline figures, cost over time, the phase timeline
of one co-execution group (which job's phase runs on which node), and the per-job table with
slowdown and SLO; the comparison page of several fleet runs (`render_fleet_comparison`: a
side-by-side table with ratios to the first, their cost over time); and a dependency-free
SVG of a group's timeline for markdown reports (`group_timeline_svg`).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from rlsim.report.page import Page, esc, table, write_atomic
from rlsim.report.style import layout, run_color
from rlsim.trace import Recorder

FLEET = "fleet"
MAX_BARS = 4000


def busiest_group(rec: Recorder) -> int | None:
    """The group with the most jobs (lowest id on ties), or None without placements."""
    count: dict[int, int] = defaultdict(int)
    for i in rec.instants:
        if i.track == FLEET and i.name == "placement":
            count[int(i.attrs["group"])] += 1
    return min(count, key=lambda g: (-count[g], g)) if count else None


def group_spans(rec: Recorder, gid: int, until_s: float | None = None
                ) -> tuple[list[str], list[str], list[tuple[str, str, str, float, float]]]:
    """(node tracks, jobs, spans as (track, job, name, t0, t1)) of group `gid`'s nodes,
    optionally only up to `until_s`."""
    jobs = sorted({str(i.attrs["job"]) for i in rec.instants
                   if i.track == FLEET and i.name == "placement"
                   and int(i.attrs["group"]) == gid})
    wanted = set(jobs)
    spans = [(s.track, str(s.attrs["job"]), s.name, s.t0, s.t1) for s in rec.spans
             if s.track.startswith("node.") and s.attrs.get("job") in wanted
             and (until_s is None or s.t0 < until_s)]
    tracks = sorted({s[0] for s in spans}, key=_track_key)
    return tracks, jobs, spans


def _track_key(track: str) -> tuple[str, int]:
    _, pool, idx = track.split(".")
    return pool, int(idx)


def _cost_figure(rec: Recorder) -> dict[str, Any] | None:
    pts = cost_series(rec)
    if not pts:
        return None
    x = [t / 3600.0 for t, _ in pts]
    y = [v for _, v in pts]
    return {"data": [{"type": "scatter", "mode": "lines", "line": {"shape": "hv",
                                                                   "color": run_color(0)},
                      "x": x, "y": y, "name": "$/h"}],
            "layout": layout("time (h)", "allocated GPUs ($/h)", 300)}


def _timeline_figure(rec: Recorder, gid: int) -> dict[str, Any] | None:
    tracks, jobs, spans = group_spans(rec, gid)
    if not spans:
        return None
    spans = sorted(spans, key=lambda s: s[3])[:MAX_BARS]
    color = {j: run_color(i) for i, j in enumerate(jobs)}
    data = []
    for job in jobs:
        mine = [s for s in spans if s[1] == job]
        for kind, opacity in (("rollout", 1.0), ("train", 1.0), ("switch", 0.35),
                              ("tail", 0.45)):
            sel = [s for s in mine if s[2] == kind]
            if not sel:
                continue
            data.append({"type": "bar", "orientation": "h", "name": f"{job} {kind}",
                         "legendgroup": job, "y": [s[0] for s in sel],
                         "base": [s[3] / 60.0 for s in sel],
                         "x": [(s[4] - s[3]) / 60.0 for s in sel],
                         "marker": {"color": color[job], "opacity": opacity},
                         "hovertemplate": f"{esc(job)} {kind}<br>%{{base:.1f}} min + "
                                          "%{x:.2f} min<extra></extra>"})
    height = 120 + 34 * len(tracks)
    return {"data": data, "layout": layout(
        "time (min)", "", height, barmode="overlay",
        yaxis={"categoryorder": "array", "categoryarray": tracks[::-1]})}


def _kpis(s: dict[str, Any]) -> list[tuple[str, str]]:
    return [("policy", str(s["policy"])), ("jobs", str(s["jobs"])),
            ("$/h", f"{s['cost']['usd_per_hour']:.1f}"),
            ("samples per $", f"{s['cost']['samples_per_usd']:.1f}"),
            ("SLO attainment", f"{s['slo_attainment']:.0%}"),
            ("mean slowdown", f"{s['slowdown']['mean']:.3f}")]


def _job_rows(s: dict[str, Any]) -> list[list[str]]:
    rows = []
    for j in s["per_job"]:
        met = float(j["slowdown"]) <= float(j["slo"]) * (1 + 1e-9)
        rows.append([esc(j["job"]), str(j["group"]), esc(j["kind"]),
                     f"{float(j['arrival']) / 3600:.2f}", f"{float(j['finish']) / 3600:.2f}",
                     str(j["steps"]), f"{float(j['solo_jct_s']) / 3600:.2f}",
                     f"{float(j['slowdown']):.3f}", f"{float(j['slo']):.2f}",
                     "yes" if met else "<b>no</b>"])
    return rows


def render_fleet(name: str, summary: dict[str, Any], rec: Recorder,
                 plotly_src: str | None = None) -> str:
    s = summary
    page = Page(f"rlsim fleet report: {name}",
                f"{s['jobs']} jobs under policy {s['policy']}; cost is the allocated nodes' "
                "price integrated over the run; slowdown is a job's completion time against "
                "running alone on dedicated pools (Solo-D).", _kpis(s))
    page.section("summary", "Summary")
    page.raw(table(["metric", "value"], [
        ["cost ($ total)", f"{s['cost']['usd_total']:.1f}"],
        ["cost ($/h over the run)", f"{s['cost']['usd_per_hour']:.1f}"],
        ["samples per $", f"{s['cost']['samples_per_usd']:.2f}"],
        ["run length (h)", f"{s['sim_time_s'] / 3600:.2f}"],
        ["SLO attainment", f"{s['slo_attainment']:.1%}"],
        ["slowdown mean / max", f"{s['slowdown']['mean']:.3f} / {s['slowdown']['max']:.3f}"],
        ["overhead vs solo, mean", f"{s['overhead_vs_solo']['mean']:.1%}"],
        ["placements", esc(", ".join(f"{k} {v}" for k, v in s["placements"].items()))],
        ["groups", str(s["groups"])],
        ["peak GPUs", esc(", ".join(f"{k} {v}" for k, v in s["gpus_peak"].items()))],
        ["busy share of allocated nodes",
         esc(", ".join(f"{k} {v:.0%}" for k, v in s["busy_fraction"].items()))],
        ["placement decisions (wall s)", f"{s['decision_s']:.3f}"],
    ]))
    page.section("cost", "Cost over time",
                 "Price per hour of the nodes allocated at each moment.")
    page.plot_or_absent(_cost_figure(rec), "No cost records.")
    gid = busiest_group(rec)
    page.section("timeline", "Timeline of one group",
                 f"Group {gid}, the one with the most jobs: which job's phase holds each "
                 "node. Faint bars are switches (warm or cold starts) and migrated tails.")
    page.plot_or_absent(_timeline_figure(rec, gid) if gid is not None else None,
                        "No phases recorded.")
    page.section("jobs", "Jobs", "Times in hours.")
    page.raw(table(["job", "group", "placed", "arrival", "finish", "steps", "solo (h)",
                    "slowdown", "SLO", "met"], _job_rows(s)))
    return page.html(plotly_src)


def write_fleet_report(name: str, summary: dict[str, Any], rec: Recorder, path: Path,
                       plotly_src: str | None = None) -> None:
    write_atomic(render_fleet(name, summary, rec, plotly_src), path)


# (label, value from a fleet summary, format, which direction is better)
_COMPARED: list[tuple[str, Any, str, str | None]] = [
    ("jobs", lambda s: s["jobs"], "{:.0f}", None),
    ("run length (h)", lambda s: s["sim_time_s"] / 3600, "{:.2f}", None),
    ("cost ($ total)", lambda s: s["cost"]["usd_total"], "{:,.1f}", "lower"),
    ("cost ($/h)", lambda s: s["cost"]["usd_per_hour"], "{:,.1f}", "lower"),
    ("samples per $", lambda s: s["cost"]["samples_per_usd"], "{:,.2f}", "higher"),
    ("samples/s", lambda s: s["throughput"]["samples_per_s"], "{:,.2f}", "higher"),
    ("SLO attainment", lambda s: s["slo_attainment"], "{:.1%}", "higher"),
    ("slowdown mean", lambda s: s["slowdown"]["mean"], "{:.3f}", "lower"),
    ("slowdown max", lambda s: s["slowdown"]["max"], "{:.3f}", "lower"),
]


def _compared_cell(value: float, base: float, fmt: str, better: str | None,
                   first: bool) -> str:
    cell = esc(fmt.format(value))
    if first or not base:
        return cell
    ratio = value / base
    cls = ""
    if better and abs(ratio - 1) > 0.005:
        cls = " good" if (ratio < 1) == (better == "lower") else " bad"
    return cell + f'<span class="r{cls}">{ratio:.2f}×</span>'


def render_fleet_comparison(names: list[str], summaries: list[dict[str, Any]],
                            recs: list[Recorder], plotly_src: str | None = None) -> str:
    """Several fleet runs side by side (ratios to the first) and their cost over time."""
    page = Page(f"rlsim fleet comparison · {len(names)} runs",
                f"Ratios are relative to the first run ({names[0]}).",
                [(n, str(s["policy"])) for n, s in zip(names, summaries, strict=True)])
    page.section("comparison", "Side by side",
                 "Each run's fleet summary; the small number after a value is its ratio to "
                 "the first run (green: better, red: worse).")
    rows = [[esc("policy"), *(esc(s["policy"]) for s in summaries)]]
    for label, get, fmt, better in _COMPARED:
        base = float(get(summaries[0]))
        rows.append([esc(label), *(_compared_cell(float(get(s)), base, fmt, better, i == 0)
                                   for i, s in enumerate(summaries))])
    page.raw(table(["metric", *(esc(n) for n in names)], rows))
    page.section("cost", "Cost over time",
                 "Price per hour of the nodes each run had allocated at each moment.")
    data = []
    for i, (name, rec) in enumerate(zip(names, recs, strict=True)):
        pts = cost_series(rec)
        if pts:
            data.append({"type": "scatter", "mode": "lines", "name": name,
                         "line": {"shape": "hv", "color": run_color(i)},
                         "x": [t / 3600.0 for t, _ in pts], "y": [v for _, v in pts]})
    page.plot_or_absent({"data": data, "layout": layout("time (h)", "allocated GPUs ($/h)",
                                                        340)} if data else None,
                        "No cost records.")
    return page.html(plotly_src)


def write_fleet_comparison(names: list[str], summaries: list[dict[str, Any]],
                           recs: list[Recorder], path: Path,
                           plotly_src: str | None = None) -> None:
    write_atomic(render_fleet_comparison(names, summaries, recs, plotly_src), path)


def group_timeline_svg(rec: Recorder, gid: int, until_s: float, since_s: float = 0.0,
                       width_px: int = 900) -> str:
    """A static SVG of group `gid`'s node timeline from `since_s` to `until_s` (for markdown
    reports); the legend wraps after eight jobs."""
    tracks, _, spans = group_spans(rec, gid, until_s)
    spans = [s for s in spans if s[4] > since_s]
    jobs = sorted({s[1] for s in spans})  # the legend names only the jobs in the window
    per_row = 8
    legend_rows = max(1, -(-len(jobs) // per_row))
    row_h, left = 26, 130
    top = 12 + 18 * legend_rows
    height = top + row_h * len(tracks) + 40
    scale = (width_px - left - 20) / max(until_s - since_s, 1e-9)
    color = {j: run_color(i) for i, j in enumerate(jobs)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width_px}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{width_px}" height="{height}" fill="white"/>']
    for i, j in enumerate(jobs):
        x, y = left + 90 * (i % per_row), 8 + 18 * (i // per_row)
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{color[j]}"/>'
                   f'<text x="{x + 16}" y="{y + 10}">{esc(j)}</text>')
    for r, track in enumerate(tracks):
        y = top + r * row_h
        out.append(f'<text x="4" y="{y + 17}">{esc(track.removeprefix("node."))}</text>')
        for t, job, kind, t0, t1 in spans:
            if t != track:
                continue
            a, b = max(t0, since_s), min(t1, until_s)
            op = {"switch": 0.3, "tail": 0.45}.get(kind, 1.0)
            h = row_h - 6 if kind != "tail" else (row_h - 6) / 2
            out.append(f'<rect x="{left + (a - since_s) * scale:.1f}" y="{y + 3}" '
                       f'width="{max(0.5, (b - a) * scale):.1f}" height="{h:.1f}" '
                       f'fill="{color[job]}" fill-opacity="{op}"><title>{esc(job)} {kind} '
                       f'{t0:.0f}-{t1:.0f} s</title></rect>')
    axis_y = top + row_h * len(tracks) + 14
    for k in range(6):
        at = (until_s - since_s) * k / 5
        out.append(f'<text x="{left + at * scale:.0f}" y="{axis_y}" text-anchor="middle">'
                   f'+{at / 60:.0f} min</text>')
    out.append("</svg>")
    return "\n".join(out)


def cost_series(rec: Recorder) -> list[tuple[float, float]]:
    """(t, $/h) of the allocated nodes, a step function."""
    return [(c.t, c.value) for c in rec.counters
            if c.track == FLEET and c.name == "usd_per_hour"]


def cost_svg(series: list[tuple[str, list[tuple[float, float]]]], width_px: int = 900,
             height_px: int = 300) -> str:
    """A static SVG of several runs' $/h over time (step lines, hours on the x axis)."""
    left, right, top, bottom = 60, 20, 30, 40
    end = max((t for _, pts in series for t, _ in pts), default=1.0) or 1.0
    peak = max((v for _, pts in series for _, v in pts), default=1.0) or 1.0
    sx = (width_px - left - right) / end
    sy = (height_px - top - bottom) / peak
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width_px}" height="{height_px}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{width_px}" height="{height_px}" fill="white"/>']
    base_y = height_px - bottom
    for k in range(5):
        v = peak * k / 4
        y = base_y - v * sy
        out.append(f'<line x1="{left}" x2="{width_px - right}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="#e3e7ee"/><text x="4" y="{y + 4:.1f}">${v:.0f}/h</text>')
    for k in range(6):
        t = end * k / 5
        out.append(f'<text x="{left + t * sx:.0f}" y="{base_y + 16}" text-anchor="middle">'
                   f'{t / 3600:.0f} h</text>')
    for i, (label, pts) in enumerate(series):
        color = run_color(i)
        path = []
        prev = 0.0
        for t, v in pts:
            path.append(f"{left + t * sx:.1f},{base_y - prev * sy:.1f}")
            path.append(f"{left + t * sx:.1f},{base_y - v * sy:.1f}")
            prev = v
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
                   f'points="{" ".join(path)}"/>')
        out.append(f'<rect x="{left + 150 * i}" y="8" width="12" height="12" fill="{color}"/>'
                   f'<text x="{left + 150 * i + 16}" y="18">{esc(label)}</text>')
    out.append("</svg>")
    return "\n".join(out)
