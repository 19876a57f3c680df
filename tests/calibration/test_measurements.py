"""`median_of_passes`: several calibration passes combined point by point."""

from __future__ import annotations

import pytest

from calibration.measurements import Measurement, MeasurementSet, median_of_passes
from tests.calibration.synthetic import synthetic_set


def _point(bench: str, t: float, **params: int | str) -> Measurement:
    return Measurement(bench=bench, params=dict(params), median_s=t, p10_s=0.9 * t,
                       p90_s=1.2 * t, reps=7)


def _pass(base: MeasurementSet, points: list[Measurement]) -> MeasurementSet:
    return base.model_copy(update={"measurements": points})


BASE = synthetic_set()


def test_one_slow_pass_of_three_does_not_move_a_point() -> None:
    quiet = [_point("engine_decode", 1.0e-3, batch=1), _point("forward", 20e-3, tokens=512)]
    slow = [_point("engine_decode", 1.9e-3, batch=1), _point("forward", 35e-3, tokens=512)]
    other = [_point("engine_decode", 1.1e-3, batch=1), _point("forward", 21e-3, tokens=512)]
    out = median_of_passes([_pass(BASE, slow), _pass(BASE, quiet), _pass(BASE, other)])
    assert [m.median_s for m in out.measurements] == [1.1e-3, 21e-3]
    # Each point is one pass's measurement, whole (its spread and repetitions too).
    assert out.measurements[0] == other[0]


def test_two_passes_keep_the_faster() -> None:
    a = _pass(BASE, [_point("engine_prefill", 3e-3, tokens=16)])
    b = _pass(BASE, [_point("engine_prefill", 5e-3, tokens=16)])
    assert median_of_passes([b, a]).measurements[0].median_s == 3e-3


def test_a_repeated_shape_is_matched_by_its_occurrence() -> None:
    # A trace can run the same shape twice: its k-th occurrence meets the k-th of the
    # other passes, not a median of all of them.
    p1 = [_point("engine_trace", 1e-3, decode=4), _point("engine_trace", 5e-3, decode=4)]
    p2 = [_point("engine_trace", 2e-3, decode=4), _point("engine_trace", 6e-3, decode=4)]
    p3 = [_point("engine_trace", 3e-3, decode=4), _point("engine_trace", 7e-3, decode=4)]
    out = median_of_passes([_pass(BASE, p) for p in (p1, p2, p3)])
    assert [m.median_s for m in out.measurements] == [2e-3, 6e-3]


def test_points_of_one_pass_only_are_kept_in_order() -> None:
    full = [_point("gemm", 1e-4, m=1), _point("engine_decode", 1e-3, batch=1)]
    later = [_point("engine_decode", 3e-3, batch=1), _point("engine_decode", 2e-3, batch=2)]
    out = median_of_passes([_pass(BASE, full), _pass(BASE, later)])
    assert [(m.bench, m.params, m.median_s) for m in out.measurements] == [
        ("gemm", {"m": 1}, 1e-4), ("engine_decode", {"batch": 1}, 1e-3),
        ("engine_decode", {"batch": 2}, 2e-3)]
    assert out.device == BASE.device and out.quick == BASE.quick


def test_passes_of_different_devices_or_grids_are_refused() -> None:
    other = BASE.model_copy(update={"device": BASE.device.model_copy(update={"name": "B"})})
    later = BASE.model_copy(update={"device": BASE.device.model_copy(update={"created": "x"})})
    assert median_of_passes([BASE, later]).device == BASE.device  # the first pass's time
    with pytest.raises(ValueError, match="different devices"):
        median_of_passes([BASE, other])
    with pytest.raises(ValueError, match="different devices or grids"):
        median_of_passes([BASE, BASE.model_copy(update={"quick": not BASE.quick})])
    with pytest.raises(ValueError, match="no passes"):
        median_of_passes([])
