"""calibration.fit: held-back protocol, recovery of known constants, real CPU measurements."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calibration.fit import (
    COMPUTE_BENCHES,
    Report,
    fit_profile,
    fit_report_markdown,
    holdout_mask,
    predict,
    write_profile,
)
from calibration.measurements import DeviceInfo, Measurement, MeasurementSet
from rlsim.config.hardware import lookup_model
from rlsim.cost import InferenceCost, Profile, load_profile
from rlsim.cost.kernels import GemmModel
from tests.calibration.synthetic import (
    DIMS,
    TRUE_DEVICE,
    TRUE_PROFILE,
    best_gemm_flops,
    grids,
    synthetic_set,
)

CPU_DATA = Path(__file__).resolve().parents[1] / "data" / "calibration" / \
    "cpu_quick_measurements.json"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "calibration.md"
HELD_BACK_LIMIT = 0.10


@pytest.fixture(scope="module")
def synthetic() -> tuple[MeasurementSet, Profile, Report]:
    ms = synthetic_set(noise=0.03, seed=1)
    prof, report = fit_profile(ms)
    return ms, prof, report


@pytest.fixture(scope="module")
def cpu() -> tuple[MeasurementSet, Profile, Report]:
    ms = MeasurementSet.model_validate_json(CPU_DATA.read_text())
    prof, report = fit_profile(ms)
    return ms, prof, report


# ----- held-back protocol -----

def _grid(bench: str) -> list[dict[str, Any]]:
    return [p for b, p in grids() if b == bench]


@pytest.mark.parametrize("bench", COMPUTE_BENCHES)
def test_holdout_is_a_deterministic_spread_quarter(bench: str) -> None:
    points = _grid(bench)
    mask = holdout_mask(points)
    assert mask == holdout_mask(points)  # deterministic
    assert 0.2 <= sum(mask) / len(points) <= 0.3
    varying = [k for k in points[0] if len({p[k] for p in points}) > 1]
    for key in varying:
        values = sorted({p[key] for p in points})
        held = {p[key] for p, h in zip(points, mask, strict=True) if h}
        kept = {p[key] for p, h in zip(points, mask, strict=True) if not h}
        # Spread: held-back points take several values of every parameter, not just its ends,
        # and on a multi-parameter grid every value stays represented in the fit.
        assert len(held) >= 2, (key, held)
        if len(values) >= 3:
            assert held - {values[0], values[-1]}, (key, held)
        if len(varying) >= 2:
            assert kept == set(values), key
    # The grid's corners (all-smallest, all-largest) stay in the fit at seed 0.
    first = min(range(len(points)), key=lambda i: tuple(points[i][k] for k in varying))
    last = max(range(len(points)), key=lambda i: tuple(points[i][k] for k in varying))
    assert not mask[first] and not mask[last]


def test_holdout_seed_and_fraction() -> None:
    points = _grid("layer_decode")
    assert holdout_mask(points, seed=1) != holdout_mask(points, seed=0)
    assert not any(holdout_mask(points, fraction=0.0))
    assert 0.4 <= sum(holdout_mask(points, fraction=0.5)) / len(points) <= 0.6
    with pytest.raises(ValueError, match="holdout_fraction"):
        holdout_mask(points, fraction=1.0)


# ----- synthetic measurements from known constants -----

def _rate(prof: Profile, eff: str, kind: str) -> float:
    assert prof.device is not None
    base = prof.device.hbm_bandwidth if kind == "bw" else prof.device.bf16_tflops
    return base * float(getattr(prof, eff))


@pytest.mark.parametrize(("eff", "kind", "rel"), [
    ("gemm_peak_efficiency", "flops", 0.05),
    ("hbm_efficiency", "bw", 0.10),
    ("attention_flops_efficiency", "flops", 0.05),
    ("attention_decode_flops_efficiency", "flops", 0.05),
    ("attention_decode_hbm_efficiency", "bw", 0.05),
    ("elementwise_hbm_efficiency", "bw", 0.10),
    ("activation_hbm_efficiency", "bw", 0.10),
    ("norm_hbm_efficiency", "bw", 0.10),
])
def test_fit_recovers_achieved_rates(synthetic: tuple[MeasurementSet, Profile, Report],
                                     eff: str, kind: str, rel: float) -> None:
    """Rates (device peak or bandwidth x efficiency) come back within a few % of the truth."""
    _, prof, _ = synthetic
    truth = _rate(TRUE_PROFILE.model_copy(update={"device": TRUE_DEVICE}), eff, kind)
    assert _rate(prof, eff, kind) == pytest.approx(truth, rel=rel)


@pytest.mark.parametrize(("name", "rel"), [
    ("gemm_gemv_max_rows", 0.0), ("gemm_weight_passes", 0.15), ("cache_bytes", 0.15),
    ("cache_speedup", 0.25), ("gemm_overlap_exponent", 0.2), ("attention_launch_s", 0.15),
    ("attention_decode_launch_s", 0.15), ("activation_launch_s", 0.15),
    ("norm_launch_s", 0.15), ("elementwise_launch_s", 0.15), ("layer_overhead_s", 0.25),
    ("allreduce_latency_s", 0.1), ("engine_cold_start_s", 0.1),
    ("engine_warm_start_base_s", 0.1), ("sandbox_checkpoint_base_s", 0.1),
    ("sandbox_checkpoint_bandwidth_bytes_per_s", 0.1),
    ("sandbox_checkpoint_per_file_s", 0.15), ("sandbox_restore_base_s", 0.1),
    ("sandbox_restore_bandwidth_bytes_per_s", 0.1),
])
def test_fit_recovers_constants(synthetic: tuple[MeasurementSet, Profile, Report], name: str,
                                rel: float) -> None:
    _, prof, _ = synthetic
    assert getattr(prof, name) == pytest.approx(getattr(TRUE_PROFILE, name), rel=rel)


def test_fit_recovers_links(synthetic: tuple[MeasurementSet, Profile, Report]) -> None:
    _, prof, _ = synthetic
    assert prof.device is not None
    one_way = prof.device.nvlink_bandwidth / 2 * prof.allreduce_bus_efficiency
    assert one_way == pytest.approx(TRUE_DEVICE.nvlink_bandwidth / 2, rel=0.05)
    assert prof.device.pcie_bandwidth * prof.pcie_efficiency == pytest.approx(
        TRUE_DEVICE.pcie_bandwidth, rel=0.05)
    assert prof.device.hbm_bandwidth == pytest.approx(TRUE_DEVICE.hbm_bandwidth, rel=0.1)
    assert prof.device.gpus_per_node == 2
    assert prof.device.sm_count == 2


def test_synthetic_held_back_points_are_predicted(
        synthetic: tuple[MeasurementSet, Profile, Report]) -> None:
    _, prof, report = synthetic
    for bench in COMPUTE_BENCHES:
        assert report[bench]["held_back_mape"] < 0.05, (bench, report[bench])
        assert prof.held_back_error[bench] == pytest.approx(report[bench]["held_back_mape"],
                                                            abs=1e-6)


def test_profile_records_everything(synthetic: tuple[MeasurementSet, Profile, Report]) -> None:
    ms, prof, report = synthetic
    assert prof.dtype_bytes == 4
    assert prof.gpu == "Synthetic CPU"
    assert prof.measurements == [m.model_dump(mode="json") for m in ms.measurements]
    assert set(prof.held_back_error) == set(COMPUTE_BENCHES)
    assert set(prof.fit_error) == set(report)
    assert prof.meta["torch"] == "0.0-synthetic"
    assert prof.meta["mode"] == "quick"
    assert prof.provenance.startswith(
        "calibrated on testhost Synthetic CPU with torch 0.0-synthetic on "
        "2025-01-01T00:00:00Z (quick)")
    for row in report.values():
        assert {"train_mape", "max_error", "points"} <= set(row)
    table = fit_report_markdown(report)
    assert table.splitlines()[0].startswith("| benchmark | points |")
    assert "| layer_decode | 20 | 5 |" in table


def test_whole_step_stages_need_their_benchmarks(
        synthetic: tuple[MeasurementSet, Profile, Report]) -> None:
    """No engine or trainer points: those constants keep the documented defaults (train_mfu
    as a fraction of the best measured GEMM rate, whatever peak the device is normalized to)."""
    ms, prof, report = synthetic
    for name in ("decode_overhead_s", "decode_overhead_per_seq_s",
                 "train_step_overhead_s", "forward_mfu", "forward_overhead_s"):
        assert getattr(prof, name) == Profile.model_fields[name].default, name
        assert name in prof.provenance
    assert "train_mfu" in prof.provenance
    assert prof.device is not None
    assert prof.train_mfu * prof.device.bf16_tflops * 1e12 == pytest.approx(
        Profile.model_fields["train_mfu"].default * best_gemm_flops(ms), rel=0.1)
    assert not {"engine_decode", "engine_prefill", "train_step", "forward"} & set(report)


def test_predictions_are_rlsims_own_formulas(
        synthetic: tuple[MeasurementSet, Profile, Report]) -> None:
    _, prof, _ = synthetic
    dev = prof.device
    assert dev is not None
    gemm = {"m": 32, "n": 1536, "k": 1024, "dtype": "float32"}
    assert predict("gemm", gemm, prof) == GemmModel(dev, prof).time_s(32, 1536, 1024,
                                                                    warm_cache=True)
    layer = {"batch": 8, "context": 512, **DIMS}
    model = lookup_model("qwen2.5-0.5b").model_copy(update={
        "layers": 1, "hidden": 1024, "heads": 16, "kv_heads": 4, "head_dim": 64, "ffn": 2816})
    cost = InferenceCost(model, dev, 1, prof)
    assert predict("layer_decode", layer, prof) == cost.layer_step_s(8, 8 * 513)
    assert predict("layer_prefill", {"tokens": 256, **DIMS}, prof) == cost.layer_step_s(
        0, 0, 256)


def test_calibrated_profile_drives_the_simulator(
        synthetic: tuple[MeasurementSet, Profile, Report]) -> None:
    _, prof, _ = synthetic
    assert prof.device is not None
    cost = InferenceCost(lookup_model("qwen2.5-0.5b"), prof.device, 1, prof)
    assert cost.dtype_bytes == 4  # the profile's dtype unless told otherwise
    step = cost.step(4, 4 * 300)
    assert 0 < step.total_s < 10
    assert cost.kv_capacity_tokens(0.5) > 0


def test_round_trip_and_hash(synthetic: tuple[MeasurementSet, Profile, Report],
                             tmp_path: Path) -> None:
    _, prof, _ = synthetic
    path = write_profile(prof, tmp_path / "sub" / "p.json")
    assert [p.name for p in path.parent.iterdir()] == ["p.json"]  # no temp file left
    loaded = load_profile(path)
    assert loaded == prof
    assert loaded.content_hash() == prof.content_hash()
    assert json.loads(path.read_text())["measurements"][0]["bench"] == "gemm"


def test_content_hash_covers_predictions_only(
        synthetic: tuple[MeasurementSet, Profile, Report]) -> None:
    _, prof, _ = synthetic
    assert prof.device is not None
    h = prof.content_hash()
    same = prof.model_copy(update={"measurements": [], "meta": {}, "held_back_error": {},
                                   "fit_error": {}, "provenance": "x"})
    assert same.content_hash() == h
    for update in ({"layer_overhead_s": prof.layer_overhead_s * 2}, {"dtype_bytes": 2},
                   {"device": prof.device.model_copy(update={"hbm_bandwidth": 1e9})},
                   {"sandbox_restore_base_s": 1.0}):
        assert prof.model_copy(update=update).content_hash() != h, update


def test_empty_set_is_rejected() -> None:
    ms = synthetic_set()
    with pytest.raises(ValueError, match="empty"):
        fit_profile(ms.model_copy(update={"measurements": []}))


def test_cuda_set_without_compute_points_uses_the_catalogue() -> None:
    """A CUDA run's links come from h2d and the all-reduce; the spec from the catalogue."""
    dev = DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3", cores=132, memory_bytes=80e9,
                     torch_version="2.13.0", host="gpu1", dtype="bfloat16",
                     created="2025-01-01T00:00:00Z")
    pts = [Measurement(bench="h2d", params={"size_bytes": s, "pinned": True},
                       median_s=1e-5 + s / 50e9, p10_s=0, p90_s=0, reps=5)
           for s in (1 << 20, 1 << 24, 1 << 28)]
    pts += [Measurement(bench="memcpy", params={"size_bytes": s}, median_s=5e-6 + 2 * s / 3e12,
                        p10_s=0, p90_s=0, reps=5) for s in (1 << 26, 1 << 28, 1 << 30)]
    prof, report = fit_profile(MeasurementSet(device=dev, quick=False, measurements=pts))
    assert prof.device is not None
    assert prof.device.gpus_per_node == 8
    assert prof.device.pcie_bandwidth == pytest.approx(50e9, rel=0.02)
    assert prof.device.hbm_bandwidth == pytest.approx(3e12, rel=0.02)
    assert prof.dtype_bytes == 2
    assert "memcpy" in report and not prof.held_back_error


