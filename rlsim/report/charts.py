"""Dependency-free static SVG charts for markdown reports (reports/*.md).

Owns `line_chart_svg`: several series of (x, y) points on shared linear axes that start at
zero, with markers, axis labels and a legend. Reports read summaries and draw with this;
interactive figures live in `figures` (plotly, HTML reports).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rlsim.report.page import esc
from rlsim.report.style import run_color


def _ticks(top: float, n: int = 5) -> list[float]:
    return [top * k / (n - 1) for k in range(n)]


def nice_top(value: float) -> float:
    """The smallest of 1, 1.2, 1.6, 2, 2.5, 3, 4, 5, 6, 8 x 10^k at or above `value` (> 0):
    a round axis top whose quarters are round too."""
    exp = math.floor(math.log10(value))
    for m in (1.0, 1.2, 1.6, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        if m * 10**exp >= value * (1 - 1e-12):
            return m * 10**exp
    return 10.0 ** (exp + 1)


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def line_chart_svg(series: Sequence[tuple[str, Sequence[tuple[float, float]]]], x_label: str,
                   y_label: str, width_px: int = 720, height_px: int = 340) -> str:
    """One line per (label, points), points in x order; both axes from 0 to a round value
    above the largest (5% headroom on y)."""
    left, right, top, bottom = 70, 20, 40, 50
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    x_max = nice_top(max(xs, default=1.0) or 1.0)
    y_max = nice_top((max(ys, default=1.0) or 1.0) * 1.05)
    sx = (width_px - left - right) / x_max
    sy = (height_px - top - bottom) / y_max
    base = height_px - bottom
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width_px}" height="{height_px}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{width_px}" height="{height_px}" fill="white"/>']
    for v in _ticks(y_max):
        y = base - v * sy
        out.append(f'<line x1="{left}" x2="{width_px - right}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="#e3e7ee"/><text x="{left - 6}" y="{y + 4:.1f}" '
                   f'text-anchor="end">{_fmt(v)}</text>')
    for v in _ticks(x_max):
        out.append(f'<text x="{left + v * sx:.1f}" y="{base + 16}" text-anchor="middle">'
                   f'{_fmt(v)}</text>')
    out.append(f'<text x="{(left + width_px - right) / 2:.0f}" y="{height_px - 10}" '
               f'text-anchor="middle">{esc(x_label)}</text>')
    out.append(f'<text transform="translate(14,{(top + base) / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">{esc(y_label)}</text>')
    for i, (label, pts) in enumerate(series):
        color = run_color(i)
        coords = [(left + x * sx, base - y * sy) for x, y in pts]
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                   + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords) + '"/>')
        out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in coords]
        out.append(f'<rect x="{left + 220 * i}" y="12" width="12" height="12" fill="{color}"/>'
                   f'<text x="{left + 220 * i + 16}" y="22">{esc(label)}</text>')
    out.append("</svg>")
    return "\n".join(out)
