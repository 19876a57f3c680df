"""Least-squares solvers and error metrics every family's fit uses.

Relative soft-L1 fits (`fit_relative`: outliers of a noisy machine do not dominate),
absolute fits for a grid's total time (`fit_total`), the affine law `affine` (latency +
size / bandwidth), column extraction from measurements (`arrays`), and the mean and maximum
relative errors of the report (`mape`, `max_err`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import least_squares

from calibration.measurements import Measurement

Array = NDArray[np.float64]

# Soft-L1 residual scale: relative errors beyond ~5% count linearly (outliers of a noisy
# machine do not dominate), smaller ones quadratically.
F_SCALE = 0.05


def mape(pred: Sequence[float], meas: Sequence[float]) -> float:
    if not meas:
        return float("nan")
    return float(np.mean([abs(p / m - 1.0) for p, m in zip(pred, meas, strict=True)]))


def max_err(pred: Sequence[float], meas: Sequence[float]) -> float:
    if not meas:
        return float("nan")
    return float(max(abs(p / m - 1.0) for p, m in zip(pred, meas, strict=True)))


def fit_relative(
    fn: Callable[[Array], Array], measured: Array, x0: Sequence[float],
    lower: Sequence[float], upper: Sequence[float], starts: Sequence[Sequence[float]] = (),
) -> Array:
    """argmin of soft-L1 relative residuals of `fn(x)` against `measured`, best of starts."""

    def residual(x: Array) -> Array:
        out: Array = fn(x) / measured - 1.0
        return out

    best = None
    for start in (x0, *starts):
        x = np.clip(np.asarray(start, float), lower, upper)
        res = least_squares(residual, x, bounds=(lower, upper), loss="soft_l1",
                            f_scale=F_SCALE, x_scale="jac")
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    out: Array = best.x
    return out


def fit_total(fn: Callable[[Array], Array], measured: Array, x0: Sequence[float],
              lower: Sequence[float], upper: Sequence[float],
              starts: Sequence[Sequence[float]]) -> Array:
    """argmin of the squared absolute errors of `fn(x)` (scaled by the mean), best of
    starts: each point weighs by its seconds, so the fit holds the points' total time."""
    scale = float(np.mean(measured))
    best = None
    for start in (x0, *starts):
        x = np.clip(np.asarray(start, float), lower, upper)
        res = least_squares(lambda p: (fn(p) - measured) / scale, x, bounds=(lower, upper),
                            x_scale="jac")
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    out: Array = best.x
    return out


def affine(x: Array, y: Array, relative: bool = True) -> tuple[float, float]:
    """(intercept >= 0, slope >= 0) of y ~ a + b x, on relative error, or on absolute
    error when the slope must hold for sizes far beyond the grid (bandwidths of GB-scale
    moves: the largest points decide it)."""
    b0 = float(np.max(y) / max(np.max(x), 1e-30))
    a0 = float(np.min(y) / 2)
    if relative:
        res = fit_relative(lambda p: p[0] + p[1] * x, y, [a0, b0], [0.0, 0.0],
                           [np.inf, np.inf])
        return float(res[0]), float(res[1])
    fit = least_squares(lambda p: (p[0] + p[1] * x - y) / np.max(y), [a0, b0],
                        bounds=([0.0, 0.0], [np.inf, np.inf]), x_scale="jac")
    return float(fit.x[0]), float(fit.x[1])


def arrays(ms: Sequence[Measurement], *keys: str) -> tuple[Array, ...]:
    """One float column per params key, then the medians."""
    cols = [np.array([float(m.params[k]) for m in ms]) for k in keys]
    return (*cols, np.array([m.median_s for m in ms]))
