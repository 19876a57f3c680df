"""Fault times, environment-execution faults and checkpoint decisions (SimPy-free)."""

from __future__ import annotations

import itertools

import pytest

from rlsim.config.faults import CheckpointPolicyConfig, FaultsConfig, FaultSpec
from rlsim.faults import env_exec_fault, fault_times, take_checkpoint


def test_explicit_times_go_to_their_targets_in_order() -> None:
    spec = FaultSpec(times=[300, 100, 200], targets=[1, 0])  # 300 -> 1, 100 -> 0, 200 -> 1
    assert list(fault_times(spec, "engine", 0, 0, seed=0)) == [100]
    assert list(fault_times(spec, "engine", 0, 1, seed=0)) == [200, 300]
    assert list(fault_times(spec, "engine", 0, 2, seed=0)) == []


def test_mtbf_gaps_are_exponential_and_reproducible() -> None:
    spec = FaultSpec(mtbf=3600)
    times = list(itertools.islice(fault_times(spec, "engine", 0, 0, seed=1), 4000))
    again = list(itertools.islice(fault_times(spec, "engine", 0, 0, seed=1), 10))
    assert times[:10] == again
    gaps = [b - a for a, b in itertools.pairwise([0.0, *times])]
    assert sum(gaps) / len(gaps) == pytest.approx(3600, rel=0.05)
    other = list(itertools.islice(fault_times(spec, "engine", 0, 1, seed=1), 10))
    assert other != again  # each instance has its own stream


def test_env_execution_faults_have_the_stated_rate_and_depend_only_on_the_execution() -> None:
    specs = [FaultSpec(probability=0.1)]
    draws = [env_exec_fault(specs, 0, 3, sample, turn, 0)
             for sample in range(50) for turn in range(40)]
    hits = [d for d in draws if d is not None]
    assert len(hits) / len(draws) == pytest.approx(0.1, abs=0.02)
    assert all(0 <= d < 1 for d in hits)
    assert env_exec_fault(specs, 0, 3, 7, 5, 0) == env_exec_fault(specs, 0, 3, 7, 5, 0)
    assert env_exec_fault([FaultSpec(probability=0.999)], 0, 0, 0, 0, 0) is not None


@pytest.mark.parametrize(("policy", "execs", "expected"), [
    ("never", 10, False), ("always", 1, True), ("every_k", 2, False), ("every_k", 3, True),
])
def test_fixed_checkpoint_policies(policy: str, execs: int, expected: bool) -> None:
    cfg = CheckpointPolicyConfig(policy=policy, k=3)  # type: ignore[arg-type]
    assert take_checkpoint(cfg, execs, 100.0, 5.0, [10.0]) is expected


def test_adaptive_checkpoints_when_the_risk_outweighs_the_visible_cost() -> None:
    cfg = CheckpointPolicyConfig(policy="adaptive", p_fail=0.01, min_steps=4, min_work_s=30)
    # too soon: fewer than min_steps executions, or less than min_work_s of work
    assert not take_checkpoint(cfg, 3, 1000.0, 5.0, [20.0])
    assert not take_checkpoint(cfg, 4, 29.0, 5.0, [20.0])
    # LLM calls outlast the snapshot: hidden, so any risk pays for it
    assert take_checkpoint(cfg, 4, 31.0, 5.0, [20.0, 30.0])
    # calls of 1 s leave 4 s visible: 0.01 x 0 x work never exceeds it
    assert not take_checkpoint(cfg, 4, 1e6, 5.0, [1.0, 1.0])
    # half the calls outlast it: 0.01 x 0.5 x W against 2 s visible on average
    calls = [1.0, 10.0]
    assert not take_checkpoint(cfg, 4, 399.0, 5.0, calls)
    assert take_checkpoint(cfg, 4, 401.0, 5.0, calls)


@pytest.mark.parametrize(("data", "message"), [
    ({"engine": [{"mtbf": "1 h", "times": ["10 s"]}]}, "exactly one of"),
    ({"engine": [{}]}, "exactly one of"),
    ({"engine": [{"probability": 0.1}]}, "probability"),
    ({"env": [{"mtbf": "1 h"}]}, "probability"),
    ({"env": [{"probability": 0.1, "mode": "slow"}]}, "fail-stop"),
    ({"link": [{"times": ["1 s"]}]}, "fail-slow"),
    ({"engine": [{"times": ["1 s"], "targets": [-1]}]}, "targets"),
    ({"engine": [{"mode": "slow", "times": ["1 s"], "factor": 0.5}]}, "factor"),
])
def test_bad_fault_specs_name_the_problem(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FaultsConfig.model_validate(data)


def test_the_code_rule_leaves_out_the_chance_that_the_llm_call_outlasts_the_snapshot() -> None:
    cfg = CheckpointPolicyConfig(policy="adaptive", p_fail=0.01, weigh_by_llm=False)
    # calls of 1 s leave 4 s visible: the code's rule pays it once 0.01 x work exceeds it
    assert not take_checkpoint(cfg, 4, 399.0, 5.0, [1.0])
    assert take_checkpoint(cfg, 4, 401.0, 5.0, [1.0])
