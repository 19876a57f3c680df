"""calibration.fit: engine overheads and trainer MFUs from whole-engine / whole-step points."""

from __future__ import annotations

import pytest

from calibration.fit import (
    ENGINE_BENCHES,
    TRAINER_BENCHES,
    Report,
    engine_model,
    fit_engine_overheads,
    fit_profile,
    fit_report_markdown,
    fit_trainer_constants,
    holdout_mask,
    predict,
)
from calibration.measurements import Measurement, MeasurementSet
from rlsim.cost import InferenceCost, Profile, TrainCost
from tests.calibration.synthetic import (
    MODEL_DIMS,
    TRUE_DEVICE,
    TRUE_PROFILE,
    WHOLE_BENCHES,
    best_gemm_flops,
    true_time,
    whole_grids,
)
from tests.calibration.synthetic import synthetic_set as make_set

# Profile.model_fields defaults of the constants these stages fit.
DEFAULTS = {name: Profile.model_fields[name].default for name in (
    "decode_overhead_s", "decode_overhead_per_seq_s", "prefill_overhead_s", "train_mfu",
    "train_step_overhead_s",
    "forward_mfu", "forward_overhead_s")}


@pytest.fixture(scope="module")
def exact() -> tuple[MeasurementSet, Profile, Report]:
    """Noise-free points: every constant, the whole-step ones included, must come back."""
    ms = make_set(noise=0.0, seed=1, whole=True)
    prof, report = fit_profile(ms)
    return ms, prof, report


@pytest.fixture(scope="module")
def noisy() -> tuple[MeasurementSet, Profile, Report]:
    ms = make_set(noise=0.03, seed=2, whole=True)
    prof, report = fit_profile(ms)
    return ms, prof, report


def _points(bench: str, prof: Profile = TRUE_PROFILE) -> list[Measurement]:
    out = []
    for b, params in whole_grids():
        if b == bench:
            t = true_time(b, params, prof)
            out.append(Measurement(bench=b, params=params, median_s=t, p10_s=t, p90_s=t,
                                   reps=5))
    return out


# ----- the stages on their own, with the true compute constants -----

def test_engine_overheads_from_decode_and_prefill_iterations() -> None:
    pts = _points("engine_decode") + _points("engine_prefill") + _points("engine_mixed")
    a, b, c, per_seq = fit_engine_overheads(pts, TRUE_PROFILE, TRUE_DEVICE)
    assert per_seq
    assert a == pytest.approx(TRUE_PROFILE.decode_overhead_s, rel=1e-3)
    assert b == pytest.approx(TRUE_PROFILE.decode_overhead_per_seq_s, rel=1e-3)
    assert c == pytest.approx(TRUE_PROFILE.prefill_overhead_s, rel=1e-3)


def test_engine_overheads_with_one_sequence_count() -> None:
    """Prefill iterations alone (one sequence each, all prefilling) cannot split the three
    overheads: the fixed one takes their sum and the other two stay 0."""
    pts = _points("engine_prefill")
    a, b, c, per_seq = fit_engine_overheads(pts, TRUE_PROFILE, TRUE_DEVICE)
    assert not per_seq and b == 0.0 and c == 0.0
    truth = (TRUE_PROFILE.decode_overhead_s + TRUE_PROFILE.decode_overhead_per_seq_s
             + TRUE_PROFILE.prefill_overhead_s)
    assert a == pytest.approx(truth, rel=1e-3)


def test_engine_overheads_are_never_negative() -> None:
    """Iterations faster than their kernels alone: both overheads stay at 0."""
    pts = [m.model_copy(update={"median_s": 0.5 * m.median_s})
           for m in _points("engine_decode")]
    a, b, _, _ = fit_engine_overheads(pts, TRUE_PROFILE, TRUE_DEVICE)
    assert a == pytest.approx(0.0, abs=1e-9) and b == pytest.approx(0.0, abs=1e-12)
    assert a >= 0.0 and b >= 0.0


@pytest.mark.parametrize(("bench", "mfu", "overhead"), [
    ("train_step", "train_mfu", "train_step_overhead_s"),
    ("forward", "forward_mfu", "forward_overhead_s"),
])
def test_trainer_constants_from_whole_steps(bench: str, mfu: str, overhead: str) -> None:
    got_mfu, got_overhead = fit_trainer_constants(bench, _points(bench), TRUE_PROFILE,
                                                  TRUE_DEVICE)
    assert got_mfu == pytest.approx(getattr(TRUE_PROFILE, mfu), rel=1e-3)
    assert got_overhead == pytest.approx(getattr(TRUE_PROFILE, overhead), rel=1e-3)


