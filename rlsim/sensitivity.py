"""Global sensitivity: which unknown a metric's spread comes from (issue 39).

SimPy-free and simulator-free (numpy and scipy only). Owns the Saltelli design
(`saltelli_design`: two scrambled-Sobol matrices A and B of uniform numbers, and for each
unknown i the matrix A with column i from B) and the estimators of Sobol indices on it
(`sobol_indices`): first-order S_i (Saltelli et al. 2010, eq. (b) of its Table 2:
mean(f(B) (f(AB_i) - f(A))) / V) and total ST_i (Jansen 1999: mean((f(A) - f(AB_i))^2) /
(2 V)), V the variance of f over A and B together, each with a bootstrap 95% interval
over the base rows. A design of n base rows costs n (d + 2) evaluations. `ranked` orders
the unknowns by total index and marks those whose intervals overlap the next one's as not
ranked apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOTSTRAP = 500
"""Bootstrap resamples of the base rows for the indices' intervals."""


@dataclass(frozen=True)
class Design:
    """Uniform numbers to evaluate: rows of A, of B, and of each AB_i (all n x d)."""

    a: np.ndarray
    b: np.ndarray
    ab: tuple[np.ndarray, ...]

    def points(self) -> np.ndarray:
        """Every row to evaluate, in the order `sobol_indices` expects: A, B, AB_0 ..."""
        return np.vstack([self.a, self.b, *self.ab])


def saltelli_design(d: int, n: int, seed: int) -> Design:
    """A Saltelli design of `n` base rows over `d` unknowns (scrambled Sobol', seeded)."""
    from scipy.stats import qmc

    if d < 1 or n < 2:
        raise ValueError("a design needs at least one unknown and two base rows")
    both = qmc.Sobol(d=2 * d, scramble=True, seed=seed).random(n)
    a, b = both[:, :d], both[:, d:]
    ab = []
    for i in range(d):
        m = a.copy()
        m[:, i] = b[:, i]
        ab.append(m)
    return Design(a, b, tuple(ab))


@dataclass(frozen=True)
class Indices:
    """One unknown's indices and their bootstrap 95% intervals."""

    first: float
    first_ci: tuple[float, float]
    total: float
    total_ci: tuple[float, float]


def _estimates(fa: np.ndarray, fb: np.ndarray, fab: np.ndarray) -> tuple[np.ndarray, ...]:
    var = np.var(np.concatenate([fa, fb]))
    if var <= 0:
        zeros = np.zeros(fab.shape[0])
        return zeros, zeros
    first = np.mean(fb * (fab - fa), axis=1) / var
    total = 0.5 * np.mean((fa - fab) ** 2, axis=1) / var
    return first, total


def complete_rows(values: np.ndarray, n: int, d: int) -> np.ndarray:
    """Which base rows have every evaluation finite: f(A), f(B) and each f(AB_i) (a run
    without metrics is NaN). `values` has the order of `Design.points()`, a last axis of
    n (d + 2) (leading axes, such as metrics, must all be finite too)."""
    values = np.asarray(values, dtype=float)
    blocks = values.reshape(*values.shape[:-1], d + 2, n)
    finite = np.isfinite(blocks)
    return np.all(finite.reshape(-1, n), axis=0)


def sobol_indices(values: np.ndarray, n: int, d: int, seed: int = 0,
                  rows: np.ndarray | None = None) -> list[Indices]:
    """The indices of each unknown from `values`, f at `Design.points()` (n (d + 2)),
    over the base rows `rows` (a mask; default: every row, `complete_rows`). Each estimator
    is a mean over base rows, so one whose block lost a run is left out whole; at least two
    must remain."""
    values = np.asarray(values, dtype=float)
    if values.shape != (n * (d + 2),):
        raise ValueError(f"expected {n * (d + 2)} values, got {values.shape}")
    keep = complete_rows(values, n, d) if rows is None else rows & complete_rows(values, n, d)
    if int(keep.sum()) < 2:
        raise ValueError(f"only {int(keep.sum())} of {n} base rows have every evaluation; "
                         "the indices need at least two")
    fa, fb = values[:n][keep], values[n:2 * n][keep]
    fab = values[2 * n:].reshape(d, n)[:, keep]
    n = int(keep.sum())
    first, total = _estimates(fa, fb, fab)
    gen = np.random.default_rng(seed)
    boot_first, boot_total = [], []
    for _ in range(BOOTSTRAP):
        rows = gen.integers(0, n, n)
        f1, t1 = _estimates(fa[rows], fb[rows], fab[:, rows])
        boot_first.append(f1)
        boot_total.append(t1)
    lo_f, hi_f = np.percentile(boot_first, [2.5, 97.5], axis=0)
    lo_t, hi_t = np.percentile(boot_total, [2.5, 97.5], axis=0)
    return [Indices(float(first[i]), (float(lo_f[i]), float(hi_f[i])), float(total[i]),
                    (float(lo_t[i]), float(hi_t[i]))) for i in range(d)]


def ranked(names: list[str], indices: list[Indices]) -> list[tuple[str, Indices, bool]]:
    """Unknowns by total index, largest first; the flag says whether it is ranked apart
    from the next (their total intervals do not overlap)."""
    order = sorted(range(len(names)), key=lambda i: -indices[i].total)
    out = []
    for k, i in enumerate(order):
        apart = True
        if k + 1 < len(order):
            nxt = indices[order[k + 1]]
            apart = indices[i].total_ci[0] > nxt.total_ci[1]
        out.append((names[i], indices[i], apart))
    return out
