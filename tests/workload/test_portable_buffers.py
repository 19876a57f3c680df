"""The portable `exp` writing into buffers gives the bits of its formula written plainly
(one new array per step, as first written), for every shape, and leaves its input alone."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rlsim.workload import portable as p
from rlsim.workload.portable import exp


def _plain(x: object) -> np.ndarray:
    xs = np.asarray(x, dtype=np.float64)
    inside = np.nan_to_num(np.clip(xs, p._UNDERFLOW, p._OVERFLOW), nan=0.0)
    k = np.rint(inside * p._INV_LN2)
    hi = inside - k * p._LN2_HI
    lo = k * p._LN2_LO
    r = hi - lo
    t = r * r
    c = r - t * (p._P1 + t * (p._P2 + t * (p._P3 + t * (p._P4 + t * p._P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    out = np.ldexp(y, k.astype(np.int32))
    out = np.where(xs > p._OVERFLOW, np.inf, out)
    out = np.where(xs < p._UNDERFLOW, 0.0, out)
    return np.where(np.isnan(xs), np.nan, out)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=40),
                  elements=st.floats(allow_nan=True, allow_infinity=True, width=64)))
def test_same_bits_as_the_plain_formula(x: np.ndarray) -> None:
    before = x.copy()
    got, want = exp(x), _plain(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert np.array_equal(x, before, equal_nan=True)


def test_scalars_and_lists() -> None:
    for x in (2.5, -3.0, [1.0, 700.0, -800.0], np.float64(0.1)):
        got, want = exp(x), _plain(x)
        assert got.shape == want.shape
        assert np.array_equal(np.atleast_1d(got).view(np.int64),
                              np.atleast_1d(want).view(np.int64))
