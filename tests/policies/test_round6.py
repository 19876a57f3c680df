"""`round6` gives exactly round(x, 6): the same double, bit for bit (the batch latencies
in every run's records go through it)."""

from __future__ import annotations

import math
import struct

from hypothesis import given
from hypothesis import strategies as st

from rlsim.policies.phases import round6


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


@given(st.floats(allow_nan=False))
def test_any_float(x: float) -> None:
    assert bits(round6(x)) == bits(round(x, 6))


@given(st.integers(min_value=0, max_value=10**10))
def test_near_decimal_halves(n: int) -> None:
    # The hard cases: x * 1e6 at or next to a half-integer, and at an integer.
    for x in ((n + 0.5) / 1e6, math.nextafter((n + 0.5) / 1e6, 0.0),
              math.nextafter((n + 0.5) / 1e6, math.inf), n / 1e6):
        assert bits(round6(x)) == bits(round(x, 6)), x


def test_edges() -> None:
    for x in (0.0, -0.0, -1e-7, -3.3, 1e-300, 5e-7, 1.5e-6, 2.5e-6, 7999.9999995,
              8000.0000005, 1e12, math.inf, -math.inf):
        assert bits(round6(x)) == bits(round(x, 6)), x
    assert math.isnan(round6(math.nan))
