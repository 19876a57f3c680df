"""The report of a set of draws (`rlsim run|compare|sweep --draws N --out DIR`).

Owns the page DIR/report.html drawn from DIR/draws.json alone (the answer's `--json`
document, docs/uncertainty.md): each headline metric's median with its 80% and 95%
intervals as interval bars (one bar per variant or grid setting), a fan chart of each
metric across a numeric grid key, the ratios to the first variant, the probability that
each is best, the sensitivity indices with their intervals, and the runs that gave no
metrics. Reads no simulator module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlsim.config.errors import ScenarioError
from rlsim.report.page import Page, esc, table, write_atomic
from rlsim.report.style import layout, rgba, run_color

DRAWS_FILE = "draws.json"
LABELS = {"step_time_s.mean": "step time mean (s)", "throughput.samples_per_s": "samples/s",
          "throughput.tokens_per_s": "tokens/s", "goodput_samples_per_s": "goodput (samples/s)",
          "cost.usd_per_1k_samples": "$/1k samples"}


def is_draws_dir(path: Path) -> bool:
    """A folder written by `--draws N --out DIR`: its spec says kind "draws"."""
    spec = Path(path) / "sweep.json"
    if not spec.is_file():
        return False
    try:
        return json.loads(spec.read_text(encoding="utf-8")).get("kind") == "draws"
    except (OSError, ValueError):
        return False


def _rows(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, {metric: quantiles}) per variant or setting, in the document's order."""
    if "runs" in doc:
        return [(r["label"], r["metrics"]) for r in doc["runs"]]
    if "settings" in doc:
        return [(", ".join(c["set"]) or c["plan"], c["metrics"]) for c in doc["settings"]]
    return [("this scenario", doc["metrics"])]


def interval_figure(rows: list[tuple[str, dict[str, Any]]], metric: str) -> dict[str, Any]:
    """Horizontal interval bars: 95% (thin), 80% (thick), median (dot), one row each."""
    traces: list[dict[str, Any]] = []
    for i, (label, metrics) in enumerate(rows):
        q = metrics.get(metric)
        if q is None:
            continue
        color = run_color(i)
        for lo, hi, width, name in (("p2_5", "p97_5", 2, "95% interval"),
                                    ("p10", "p90", 12, "80% interval")):
            traces.append({"type": "scatter", "mode": "lines", "x": [q[lo], q[hi]],
                           "y": [label, label], "line": {"color": rgba(color, 0.45 if
                                                                       width > 2 else 0.9),
                                                         "width": width},
                           "name": name, "legendgroup": name, "showlegend": i == 0,
                           "hovertemplate": f"{name}: %{{x:.4g}}<extra>{esc(label)}</extra>"})
        traces.append({"type": "scatter", "mode": "markers", "x": [q["median"]],
                       "y": [label], "marker": {"color": color, "size": 10,
                                                "line": {"color": "#fff", "width": 1}},
                       "name": "median", "legendgroup": "median", "showlegend": i == 0,
                       "hovertemplate": f"median %{{x:.4g}}<extra>{esc(label)}</extra>"})
    return {"data": traces, "layout": layout(LABELS.get(metric, metric), "",
                                             height_px=max(160, 60 + 38 * len(rows)),
                                             yaxis={"autorange": "reversed",
                                                    "type": "category"})}


def fan_figure(doc: dict[str, Any], metric: str, key: str) -> dict[str, Any] | None:
    """The metric's median and bands across one numeric grid key (plan 0), or None."""
    cells = [c for c in doc.get("settings", []) if len(c["set"]) == 1
             and c["set"][0].startswith(key + "=")]
    try:
        xs = [float(c["set"][0].split("=", 1)[1]) for c in cells]
    except ValueError:
        return None
    qs = [c["metrics"].get(metric) for c in cells]
    if len(cells) < 2 or any(q is None for q in qs):
        return None
    order = sorted(range(len(xs)), key=xs.__getitem__)
    x = [xs[i] for i in order]
    q = [qs[i] for i in order]
    color = run_color(0)

    def band(lo: str, hi: str, alpha: float, name: str) -> dict[str, Any]:
        return {"type": "scatter", "mode": "lines", "x": x + x[::-1],
                "y": [v[hi] for v in q] + [v[lo] for v in q][::-1], "fill": "toself",
                "fillcolor": rgba(color, alpha), "line": {"width": 0}, "name": name,
                "hoverinfo": "skip"}

    return {"data": [band("p2_5", "p97_5", 0.15, "95% interval"),
                     band("p10", "p90", 0.3, "80% interval"),
                     {"type": "scatter", "mode": "lines+markers", "x": x,
                      "y": [v["median"] for v in q], "line": {"color": color},
                      "name": "median"}],
            "layout": layout(key, LABELS.get(metric, metric))}


