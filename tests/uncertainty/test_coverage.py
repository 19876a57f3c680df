"""The coverage harnesses of issue 39's must-shows (calibration/coverage.py,
calibration/coverage_realruns.py): the Wilson interval, a drawn mean and sigma as one
mean-preserving lognormal, the ranges as committed in docs/research/coverage-inputs.md,
and the real-run cases drawn from the validation side only."""

from __future__ import annotations

import math

import pytest

from calibration.coverage import (
    BASE_LENGTHS,
    ROOT,
    SWE_ENV,
    THINK_LENGTHS,
    figures,
    overrides_of,
    wilson,
)


def test_wilson_matches_scipy() -> None:
    from scipy.stats import binomtest

    for k, n in ((8, 76), (53, 76), (0, 12), (12, 12)):
        ci = binomtest(k, n).proportion_ci(method="wilson")
        assert wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-6)
    assert wilson(0, 0) == (0.0, 1.0)


def test_a_drawn_mean_and_sigma_become_one_lognormal_given_by_its_mean() -> None:
    sets = overrides_of({"workload.response_len.mean": 2000.0,
                         "workload.response_len.sigma": 0.9,
                         "workload.group_correlation": 0.08})
    assert sets == ("workload.group_correlation=0.08",
                    "workload.response_len={dist: lognormal, mean: 2000.0, sigma: 0.9}")


def test_the_ranges_are_the_committed_rules() -> None:
    text = (ROOT / "docs" / "research" / "coverage-inputs.md").read_text(encoding="utf-8")
    # S1, S2, S3, S11, S12 as the rules page states them
    for needle in ("uniform [0.826, 1.055]", "uniform [0.576, 1.050]",
                   "uniform [1500, 2500]", "uniform [10500, 11500]",
                   "U[0.076, 0.127]", "U[0.60, 0.84]"):
        assert needle in text
    assert (BASE_LENGTHS["workload.response_len.sigma"].low,
            BASE_LENGTHS["workload.response_len.sigma"].high) == (0.826, 1.055)
    assert THINK_LENGTHS["workload.response_len.mean"].low == 10500
    assert SWE_ENV["workload.agentic.env_step.sigma"].high == 0.84


def test_every_figure_has_its_papers_points() -> None:
    counts = {f.name: len(f.paper) for f in figures()}
    assert sum(counts.values()) == 76  # 22 + 15 + 18 + 15 + 6
    assert counts["ROLL Flash Fig. 7"] == 15 and counts["ROLL Flash Fig. 8"] == 18
    assert counts["RollArt Fig. 3 (SWE step)"] == 6


def test_real_run_coverage_reads_the_validation_side_only() -> None:
    from calibration.coverage_realruns import cases, knobs, unknowns
    from calibration.realruns.split import load_split
    from rlsim.config.frameworks import profiles

    split = load_split()
    found = cases()
    assert found and all(split[t.record.id] == "validate" for _, t in found)
    calibrated = {r for p in profiles().values() for r in p.calibration_records}
    assert not calibrated & {t.record.id for _, t in found}
    drawn = unknowns("nemo-rl")
    assert set(drawn) == {"speed", "step_overhead", "error.discrepancy"}
    k = knobs("nemo-rl", {"speed": 0.7, "step_overhead": 5.0, "error.discrepancy": 1.0})
    assert k["train_speed"] == k["rollout_speed"] == 0.7 and k["step_overhead"] == 5.0
    assert not math.isnan(profiles()["verl"].discrepancy_log_sd)
