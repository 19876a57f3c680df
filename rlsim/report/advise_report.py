"""The report of `rlsim advise` (DIR/report.html): the recommendation and why.

Owns the page: the recommendation with its margins and their spread, the finalists, the
Pareto front (throughput, cost, staleness) of every config simulated, each parameter's
importance, the search's progress, caveats, the points never run and why. Reads only the
`Advice` (advise/run.py), so `advice.json` alone can redraw it.
"""

from __future__ import annotations

from typing import Any

from rlsim.report.page import Page, esc, table
from rlsim.report.style import layout, run_color


def _fmt(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def amount(x: float, sign: bool = False) -> str:
    """A figure as people read it: 37,125 or 0.00094 (with + when `sign`)."""
    plus = "+" if sign else ""
    return f"{x:{plus},.0f}" if abs(x) >= 1000 else f"{x:{plus}.4g}"


def margin_text(m: dict[str, Any] | None, unit: str) -> str:
    """A margin (advise/decide.py's Margin as a dict) in one phrase."""
    if m is None:
        return "-"
    text = (f"{amount(m['value'], sign=True)} {unit} ({m['relative']:+.1%}), spread "
            f"±{amount(m['spread'])}")
    return f"a tie: {text}" if m["tie"] else text


def render_advice(advice: Any) -> str:
    """The report page for an `Advice` (advise/run.py)."""
    rec, unit = advice.recommended, advice.unit
    page = Page("rlsim advise",
                subtitle=f"{rec['description']}",
                chips=[("objective", f"{advice.objective} ({advice.direction})"),
                       *([("also searched", ", ".join(advice.also_searched))]
                         if advice.also_searched else []),
                       ("GPUs", f"{advice.space['gpus']} {advice.space['gpu']}"),
                       ("evaluations", str(advice.evaluations)),
                       ("valid points", str(advice.space["valid_points"]))])

    page.section("recommendation", "Recommendation",
                 f"The best of the search's {len(advice.finalists)} finalists, each run on "
                 f"{advice.space['reps']} replicate seeds shared by all of them (common random "
                 "numbers). Margins are the mean paired difference ± half its range over the "
                 "replicates; a margin within its spread is a tie."
                 + (" With several objectives the first decides, and the best configuration "
                    "on each other one is a finalist too." if advice.also_searched else ""))
    rows = [["Recommended", esc(rec["description"]), f"{amount(rec['value'])} {esc(unit)}",
             f"±{amount(rec['spread'])}", "-"]]
    if advice.runner_up:
        r = advice.runner_up
        rows.append(["Runner-up", esc(r["description"]), f"{amount(r['value'])} {esc(unit)}",
                     f"±{amount(r['spread'])}", esc(margin_text(advice.margin_over_runner_up,
                                                            unit))])
    if advice.today:
        t = advice.today
        rows.append(["Today (the scenario as given)", esc(t["description"]),
                     f"{amount(t['value'])} {esc(unit)}", f"±{amount(t['spread'])}",
                     esc(margin_text(advice.margin_over_today, unit))])
    page.raw(table(["", "configuration", advice.objective, "spread",
                    "recommended's margin over it"], rows))

    page.sub("Changes from the scenario as given",
             "The fields of the scenario file that recommended.yaml changes.")
    page.raw("<ul>" + "".join(f"<li><code>{esc(c)}</code></li>" for c in advice.changes)
             + "</ul>")

    fig_rows = []
    for f in [*advice.finalists, *([advice.today] if advice.today else [])]:
        g = f["figures"]
        fig_rows.append([esc(f["description"]), amount(g["tokens_per_s"]),
                         _fmt(g["usd_per_1k_tokens"], 3), amount(g["step_time"]),
                         _fmt(g["staleness"], 2), amount(g["tokens_per_sample"]),
                         "yes" if f["feasible"] else "no"])
    page.sub("Finalists", "Means over the replicates.")
    page.raw(table(["configuration", "tokens/s", "$/1k tokens", "step time (s)",
                    "max staleness", "response tokens/sample", "meets constraints"],
                   fig_rows))

    if advice.robust is not None:
        _robust_section(page, advice.robust, advice.objective, unit)

    page.section("front", "Pareto front",
                 "Every configuration simulated (first replicate): throughput against cost; "
                 "marker size grows with staleness. The front (no other configuration is "
                 "faster, cheaper and no staler at once) is joined by a line.")
    page.plot(_front_figure(advice))

    page.section("importance", "Parameter importance",
                 "The share of the objective's variance over the simulated configurations "
                 "that each parameter's values explain on their own (one-way ANOVA eta "
                 "squared). A policy's own knob counts configurations of other policies as "
                 "its 'absent' level.")
    if advice.importance:
        page.plot(_importance_figure(advice.importance))
    else:
        page.absent("Fewer than two configurations differ in the objective.")

    page.section("search", "Search", "The objective of each trial, in the order run, and "
                 "the best so far (TPE, seeded).")
    page.plot(_search_figure(advice))

    page.section("caveats", "Caveats")
    if advice.caveats:
        page.raw("<ul>" + "".join(f"<li>{esc(c)}</li>" for c in advice.caveats) + "</ul>")
    else:
        page.note("None: on-policy, same response tokens per sample as the scenario as given.")

    page.section("space", "Space and points never run",
                 "The space searched; points that cannot run (they do not load, do not fit "
                 "memory or break a constraint) are counted, never simulated.")
    sp = advice.space
    page.raw(table(["dimension", "values"], [
        ["policies", esc(", ".join(sp["policies"]))],
        ["rollout GPUs when disaggregated", esc(", ".join(map(str, sp["rollout_gpus"])))],
        ["rollout TP", esc(", ".join(map(str, sp["rollout_tp"])))],
        ["max running sequences", esc(", ".join(map(str, sp["max_running_seqs"])))],
        ["steps per run", str(sp["steps"])],
        ["constraints", esc(", ".join(sp["constraints"]) or "none")],
    ]))
    if advice.failures:
        page.raw(table(["why", "points"], [[esc(k), str(v)] for k, v in
                                           sorted(advice.failures.items(),
                                                  key=lambda kv: -kv[1])]))
    return page.html()


def _front_figure(advice: Any) -> dict[str, Any]:
    by_policy: dict[str, list[dict[str, Any]]] = {}
    for t in advice.trials:
        if t["figures"] is not None:
            by_policy.setdefault(t["description"].split(",")[0], []).append(t)
    data: list[dict[str, Any]] = []
    for i, (policy, ts) in enumerate(sorted(by_policy.items())):
        data.append({
            "type": "scatter", "mode": "markers", "name": policy,
            "x": [t["figures"]["usd_per_1k_tokens"] for t in ts],
            "y": [t["figures"]["tokens_per_s"] for t in ts],
            "text": [f"{t['description']}<br>staleness {t['figures']['staleness']:g}"
                     for t in ts],
            "hovertemplate": "%{text}<br>%{y:.4g} tokens/s, $%{x:.3g}/1k<extra></extra>",
            "marker": {"color": run_color(i), "opacity": 0.75,
                       "size": [8 + 4 * t["figures"]["staleness"] for t in ts]},
        })
    front = sorted(advice.pareto_front, key=lambda p: p["usd_per_1k_tokens"])
    data.append({"type": "scatter", "mode": "lines+markers", "name": "Pareto front",
                 "x": [p["usd_per_1k_tokens"] for p in front],
                 "y": [p["tokens_per_s"] for p in front],
                 "text": [p["description"] for p in front],
                 "hovertemplate": "%{text}<extra>front</extra>",
                 "line": {"color": "#2B2F36", "width": 1, "dash": "dot"},
                 "marker": {"symbol": "circle-open", "size": 14, "color": "#2B2F36"}})
    return {"data": data, "layout": layout("$ per 1k trained tokens", "trained tokens/s", 420)}


def _importance_figure(imp: dict[str, float]) -> dict[str, Any]:
    names = list(imp)[::-1]
    return {"data": [{"type": "bar", "orientation": "h", "x": [imp[n] for n in names],
                      "y": names, "marker": {"color": run_color(0)},
                      "hovertemplate": "%{y}: %{x:.2f}<extra></extra>"}],
            "layout": layout("share of variance explained", "", 60 + 28 * len(names),
                             margin={"l": 220, "r": 20, "t": 10, "b": 48})}


def _search_figure(advice: Any) -> dict[str, Any]:
    name, maximize = advice.objective, advice.direction == "max"
    xs: list[int] = []
    ys: list[float] = []
    best: list[float] = []
    labels: list[str] = []
    so_far: float | None = None
    for t in sorted(advice.trials, key=lambda t: t["number"]):
        if t["figures"] is None:
            continue
        y = t["figures"][name]
        so_far = y if so_far is None else (max(so_far, y) if maximize else min(so_far, y))
        xs.append(len(xs) + 1)
        ys.append(y)
        best.append(so_far)
        labels.append(t["description"])
    return {"data": [
        {"type": "scatter", "mode": "markers", "name": "trial", "x": xs, "y": ys,
         "text": labels, "hovertemplate": "%{text}<br>%{y:.4g}<extra></extra>",
         "marker": {"color": run_color(1), "size": 7}},
        {"type": "scatter", "mode": "lines", "name": "best so far", "x": xs, "y": best,
         "line": {"color": run_color(0), "width": 2, "shape": "hv"}}],
        "layout": layout("trial (in the order run)", f"{name} ({advice.unit})", 340)}


def _robust_section(page: Page, robust: dict[str, Any], objective: str, unit: str) -> None:
    """`advise --draws`: the finalists under the unknowns, in the robust order."""
    rule = ("its objective in the worst 10% of the draws" if robust["rule"] == "p10"
            else "the share of the draws in which it is best")
    page.section("robust", "Under the unknowns",
                 f"The finalists and the scenario as given, each run at the same "
                 f"{robust['n']} draws over {esc(', '.join(robust['unknowns']))} (common "
                 f"random numbers), ranked by {rule} (--robust {esc(robust['rule'])}). The "
                 "recommendation is the first of this order that meets the constraints.")
    by = {r["key"]: r for r in robust["configs"]}
    rows = []
    for key in [*robust["order"], robust["configs"][-1]["key"]]:
        r = by[key]
        q = r["quantiles"]
        rows.append([esc(key), "-" if q is None else f"{amount(q['median'])} {esc(unit)}",
                     "-" if q is None else f"{amount(q['p10'])} - {amount(q['p90'])}",
                     "-" if r["p_best"] is None else f"{r['p_best']:.0%}"])
    page.raw(table(["configuration", f"{esc(objective)}, median", "80% interval",
                    "best in"], rows))
    depends = robust["depends"]
    page.note(depends.get("text") or "The best configuration is the same in every draw: "
              "the verdict holds whatever the unknowns in their ranges.")
