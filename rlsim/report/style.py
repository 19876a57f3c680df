"""Colors, plot layouts and the page stylesheet shared by every report figure.

Owns the look: one color per span name (a phase keeps its color in the timeline, the
step breakdown and the phase bars), one color per run in comparisons, and the plotly
layout defaults (fonts, grid, margins) so figures need no plotly template.
"""

from __future__ import annotations

import hashlib
from typing import Any

# Phases and the entity work that belongs to them share a hue: engine `busy` is lighter
# `gen`, trainer logprob passes are `ref`'s purple, offload/reload are `switch`'s grey.
SPAN_COLORS: dict[str, str] = {
    "gen": "#4C78A8",
    "busy": "#8FB8DE",
    "env": "#2A9D8F",
    "env_step": "#72C3B8",
    "reward": "#F58518",
    "score": "#FFB26B",
    "controller": "#9D755D",  # brown: veRL's timer colour for `adv`
    "ref": "#8E6BB5",
    "ref_logprob": "#8E6BB5",
    "old_logprob": "#B79AD6",
    "train": "#54A24B",
    "weight_sync": "#E45756",
    "weights": "#F1959A",
    "switch": "#8C8C8C",
    "offload": "#A6A6A6",
    "reload": "#6F6F6F",
    "recovery": "#222222",
}

_FALLBACK = ["#B279A2", "#9D755D", "#EECA3B", "#BAB0AC", "#FF9DA6", "#72B7B2", "#D67195"]

RUN_COLORS = ["#1F5FAD", "#E4572E", "#2E933C", "#8E44AD", "#D4A017", "#17A2B8", "#6C757D",
              "#C2185B"]

STEP_COLORS = ("#D9DEE5", "#B8C2CE")
"""Alternating shades of the timeline's `step` row."""


def span_color(name: str) -> str:
    """A span name's color; unknown names get a stable color from a hash of the name."""
    if name in SPAN_COLORS:
        return SPAN_COLORS[name]
    digest = int(hashlib.sha1(name.encode()).hexdigest()[:8], 16)
    return _FALLBACK[digest % len(_FALLBACK)]


def run_color(i: int) -> str:
    return RUN_COLORS[i % len(RUN_COLORS)]


def rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


FONT = ("-apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, "
        "sans-serif")


def layout(xtitle: str = "", ytitle: str = "", height_px: int = 340,
           **extra: Any) -> dict[str, Any]:
    """A plotly layout with the report's defaults; `extra` keys override them."""
    axis = {"gridcolor": "#ECEFF3", "zerolinecolor": "#D5DAE1", "linecolor": "#C7CDD6",
            "showline": True, "ticks": "outside", "tickcolor": "#C7CDD6", "automargin": True}
    base: dict[str, Any] = {
        "height": height_px,
        "autosize": True,
        "margin": {"l": 60, "r": 20, "t": 10, "b": 48},
        "font": {"family": FONT, "size": 12, "color": "#2B2F36"},
        "paper_bgcolor": "#FFFFFF",
        "plot_bgcolor": "#FFFFFF",
        "xaxis": {**axis, "title": {"text": xtitle}},
        "yaxis": {**axis, "title": {"text": ytitle}},
        # Legends above the plot: below it they collide with the x-axis title.
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0,
                   "font": {"size": 11}, "traceorder": "normal"},
        "hoverlabel": {"font": {"family": FONT, "size": 12}},
        "hovermode": "closest",
    }
    for key, value in extra.items():
        if key in ("xaxis", "yaxis") and isinstance(value, dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return base


CSS = """
:root { --fg:#1f2430; --muted:#5b6472; --line:#e3e7ee; --bg:#f6f7f9; --accent:#1F5FAD; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg);
       font: 14px/1.5 -apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, Arial, sans-serif; }
header.page { background:#1c2433; color:#fff; padding:22px 36px 18px; }
header.page h1 { margin:0 0 4px; font-size:22px; font-weight:600; letter-spacing:.2px; }
header.page .sub { color:#c7cfdc; font-size:13px; max-width:1100px; }
.chips { margin-top:10px; display:flex; flex-wrap:wrap; gap:6px; }
.chip { background:rgba(255,255,255,.12); border-radius:12px; padding:2px 10px; font-size:12px; }
.chip b { font-weight:600; color:#fff; }
nav.toc { position:sticky; top:0; z-index:5; background:#fff; border-bottom:1px solid var(--line);
          padding:8px 36px; font-size:13px; white-space:nowrap; overflow-x:auto; }
nav.toc a { color:var(--muted); text-decoration:none; margin-right:16px; }
nav.toc a:hover { color:var(--accent); }
main { padding:18px 36px 40px; max-width:1800px; }
section { background:#fff; border:1px solid var(--line); border-radius:8px;
          padding:16px 20px 10px; margin:0 0 18px; }
section h2 { font-size:17px; margin:0 0 2px; font-weight:600; }
section h3 { font-size:14px; margin:10px 0 0; font-weight:600; }
p.caption { color:var(--muted); margin:2px 0 8px; max-width:1100px; font-size:13px; }
p.absent { color:var(--muted); font-style:italic; margin:4px 0 10px; }
p.note { background:#fff7e0; border-left:3px solid #e0a800; padding:4px 10px; font-size:12.5px;
         color:#5a4a00; margin:6px 0; }
.kpis { display:grid; grid-template-columns:repeat(auto-fit,minmax(170px,1fr)); gap:10px;
        margin:4px 0 14px; }
.kpi { border:1px solid var(--line); border-radius:8px; padding:8px 12px; background:#fafbfc; }
.kpi .v { font-size:20px; font-weight:600; }
.kpi .l { color:var(--muted); font-size:12px; }
.grid2 { display:grid; grid-template-columns:repeat(2,minmax(0,1fr)); gap:12px; }
.grid3 { display:grid; grid-template-columns:repeat(3,minmax(0,1fr)); gap:12px; }
.grid2 > div, .grid3 > div { min-width:0; }
table.t { border-collapse:collapse; font-size:13px; margin:4px 0 10px; }
table.t th, table.t td { padding:4px 12px; border-bottom:1px solid var(--line); text-align:right;
                         vertical-align:top; }
table.t th:first-child, table.t td:first-child { text-align:left; color:var(--muted); }
table.t thead th { color:var(--fg); font-weight:600; border-bottom:2px solid #cfd5de; }
table.t td .r { color:var(--muted); font-size:11.5px; margin-left:6px; }
table.t td .r.good { color:#2E7D32; } table.t td .r.bad { color:#C62828; }
table.t tr.group td { color:var(--fg); font-weight:600; background:#f8f9fb; text-align:left; }
.tables { display:flex; flex-wrap:wrap; gap:4px 40px; align-items:flex-start; }
.rlsim-plot { width:100%; }
footer { color:var(--muted); font-size:12px; padding:0 36px 30px; }
code { background:#f0f2f5; padding:0 4px; border-radius:3px; font-size:12.5px; }
"""
