"""Fit a calibration run's measurements into the rlsim `Profile` the simulator reads.

The public face of the fit and its orchestrator: `fit_profile` (MeasurementSet -> Profile +
per-benchmark error report) runs the families' stages of `calibration/fitting` in `STAGES`
order on one `FitContext`, normalizes, reports and records provenance; `write_profile`
(atomic JSON) and `fit_report_markdown` write the results. Torch-free: it reads the
JSON-able `MeasurementSet` that `calibration/run.py` writes.

Every compute benchmark is predicted with the simulator's classes (`GemmModel`,
`ElementwiseModel`, `InferenceCost.decode_attention_s / prefill_attention_s /
layer_step_s`), so the held-back error is the error of exactly what the simulator computes.
Whole-engine iterations (`engine_decode`, `engine_prefill`, ...) are predicted with
`InferenceCost.step` and whole trainer steps (`train_step`, `forward`) with `TrainCost`;
when present they fit the per-iteration engine overheads and the trainer's MFUs and fixed
overheads, after every other constant. A quarter of each compute, engine and trainer grid
is held back (spread over the grid, `holdout_mask`), the constants are fitted on the rest
with scipy, and the report gives both errors. Which constant comes from which benchmark:
each `calibration/fitting/<family>.py` docstring and docs/calibration.md.

Absolute rates are fitted first, then split into a device spec and efficiencies: the
device's peak FLOP/s is the highest fitted compute rate (GEMM peak, attention), its memory
bandwidth the highest fitted stream rate (large copies, GEMM weight streams, KV reads,
elementwise), so every efficiency is <= 1 and the products the formulas use are unchanged.
Links (all-reduce bus, host<->device) are stored as achieved bandwidths with efficiency 1.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from calibration.fitting import (
    attention,
    collectives,
    elementwise,
    engine_start,
    gemm,
    joint,
    layer,
    live_engine,
    live_trainer,
    memcpy,
    sandbox,
    transfer,
)
from calibration.fitting.attention import (
    CPU_ATTENTION_KV_BLOCK,
    CPU_ATTENTION_Q_BLOCK_TIERS,
    CUDA_ATTENTION_KV_BLOCK,
    CUDA_ATTENTION_Q_BLOCK_TIERS,
)
from calibration.fitting.context import DeviceFacts, FitContext
from calibration.fitting.gemm import CPU_GEMM_TILES, CPU_SPLITK_MIN_K
from calibration.fitting.holdout import Split, holdout_mask, split
from calibration.fitting.live_engine import (
    ENGINE_FIT_NAMES,
    MIN_TRACE_POINTS,
    fit_engine_overheads,
)
from calibration.fitting.live_trainer import fit_trainer_constants
from calibration.fitting.normalize import normalized
from calibration.fitting.predict import (
    COMPUTE_BENCHES,
    ENGINE_BENCHES,
    HELD_BACK_BENCHES,
    PREDICTED_BENCHES,
    TRAINER_BENCHES,
    Predictor,
    engine_model,
    layer_model,
    predict,
)
from calibration.fitting.report import Report, error_report
from calibration.measurements import MeasurementSet
from rlsim.cost.profile import Profile

__all__ = [
    "COMPUTE_BENCHES", "CPU_ATTENTION_KV_BLOCK", "CPU_ATTENTION_Q_BLOCK_TIERS",
    "CPU_GEMM_TILES", "CPU_SPLITK_MIN_K", "CUDA_ATTENTION_KV_BLOCK",
    "CUDA_ATTENTION_Q_BLOCK_TIERS", "ENGINE_BENCHES", "HELD_BACK_BENCHES", "MIN_TRACE_POINTS",
    "PREDICTED_BENCHES", "STAGES", "TRAINER_BENCHES", "Predictor", "Report", "engine_model",
    "fit_engine_overheads", "fit_profile", "fit_report_markdown", "fit_trainer_constants",
    "holdout_mask", "layer_model", "predict", "start", "write_profile",
]

Stage = Callable[[FitContext], None]

# The stages in the order they run; each reads the constants of the ones before it
# (FitContext). memcpy and gemm's FLOP reference run first, in `start`, since every
# efficiency is fitted relative to the reference rates they give.
STAGES: tuple[tuple[str, Stage], ...] = (
    # The links: no dependency; transfer's bandwidth prices engine_start's warm reloads.
    ("collectives", collectives.fit),
    ("transfer", transfer.fit),
    # GEMM first: every later compute grid prices its GEMMs with these constants.
    ("gemm", gemm.fit),
    ("attention", attention.fit),
    # Bounded by the best stream rate gemm and attention found.
    ("elementwise", elementwise.fit),
    ("layer", layer.fit),
    ("joint", joint.fit),
    # The joint refit moved the cache constants the elementwise grid is read with.
    ("elementwise", elementwise.fit),
    ("layer", layer.fit),
    # Whole iterations and steps, priced with every compute constant.
    ("live_engine", live_engine.fit),
    ("live_trainer", live_trainer.fit),
    # After transfer (the warm reload base subtracts the copy at the link bandwidth).
    ("engine_start", engine_start.fit),
    ("sandbox", sandbox.fit),
)


def start(ms: MeasurementSet, split: Mapping[str, Split]) -> FitContext:
    """The context before any stage: the device facts and the two reference rates (the
    best fitted GEMM rate, the copy bandwidth of the memcpy grid)."""
    facts = DeviceFacts.of(ms)
    gemm_points = split["gemm"].train if "gemm" in split else []
    ref_flops = gemm.reference_flops(gemm_points, facts)
    notes: list[str] = []
    ref_bw, copy_law = memcpy.reference_bandwidth(ms.of("memcpy"), facts, notes)
    return FitContext(ms=ms, split=split, facts=facts, ref_flops=ref_flops, ref_bw=ref_bw,
                      copy_law=copy_law, notes=notes)


def fit_profile(ms: MeasurementSet, holdout_fraction: float = 0.25,
                seed: int = 0) -> tuple[Profile, Report]:
    """Fit every constant the measurements inform; (profile, report per benchmark).

    The report maps a benchmark to train_mape, held_back_mape (compute, engine and trainer
    grids only), max_error (over all its points), points and held_back_points, as fractions.
    Constants no benchmark informs keep the documented defaults of docs/cost-model.md.
    """
    if not ms.measurements:
        raise ValueError("the measurement set is empty: nothing to fit")
    splits = split(ms, holdout_fraction, seed)
    ctx = start(ms, splits)
    for _, stage in STAGES:
        stage(ctx)
    prof, device = normalized(ctx)
    rows = error_report(prof, device, splits, ctx)
    fit_error = {b: round(r["train_mape"], 6) for b, r in rows.items()}
    held = {b: round(r["held_back_mape"], 6) for b, r in rows.items()
            if "held_back_mape" in r}
    d = ms.device
    mode = "quick" if ms.quick else "full"
    meta = {"device": d.name, "kind": d.kind, "cores": str(d.cores), "dtype": d.dtype,
            "torch": d.torch_version, "host": d.host, "date": d.created, "mode": mode,
            "holdout_fraction": str(holdout_fraction), "seed": str(seed)}
    if ctx.notes:
        meta["notes"] = "; ".join(ctx.notes)
    defaults = [k for k in (*ENGINE_FIT_NAMES, "train_mfu", "train_step_overhead_s",
                            "forward_mfu", "forward_overhead_s") if not ctx.fitted(k)]
    defaults += ["engine_memory_reserve_bytes", "network_efficiency",
                 "other train_* constants"]
    provenance = (
        f"calibrated on {d.host} {d.name} with torch {d.torch_version} on {d.created} "
        f"({mode}) by calibration.fit; constants no benchmark measured "
        f"({', '.join(defaults)}) are the documented defaults of docs/cost-model.md"
        + (" (train_mfu as that fraction of the best measured GEMM rate)."
           if "train_mfu" in ctx.scaled_defaults else ".")
    )
    prof = prof.model_copy(update={
        "provenance": provenance, "fit_error": fit_error, "held_back_error": held,
        "meta": meta, "measurements": [m.model_dump(mode="json") for m in ms.measurements],
    })
    return Profile.model_validate(prof.model_dump()), rows


# ----- output -----

def write_profile(profile: Profile, path: str | Path) -> Path:
    """Write the profile JSON atomically: a temp file in the same folder, then rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(profile.to_json())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _pct(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{100 * value:.1f}%"


def fit_report_markdown(report: Report) -> str:
    """One table row per benchmark: points, train and held-back MAPE, max error."""
    first = (*COMPUTE_BENCHES, *ENGINE_BENCHES, *TRAINER_BENCHES)
    order = [*first, *sorted(b for b in report if b not in first)]
    lines = ["| benchmark | points | held back | train MAPE | held-back MAPE | max error |",
             "|---|---|---|---|---|---|"]
    for bench in order:
        row = report.get(bench)
        if row is None:
            continue
        lines.append(
            f"| {bench} | {int(row.get('points', 0))} | {int(row.get('held_back_points', 0))} "
            f"| {_pct(row.get('train_mape'))} | {_pct(row.get('held_back_mape'))} "
            f"| {_pct(row.get('max_error'))} |")
    return "\n".join(lines)
