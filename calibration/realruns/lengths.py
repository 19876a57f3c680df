"""Length distributions for a measured run: a lognormal from the figures a record states.

Owns the capped-lognormal arithmetic (a stated mean of lengths cut at the maximum becomes
the lognormal median that gives it) and the DAPO math trace's measured length shape
(traces/polytrace/dapo-qwen2.5-32b), which supplies the spread (sigma) when a record states
only a mean or a median.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

from calibration.realruns.records import ROOT

DAPO_TRACE = ROOT / "traces" / "polytrace" / "dapo-qwen2.5-32b"


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def capped_lognormal_mean(median: float, sigma: float, cap: float) -> float:
    """E[min(X, cap)] for ln X ~ N(ln median, sigma^2) (a closed form)."""
    mu = math.log(median)
    z = (math.log(cap) - mu) / sigma
    return math.exp(mu + sigma**2 / 2) * _phi(z - sigma) + cap * (1.0 - _phi(z))


def median_for_capped_mean(mean: float, sigma: float, cap: float) -> float:
    """The lognormal median whose lengths, capped at `cap`, have this mean (bisection in
    log space; the capped mean rises monotonically with the median)."""
    if not 0 < mean < cap:
        raise ValueError(f"a mean length of {mean:g} cannot be reached under a cap of {cap:g}")
    lo, hi = math.log(1e-3), math.log(cap) + 12 * sigma
    for _ in range(200):
        mid = (lo + hi) / 2
        if capped_lognormal_mean(math.exp(mid), sigma, cap) < mean:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


@cache
def dapo_lognormal(trace: Path = DAPO_TRACE) -> tuple[float, float]:
    """(median, sigma) of the lognormal fitted to the shipped DAPO math trace's response
    lengths (exp of the mean log length, std of the log lengths): the length shape of a
    math RLVR run, measured (traces/polytrace/README.md)."""
    logs: list[float] = []
    for path in sorted(trace.glob("packed_lengths_step_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if not row.get("validate"):
                logs.extend(math.log(x) for x in row["output"])
    mean = sum(logs) / len(logs)
    sigma = math.sqrt(sum((x - mean) ** 2 for x in logs) / len(logs))
    return math.exp(mean), sigma
