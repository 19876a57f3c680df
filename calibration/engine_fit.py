"""Each engine family's per-iteration host terms, fitted on the engine points' calibration
side and checked on their validation side (issue 36, item 2).

Owns the fit: for vLLM and SGLang apart, the two existing per-iteration terms of rlsim's
engine, `decode_overhead_s` (fixed, every iteration) and `decode_overhead_per_seq_s` (per
sequence in it), by non-negative least squares on the relative errors of that family's
calibration points run with CUDA graphs, with 95% intervals from resampling the points'
sources (the unit of the split). Nothing else changes: the GPU side is the built-in
profile's. Validation points never enter a fit; their errors are reported before and after.

Every prediction is linear in the two terms (an iteration's overhead is fixed + per_seq x
sequences, and every metric is a sum of iterations over a count), so each point is three
prices: with both terms 0, and with each alone.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from calibration.engine_check import check, median_text
from calibration.engine_points import EnginePoint

FAMILIES = ("vllm", "sglang")
# Unit steps for the linear coefficients (exact: the prices are linear in both terms).
_FIXED_S, _PER_SEQ_S = 1e-3, 1e-5
BOOTSTRAP_DRAWS = 400
SEED = 36


@dataclass(frozen=True)
class Row:
    """One compared point as the fit sees it: measured ms, and the price a + b f + c s."""

    point: EnginePoint
    measured_ms: float
    a: float
    b: float  # ms per second of fixed overhead
    c: float  # ms per second of per-sequence overhead

    def predicted_ms(self, fixed_s: float, per_seq_s: float) -> float:
        return self.a + self.b * fixed_s + self.c * per_seq_s

    def error(self, fixed_s: float, per_seq_s: float) -> float:
        return (self.predicted_ms(fixed_s, per_seq_s) - self.measured_ms) / self.measured_ms


@dataclass(frozen=True)
class Fit:
    """A family's fitted terms, their 95% intervals and the points behind them."""

    family: str
    fixed_s: float
    per_seq_s: float
    fixed_interval: tuple[float, float]
    per_seq_interval: tuple[float, float]
    points: int
    sources: int


def rows(points: Sequence[EnginePoint]) -> list[Row]:
    """The compared points, with their three prices."""
    out = []
    for p in points:
        base = check(p, (0.0, 0.0))
        if base.predicted_ms is None or base.measured_ms is None:
            continue
        fixed = check(p, (_FIXED_S, 0.0)).predicted_ms
        per_seq = check(p, (0.0, _PER_SEQ_S)).predicted_ms
        assert fixed is not None and per_seq is not None
        out.append(Row(p, base.measured_ms, base.predicted_ms,
                       (fixed - base.predicted_ms) / _FIXED_S,
                       (per_seq - base.predicted_ms) / _PER_SEQ_S))
    return out


def fit_rows(selected: Sequence[Row]) -> tuple[float, float]:
    """Non-negative least squares of the relative errors: (fixed_s, per_seq_s)."""
    a = np.array([[r.b / r.measured_ms, r.c / r.measured_ms] for r in selected])
    y = np.array([(r.measured_ms - r.a) / r.measured_ms for r in selected])
    # Scale the columns to comparable sizes so the solver's tolerance treats them alike.
    scale = np.array([_FIXED_S, _PER_SEQ_S])
    x, _ = nnls(a * scale, y)
    return float(x[0] * scale[0]), float(x[1] * scale[1])


def fit_fixed(selected: Sequence[Row], per_seq_s: float = 0.0) -> float:
    """The fixed term alone (the per-sequence one held at `per_seq_s`), non-negative."""
    a = np.array([[r.b * _FIXED_S / r.measured_ms] for r in selected])
    y = np.array([(r.measured_ms - r.a - r.c * per_seq_s) / r.measured_ms for r in selected])
    x, _ = nnls(a, y)
    return float(x[0] * _FIXED_S)


LOW_LOAD = 8  # sequences: where the fixed term is a large share of the iteration


def graph_rows(all_rows: Sequence[Row], family: str, side: str) -> list[Row]:
    """A family's points on one side of the split run with CUDA graphs (the eager launch
    cost is its own term)."""
    return [r for r in all_rows if r.point.engine == family and r.point.side == side
            and r.point.cuda_graphs is not False]


