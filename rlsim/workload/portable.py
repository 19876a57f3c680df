"""The exponential the simulation draws with, computed the same on every machine.

Owns `exp`, used wherever a random draw goes through an exponential (lognormal lengths and
latencies). numpy's `np.exp` picks its float64 kernel by CPU: with AVX-512 it runs a SIMD
kernel of its own, elsewhere the C library's `exp`; both are within one unit in the last
place (ULP) but they round differently, so the same scenario and seed gave records that
differ in the last bit between an AVX-512 machine and an AVX2 one (issue 34: five golden
scenarios; reproduced here with NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL").

`exp` uses only IEEE-754 operations that every machine rounds identically (+, -, *, /,
round-to-integer, scaling by a power of two), each a separate numpy ufunc so no compiler can
fuse them: the result is the same bits on any CPU and any numpy build. The method is the
classic one of fdlibm's e_exp.c (Sun Microsystems, 1993): reduce x = k ln2 + r with ln2 split
in two parts (Cody and Waite) so that r is exact to ~2^-80, approximate exp(r) on |r| <=
ln2/2 by a degree-5 minimax rational form in r^2, and scale by 2^k. Its error is below 1 ULP
(tests/workload/test_portable.py checks it against the C library on a million points).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

# ln2 in two parts: LN2_HI has its low 32 bits zero, so k * LN2_HI is exact for |k| < 2^20.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
# Remez coefficients of R(t) = r (exp(r) + 1) / (exp(r) - 1) - 2 in t = r^2 on |r| <= ln2/2.
_P1 = 1.66666666666666019037e-01
_P2 = -2.77777777770155933842e-03
_P3 = 6.61375632143793436117e-05
_P4 = -1.65339022054652515390e-06
_P5 = 4.13813679705723846039e-08
# Beyond these exp(x) overflows to inf or underflows to 0 in float64.
_OVERFLOW = 7.09782712893383973096e02
_UNDERFLOW = -7.45133219101941108420e02


def exp(x: ArrayLike) -> NDArray[np.float64]:
    """e**x elementwise, bit-identical on every machine (see the module docstring); inf
    above ~709.78, 0 below ~-745.13, nan for nan."""
    given = np.asarray(x, dtype=np.float64)
    xs = given.reshape(-1)  # at least one dimension: the steps below write in place
    # The steps write into a few buffers instead of a new array each (a batch's draws are
    # large enough that every new array is fresh pages from the OS); the same operations
    # on the same operands, in the same order, so the same bits.
    # Clipped so that k stays within ldexp's range, nan computed as 0 (both set below).
    inside = np.clip(xs, _UNDERFLOW, _OVERFLOW)
    np.nan_to_num(inside, copy=False, nan=0.0)
    k = np.multiply(inside, _INV_LN2)
    np.rint(k, out=k)
    hi = np.multiply(k, _LN2_HI)
    np.subtract(inside, hi, out=hi)  # hi = inside - k ln2_hi
    lo = np.multiply(k, _LN2_LO, out=inside)  # inside is not read again
    r = np.subtract(hi, lo)
    t = np.multiply(r, r)
    # c = r - t (P1 + t (P2 + t (P3 + t (P4 + t P5))))
    c = np.multiply(t, _P5)
    for coef in (_P4, _P3, _P2, _P1):
        np.add(c, coef, out=c)
        np.multiply(c, t, out=c)
    np.subtract(r, c, out=c)
    # y = 1 - ((lo - (r c) / (2 - c)) - hi)
    np.multiply(r, c, out=r)  # r c
    np.subtract(2.0, c, out=c)  # 2 - c
    np.divide(r, c, out=r)
    np.subtract(lo, r, out=r)
    np.subtract(r, hi, out=r)
    np.subtract(1.0, r, out=r)
    out = np.ldexp(r, k.astype(np.int32), out=t)
    out[xs > _OVERFLOW] = np.inf
    out[xs < _UNDERFLOW] = 0.0
    out[np.isnan(xs)] = np.nan
    return out.reshape(given.shape)
