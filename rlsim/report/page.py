"""The HTML page skeleton shared by run and sweep reports.

Owns the self-contained page: stylesheet, header, table of contents, sections, plot
placeholders, and plotly.js from the installed plotly package (no CDN: a report opens
offline), embedded inline or, for the reports of a compare folder, one shared copy beside
them (`write_shared_plotly`) that each page loads by relative path. Each plot is a
`div.rlsim-plot` whose figure JSON sits in a `<script type="application/json">` beside it;
one loader calls `Plotly.newPlot` on each and marks the div `data-rendered="1"`. The
browser check (browser.py) counts these.
"""

from __future__ import annotations

import html
import json
import math
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from rlsim.report.style import CSS

PLOT_CLASS = "rlsim-plot"
"""Class of every plot div (browser.py looks for it)."""

_CONFIG = {"responsive": True, "displaylogo": False,
           "modeBarButtonsToRemove": ["lasso2d", "select2d"],
           "toImageButtonOptions": {"format": "png", "scale": 2}}

_LOADER = """
(function () {
  if (typeof Plotly === 'undefined') {  // a shared plotly.js that is not where it was
    var p = document.createElement('p');
    p.className = 'absent';
    p.textContent = 'plotly.js did not load: this page uses the copy in its compare folder; '
      + 'keep the folder together or redraw the page with rlsim report.';
    document.querySelector('main').prepend(p);
    return;
  }
  var config = %s;
  document.querySelectorAll('div.%s').forEach(function (el) {
    var fig = JSON.parse(document.getElementById(el.id + '-json').textContent);
    Plotly.newPlot(el, fig.data, fig.layout, config).then(function () {
      el.setAttribute('data-rendered', '1');
    });
  });
})();
"""


@cache
def plotly_js() -> str:
    """plotly.min.js from the installed plotly package (read once per process)."""
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def plotly_file_name() -> str:
    """The shared copy's file name. It carries the plotly version so that a report redrawn
    under another plotly release writes its own copy instead of changing the one that the
    folder's older pages load."""
    import plotly

    return f"plotly-{plotly.__version__}.min.js"


def write_shared_plotly(folder: Path) -> str:
    """Write plotly.js into `folder` unless it is there already; return its file name.

    A compare folder's reports load this one copy (about 5 MB) instead of each embedding
    its own."""
    name = plotly_file_name()
    target = Path(folder) / name
    if not target.is_file():
        write_atomic(plotly_js(), target)
    return name


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        if obj.ndim > 1:
            return [_default(row) for row in obj]
        if obj.dtype.kind == "f" and not np.isfinite(obj).all():
            return [v if math.isfinite(v) else None for v in obj.tolist()]
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def figure_json(fig: dict[str, Any]) -> str:
    """Compact JSON safe inside a <script> element (no '<' can close it)."""
    text = json.dumps(fig, separators=(",", ":"), allow_nan=False, default=_default)
    return text.replace("<", "\\u003c")


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


@dataclass
class Page:
    """A report page under construction: append sections, then `html()`."""

    title: str
    subtitle: str = ""
    chips: list[tuple[str, str]] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    toc: list[tuple[str, str]] = field(default_factory=list)
    plots: int = 0

    def section(self, anchor: str, heading: str, caption: str = "") -> None:
        if self.body:
            self.body.append("</section>")
        self.toc.append((anchor, heading))
        self.body.append(f'<section id="{esc(anchor)}"><h2>{esc(heading)}</h2>')
        if caption:
            self.body.append(f'<p class="caption">{caption}</p>')

    def sub(self, heading: str, caption: str = "") -> None:
        self.body.append(f"<h3>{esc(heading)}</h3>")
        if caption:
            self.body.append(f'<p class="caption">{caption}</p>')

    def raw(self, fragment: str) -> None:
        self.body.append(fragment)

    def note(self, text: str) -> None:
        self.body.append(f'<p class="note">{esc(text)}</p>')

    def absent(self, text: str) -> None:
        self.body.append(f'<p class="absent">{esc(text)}</p>')

    def plot_html(self, fig: dict[str, Any], title: str = "") -> str:
        """A plot placeholder and its figure JSON (as a fragment, for grids)."""
        self.plots += 1
        pid = f"plot-{self.plots}"
        head = f'<div class="plot-title">{esc(title)}</div>' if title else ""
        return (f'<div>{head}<div class="{PLOT_CLASS}" id="{pid}"></div>'
                f'<script type="application/json" id="{pid}-json">{figure_json(fig)}'
                "</script></div>")

    def plot(self, fig: dict[str, Any], title: str = "") -> None:
        self.body.append(self.plot_html(fig, title))

    def plot_or_absent(self, fig: dict[str, Any] | None, absent: str) -> None:
        """The figure, or one line saying why there is none (records absent)."""
        if fig is None:
            self.absent(absent)
        else:
            self.plot(fig)

    def grid(self, cells: list[str]) -> None:
        if cells:
            cls = "grid3" if len(cells) >= 3 else "grid2" if len(cells) == 2 else ""
            self.body.append(f'<div class="{cls}">{"".join(cells)}</div>')

    def html(self, plotly_src: str | None = None) -> str:
        """The page; plotly.js inline, or loaded from `plotly_src` (a relative path to a
        shared copy) when given."""
        body = [*self.body, "</section>"] if self.body else []
        chips = "".join(f'<span class="chip">{esc(k)} <b>{esc(v)}</b></span>'
                        for k, v in self.chips)
        toc = "".join(f'<a href="#{esc(a)}">{esc(h)}</a>' for a, h in self.toc)
        sub = f'<div class="sub">{esc(self.subtitle)}</div>' if self.subtitle else ""
        return "".join([
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(self.title)}</title><style>{CSS}"
            ".plot-title{font-size:13px;font-weight:600;margin:6px 0 0 4px;}</style>",
            f'</head><body><header class="page"><h1>{esc(self.title)}</h1>{sub}',
            f'<div class="chips">{chips}</div></header>',
            f'<nav class="toc">{toc}</nav><main>', "\n".join(body), "</main>",
            "<footer>Generated by rlsim. How to read each section: docs/reports.md. "
            "Plots are interactive: drag to zoom, double-click to reset, click legend "
            "entries to hide or isolate them.</footer>",
            f'<script src="{esc(plotly_src)}"></script>' if plotly_src
            else f"<script>{plotly_js()}</script>",
            f"<script>{_LOADER % (json.dumps(_CONFIG), PLOT_CLASS)}</script>",
            "</body></html>\n",
        ])


def table(header: list[str], rows: list[list[str]], groups: dict[int, str] | None = None) -> str:
    """An HTML table; cells are already-escaped HTML. `groups` puts a heading row before
    the row of that index."""
    out = ['<table class="t"><thead><tr>', *(f"<th>{h}</th>" for h in header),
           "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        if groups and i in groups:
            out.append(f'<tr class="group"><td colspan="{len(header)}">{esc(groups[i])}'
                       "</td></tr>")
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def write_atomic(text: str, path: Path) -> None:
    """Write to path + '.partial', then rename: a reader never sees half a report."""
    path = Path(path)
    tmp = path.with_name(path.name + ".partial")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # nothing half-written stays behind a failed write
