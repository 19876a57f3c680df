"""The single controller's per-step cost (rlsim/cost/controller.py) and its phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlsim.api import simulate
from rlsim.config import scenario as scenario_mod
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.config.scenario import ControllerConfig
from rlsim.cost.controller import (
    CALLS,
    call_bytes_per_response,
    controller_cost,
    step_bytes_per_response,
)
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


def test_bytes_by_call_sum_to_the_step_and_follow_verl_order():
    calls = call_bytes_per_response(100, 1000, critic=True)
    assert [c for c, _, _ in calls] == list(CALLS)
    assert sum(s + g for _, s, g in calls) == step_bytes_per_response(100, 1000, critic=True)
    by = {c: (s, g) for c, s, g in calls}
    # generate sends the prompts' ids, mask, positions (24P) and gets 32P + 32R;
    # compute_log_prob sends the batch 32P + 40R and gets log-probs and entropies (8R)
    assert by["generate"] == (24 * 100, 32 * 100 + 32 * 1000)
    assert by["old_logprob"] == (32 * 100 + 40 * 1000, 8 * 1000)
    # the updates send the whole batch (+ the advantage's 16R) and get metrics only
    assert by["update_actor"] == (32 * 100 + 68 * 1000, 0)


def test_sent_and_received_bytes_take_their_own_rates():
    c = controller_cost(64, 100, 1000, 8, 8, **TOY, receive_bytes_per_s=2e9)
    calls = call_bytes_per_response(100, 1000)
    assert c.transfer_of("generate") == pytest.approx(64 * (2400 / 1e9 + 35200 / 2e9))
    assert c.transfer_s == pytest.approx(
        sum(64 * (s / 1e9 + g / 2e9) for _, s, g in calls))
    assert sum(s for _, s in c.transfer_by_call) == pytest.approx(c.transfer_s)
    assert c.transfer_of("critic_values") == 0.0  # not a PPO run: no such call
    assert isinstance(c.transfer_of("critic_values"), float)  # recorded as span attrs
    with pytest.raises(ValueError, match=r"controller\.receive_bandwidth"):
        controller_cost(4, 100, 1000, 8, 8, **TOY, receive_bytes_per_s=0.0)


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
    # the object store copy: single_client_put_gigabytes 19.86 in Ray's unit of 1.048576e9 B
    store = 19.86 * 1.048576e9
    assert pytest.approx(store, rel=1e-3) == scenario_mod.OBJECT_STORE_BYTES_PER_S
    # the driver's serialization: the best of the stored runs of the bench (the threaded
    # dispatch veRL's parallel_put runs, and the collect), within 5% as rounded
    prof = json.loads((Path(__file__).parents[2] / "calibration" / "profiles"
                       / "cpu-dataproto-serde.json").read_text())
    best = {k: max(r[k] for r in prof["runs"]) for k in ("dispatch threaded", "collect")}
    dispatch, collect = best["dispatch threaded"], best["collect"]
    assert scenario_mod.DISPATCH_BYTES_PER_S / dispatch == pytest.approx(1.0, abs=0.05)
    assert scenario_mod.COLLECT_BYTES_PER_S / collect == pytest.approx(1.0, abs=0.05)
    # each byte passes the serialization and the store copy one after the other
    assert 1 / c.bandwidth == pytest.approx(
        1 / scenario_mod.DISPATCH_BYTES_PER_S + 1 / store, rel=1e-3)
    assert 1 / c.receive_bandwidth == pytest.approx(
        1 / scenario_mod.COLLECT_BYTES_PER_S + 1 / store, rel=1e-3)


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
    with pytest.raises(ScenarioError, match=r"controller\.receive_bandwidth"):
        scenario_from_dict(tiny(controller={"receive_bandwidth": "-1 GB/s"}))


def test_rates_take_units():
    sc, _ = scenario_from_dict(tiny(controller={"bandwidth": "10 Gb/s",
                                                "receive_bandwidth": "2 GB/s"}))
    assert sc.controller.bandwidth == pytest.approx(1.25e9)
    assert sc.controller.receive_bandwidth == pytest.approx(2e9)


def test_sync_step_pays_the_controller_phase(tmp_path: Path):
    sc, _ = scenario_from_dict(tiny())
    off_sc, _ = scenario_from_dict(tiny(controller={"enabled": False}))
    on = simulate(sc, tmp_path / "on").summary
    off = simulate(off_sc, tmp_path / "off").summary
    w = sc.workload
    cost = controller_cost(
        w.prompts_per_step * w.samples_per_prompt, w.max_prompt_len, w.max_response_len,
        8, 8, call_latency_s=sc.controller.call_latency,
        per_worker_call_s=sc.controller.per_worker_call, bytes_per_s=sc.controller.bandwidth,
        advantage_per_element_s=sc.controller.advantage_per_element,
        receive_bytes_per_s=sc.controller.receive_bandwidth)
    # the controller phase: calls, the generate call's transfer, the advantage; the
    # log-prob calls' transfers in `ref`, the update's in `train` (where veRL times them)
    here = cost.call_s + cost.transfer_of("generate") + cost.advantage_s
    assert on["phase_time_s"]["controller"] == pytest.approx(here)
    logprob = cost.transfer_of("old_logprob") + cost.transfer_of("ref_logprob")
    assert on["phase_time_s"]["ref"] - off["phase_time_s"]["ref"] == \
        pytest.approx(logprob, rel=1e-6)
    assert on["phase_time_s"]["train"] - off["phase_time_s"]["train"] == \
        pytest.approx(cost.transfer_of("update_actor"), rel=1e-6)
    assert off["phase_time_s"]["controller"] == 0.0
    # the summary gathers the driver's work per step from wherever it was charged
    assert on["controller"]["total_s"] == pytest.approx(cost.total_s)
    assert on["controller"]["transfer_s"] == pytest.approx(cost.transfer_s)
    assert on["controller"]["bytes"] == pytest.approx(cost.bytes_moved)
    assert off["controller"]["total_s"] == 0.0
    # sync: nothing overlaps, so the step grows by exactly the controller's time
    assert on["step_time_s"]["mean"] - off["step_time_s"]["mean"] == \
        pytest.approx(cost.total_s, rel=1e-6)


@pytest.mark.parametrize("policy", ["one_off", "async", "tail_batching"])
def test_every_policy_records_the_controller(tmp_path: Path, policy: str):
    data = tiny(policy={"name": policy, "placement": "disaggregated"},
                pools=[{"name": "cluster", "gpu": "H100", "nodes": 2}])
    s = simulate(scenario_from_dict(data)[0], tmp_path).summary
    assert s["phase_time_s"]["controller"] > 0
