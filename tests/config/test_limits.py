"""Run-size limits (rlsim.config.limits): estimates track real runs, the shipped scenarios
pass, and runs too large to finish are refused up front with the override flag (issue 18)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.limits import ALLOW_LARGE_FLAG, check_work, estimate_work
from rlsim.config.loading import load_scenario, scenario_from_dict
from tests.scenarios import tiny

ROOT = Path(__file__).resolve().parents[2]


def _scenario(**changes):
    return scenario_from_dict(tiny(**changes))[0]


@pytest.mark.parametrize("policy", [
    {"name": "sync", "placement": "colocated"},
    {"name": "one_off", "placement": "disaggregated"},
    {"name": "tail_batching", "placement": "colocated"},
    {"name": "async", "placement": "disaggregated"},
])
def test_estimated_events_within_3x_of_a_real_run(policy):
    scenario = _scenario(steps=4, policy=policy, workload__prompts_per_step=32)
    events = simulate(scenario).summary["events"]
    estimate = estimate_work(scenario).events
    assert events / 3 <= estimate <= events * 3, (estimate, events)


def test_estimate_grows_with_the_run():
    small = estimate_work(_scenario(steps=10))
    assert estimate_work(_scenario(steps=20)).events > 1.9 * small.events
    assert estimate_work(_scenario(steps=10, workload__samples_per_prompt=8)).samples == \
        2 * small.samples
    assert estimate_work(_scenario(steps=10, pools__0__nodes=4)).gpus == 4 * small.gpus
    assert estimate_work(_scenario(steps=10, output={"detail": "request"})).memory_bytes > \
        small.memory_bytes


def test_every_shipped_single_job_scenario_is_within_the_limits():
    from rlsim.config.fleet_loading import is_fleet
    from rlsim.config.loading import read_yaml_file

    paths = [p for p in sorted((ROOT / "scenarios").rglob("*.yaml"))
             if isinstance(read_yaml_file(p), dict) and "model" in read_yaml_file(p)
             and not is_fleet(read_yaml_file(p))]
    assert len(paths) > 10
    for path in paths:
        scenario, _ = load_scenario(path)
        check_work(scenario, allow_large=False)  # raises if a shipped scenario were refused


@pytest.mark.parametrize("changes,field", [
    ({"steps": 1_000_000_000}, "steps"),
    ({"workload__prompts_per_step": 100_000_000}, "workload.prompts_per_step"),
    ({"pools__0__nodes": 15_625_000_000}, "pools"),  # 1.25e11 GPUs
    ({"engine_mode": "iteration", "steps": 2000, "workload__max_response_len": 100_000,
      "pools__0__nodes": 64}, "workload.max_response_len"),
])
def test_too_large_is_refused_with_the_estimate_and_the_flag(changes, field):
    scenario = _scenario(**changes)
    with pytest.raises(ScenarioError) as exc:
        check_work(scenario, allow_large=False)
    assert exc.value.field == field
    assert ALLOW_LARGE_FLAG in exc.value.message and "events" in exc.value.message
    check_work(scenario, allow_large=True)  # the flag lifts the limit


def test_past_what_can_be_represented_no_flag_helps():
    scenario = _scenario(steps=10**16)
    with pytest.raises(ScenarioError) as exc:
        check_work(scenario, allow_large=True)
    assert exc.value.field == "steps" and "no flag" in exc.value.message
