"""The RobustRL scenarios: the same job and faults under a whole-job restart and under
role-based recovery, the paper's injection (one trainer fault per tenth of the steps), and
its ETTR definition, against closed forms."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlsim.api import simulate_file
from tests.scenarios import load_script

HERE = Path(__file__).resolve().parents[2] / "scenarios" / "robustrl"
JOB, ROLE = HERE / "qwen3-8b-math-256-job.yaml", HERE / "qwen3-8b-math-256-role.yaml"
report = load_script(HERE / "make_report.py", "robustrl_make_report")


def test_the_scenarios_differ_only_in_recovery() -> None:
    a, b = (yaml.safe_load(p.read_text()) for p in (JOB, ROLE))
    assert a["recovery"]["scope"] == "job" and a["recovery"]["trainer"]["checkpoint_every"] == 5
    assert b["recovery"]["scope"] == "role" and b["recovery"]["trainer"]["checkpoint_every"] == 1
    assert len(a["faults"]["trainer"][0]["times"]) == 10  # one per 10% of the 100 steps
    for key in ("name", "description", "recovery"):
        a.pop(key), b.pop(key)
    assert a == b


def test_the_paper_ettr_gives_the_running_rollouts_their_share_of_a_trainer_restart() -> None:
    # 1000 s run: a whole-job restart of 100 s counts nothing; a trainer restart of 200 s
    # with as many rollout GPUs as trainer GPUs counts half
    assert report.ettr(1000.0, 100.0, 200.0, 128, 128) == pytest.approx(0.8)
    assert report.ettr(1000.0, 0.0, 200.0, 192, 64) == pytest.approx(1 - 200 * 0.25 / 1000)


def test_one_fault_falls_in_every_tenth_of_the_steps() -> None:
    ends = [10.0 * (k + 1) for k in range(100)]
    times = report.window_times(ends, seed=3)
    assert len(times) == 10
    for w, t in enumerate(times):
        assert 100.0 * w <= t <= 100.0 * (w + 1)
    assert report.window_times(ends, seed=3) == times != report.window_times(ends, seed=4)
    with pytest.raises(ValueError, match="windows"):
        report.window_times(ends[:95], seed=0)


def test_the_scenarios_fault_times_are_the_baselines_windows() -> None:
    """Golden: the times in the YAML are `window_times` of the baseline's fault-free run
    (seed 0), as make_report.py computes them for every seed and setup."""
    free = report.simulate((report.JOB, ("seed=0", report.NO_FAULTS)))
    expected = report.window_times(free["step_ends"], 0)
    written = yaml.safe_load(JOB.read_text())["faults"]["trainer"][0]["times"]
    assert [float(str(t).split()[0]) for t in written] == expected


def test_role_based_recovery_keeps_more_of_the_run_than_a_whole_job_restart() -> None:
    faults = "faults.trainer=[{times: [900 s, 2600 s]}]"
    runs = {p: simulate_file(p, ["steps=20", faults]).summary for p in (JOB, ROLE)}
    job, role = runs[JOB], runs[ROLE]
    assert job["steps"] == role["steps"] == 20
    assert job["faults"]["by_kind"]["trainer"]["recovery_s"]["mean"] == pytest.approx(287.8)
    assert role["faults"]["by_kind"]["trainer"]["recovery_s"]["mean"] == pytest.approx(183.0)
    assert role["sim_time_s"] < job["sim_time_s"]
    assert (role["whole_run"]["effective_training_time_ratio"]
            > job["whole_run"]["effective_training_time_ratio"])
