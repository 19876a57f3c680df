"""Robust advice: `rlsim advise --draws N` ranks the finalists under the scenario's unknowns.

Owns the second stage of an advise run with draws. The search runs on the scenario's own
values (its `unknowns:` set aside); its finalists and the scenario as given then run at
the same N draws over the unknowns (rlsim.draws: common random numbers, on the sweep
runner, journaled in DIR/draws/), and the finalists are ranked by a stated robust
objective instead of their mean:
- `p10` (default): the objective's value in the worst 10% of the draws, that is its 10th
  percentile when larger is better, its 90th when smaller is (what a user can count on
  nine times in ten);
- `p_best`: the share of the draws in which the finalist is the best of them (ties shared).
When the best finalist is not the same in every draw, `depends` says on which unknown and
where: for each drawn field, the single threshold on its value that best splits the draws
into "A is best below it, B above" (a decision stump), reported when it explains at least
`STUMP_AGREEMENT` of the draws and at least half of those the usual winner does not win;
otherwise the winner depends on the unknowns jointly.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rlsim.advise.objectives import Objective, figures
from rlsim.config.errors import ScenarioError

ROBUST_RULES = ("p10", "p_best")
STUMP_AGREEMENT = 0.8
"""The share of draws a threshold must explain to be reported as what the winner depends on."""


def check_rule(rule: str) -> None:
    if rule not in ROBUST_RULES:
        raise ScenarioError("--robust", f"choose p10 or p_best, got {rule!r}")


def check_drawable(scenario: Any, profile: bool, searched: set[str], draws: int,
                   configs: int) -> None:
    """Before the search: the scenario has something to draw, no unknown is a field the
    search sets (`searched`: the keys its points assign; a drawn value would override the
    point's), and the `configs` (finalists and the scenario as given) at `draws` draws are
    within the draws' run limit."""
    from rlsim.draws.design import design_unknowns
    from rlsim.draws.spec import MAX_RUNS

    if draws * configs > MAX_RUNS:
        raise ScenarioError("--draws", f"{draws} draws x {configs} configurations = "
                            f"{draws * configs:,} runs, over the limit of {MAX_RUNS:,}; "
                            "give fewer draws")
    if not design_unknowns([scenario], profile):
        raise ScenarioError("--draws", "the scenario declares no unknowns: add an "
                            "`unknowns:` section (docs/uncertainty.md)")
    for key in sorted(scenario.unknowns):
        hit = next((t for t in sorted(searched) if key == t or key.startswith(t + ".")), None)
        if hit is not None:
            raise ScenarioError("--draws", f"unknowns.{key} is a field advise searches "
                                f"({hit}); drop its unknown, or search without it")


def _about(x: float) -> str:
    """A threshold as people say it: two significant figures."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    digits = 1 - math.floor(math.log10(abs(x)))
    rounded = round(x, digits)
    return f"{rounded:,.0f}" if abs(rounded) >= 100 else f"{rounded:.2g}"


def stump(values: np.ndarray, winners: list[str]) -> tuple[float, str, str, int] | None:
    """The threshold on `values` that best separates `winners` into one below and another
    above: (threshold, winner below, winner above, draws it explains); None when no
    threshold puts different winners on the two sides."""
    order = np.argsort(values, kind="stable")
    v = values[order]
    w = [winners[i] for i in order]
    best: tuple[float, str, str, int] | None = None
    for cut in range(1, len(w)):
        if v[cut] == v[cut - 1]:
            continue
        below, above = Counter(w[:cut]).most_common(1)[0], Counter(w[cut:]).most_common(1)[0]
        if below[0] == above[0]:
            continue
        explained = below[1] + above[1]
        if best is None or explained > best[3]:
            best = (float((v[cut] + v[cut - 1]) / 2), below[0], above[0], explained)
    return best


def robust_advice(plans: list[tuple[Path, list[str], str]], n: int, objective: Objective,
                  rule: str, out: Path, *, executor: str, jobs: int | None,
                  address: str | None, resume: bool, profile: bool,
                  log: Callable[[str], None]) -> dict[str, Any]:
    """Run the plans (the finalists, then the scenario as given, each labelled by its
    description) at `n` draws and rank them by `rule`. Returns advice.json's `robust`
    section."""
    from rlsim.config.contracts import stamped
    from rlsim.draws import build_draw_spec, compare_doc, run_draws
    from rlsim.draws.design import ERROR
    from rlsim.draws.summary import scaled, tied_best
    from rlsim.report.draws_report import write_answer
    from rlsim.sweep.display import ProgressBar

    check_rule(rule)
    spec, ctx = build_draw_spec(plans, n, profile=profile)
    folder = out / "draws"
    log(f"advise: {len(plans)} configurations at {n} draws over {', '.join(spec.unknowns)}")
    outcome = run_draws(spec, ctx, folder, executor=executor, jobs=jobs, address=address,
                        resume=resume and (folder / "sweep.json").is_file(),
                        progress=ProgressBar(label="advise draws", unit="runs"))
    if outcome.sweep.interrupted:
        raise KeyboardInterrupt
    c = outcome.collected
    # the draws' own answer beside them, as `rlsim compare --draws --out` writes it: what
    # `rlsim report DIR/draws` redraws
    write_answer(folder, stamped("compare", {"draws": compare_doc(c)}))
    labels = [p.label for p in spec.plans]
    value = np.full((len(plans), n), np.nan)
    for pid, row in c.rows.items():
        _, d, p = spec.index(pid)
        # the figures of the run's summary with its time scaled by its model error
        figs = figures(scaled(row, c.factors[0, p, d]))
        value[p, d] = figs[objective.name]
    candidates = list(range(len(plans) - 1))  # the scenario as given is the baseline only
    ok = np.all(np.isfinite(value[candidates]), axis=0)
    signed = np.asarray([[objective.signed(x) for x in row] for row in value])
    winners: list[str] = []
    wins = np.zeros(len(plans))
    for draw in np.flatnonzero(ok):
        col = signed[candidates, draw]
        tied = [candidates[i] for i in np.flatnonzero(tied_best(col))]
        winners.append(labels[tied[0]])
        wins[tied] += 1 / len(tied)
    used = int(ok.sum())
    worst = 0.10 if objective.direction == "max" else 0.90
    rows: list[dict[str, Any]] = []
    score: dict[str, float] = {}
    for p, label in enumerate(labels):
        # the draws every candidate ran: one that fails where the others do not is not
        # ranked on its easy draws alone
        x = value[p][ok & np.isfinite(value[p])]
        q = ({"p10": float(np.quantile(x, 0.10)), "median": float(np.median(x)),
              "p90": float(np.quantile(x, 0.90)), "worst10": float(np.quantile(x, worst))}
             if x.size else None)
        share = float(wins[p] / used) if used and p in candidates else None
        rows.append({"key": label, "baseline": p == len(plans) - 1, "quantiles": q,
                     "p_best": share})
        if p in candidates:
            score[label] = (-math.inf if q is None else objective.signed(q["worst10"])
                            if rule == "p10" else share or 0.0)
    order = sorted(score, key=lambda k: (-score[k], k))
    fields = [k for k in spec.unknowns if not k.startswith(ERROR)]
    drawn = {k: np.asarray([spec.values[d][k] for d in np.flatnonzero(ok)]) for k in fields}
    return {"rule": rule, "n": n, "ran": used, "unknowns": list(spec.unknowns),
            "configs": rows, "order": order, "winner_counts": dict(Counter(winners)),
            "depends": depends(drawn, winners), "failures": list(c.failures)}


def depends(drawn: dict[str, np.ndarray], winners: list[str]) -> dict[str, Any]:
    """What the best finalist depends on: nothing (the same in every draw), one unknown's
    threshold (a stump explaining >= STUMP_AGREEMENT of the draws), or the unknowns
    jointly."""
    if len(set(winners)) <= 1:
        return {"kind": "robust", "winner": winners[0] if winners else None}
    found = [(k, s) for k, v in drawn.items() if (s := stump(v, winners)) is not None]
    majority = Counter(winners).most_common(1)[0][1]
    if found:
        key, (t, below, above, explained) = max(found, key=lambda ks: (ks[1][3], ks[0]))
        share = explained / len(winners)
        # Against the baseline "the usual winner always": a threshold must explain at
        # least half of the draws that baseline gets wrong, or any field would "explain"
        # a verdict that is 80% one-sided already.
        if share >= STUMP_AGREEMENT and len(winners) - explained <= (len(winners)
                                                                     - majority) / 2:
            return {"kind": "threshold", "unknown": key, "threshold": t, "below": below,
                    "above": above, "explained": share,
                    "text": f"{above} is best if {key} is above about {_about(t)}, {below} "
                            f"below it ({explained} of {len(winners)} draws)"}
    return {"kind": "joint", "text": "the best configuration changes between draws and no "
            f"single unknown's threshold explains {STUMP_AGREEMENT:.0%} of them"}
