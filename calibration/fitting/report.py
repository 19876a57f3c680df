"""The fit's error report: train and held-back errors of every benchmark, from the profile.

Compute, engine, trainer and elementwise points are priced by `predict.Predictor` (the
simulator's own classes); the other families' points by the formula their constants feed
(each family module's `prediction`). Benchmarks with neither (`gemm_dtype`) get no row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from calibration.fitting import collectives, engine_start, memcpy, sandbox, transfer
from calibration.fitting.context import FitContext, PointPrediction
from calibration.fitting.holdout import Split
from calibration.fitting.predict import PREDICTED_BENCHES, Predictor
from calibration.fitting.solvers import mape, max_err
from calibration.measurements import Measurement
from rlsim.config.hardware import GpuSpec
from rlsim.cost.profile import Profile

Report = dict[str, dict[str, float]]
FamilyPrediction = Callable[[str, Profile, GpuSpec, FitContext], PointPrediction | None]

# Benchmark -> its family's prediction, for the benchmarks `Predictor` does not price.
FAMILY_PREDICTIONS: dict[str, FamilyPrediction] = {
    bench: family.prediction
    for family in (memcpy, collectives, transfer, engine_start, sandbox)
    for bench in family.BENCHES
}


def _predict_point(pred: Predictor, bench: str, m: Measurement) -> float:
    return pred(bench, m.params)


def error_report(prof: Profile, device: GpuSpec, split: Mapping[str, Split],
           ctx: FitContext) -> Report:
    """Benchmark -> points, train_mape, max_error (over all its points) and, for grids that
    hold points back, held_back_mape and held_back_points (errors as fractions)."""
    pred = Predictor(prof, device)
    out: Report = {}
    for bench, s in split.items():
        f: Callable[[Measurement], float] | None
        if bench in PREDICTED_BENCHES:
            f = functools.partial(_predict_point, pred, bench)
        else:
            family = FAMILY_PREDICTIONS.get(bench)
            f = family(bench, prof, device, ctx) if family is not None else None
        if f is None:
            continue
        tr_p, tr_m = [f(m) for m in s.train], [m.median_s for m in s.train]
        he_p, he_m = [f(m) for m in s.held], [m.median_s for m in s.held]
        row = {"points": float(len(s.train) + len(s.held)),
               "train_mape": mape(tr_p, tr_m),
               "max_error": max_err(tr_p + he_p, tr_m + he_m)}
        if s.held:
            row["held_back_mape"] = mape(he_p, he_m)
            row["held_back_points"] = float(len(s.held))
        out[bench] = row
    return out