def sensitivity_figure(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """First-order and total indices per unknown, with their 95% intervals."""
    names = [r["unknown"] for r in rows]
    traces = []
    for i, (which, label) in enumerate((("first", "first-order S_i"),
                                        ("total", "total ST_i"))):
        traces.append({"type": "bar", "x": names, "y": [r[which] for r in rows],
                       "name": label, "marker": {"color": run_color(i)},
                       "error_y": {"type": "data", "symmetric": False,
                                   "array": [r[f"{which}_ci"][1] - r[which] for r in rows],
                                   "arrayminus": [r[which] - r[f"{which}_ci"][0]
                                                  for r in rows]}})
    # Indices live in [0, 1]; a few dozen base rows give intervals far wider, which would
    # flatten the bars: the axis stays at [-0.25, 1.25] and such intervals run off it.
    return {"data": traces, "layout": layout("", "index", barmode="group",
                                             yaxis={"range": [-0.25, 1.25]})}


def render_draws(folder: Path) -> str:
    """The page for a draws folder (raises ScenarioError when it has no answer yet)."""
    path = Path(folder) / DRAWS_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        doc = document["draws"]
    except (OSError, ValueError, KeyError):
        raise ScenarioError("RUN_DIR", f"{path} is missing or unreadable: the draws did not "
                            "finish; continue them with the same command and --resume") \
            from None
    rows = _rows(doc)
    kind = "compare" if "runs" in doc else "sweep" if "settings" in doc else "run"
    page = Page(f"rlsim {kind} --draws {doc['n']}", f"Draws folder {folder}",
                [("draws", f"{doc['n']} ({doc['ran']} with metrics)"),
                 ("unknowns", ", ".join(doc["unknowns"]))])
    page.section("intervals", "Intervals",
                 "Each headline metric over the draws: the dot is the median, the thick bar "
                 "the 80% interval (10th to 90th percentile), the thin line the 95% interval. "
                 "Every variant or setting ran the same draws on the same seed, so their "
                 "differences come from the configuration, their spread from the unknowns.")
    page.grid([page.plot_html(interval_figure(rows, m), label) for m, label in LABELS.items()])
    keys = {c["set"][0].split("=", 1)[0] for c in doc.get("settings", []) if len(c["set"]) == 1}
    fans = [(k, m, f) for k in sorted(keys) for m in LABELS
            if (f := fan_figure(doc, m, k)) is not None]
    if fans:
        page.section("fan", "Across the grid",
                     "Median, 80% and 95% bands of each metric across the swept key.")
        page.grid([page.plot_html(f, f"{LABELS[m]} vs {k}") for k, m, f in fans])
    if doc.get("ratios"):
        page.section("ratios", "Ratios to the first variant",
                     f"Draw by draw, each variant's metric over {esc(rows[0][0])}'s: a ratio's "
                     "spread comes from the unknowns, not from noise (common random numbers).")
        ratio_rows = list(doc["ratios"].items())
        page.grid([page.plot_html(interval_figure(ratio_rows, m), f"{label}, ratio")
                   for m, label in LABELS.items() if m.startswith("throughput")])
    if "p_best" in doc or "settings" in doc:
        page.section("best", "Probability of being best",
                     "The share of the draws in which each is best on each metric (ties "
                     "shared). A verdict near 100% holds whatever the unknowns; one near an "
                     "even split depends on them.")
        shares = ([{k: doc["p_best"][k][label] for k in LABELS} for label, _ in rows]
                  if "p_best" in doc else [c["p_best"] for c in doc["settings"]])
        page.raw(table(["", *map(esc, LABELS.values())],
                       [[esc(label), *("-" if s[k] is None else f"{s[k]:.0%}"
                                       for k in LABELS)]
                        for (label, _), s in zip(rows, shares, strict=True)]))
    if "sensitivity" in doc:
        page.section("sensitivity", "Which unknown matters",
                     "Sobol indices with bootstrap 95% intervals: the first-order index is "
                     "the share of the metric's variance an unknown explains alone, the total "
                     "index alone and with the others. Indices whose intervals overlap are "
                     "not ranked apart; intervals beyond [-0.25, 1.25] run off the axis (they "
                     "narrow as one over the square root of the draws).")
        sens = doc["sensitivity"]
        if "ratios" in sens:  # a comparison: the indices of each ratio to the first
            page.grid([page.plot_html(sensitivity_figure(rows), f"{label} / first, "
                                      f"{LABELS[m]}")
                       for label, by in sens["ratios"].items() for m, rows in by.items()])
        else:
            page.grid([page.plot_html(sensitivity_figure(sens[m]), label)
                       for m, label in LABELS.items() if m in sens])
    page.section("failures", "Runs without metrics",
                 "Runs whose drawn scenario was invalid or that raised; they are left out.")
    if doc["failures"]:
        page.raw(table(["run"], [[esc(f)] for f in doc["failures"]]))
    else:
        page.absent("Every run gave metrics.")
    return page.html()


def write_draws_report(folder: Path, path: Path) -> None:
    write_atomic(render_draws(folder), Path(path))


def write_answer(folder: Path, document: dict[str, Any]) -> None:
    """A finished set of draws' answer into its folder: DIR/draws.json (the `--json`
    document) and the report drawn from it, DIR/report.html (what `rlsim report DIR`
    redraws)."""
    folder = Path(folder)
    write_atomic(json.dumps(document, indent=1) + "\n", folder / DRAWS_FILE)
    write_draws_report(folder, folder / "report.html")
