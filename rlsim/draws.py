"""Draws over a scenario's unknowns (`unknowns:`, `rlsim run --draws N`; issue 39).

Owns `run_draws`: `n` space-filling draws (a Latin hypercube seeded from the scenario's
seed, so the same scenario, seed and `n` give the same draws anywhere) over the unknowns,
each mapped through its distribution's quantile function (`Unknown.value`) and run as the
scenario with those values set, and `interval_summary`: per headline metric the median and
the 80% and 95% intervals over the draws (empirical quantiles). What is drawn and how it
answers: docs/uncertainty.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import load_scenario
from rlsim.config.streams import rng
from rlsim.config.unknowns import field_value
from rlsim.prepare import prepare

METRICS: tuple[tuple[str, str], ...] = (
    ("step_time_s.mean", "step time mean (s)"),
    ("throughput.samples_per_s", "samples/s"),
    ("throughput.tokens_per_s", "tokens/s"),
    ("goodput_samples_per_s", "goodput (samples/s)"),
    ("cost.usd_per_1k_samples", "$/1k samples"),
)
"""The headline metrics every draw reports (dotted summary keys, and their labels)."""

QUANTILES = {"p2_5": 0.025, "p10": 0.10, "median": 0.5, "p90": 0.90, "p97_5": 0.975}


@dataclass(frozen=True)
class Draws:
    """The draws of one scenario: each draw's values and summary metrics."""

    unknowns: tuple[str, ...]
    values: list[dict[str, float]]      # per draw: field -> value
    metrics: list[dict[str, float]]     # per draw: metric -> value


def _metric(summary: dict[str, Any], key: str) -> float:
    node: Any = summary
    for part in key.split("."):
        node = node[part]
    return float(node)


def draw_values(scenario: Any, n: int) -> list[dict[str, float]]:
    """`n` Latin-hypercube draws over `scenario.unknowns` (seeded by the scenario's seed):
    per draw, field -> value (whole numbers for integer fields)."""
    from scipy.stats import qmc

    if n < 1:
        raise ScenarioError("--draws", f"must be >= 1, got {n}")
    keys = sorted(scenario.unknowns)
    if not keys:
        raise ScenarioError("--draws", "the scenario declares no unknowns: add an "
                            "`unknowns:` section (docs/uncertainty.md)")
    sampler = qmc.LatinHypercube(d=len(keys), seed=rng(scenario.seed, "draws", n))
    u = sampler.random(n)
    out = []
    for row in u:
        draw = {}
        for key, ui in zip(keys, row, strict=True):
            value = scenario.unknowns[key].value(float(ui))
            draw[key] = value
        out.append(draw)
    return out


def run_draws(path: Path, overrides: list[str], n: int,
              progress: Callable[[int, int], None] | None = None,
              sensitivity: bool = False, profile: bool = True) -> Draws:
    """Run `n` draws of the scenario file at `path` (after `overrides`); with
    `sensitivity`, the draws are a Saltelli design of n // (unknowns + 2) base rows
    (`sensitivity_design`) instead of a Latin hypercube. `profile`: the framework
    profile's intervals are unknowns too (`with_profile_unknowns`)."""
    scenario = with_profile_unknowns(load_scenario(path, overrides)[0], profile)
    values = (sensitivity_design(scenario, n)[1] if sensitivity
              else draw_values(scenario, n))
    n = len(values)
    metrics = []
    for i, draw in enumerate(values):
        one, base = load_scenario(path, [*overrides, "unknowns={}",
                                         *_sets(scenario, draw)])
        summary = simulate(prepare(one, base)).summary
        metrics.append({key: _metric(summary, key) for key, _ in METRICS})
        if progress is not None:
            progress(i + 1, n)
    return Draws(tuple(sorted(scenario.unknowns)), values, metrics)


def sensitivity_design(scenario: Any, n: int) -> tuple[int, list[dict[str, float]]]:
    """A Saltelli design over the unknowns (rlsim.sensitivity) within `n` runs: its base
    rows and, in `Design.points` order, each run's field -> value."""
    from rlsim.sensitivity import saltelli_design

    keys = sorted(scenario.unknowns)
    if len(keys) < 2:
        raise ScenarioError("--sensitivity", "needs at least two unknowns to compare")
    base = n // (len(keys) + 2)
    if base < 2:
        raise ScenarioError("--draws", f"{n} draws are too few for the sensitivity of "
                            f"{len(keys)} unknowns: give at least {2 * (len(keys) + 2)}")
    seed = int(rng(scenario.seed, "sensitivity", n).integers(2**31))
    points = saltelli_design(len(keys), base, seed).points()
    return base, [{k: scenario.unknowns[k].value(float(u))
                   for k, u in zip(keys, row, strict=True)} for row in points]


def sensitivity_summary(draws: Draws, base: int) -> dict[str, list[dict[str, Any]]]:
    """Per headline metric, each unknown's first-order and total Sobol indices with their
    bootstrap 95% intervals, largest total first (`ranked_apart`: its interval clears the
    next one's)."""
    from rlsim.sensitivity import ranked, sobol_indices

    d = len(draws.unknowns)
    out: dict[str, list[dict[str, Any]]] = {}
    for key, _ in METRICS:
        values = np.asarray([m[key] for m in draws.metrics], dtype=float)
        idx = sobol_indices(values, base, d)
        out[key] = [{"unknown": name, "first": i.first, "first_ci": list(i.first_ci),
                     "total": i.total, "total_ci": list(i.total_ci), "ranked_apart": apart}
                    for name, i, apart in ranked(list(draws.unknowns), idx)]
    return out


