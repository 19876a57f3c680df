"""The single controller's per-step cost (rlsim/cost/controller.py) and its phase."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.config.scenario import ControllerConfig
from rlsim.cost.controller import controller_cost, step_bytes_per_response
from tests.scenarios import tiny

TOY = {"call_latency_s": 0.5e-3, "per_worker_call_s": 0.1e-3, "bytes_per_s": 1e9,
       "advantage_per_element_s": 1e-8}


def test_bytes_per_response_closed_forms():
    # veRL's calls in order, P / R the padded prompt / response lengths:
    # gen 24P + (32P + 32R), old log-prob (32P + 40R) + 8R, ref (32P + 44R) + 4R,
    # update_actor (32P + 64R) -> 152P + 192R
    assert step_bytes_per_response(100, 1000) == 152 * 100 + 192 * 1000
    # + critic: values (32P + 48R) + 4R, update_critic and update_actor 32P + 68R each
    assert step_bytes_per_response(100, 1000, critic=True) == 216 * 100 + 316 * 1000
    # neither log-prob pass: gen, then update_actor on 32P + 56R
    assert step_bytes_per_response(100, 1000, old_logprob=False, ref_logprob=False) == \
        88 * 100 + 88 * 1000


def test_controller_cost_closed_form():
    c = controller_cost(64, 100, 1000, rollout_workers=8, train_workers=8, **TOY)
    assert c.calls == 4  # generate, old log-prob, ref log-prob, update_actor
    assert c.call_s == pytest.approx(4 * 0.5e-3 + (8 + 3 * 8) * 0.1e-3)
    assert c.bytes_moved == 64 * (152 * 100 + 192 * 1000)
    assert c.transfer_s == pytest.approx(c.bytes_moved / 1e9)
    assert c.advantage_elements == 64 * 1000
    assert c.advantage_s == pytest.approx(64 * 1000 * 1e-8)
    assert c.total_s == pytest.approx(c.call_s + c.transfer_s + c.advantage_s)


def test_controller_cost_grows_with_batch_tokens():
    small = controller_cost(64, 100, 1000, 8, 8, **TOY).total_s
    more = controller_cost(128, 100, 1000, 8, 8, **TOY).total_s
    longer = controller_cost(64, 100, 2000, 8, 8, **TOY).total_s
    assert small < more and small < longer
    assert controller_cost(0, 100, 1000, 8, 8, **TOY).total_s == 0.0


def test_controller_cost_bad_input():
    with pytest.raises(ValueError, match="responses"):
        controller_cost(-1, 100, 1000, 8, 8, **TOY)
    with pytest.raises(ValueError, match="worker counts"):
        controller_cost(4, 100, 1000, 0, 8, **TOY)
    with pytest.raises(ValueError, match=r"controller\.bandwidth"):
        controller_cost(4, 100, 1000, 8, 8, **{**TOY, "bytes_per_s": 0.0})
    with pytest.raises(ValueError, match="padded lengths"):
        step_bytes_per_response(-1, 1000)


def test_defaults_are_the_cited_measurements():
    c = ControllerConfig()
    assert c.enabled
    assert 1 / c.call_latency == pytest.approx(2011.9, rel=1e-4)  # Ray 1_1_actor_calls_sync
    assert 1 / c.per_worker_call == pytest.approx(8038.2, rel=1e-4)  # 1_n_actor_calls_async
    # single_client_put_gigabytes 19.86 in Ray's unit of 1.048576e9 B
    assert c.bandwidth == pytest.approx(19.86 * 1.048576e9, rel=1e-3)


def test_advantage_constant_is_the_calibration_record():
    # verl issue 7412, step 34 (validation/real_runs): timing_s/adv 0.037 s; responses from
    # timing_s/gen / timing_per_token_ms/gen (response tokens) / response_length/mean,
    # padded to max_response_len 3072 by the agent loop.
    responses = 541.188 / 0.359e-3 / 1267.02
    assert responses == pytest.approx(1190, abs=1)
    assert ControllerConfig().advantage_per_element == pytest.approx(
        0.037 / (responses * 3072), rel=0.02)


def test_bad_scenario_value_names_the_field():
    with pytest.raises(ScenarioError, match=r"controller\.bandwidth"):
        scenario_from_dict(tiny(controller={"bandwidth": 0}))


def test_sync_step_pays_the_controller_phase(tmp_path: Path):
    sc, _ = scenario_from_dict(tiny())
    off_sc, _ = scenario_from_dict(tiny(controller={"enabled": False}))
    on = simulate(sc, tmp_path / "on").summary
    off = simulate(off_sc, tmp_path / "off").summary
    w = sc.workload
    expected = controller_cost(
        w.prompts_per_step * w.samples_per_prompt, w.max_prompt_len, w.max_response_len,
        8, 8, call_latency_s=sc.controller.call_latency,
        per_worker_call_s=sc.controller.per_worker_call, bytes_per_s=sc.controller.bandwidth,
        advantage_per_element_s=sc.controller.advantage_per_element).total_s
    assert on["phase_time_s"]["controller"] == pytest.approx(expected)
    assert off["phase_time_s"]["controller"] == 0.0
    # sync: nothing overlaps, so the step grows by exactly the controller's time
    assert on["step_time_s"]["mean"] - off["step_time_s"]["mean"] == \
        pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("policy", ["one_off", "async", "tail_batching"])
def test_every_policy_records_the_controller(tmp_path: Path, policy: str):
    data = tiny(policy={"name": policy, "placement": "disaggregated"},
                pools=[{"name": "cluster", "gpu": "H100", "nodes": 2}])
    s = simulate(scenario_from_dict(data)[0], tmp_path).summary
    assert s["phase_time_s"]["controller"] > 0
