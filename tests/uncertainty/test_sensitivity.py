"""Sobol indices (rlsim.sensitivity) against closed forms: a metric linear in one unknown
and independent of another, an additive pair, and the Ishigami function."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlsim.sensitivity import ranked, saltelli_design, sobol_indices

N = 1024


def _indices(f, d: int):
    design = saltelli_design(d, N, seed=5)
    return sobol_indices(np.asarray([f(x) for x in design.points()]), N, d)


def test_linear_in_one_unknown_independent_of_the_other() -> None:
    idx = _indices(lambda x: 3.0 * x[0] + 1.0, 2)
    assert idx[0].first == pytest.approx(1.0, abs=0.05)
    assert idx[0].total == pytest.approx(1.0, abs=0.05)
    assert abs(idx[1].first) <= 0.05 and abs(idx[1].total) <= 0.05
    names = [name for name, _, _ in ranked(["a", "b"], idx)]
    assert names == ["a", "b"] and ranked(["a", "b"], idx)[0][2]


def test_an_additive_pair_splits_the_variance_by_its_shares() -> None:
    # f = x0 + 2 x1 on uniforms: variances 1/12 and 4/12, so S = 0.2 and 0.8
    idx = _indices(lambda x: x[0] + 2.0 * x[1], 2)
    for i, exact in enumerate((0.2, 0.8)):
        assert idx[i].first == pytest.approx(exact, abs=0.05)
        assert idx[i].total == pytest.approx(exact, abs=0.05)
        lo, hi = idx[i].total_ci
        assert lo <= idx[i].total <= hi


def test_ishigami() -> None:
    a, b = 7.0, 0.1

    def f(u):
        x = -math.pi + 2 * math.pi * u
        return math.sin(x[0]) + a * math.sin(x[1]) ** 2 + b * x[2] ** 4 * math.sin(x[0])

    idx = _indices(f, 3)
    # exact: S = 0.314, 0.442, 0; ST = 0.558, 0.442, 0.244
    for i, (s, st) in enumerate(((0.314, 0.558), (0.442, 0.442), (0.0, 0.244))):
        assert idx[i].first == pytest.approx(s, abs=0.05)
        assert idx[i].total == pytest.approx(st, abs=0.05)


def test_a_base_row_with_a_failed_run_is_left_out_whole() -> None:
    """A run without metrics (NaN) drops its base row, A, B and every AB_i of it: the
    indices are those of the design without that row, and still near the closed form."""
    from rlsim.sensitivity import complete_rows

    d = 2
    design = saltelli_design(d, N, seed=5)
    values = np.asarray([3.0 * x[0] + 1.0 for x in design.points()])
    lost = values.copy()
    lost[N + 7] = np.nan          # f(B) of base row 7
    lost[2 * N + N + 100] = np.nan  # f(AB_1) of base row 100
    rows = complete_rows(lost, N, d)
    assert int(rows.sum()) == N - 2 and not rows[7] and not rows[100]
    got = sobol_indices(lost, N, d)
    want = sobol_indices(values, N, d, rows=rows)
    assert got == want
    assert got[0].total == pytest.approx(1.0, abs=0.05) and abs(got[1].total) <= 0.05
    with pytest.raises(ValueError, match="base rows"):
        sobol_indices(np.where(np.arange(values.size) < N - 1, np.nan, values), N, d)