def test_trainer_constants_of_one_shape_keep_no_overhead() -> None:
    pts = _points("forward")[:1] * 3
    got_mfu, got_overhead = fit_trainer_constants("forward", pts, TRUE_PROFILE, TRUE_DEVICE)
    assert got_overhead == 0.0
    assert predict("forward", pts[0].params, TRUE_PROFILE.model_copy(
        update={"forward_mfu": got_mfu, "forward_overhead_s": 0.0}),
        TRUE_DEVICE) == pytest.approx(pts[0].median_s, rel=1e-6)
    with pytest.raises(ValueError, match="trainer"):
        fit_trainer_constants("gemm", pts, TRUE_PROFILE, TRUE_DEVICE)


# ----- predictions are the simulator's own formulas -----

def test_whole_benchmarks_are_priced_by_inference_and_train_cost() -> None:
    model = engine_model(MODEL_DIMS)
    assert (model.layers, model.vocab, model.hidden, model.ffn) == (2, 1024, 256, 768)
    assert not model.tied_embeddings and model.gated_mlp
    eng = InferenceCost(model, TRUE_DEVICE, 1, TRUE_PROFILE)
    dec = {"batch": 8, "context": 300, **MODEL_DIMS}
    assert predict("engine_decode", dec, TRUE_PROFILE, TRUE_DEVICE) == eng.step(
        8, 8 * 300).total_s
    assert predict("engine_prefill", {"tokens": 200, **MODEL_DIMS}, TRUE_PROFILE,
                   TRUE_DEVICE) == eng.step(0, 0, 200).total_s
    # decode_overhead_s + decode_overhead_per_seq_s * (8 decodes | 1 prefilling sequence)
    assert eng.step(8, 2400).overhead_s == pytest.approx(2e-4 + 8 * 3e-6, rel=1e-12)
    assert eng.step(0, 0, 200).overhead_s == pytest.approx(2e-4 + 3e-6 + 5e-4, rel=1e-12)
    trainer = TrainCost(model, TRUE_DEVICE, 1, 1, 1, 1, TRUE_PROFILE,
                        recompute_activations=False, dtype_bytes=4)
    step = {"tokens": 1024, "seq_tokens": 128, **MODEL_DIMS, "dtype": "float32"}
    assert predict("train_step", step, TRUE_PROFILE, TRUE_DEVICE) == trainer.train_step(
        1024, 128).total_s
    assert predict("forward", step, TRUE_PROFILE, TRUE_DEVICE) == trainer.forward_s(1024, 128)
    # Closed forms of the trainer's two costs on one GPU, no recomputation.
    peak = TRUE_DEVICE.bf16_tflops * 1e12
    fwd = 1024 * (2 * model.matmul_params + 2 * model.layers * model.q_dim * 128)
    opt = model.params * TRUE_PROFILE.train_optimizer_bytes_per_param / (
        TRUE_DEVICE.hbm_bandwidth * TRUE_PROFILE.hbm_efficiency)
    assert trainer.train_step(1024, 128).total_s == pytest.approx(
        3 * fwd / (0.3 * peak) + opt + 0.01, rel=1e-12)
    assert trainer.forward_s(1024, 128) == pytest.approx(fwd / (0.4 * peak) + 0.002,
                                                         rel=1e-12)


# ----- the whole fit -----

@pytest.mark.parametrize("name", ["decode_overhead_s", "decode_overhead_per_seq_s",
                                  "train_step_overhead_s", "forward_overhead_s"])
def test_fit_recovers_overheads(exact: tuple[MeasurementSet, Profile, Report],
                                name: str) -> None:
    _, prof, _ = exact
    assert getattr(prof, name) == pytest.approx(getattr(TRUE_PROFILE, name), rel=0.02)


@pytest.mark.parametrize("name", ["train_mfu", "forward_mfu"])
def test_fit_recovers_trainer_rates(exact: tuple[MeasurementSet, Profile, Report],
                                    name: str) -> None:
    """MFU x the fitted device peak is the achieved rate, whatever peak the fit chose."""
    _, prof, _ = exact
    assert prof.device is not None
    got = getattr(prof, name) * prof.device.bf16_tflops
    assert got == pytest.approx(getattr(TRUE_PROFILE, name) * TRUE_DEVICE.bf16_tflops,
                                rel=0.02)
    assert 0 < getattr(prof, name) <= 1


