"""What a set of draws answers: intervals, ratios, the probability of being best, indices.

Owns reading the draws' rows back (`collect`: one array of headline metrics per grid
setting, plan and draw, with each run's model-error multiplier applied) and the
documents `rlsim run|compare|sweep --draws` print (`--json` shapes: docs/uncertainty.md).
A run that gave no metrics (its drawn scenario is invalid, or it raised) is left out of
every quantile and named in `failures`; a comparison counts only the draws every plan ran.
Quantiles are empirical (numpy's linear interpolation) over the draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from rlsim.config.errors import ScenarioError
from rlsim.draws.design import DISCREPANCY, model_sigmas
from rlsim.draws.spec import DrawSpec, settings_of
from rlsim.sweep.spec import ERROR_COLUMN, PointContext
from rlsim.sweep.worker import validate

METRICS: tuple[tuple[str, str], ...] = (
    ("step_time_s.mean", "step time mean (s)"),
    ("throughput.samples_per_s", "samples/s"),
    ("throughput.tokens_per_s", "tokens/s"),
    ("goodput_samples_per_s", "goodput (samples/s)"),
    ("cost.usd_per_1k_samples", "$/1k samples"),
)
"""The headline metrics every draw reports (dotted summary keys, and their labels)."""

SCALE = {"step_time_s.mean": 1, "throughput.samples_per_s": -1,
         "throughput.tokens_per_s": -1, "goodput_samples_per_s": -1,
         "cost.usd_per_1k_samples": 1}
"""How a model-error multiplier f on the time a run takes moves each metric: x f or / f."""

BETTER = {"step_time_s.mean": "min", "throughput.samples_per_s": "max",
          "throughput.tokens_per_s": "max", "goodput_samples_per_s": "max",
          "cost.usd_per_1k_samples": "min"}
"""Which way each headline metric is better, for the probability of being best."""

QUANTILES = {"p2_5": 0.025, "p10": 0.10, "median": 0.5, "p90": 0.90, "p97_5": 0.975}


@dataclass(frozen=True)
class Collected:
    """Every run's headline metrics: `metrics[setting, plan, draw, m]` (NaN: no metrics)."""

    spec: DrawSpec
    metrics: np.ndarray
    failures: tuple[str, ...]   # one line per run without metrics
    rows: dict[int, dict[str, Any]]  # point -> its row, for the runs that gave metrics
    factors: np.ndarray         # [setting, plan, draw]: the model-error multiplier

    def finite(self, setting: int, plans: list[int]) -> np.ndarray:
        """The draws every one of `plans` ran at `setting` (a boolean mask)."""
        return np.all(np.isfinite(self.metrics[setting, plans]), axis=(0, 2))


def collect(spec: DrawSpec, ctx: PointContext, table: pa.Table,
            crashed: dict[int, str] | None = None) -> Collected:
    """The rows of `table` as `Collected`; `crashed`: point -> why, for runs that raised."""
    shape = (spec.settings, len(spec.plans), len(spec.values), len(METRICS))
    out = np.full(shape, np.nan)
    failures = []
    rows = {int(r["point"]): r for r in table.to_pylist()}
    factors = _factors(spec, ctx)
    ok: dict[int, dict[str, Any]] = {}
    for pid in range(spec.n_points):
        s, d, p = spec.index(pid)
        row = rows.get(pid)
        why = (crashed or {}).get(pid) if row is None else row.get(ERROR_COLUMN)
        if row is None or why is not None:
            where = "".join(f", {a}" for a in settings_of(spec)[s]) if spec.grid else ""
            failures.append(f"draw {d} ({spec.plans[p].label}{where}): "
                            f"{why or 'not run (interrupted?)'}")
            continue
        ok[pid] = row
        row = scaled(row, factors[s, p, d])
        for m, (key, _) in enumerate(METRICS):
            value = row.get(key)
            if value is not None:
                out[s, p, d, m] = float(value)
    return Collected(spec, out, tuple(failures), ok, factors)


def scaled(row: dict[str, Any], factor: float) -> dict[str, Any]:
    """A run's flattened summary with its time multiplied by the model-error `factor`:
    each `SCALE` metric times `factor` or divided by it; the others as they are."""
    return {k: float(v) * factor ** SCALE[k] if k in SCALE and v is not None else v
            for k, v in row.items()}