def calibration_rows(all_rows: Sequence[Row], family: str) -> list[Row]:
    """A family's calibration points run with CUDA graphs: what its fit sees."""
    return graph_rows(all_rows, family, "calibrate")


def fit_family(all_rows: Sequence[Row], family: str) -> Fit | None:
    """The family's fit with intervals from resampling its sources; None without points."""
    selected = calibration_rows(all_rows, family)
    if len(selected) < 3:
        return None
    fixed_s, per_seq_s = fit_rows(selected)
    by_source: dict[str, list[Row]] = {}
    for r in selected:
        by_source.setdefault(r.point.source_group, []).append(r)
    groups = sorted(by_source)
    rng = random.Random(SEED)
    draws = []
    for _ in range(BOOTSTRAP_DRAWS):
        sample = [r for g in rng.choices(groups, k=len(groups)) for r in by_source[g]]
        draws.append(fit_rows(sample))

    def interval(values: list[float]) -> tuple[float, float]:
        values = sorted(values)
        return values[int(0.025 * len(values))], values[int(0.975 * len(values)) - 1]

    return Fit(family, fixed_s, per_seq_s, interval([d[0] for d in draws]),
               interval([d[1] for d in draws]), len(selected), len(groups))


def report(all_rows: Sequence[Row], builtin: tuple[float, float]) -> list[str]:
    """The fitted terms and each family's errors before and after, per side."""
    lines = ["## Each engine family's host terms, fitted on the calibration side",
             "", "`python -m calibration.engine_fit` (calibration/engine_fit.py): "
             "`decode_overhead_s` and `decode_overhead_per_seq_s` per family, non-negative "
             "least squares on the relative errors of the family's calibration points with "
             "CUDA graphs; 95% intervals from resampling their sources "
             f"({BOOTSTRAP_DRAWS} draws, seed {SEED}). Built-in: "
             f"{builtin[0] * 1e3:.2f} ms fixed, {builtin[1] * 1e6:.0f} us per sequence.", "",
             "| family | points (sources) | fixed ms [95%] | per sequence us [95%] | "
             "calibration before / after | validation before / after |",
             "|---|---|---|---|---|---|"]
    for family in FAMILIES:
        f = fit_family(all_rows, family)
        cal = calibration_rows(all_rows, family)
        val = graph_rows(all_rows, family, "validate")
        if f is None:
            lines.append(f"| {family} | {len(cal)} | - | - | - | - |")
            continue
        lines.append(
            f"| {family} | {f.points} ({f.sources}) | {f.fixed_s * 1e3:.2f} "
            f"[{f.fixed_interval[0] * 1e3:.2f}, {f.fixed_interval[1] * 1e3:.2f}] | "
            f"{f.per_seq_s * 1e6:.1f} [{f.per_seq_interval[0] * 1e6:.1f}, "
            f"{f.per_seq_interval[1] * 1e6:.1f}] | "
            f"{median_text([r.error(*builtin) for r in cal])} / "
            f"{median_text([r.error(f.fixed_s, f.per_seq_s) for r in cal])} | "
            f"{median_text([r.error(*builtin) for r in val])} / "
            f"{median_text([r.error(f.fixed_s, f.per_seq_s) for r in val])} |")
    lines += ["", f"The fixed term alone, from each family's calibration points at load <= "
              f"{LOW_LOAD} (per-sequence term 0, as built in), and the validation points at "
              "the same loads:", "",
              "| family | points | fixed ms | validation at load <= 8, before / after |",
              "|---|---|---|---|"]
    for family in FAMILIES:
        low = [r for r in calibration_rows(all_rows, family)
               if (r.point.load or 1) <= LOW_LOAD]
        val = [r for r in graph_rows(all_rows, family, "validate")
               if (r.point.load or 1) <= LOW_LOAD]
        if not low:
            continue
        fixed = fit_fixed(low, builtin[1])
        lines.append(f"| {family} | {len(low)} | {fixed * 1e3:.2f} | "
                     f"{median_text([r.error(*builtin) for r in val])} / "
                     f"{median_text([r.error(fixed, builtin[1]) for r in val])} |")
    return lines


def main() -> int:
    from calibration.engine_points import load_points

    all_rows = rows(load_points())
    print("\n".join(report(all_rows, (2e-3, 0.0))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
