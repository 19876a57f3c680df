"""Numeric reductions for plots: time-binned step functions, interval occupancy, CDFs.

Owns every downsampling of a series (as opposed to a timeline): each function returns at
most a fixed number of points however long the input, so figure size does not grow with
the run.
"""

from __future__ import annotations

import numpy as np

CDF_POINTS = 400
"""Points drawn per CDF: quantiles at evenly spaced probabilities."""


def step_integral(t: np.ndarray, v: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Integral from -inf to each `at` of the step function that is 0 before t[0] and v[i]
    from t[i] until t[i+1] (t sorted). Exact: the integral is piecewise linear."""
    if len(t) == 0:
        return np.zeros(len(at))
    cum = np.concatenate(([0.0], np.cumsum(v[:-1] * np.diff(t))))
    i = np.searchsorted(t, at, side="right") - 1
    inside = i >= 0
    ic = np.clip(i, 0, None)
    return np.where(inside, cum[ic] + v[ic] * (at - t[ic]), 0.0)


def binned_step_mean(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-weighted mean of a step function (see `step_integral`) over each bin."""
    integral = step_integral(t, v, edges)
    return np.diff(integral) / np.diff(edges)


def occupancy(t0: np.ndarray, t1: np.ndarray, weight: np.ndarray,
              edges: np.ndarray) -> np.ndarray:
    """Mean over each bin of the summed weight of the intervals [t0, t1) covering it (e.g.
    GPUs busy), computed from +weight/-weight events in O(n log n)."""
    times = np.concatenate((t0, t1))
    deltas = np.concatenate((weight, -weight))
    order = np.argsort(times, kind="stable")
    level = np.cumsum(deltas[order])
    return binned_step_mean(times[order], level, edges)


def time_edges(end_s: float, bins: int) -> np.ndarray:
    return np.linspace(0.0, end_s if end_s > 0 else 1.0, bins + 1)


def cdf_points(values: np.ndarray, points: int = CDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(x, F(x)) of the empirical CDF, exact for small samples and quantile-sampled above
    `points` values (the curve is then accurate to 1/points in probability)."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0:
        return x, x
    if n <= points:
        # Start at (min, 0) so the curve rises from zero instead of from 1/n.
        return np.concatenate(([x[0]], x)), np.arange(0, n + 1) / n
    p = np.linspace(0.0, 1.0, points)
    return np.quantile(x, p), p


def round_to(values: np.ndarray, resolution: float) -> np.ndarray:
    """Round to the decimals that keep `resolution`: shorter JSON, no visible change."""
    if resolution <= 0 or not np.isfinite(resolution):
        return values
    decimals = int(max(0, min(9, -np.floor(np.log10(resolution)))))
    return np.round(values, decimals)
