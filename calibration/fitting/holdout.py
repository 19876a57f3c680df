"""The held-back protocol: which grid points each fit leaves out and predicts afterwards.

Owns `holdout_mask` (a deterministic, spread-out quarter of a grid) and `split` (every
benchmark's points into the ones fitted on and the ones held back; only the
`HELD_BACK_BENCHES` grids hold any back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calibration.fitting.predict import HELD_BACK_BENCHES
from calibration.measurements import Measurement, MeasurementSet


def _rank_table(points: Sequence[Mapping[str, Any]]) -> dict[str, dict[Any, int]]:
    keys = sorted({k for p in points for k in p})
    table: dict[str, dict[Any, int]] = {}
    for key in keys:
        values = sorted({p.get(key) for p in points}, key=lambda v: (type(v).__name__, v))
        table[key] = {v: i for i, v in enumerate(values)}
    return table


def holdout_mask(points: Sequence[Mapping[str, Any]], fraction: float = 0.25,
                 seed: int = 0) -> list[bool]:
    """Which grid points to hold back: a deterministic `fraction`, spread over the grid.

    Each point gets its grid coordinates (the rank of its value along every parameter that
    varies); a point is held back when the weighted coordinate sum, with odd weights 1, 3, 5,
    ... in parameter-name order, is `stride // 2 + seed` modulo `stride = round(1 /
    fraction)`. Along every line of the grid (one parameter varying, the others fixed) that
    holds back one point in `stride`, so every value of every parameter keeps most of its
    points in the fit and the held-back points spread over the whole range. The unequal
    weights keep the pattern off the anti-diagonals of geometric grids, where batch x context
    (the KV size) is constant: a plain coordinate sum would hold back only a few KV sizes.
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"holdout_fraction must be in [0, 1), got {fraction}")
    if fraction == 0.0 or len(points) < 2:
        return [False] * len(points)
    stride = max(2, round(1.0 / fraction))
    table = {k: ranks for k, ranks in _rank_table(points).items() if len(ranks) > 1}
    weights = {k: 2 * i + 1 for i, k in enumerate(table)}
    target = (stride // 2 + seed) % stride
    return [sum(weights[k] * table[k][p.get(k)] for k in table) % stride == target
            for p in points]


@dataclass
class Split:
    """One benchmark's points: fitted on (`train`) and held back (`held`)."""

    train: list[Measurement]
    held: list[Measurement]


def split(ms: MeasurementSet, fraction: float, seed: int) -> dict[str, Split]:
    """Every benchmark of `ms` (sorted by name) -> its fitted and held-back points."""
    out: dict[str, Split] = {}
    for bench in sorted({m.bench for m in ms.measurements}):
        points = ms.of(bench)
        if bench in HELD_BACK_BENCHES:
            mask = holdout_mask([m.params for m in points], fraction, seed)
        else:
            mask = [False] * len(points)
        out[bench] = Split([m for m, h in zip(points, mask, strict=True) if not h],
                           [m for m, h in zip(points, mask, strict=True) if h])
    return out

