"""The horizon (rlsim.faults.horizon, rlsim.horizon): the job-level fault process against
its closed forms (Daly's renewal expression, Young's interval), and the scenario's
horizon run end to end."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.faults.horizon import (
    FaultClass,
    JobModel,
    daly_interval_s,
    renewal_ettr,
    run_job,
    young_interval_s,
)
from rlsim.horizon import simulate_horizon
from rlsim.prepare import prepare
from tests.scenarios import tiny

STEP_S, WRITE_S, DOWN_S, MTBF_S = 60.0, 120.0, 600.0, 20 * 3600.0
YEAR_S = 365 * 86400.0


def _model(every: int, mtbf_s: float = MTBF_S) -> JobModel:
    return JobModel((STEP_S,), 0.0, every, WRITE_S,
                    (FaultClass("trainer", 1.0 / mtbf_s, True, DOWN_S),))


def _ettr(model: JobModel, reps: int) -> np.ndarray:
    runs = [run_job(model, np.random.default_rng([7, r]), span_s=YEAR_S) for r in range(reps)]
    return np.asarray([r.steps * STEP_S / r.wall_s for r in runs])


@pytest.mark.parametrize("every", [5, 20, 60])
def test_ettr_matches_dalys_renewal_expression(every: int) -> None:
    """Faults and checkpoints only: the Monte Carlo ETTR's 99% interval holds the exact
    renewal value (work / ((M + R)(e^((work + write)/M) - 1)))."""
    ettr = _ettr(_model(every), 30)
    exact = renewal_ettr(every * STEP_S, WRITE_S, DOWN_S, MTBF_S)
    half = 2.76 * ettr.std(ddof=1) / math.sqrt(len(ettr))  # t(0.995, 29)
    assert abs(ettr.mean() - exact) <= half, (ettr.mean(), exact, half)


def test_best_interval_is_youngs_within_10_percent() -> None:
    """On common random numbers over 10 intervals, the minimum of a fitted
    c + a / tau + b tau curve of the wall time per unit of work lies within 10% of
    sqrt(2 x write x MTBF)."""
    every = np.arange(20, 140, 12)  # steps: 20 ... 128, around Young's 69
    wall_per_work = np.asarray([1.0 / _ettr(_model(int(k)), 8).mean() for k in every])
    tau = every * STEP_S
    design = np.column_stack([np.ones_like(tau), 1.0 / tau, tau])
    _, a, b = np.linalg.lstsq(design, wall_per_work, rcond=None)[0]
    best = math.sqrt(a / b)
    young = young_interval_s(WRITE_S, MTBF_S)
    assert abs(best / young - 1.0) <= 0.10, (best, young)
    assert daly_interval_s(WRITE_S, MTBF_S) == pytest.approx(young, rel=0.05)


def test_a_step_horizon_ends_when_the_steps_are_trained() -> None:
    # no faults: every 10 steps a write, none after the last
    model = JobModel((STEP_S,), 30.0, 10, WRITE_S, ())
    run = run_job(model, np.random.default_rng(0), steps=100)
    assert run.steps == 100 and run.restarts == 0
    assert run.wall_s == pytest.approx(30.0 + 100 * STEP_S + 9 * WRITE_S)
    assert run.checkpoint_s == pytest.approx(9 * WRITE_S)


def test_a_penalty_fault_delays_the_job_by_its_measured_cost() -> None:
    ride = FaultClass("engine", 1.0 / 3600.0, False, penalties_s=(50.0,))
    model = JobModel((STEP_S,), 0.0, None, 0.0, (ride,))
    run = run_job(model, np.random.default_rng(3), steps=1000)
    assert run.penalties > 5 and run.restarts == 0
    assert run.wall_s == pytest.approx(1000 * STEP_S + 50.0 * run.penalties)


def _horizon(**changes: Any) -> dict[str, Any]:
    data = tiny(steps=4, **changes)
    scenario, base = scenario_from_dict(data)
    return simulate_horizon(prepare(scenario, base)).summary["horizon"]


def test_a_scenario_horizon_runs_and_answers_with_intervals() -> None:
    h = _horizon(horizon="2 d", faults={"gpu": [{"mtbf": "200 h"}]},
                 recovery={"trainer": {"checkpoint_every": 5}})
    assert h["span_s"]["mean"] == 2 * 86400.0 and h["replicates"] == 20
    ettr = h["ettr"]
    assert 0.5 < ettr["p5"] <= ettr["mean"] <= ettr["p95"] < 1.0
    assert ettr["ci95_low"] <= ettr["mean"] <= ettr["ci95_high"]
    (cls,) = h["classes"]  # colocated: every GPU's fault restarts the job
    assert cls["restarts_job"] and cls["per_day"] == pytest.approx(8 * 24 / 200)
    assert h["checkpoint_intervals"]["young_steps"] > 0
    scan = h["checkpoint_scan"]  # intervals around Young's and the scenario's own, same faults
    tried = {c["every"]: c["ettr"] for c in scan["curve"]}
    assert 5 in tried and tried[5] == pytest.approx(ettr["mean"], rel=1e-12)
    assert scan["best_ettr"] == max(tried.values()) == tried[scan["best_every"]]
    # the same faults without them: ETTR is the checkpoints' share alone
    quiet = _horizon(horizon="2 d", recovery={"trainer": {"checkpoint_every": 5}})
    assert quiet["restarts"]["mean"] == 0
    assert quiet["ettr"]["mean"] > ettr["mean"]


def test_a_disaggregated_rollout_gpu_fault_is_measured_not_restarted() -> None:
    h = _horizon(horizon={"steps": 200, "replicates": 4, "penalty_runs": 2},
                 policy={"name": "sync", "placement": "disaggregated"},
                 rollout={"pool": "cluster", "gpus": 4, "tp": 1},
                 train={"pool": "cluster", "gpus": 4, "tp": 1},
                 faults={"gpu": [{"mtbf": "20 h"}]})
    kinds = {c["name"]: c for c in h["classes"]}
    assert not kinds["faults.gpu.0 (rollout gpus)"]["restarts_job"]
    assert kinds["faults.gpu.0 (rollout gpus)"]["cost_s"] > 0
    assert kinds["faults.gpu.0 (training gpus)"]["restarts_job"]
    assert h["steps"]["mean"] == 200


@pytest.mark.parametrize(("changes", "field"), [
    ({"horizon": "1 d", "faults": {"gpu": [{"times": ["1 s"]}]}}, "faults.gpu.0.times"),
])
def test_a_horizon_refuses_faults_at_given_times(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError) as err:
        _horizon(**changes)
    assert err.value.field == field


def test_a_horizon_is_a_span_or_steps() -> None:
    scenario, _ = scenario_from_dict(tiny(horizon="30 d"))
    assert scenario.horizon is not None and scenario.horizon.span == 30 * 86400.0
    with pytest.raises(ValueError, match="not both"):
        scenario_from_dict(tiny(horizon={"span": "1 d", "steps": 5}))
