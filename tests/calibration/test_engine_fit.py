"""The per-family host-term fit (calibration/engine_fit.py): prices linear in both terms,
known terms recovered from points priced with them, non-negative terms, validation points
never fitted, and intervals that hold the estimate."""

from __future__ import annotations

import dataclasses

import pytest

from calibration.engine_check import check
from calibration.engine_fit import (
    calibration_rows,
    fit_family,
    fit_fixed,
    fit_rows,
    report,
    rows,
)
from calibration.engine_points import load_points

POINTS = load_points()
ROWS = rows(POINTS)


def test_every_price_is_linear_in_the_two_terms() -> None:
    for r in ROWS[::7]:
        direct = check(r.point, (1.3e-3, 47e-6)).predicted_ms
        assert direct == pytest.approx(r.predicted_ms(1.3e-3, 47e-6), rel=1e-9)


def test_terms_used_to_price_the_points_are_recovered() -> None:
    cal = calibration_rows(ROWS, "vllm")
    synthetic = [dataclasses.replace(r, measured_ms=r.predicted_ms(0.8e-3, 30e-6))
                 for r in cal]
    fixed, per_seq = fit_rows(synthetic)
    assert fixed == pytest.approx(0.8e-3, rel=1e-6)
    assert per_seq == pytest.approx(30e-6, rel=1e-6)
    assert fit_fixed(synthetic, 30e-6) == pytest.approx(0.8e-3, rel=1e-6)


def test_terms_are_never_negative() -> None:
    cal = calibration_rows(ROWS, "sglang")
    faster = [dataclasses.replace(r, measured_ms=0.5 * r.a) for r in cal]
    assert fit_rows(faster) == (0.0, 0.0)


def test_only_calibration_points_with_graphs_are_fitted() -> None:
    for family in ("vllm", "sglang"):
        cal = calibration_rows(ROWS, family)
        assert cal and all(r.point.side == "calibrate" and r.point.engine == family
                           and r.point.cuda_graphs is not False for r in cal)
    # moving a validation point's measurement does not move the fit
    f = fit_family(ROWS, "vllm")
    moved = [dataclasses.replace(r, measured_ms=10 * r.measured_ms)
             if r.point.side == "validate" else r for r in ROWS]
    assert fit_family(moved, "vllm") == f


def test_the_intervals_hold_the_estimate_and_repeat() -> None:
    f = fit_family(ROWS, "sglang")
    assert f is not None and f.sources >= 5
    assert f.fixed_interval[0] <= f.fixed_s <= f.fixed_interval[1]
    assert f.per_seq_interval[0] <= f.per_seq_s <= f.per_seq_interval[1]
    assert fit_family(ROWS, "sglang") == f
    text = "\n".join(report(ROWS, (2e-3, 0.0)))
    assert "| vllm |" in text and "| sglang |" in text