# ----- the real measurements of this machine -----

@pytest.mark.parametrize("bench", COMPUTE_BENCHES)
def test_cpu_profile_predicts_held_back_points(cpu: tuple[MeasurementSet, Profile, Report],
                                               bench: str) -> None:
    """Issue 3: <= 10% MAPE on the held-back quarter of each compute grid (docs table)."""
    _, prof, report = cpu
    assert report[bench]["held_back_points"] >= 3
    assert report[bench]["held_back_mape"] <= HELD_BACK_LIMIT, fit_report_markdown(report)
    assert prof.held_back_error[bench] <= HELD_BACK_LIMIT


def test_cpu_gemm_held_back_does_not_regress(cpu: tuple[MeasurementSet, Profile, Report]) -> None:
    _, _, report = cpu
    # 5.3% at seed 0 (3.0-5.3% over the four holdout offsets) since the per-weight-row
    # packing cost (gemm_pack_row_elems); 11.3% before it.
    assert report["gemm"]["held_back_mape"] <= 0.08, fit_report_markdown(report)
    assert report["gemm"]["train_mape"] <= 0.06


def test_cpu_profile_is_physical(cpu: tuple[MeasurementSet, Profile, Report]) -> None:
    _, prof, _ = cpu
    dev = prof.device
    assert dev is not None
    # A 2-core AVX2 VM: tens of GFLOP/s fp32, 5-50 GB/s of DRAM bandwidth.
    assert 20e9 < dev.bf16_tflops * 1e12 < 300e9
    assert 5e9 < dev.hbm_bandwidth < 50e9
    assert dev.sm_count == 2
    assert prof.dtype_bytes == 4
    assert prof.meta["device"] == "AMD EPYC"


def test_docs_table_is_the_fit_of_the_checked_in_data(
        cpu: tuple[MeasurementSet, Profile, Report]) -> None:
    _, _, report = cpu
    assert fit_report_markdown(report) in DOCS.read_text(), \
        "regenerate docs/calibration.md section 3 with fit_report_markdown"


def test_checked_in_builtin_profiles_match_package_data() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    shipped = sorted((root / "rlsim" / "cost" / "profiles").glob("*.json"))
    assert shipped
    for path in shipped:
        copy = root / "calibration" / "profiles" / f"builtin-{path.name}"
        assert copy.read_bytes() == path.read_bytes(), f"refresh {copy} from {path}"