def _factors(spec: DrawSpec, ctx: PointContext) -> np.ndarray:
    """Each run's model-error multiplier exp(sum sigma_k z_k) over the model-error
    dimensions that apply to its plan (1 without model error). The sigmas are read off the
    scenario of the setting and plan (its first draw that validates: they do not depend on
    the drawn values, which set no framework, policy or GPUs)."""
    out = np.ones((spec.settings, len(spec.plans), len(spec.values)))
    errors = [d for d in spec.dims if not d.fields]
    if not errors:
        return out
    z = np.asarray([[v[d.key] for d in errors] for v in spec.values])
    for s in range(spec.settings):
        for p in range(len(spec.plans)):
            scenario = None
            for d in range(len(spec.values)):
                try:
                    pid = (s * len(spec.values) + d) * len(spec.plans) + p
                    scenario = validate(ctx, spec.point(pid)).scenario
                    break
                except ScenarioError:
                    continue
            if scenario is None:
                continue  # no valid run to scale
            sigmas = model_sigmas(scenario, spec.profile)
            sigma = np.asarray([
                0.0 if p not in d.plans else sigmas.get(
                    "discrepancy" if d.key.startswith(DISCREPANCY) else "regime", 0.0)
                for d in errors])
            out[s, p] = np.exp(z @ sigma)
    return out


def quantiles(x: np.ndarray) -> dict[str, float] | None:
    """The QUANTILES of the finite values of `x`; None when there are none."""
    x = x[np.isfinite(x)]
    if not x.size:
        return None
    return {name: float(np.quantile(x, q)) for name, q in QUANTILES.items()}


def _head(c: Collected) -> dict[str, Any]:
    return {"n": len(c.spec.values), "unknowns": list(c.spec.unknowns),
            "failures": list(c.failures)}


def interval_doc(c: Collected, setting: int = 0, plan: int = 0) -> dict[str, Any]:
    """`rlsim run --draws`: per metric its quantiles over the draws (median, 80% interval
    p10-p90, 95% interval p2_5-p97_5), and every draw's values and metrics."""
    m = c.metrics[setting, plan]
    ok = np.all(np.isfinite(m), axis=1)
    doc = _head(c)
    doc["ran"] = int(ok.sum())
    doc["metrics"] = {key: quantiles(m[:, i]) for i, (key, _) in enumerate(METRICS)}
    doc["draws"] = [{"values": values, "metrics": {key: float(m[d, i])
                                                   for i, (key, _) in enumerate(METRICS)}}
                    for d, values in enumerate(c.spec.values) if ok[d]]
    return doc


def tied_best(values: np.ndarray) -> np.ndarray:
    """Which of `values` (larger is better) are the best, ties within 1e-9 relative
    included: a draw's winners, who share its win."""
    return np.isclose(values, values.max(), rtol=1e-9, atol=0.0)


def p_best(c: Collected, cells: list[tuple[int, int]],
           mask: np.ndarray) -> dict[str, list[float | None]]:
    """Per metric, the share of the `mask`ed draws in which each (setting, plan) cell is
    best (ties shared)."""
    out: dict[str, list[float | None]] = {}
    n = int(mask.sum())
    for i, (key, _) in enumerate(METRICS):
        x = np.stack([c.metrics[s, p, :, i] for s, p in cells])[:, mask]  # cells x draws
        wins = np.zeros(len(cells))
        for d in range(n):
            tied = tied_best(x[:, d] if BETTER[key] == "max" else -x[:, d])
            wins += tied / tied.sum()
        out[key] = [float(w / n) if n else None for w in wins]  # None: no draw ran all
    return out


def compare_doc(c: Collected, setting: int = 0) -> dict[str, Any]:
    """`rlsim compare --draws`: per plan its metrics' quantiles; per plan after the first,
    each metric's ratio to the first plan's, draw by draw, as quantiles; per metric the
    share of draws in which each plan is best. Only draws every plan ran count."""
    plans = list(range(len(c.spec.plans)))
    mask = c.finite(setting, plans)
    labels = [p.label for p in c.spec.plans]
    m = c.metrics[setting][:, mask]  # plans x draws x metrics
    doc = _head(c)
    doc["ran"] = int(mask.sum())
    doc["runs"] = [{"label": label, "metrics": {key: quantiles(m[p, :, i])
                                                for i, (key, _) in enumerate(METRICS)}}
                   for p, label in enumerate(labels)]
    with np.errstate(divide="ignore", invalid="ignore"):
        doc["ratios"] = {label: {key: quantiles(m[p, :, i] / m[0, :, i])
                                 for i, (key, _) in enumerate(METRICS)}
                         for p, label in enumerate(labels) if p}
    shares = p_best(c, [(setting, p) for p in plans], mask)
    doc["p_best"] = {key: dict(zip(labels, v, strict=True)) for key, v in shares.items()}
    return doc