def test_fit_reports_whole_benchmarks(exact: tuple[MeasurementSet, Profile, Report]) -> None:
    ms, prof, report = exact
    for bench in WHOLE_BENCHES:
        row = report[bench]
        points = [m.params for m in ms.of(bench)]
        assert row["points"] == len(points)
        assert row["held_back_points"] == sum(holdout_mask(points)) >= 1
        assert row["train_mape"] < 0.005 and row["held_back_mape"] < 0.005, (bench, row)
        assert prof.held_back_error[bench] == pytest.approx(row["held_back_mape"], abs=1e-6)
        assert prof.fit_error[bench] == pytest.approx(row["train_mape"], abs=1e-6)
    rows = [line.split("|")[1].strip() for line in fit_report_markdown(report).splitlines()[2:]]
    present = [b for b in (*ENGINE_BENCHES, *TRAINER_BENCHES) if b in report]
    assert len(present) == 5
    assert rows[5:5 + len(present)] == present
    assert "decode_overhead_s" not in prof.provenance
    assert "other train_* constants" in prof.provenance


def test_fit_predicts_noisy_whole_steps(noisy: tuple[MeasurementSet, Profile, Report]) -> None:
    """With 3% noise everywhere the small overheads are not identifiable to a few %, but the
    whole iterations and steps, held-back ones included, are predicted within the noise."""
    _, prof, report = noisy
    for bench in WHOLE_BENCHES:
        assert report[bench]["held_back_mape"] < 0.06, (bench, report[bench])
        assert report[bench]["train_mape"] < 0.04, (bench, report[bench])
    assert prof.device is not None
    for name in ("train_mfu", "forward_mfu"):
        got = getattr(prof, name) * prof.device.bf16_tflops
        assert got == pytest.approx(getattr(TRUE_PROFILE, name) * TRUE_DEVICE.bf16_tflops,
                                    rel=0.05)


def test_only_engine_points_leave_trainer_defaults() -> None:
    ms = make_set(noise=0.0, seed=1, whole=True)
    kept = [m for m in ms.measurements if m.bench not in TRAINER_BENCHES]
    prof, report = fit_profile(ms.model_copy(update={"measurements": kept}))
    for name in ("train_step_overhead_s", "forward_mfu", "forward_overhead_s"):
        assert getattr(prof, name) == DEFAULTS[name], name
        assert name in prof.provenance
    # the default MFU is a fraction of the best measured GEMM rate, not of the normalized peak
    assert prof.device is not None
    assert prof.train_mfu * prof.device.bf16_tflops * 1e12 == pytest.approx(
        DEFAULTS["train_mfu"] * best_gemm_flops(ms), rel=0.1)
    assert prof.decode_overhead_s == pytest.approx(TRUE_PROFILE.decode_overhead_s, rel=0.02)
    assert not set(TRAINER_BENCHES) & set(report)


def test_engine_overheads_come_from_the_running_engine_when_its_trace_is_there() -> None:
    """Repeated one-state microbenchmarks run faster than the same shapes inside a running
    engine (warm caches, a reused allocator); the simulator prices a running engine, so
    with enough `engine_trace` points the overheads are the trace's, not a compromise."""
    import numpy as np

    from calibration.fit import MIN_TRACE_POINTS

    running = TRUE_PROFILE.model_copy(update={
        "decode_overhead_s": 2.5 * TRUE_PROFILE.decode_overhead_s,
        "decode_overhead_per_seq_s": 2.0 * TRUE_PROFILE.decode_overhead_per_seq_s,
        "prefill_overhead_s": 1.5 * TRUE_PROFILE.prefill_overhead_s})
    rng = np.random.default_rng(0)
    trace = []
    for _ in range(2 * MIN_TRACE_POINTS):
        decode = int(rng.integers(0, 33))
        prefill = [int(n) for n in rng.integers(4, 200, size=int(rng.integers(0, 4)))]
        if decode == 0 and not prefill:
            decode = 1
        params = {"decode": decode, "kv_tokens": decode * int(rng.integers(16, 400)),
                  "prefill": ",".join(map(str, prefill)), **MODEL_DIMS}
        t = predict("engine_trace", params, running, TRUE_DEVICE)
        trace.append(Measurement(bench="engine_trace", params=params, median_s=t, p10_s=t,
                                 p90_s=t, reps=1))
    micro = make_set(noise=0.0, seed=1, whole=True)  # the microbenchmarks: warm, faster
    prof, _ = fit_profile(micro.model_copy(update={
        "measurements": [*micro.measurements, *trace]}))
    for name in ("decode_overhead_s", "decode_overhead_per_seq_s", "prefill_overhead_s"):
        assert getattr(prof, name) == pytest.approx(getattr(running, name), rel=0.02), name
    assert prof.device is not None
    priced = sum(predict("engine_trace", m.params, prof, prof.device) for m in trace)
    assert priced == pytest.approx(sum(m.median_s for m in trace), rel=0.01)