BETTER = {"step_time_s.mean": "min", "throughput.samples_per_s": "max",
          "throughput.tokens_per_s": "max", "goodput_samples_per_s": "max",
          "cost.usd_per_1k_samples": "min"}
"""Which way each headline metric is better, for the probability of being best."""


def compare_draws(plans: list[tuple[Path, list[str], str]], n: int,
                  progress: Callable[[int, int], None] | None = None,
                  profile: bool = True) -> dict[str, Any]:
    """`n` draws over the first plan's unknowns, every plan (path, overrides, label) run
    at each draw's values (common random numbers: the same values and seed for all), so a
    ratio's spread comes from the unknowns. Per plan its metrics' quantiles; per plan
    after the first, each metric's ratio to the first plan's, draw by draw, as quantiles;
    per metric the share of draws in which each plan is best (ties shared)."""
    first = with_profile_unknowns(load_scenario(plans[0][0], plans[0][1])[0], profile)
    values = draw_values(first, n)
    per_plan: list[list[dict[str, float]]] = [[] for _ in plans]
    for i, draw in enumerate(values):
        sets = _sets(first, draw)
        for j, (path, overrides, _) in enumerate(plans):
            one, base = load_scenario(path, [*overrides, "unknowns={}", *sets])
            summary = simulate(prepare(one, base)).summary
            per_plan[j].append({key: _metric(summary, key) for key, _ in METRICS})
        if progress is not None:
            progress(i + 1, n)
    labels = [label for _, _, label in plans]

    def quantiles(x: np.ndarray) -> dict[str, float]:
        return {name: float(np.quantile(x, q)) for name, q in QUANTILES.items()}

    runs = [{"label": label, "metrics": {key: quantiles(np.asarray([m[key] for m in rows]))
                                         for key, _ in METRICS}}
            for label, rows in zip(labels, per_plan, strict=True)]
    ratios = {label: {key: quantiles(np.asarray([m[key] / b[key] if b[key] else np.nan
                                                 for m, b in zip(rows, per_plan[0],
                                                                 strict=True)]))
                      for key, _ in METRICS}
              for label, rows in zip(labels[1:], per_plan[1:], strict=True)}
    p_best: dict[str, dict[str, float]] = {}
    for key, _ in METRICS:
        wins = np.zeros(len(plans))
        for i in range(n):
            x = np.asarray([rows[i][key] for rows in per_plan])
            best = x.min() if BETTER[key] == "min" else x.max()
            tied = np.isclose(x, best, rtol=1e-9, atol=0.0)
            wins += tied / tied.sum()
        p_best[key] = {label: float(w / n) for label, w in zip(labels, wins, strict=True)}
    return {"n": n, "unknowns": sorted(first.unknowns), "runs": runs, "ratios": ratios,
            "p_best": p_best}


def _sets(scenario: Any, draw: dict[str, float]) -> list[str]:
    """A draw as --set assignments: each unknown's field and the fields drawn with it
    (`Unknown.also`); an integer field's value rounded (in `draw` too)."""
    out = []
    for key, value in draw.items():
        if isinstance(field_value(scenario, key), int):
            draw[key] = value = float(round(value))
            text = str(int(value))
        else:
            text = repr(value)
        out += [f"{k}={text}" for k in (key, *scenario.unknowns[key].also)]
    return out


def with_profile_unknowns(scenario: Any, profile: bool) -> Any:
    """`scenario` whose unknowns include its framework profile's calibrated knobs
    (`framework.name`, rlsim/config/frameworks.json), each where the scenario keeps the
    profile's value and declares no unknown of its own: a 95% interval above 0 as a
    lognormal (median the value, sigma ln(high/low) / 3.92), one reaching 0 as uniform
    over it; a profile's single `speed` sets both speeds (one unknown, two fields).
    `profile` False: the scenario's own unknowns only."""
    from rlsim.config.frameworks import profiles
    from rlsim.config.unknowns import Unknown

    fw = scenario.framework
    prof = profiles().get(str(fw.name)) if profile and fw.name and fw.profile else None
    if prof is None:
        return scenario
    extra: dict[str, Unknown] = {}
    for p in prof.params.values():
        fields = (["framework.train_speed", "framework.rollout_speed"] if p.name == "speed"
                  else [f"framework.{p.name}"])
        if any(f in scenario.unknowns for f in fields) or any(
                field_value(scenario, f) != p.value for f in fields):
            continue
        lo, hi = p.ci95
        if not lo < hi:
            continue
        unknown = (Unknown(dist="lognormal", median=p.value,
                           sigma=math.log(hi / lo) / 3.92, also=fields[1:]) if lo > 0
                   else Unknown(low=max(lo, 0.0), high=hi, also=fields[1:]))
        extra[fields[0]] = unknown
    return scenario.model_copy(update={"unknowns": {**extra, **scenario.unknowns}})


def interval_summary(draws: Draws) -> dict[str, Any]:
    """The `--json` document's `draws` section: per metric its quantiles over the draws
    (median, 80% interval p10-p90, 95% interval p2_5-p97_5), and every draw."""
    out: dict[str, Any] = {"n": len(draws.metrics), "unknowns": list(draws.unknowns),
                           "metrics": {}, "draws": []}
    for key, _ in METRICS:
        x = np.asarray([m[key] for m in draws.metrics], dtype=float)
        out["metrics"][key] = {name: float(np.quantile(x, q)) for name, q in QUANTILES.items()}
    for values, metrics in zip(draws.values, draws.metrics, strict=True):
        out["draws"].append({"values": values, "metrics": metrics})
    return out