def sweep_doc(c: Collected) -> dict[str, Any]:
    """`rlsim sweep --draws`: per grid setting (and plan) its metrics' quantiles, and per
    metric the share of draws in which each setting is best (draws every setting ran)."""
    cells = [(s, p) for s in range(c.spec.settings) for p in range(len(c.spec.plans))]
    mask = np.all(np.isfinite(c.metrics), axis=(0, 1, 3))
    names = settings_of(c.spec)
    doc = _head(c)
    doc["ran"] = int(mask.sum())
    doc["settings"] = [{"set": list(names[s]), "plan": c.spec.plans[p].label,
                        "metrics": {key: quantiles(c.metrics[s, p, :, i])
                                    for i, (key, _) in enumerate(METRICS)}}
                       for s, p in cells]
    shares = p_best(c, cells, mask)
    for i, cell in enumerate(doc["settings"]):
        cell["p_best"] = {key: v[i] for key, v in shares.items()}
    return doc


def _indices(values: np.ndarray, c: Collected, rows: np.ndarray) -> list[dict[str, Any]]:
    """Each unknown's Sobol indices of `values` (one per run of the design) over the base
    rows `rows`, largest total first."""
    from rlsim.sensitivity import ranked, sobol_indices

    names = list(c.spec.unknowns)
    idx = sobol_indices(values, c.spec.base, len(names), rows=rows)
    return [{"unknown": name, "first": x.first, "first_ci": list(x.first_ci),
             "total": x.total, "total_ci": list(x.total_ci), "ranked_apart": apart}
            for name, x, apart in ranked(names, idx)]


def sensitivity_rows(c: Collected, setting: int = 0) -> np.ndarray:
    """The design's base rows whose every run gave every metric, for every plan (a ratio
    needs both of its runs): what the indices are estimated over, one set for all metrics.
    A run without metrics leaves its base row out; fewer than two left is an error."""
    from rlsim.sensitivity import complete_rows

    m = c.metrics[setting]  # plans x runs x metrics
    rows = complete_rows(np.moveaxis(m, 1, -1), c.spec.base, len(c.spec.unknowns))
    if int(rows.sum()) < 2:
        raise ScenarioError("--sensitivity", f"{len(c.failures)} of {c.spec.n_points} "
                            f"runs gave no metrics (the first: {c.failures[0]}), leaving "
                            f"{int(rows.sum())} of {c.spec.base} base rows with every run; "
                            "the indices need two: narrow the unknowns")
    return rows


def sensitivity_base_rows(c: Collected, setting: int = 0) -> dict[str, int]:
    """How many of the design's base rows the indices use (`sensitivity_rows`)."""
    return {"used": int(sensitivity_rows(c, setting).sum()), "of": c.spec.base}


def sensitivity_doc(c: Collected, setting: int = 0, plan: int = 0
                    ) -> dict[str, list[dict[str, Any]]]:
    """Per headline metric, each unknown's first-order and total Sobol indices with their
    bootstrap 95% intervals, largest total first (`ranked_apart`: its interval clears the
    next one's), over the base rows with every run (`sensitivity_rows`)."""
    m = c.metrics[setting, plan]
    rows = sensitivity_rows(c, setting)
    return {key: _indices(m[:, i], c, rows) for i, (key, _) in enumerate(METRICS)}


RATIO_METRICS = ("throughput.samples_per_s", "throughput.tokens_per_s")
"""The ratios whose indices a comparison reports."""


def compare_sensitivity_doc(c: Collected, setting: int = 0) -> dict[str, Any]:
    """`compare --draws --sensitivity`: per variant its metrics' indices (`runs`), and per
    variant after the first the indices of its ratios to the first (`ratios`)."""
    m = c.metrics[setting]
    rows = sensitivity_rows(c, setting)
    labels = [p.label for p in c.spec.plans]
    keys = [k for k, _ in METRICS]
    return {"runs": {label: sensitivity_doc(c, setting, p) for p, label in enumerate(labels)},
            "ratios": {label: {key: _indices(m[p, :, keys.index(key)]
                                             / m[0, :, keys.index(key)], c, rows)
                               for key in RATIO_METRICS}
                       for p, label in enumerate(labels) if p}}
