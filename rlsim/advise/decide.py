"""The decision of `rlsim advise`: replicates of the finalists, margins, ties, the front.

Owns what is concluded from the evaluations: the finalists (the search's best configs and
the scenario as given) are run on R replicate seeds, the same seeds for every finalist
(common random numbers: each replicate draws the same prompts and lengths whatever the
config), and compared pairwise on those seeds. The margin of A over B is the mean over the
replicates of (A - B) in the objective's units; its spread is half the range of those
differences. A margin no larger than its spread is a tie (with one replicate there is no
spread, and only equal values tie). Also: the Pareto front over throughput, cost and
staleness, and each parameter's importance (the share of the objective's variance over the
evaluated configs that its values explain alone, one-way ANOVA eta squared).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rlsim.advise.objectives import Constraint, Objective
from rlsim.advise.search import Evaluation


@dataclass(frozen=True)
class Finalist:
    key: str
    values: tuple[float, ...]  # the objective per replicate (rep 0, 1, ...)
    figures: dict[str, float]  # every figure, mean over replicates
    feasible: bool  # meets the constraints (on the mean figures)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def spread(self) -> float:
        """Half the range of the objective over the replicates."""
        return (max(self.values) - min(self.values)) / 2


@dataclass(frozen=True)
class Margin:
    """A's advantage over B (positive: A better), paired over common replicate seeds."""

    value: float  # mean difference, objective units, signed so that positive favours A
    spread: float  # half the range of the paired differences
    relative: float  # value / |B's mean|
    tie: bool


def finalist(key: str, evs: Sequence[Evaluation], objective: Objective,
             constraints: Sequence[Constraint]) -> Finalist | None:
    """A finalist from its replicate runs (None if any failed)."""
    if not evs or any(ev.figures is None for ev in evs):
        return None
    figs = [ev.figures for ev in evs if ev.figures is not None]
    mean = {k: statistics.fmean(f[k] for f in figs) for k in figs[0]}
    values = tuple(f[objective.name] for f in figs)
    return Finalist(key, values, mean, all(c.holds(mean) for c in constraints))


def margin(a: Finalist, b: Finalist, objective: Objective) -> Margin:
    diffs = [objective.signed(x) - objective.signed(y)
             for x, y in zip(a.values, b.values, strict=True)]
    value = statistics.fmean(diffs)
    spread = (max(diffs) - min(diffs)) / 2
    tie = abs(value) <= spread if len(diffs) > 1 else value == 0
    return Margin(value, spread, value / abs(b.mean) if b.mean else 0.0, tie)


def rank(finalists: Sequence[Finalist], objective: Objective) -> list[Finalist]:
    """Feasible first, then by mean objective (best first); ties broken by key for a
    deterministic order."""
    return sorted(finalists, key=lambda f: (not f.feasible, -objective.signed(f.mean), f.key))


def pareto_front(points: dict[str, dict[str, float]]) -> list[str]:
    """Keys of the configs no other beats on every one of: tokens/s (higher), $/1k tokens
    (lower) and staleness (lower)."""
    def dominates(a: dict[str, float], b: dict[str, float]) -> bool:
        ge = (a["tokens_per_s"] >= b["tokens_per_s"] and
              a["usd_per_1k_tokens"] <= b["usd_per_1k_tokens"] and
              a["staleness"] <= b["staleness"])
        gt = (a["tokens_per_s"] > b["tokens_per_s"] or
              a["usd_per_1k_tokens"] < b["usd_per_1k_tokens"] or
              a["staleness"] < b["staleness"])
        return ge and gt

    keys = sorted(points)
    return [k for k in keys if not any(dominates(points[o], points[k]) for o in keys if o != k)]


def importance(rows: Sequence[tuple[Mapping[str, object], float]]) -> dict[str, float]:
    """Each parameter's eta squared over (config values, objective) rows: the between-level
    sum of squares of its values over the total; a parameter some configs lack (a policy's
    own knob) has 'absent' as a level. Sorted, largest first."""
    if len(rows) < 2:
        return {}
    ys = [y for _, y in rows]
    mean = statistics.fmean(ys)
    total = sum((y - mean) ** 2 for y in ys)
    if total == 0:
        return {}
    names = sorted({k for values, _ in rows for k in values})
    out = {}
    for name in names:
        groups: dict[str, list[float]] = defaultdict(list)
        for values, y in rows:
            groups[repr(values.get(name, "absent"))].append(y)
        if len(groups) < 2:
            continue
        between = sum(len(g) * (statistics.fmean(g) - mean) ** 2 for g in groups.values())
        out[name] = between / total
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))
