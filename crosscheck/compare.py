"""Comparison arithmetic of the engine cross-checks. Standard library only.

A side's result is the completion time (s) of every request of a batch, all submitted at
t = 0, in request order. From it: the makespan (the last completion) and the p50/p90/p99
of the completion times (linear interpolation between closest ranks, numpy's default
`percentile` method), and the relative error of rlsim against the reference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

QUANTILES = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0 <= q <= 1) by linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of an empty list")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(completions_s: Sequence[float]) -> dict[str, float]:
    """makespan_s and the completion-time quantiles (p50_s, p90_s, p99_s)."""
    if not completions_s:
        raise ValueError("no completion times")
    if any(not math.isfinite(t) or t < 0 for t in completions_s):
        raise ValueError("completion times must be finite and >= 0")
    out = {"makespan_s": max(completions_s)}
    for name, q in QUANTILES:
        out[f"{name}_s"] = percentile(completions_s, q)
    return out


def rel_error(value: float, reference: float) -> float:
    """(value - reference) / reference."""
    if reference <= 0:
        raise ValueError(f"reference must be > 0, got {reference}")
    return (value - reference) / reference


def compare(rlsim_s: Sequence[float], reference_s: Sequence[float]) -> dict[str, dict[str, float]]:
    """Per metric: rlsim's value, the reference's, and the relative error."""
    if len(rlsim_s) != len(reference_s):
        raise ValueError(f"{len(rlsim_s)} rlsim completions against {len(reference_s)} "
                         "reference completions: the two sides ran different batches")
    a, b = summary(rlsim_s), summary(reference_s)
    return {k: {"rlsim": a[k], "reference": b[k], "error": rel_error(a[k], b[k])} for k in a}
