"""A judge on the rollout GPUs: time-shared (veRL) loads its weights before judging and
takes no KV; under MPS (RollPacker) it streams half its weights, takes its resident share
and one longest request from every rollout GPU's KV, and judges while rollout runs."""

from __future__ import annotations

import pytest

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import lookup_gpu, lookup_model
from rlsim.config.loading import scenario_from_dict
from rlsim.cost.inference import InferenceCost
from rlsim.cost.profile import builtin_profile
from rlsim.cost.streamed import StreamedWeightsCost
from rlsim.entities.cluster import build_cluster
from tests.scenarios import tiny

JUDGE = {"model": "qwen2.5-0.5b", "output_tokens": 1}


def _judged(placement: str, policy: dict | None = None, **changes):
    data = tiny(steps=2, **changes)
    data["reward"] = {"kind": "judge", "judge": {**JUDGE, "placement": placement}}
    if policy is not None:
        data["policy"] = policy
    return scenario_from_dict(data)


def _kv(placement: str) -> int:
    import simpy

    from rlsim.trace import Recorder

    scenario, _ = _judged(placement)
    return build_cluster(scenario, simpy.Environment(), Recorder("phase")).engines[0].kv_capacity


def test_mps_judge_takes_its_resident_weights_and_one_request_from_the_kv():
    gpu, prof = lookup_gpu("H100"), builtin_profile(lookup_gpu("H100"))
    actor = InferenceCost(lookup_model("qwen2.5-0.5b"), gpu, 1, prof)
    judge = StreamedWeightsCost(InferenceCost(lookup_model("qwen2.5-0.5b"), gpu, 1, prof), 0.5)
    longest = 4000 + 256 + 1  # max response + judge prompt overhead + verdict
    taken = judge.resident_bytes_per_gpu() + longest * actor.kv_bytes_per_token_per_gpu
    expect = -(-taken // actor.kv_bytes_per_token_per_gpu)  # ceil
    assert _kv("time_shared") - _kv("mps") == expect


def test_streamed_iteration_is_the_longer_of_compute_and_transfer():
    gpu = lookup_gpu("H100")
    base = InferenceCost(lookup_model("qwen2.5-7b"), gpu, 1, builtin_profile(gpu))
    s = StreamedWeightsCost(base, 0.5)
    pcie = gpu.pcie_bandwidth * base.profile.pcie_efficiency
    assert s.stream_s == pytest.approx(0.5 * base.weight_bytes_per_gpu() / pcie)
    for args in ((1, 1000), (0, 0, 1000), (0, 0, 60000)):
        assert s.step(*args).total_s == max(base.step(*args).total_s, s.stream_s)
    assert s.decode_affine(4)[1] == base.decode_affine(4)[1]
    assert StreamedWeightsCost(base, 1.0).stream_s == 0.0


def test_time_shared_judge_loads_its_weights_inside_the_reward_phase():
    scenario, base = _judged("time_shared")
    res = simulate(scenario, base)
    load = InferenceCost(lookup_model("qwen2.5-0.5b"), lookup_gpu("H100"), 1,
                         builtin_profile(lookup_gpu("H100"))).warm_start_s()
    for reward in (s for s in res.recorder.spans if s.name == "reward"):
        busy = [s for s in res.recorder.spans if s.track.startswith("rollout.judge")
                and s.name == "busy" and reward.t0 <= s.t0 <= reward.t1]
        assert busy and min(s.t0 for s in busy) >= reward.t0 + load - 1e-9


def test_mps_judge_scores_during_generation_under_the_reward_scheduler():
    scenario, base = _judged("mps", {"name": "tail_batching",
                                     "tail_batching": {"reward_scheduler": True}})
    res = simulate(scenario, base)
    gens = [s for s in res.recorder.spans if s.name == "gen"]
    busy = [s for s in res.recorder.spans if s.track.startswith("rollout.judge")
            and s.name == "busy"]
    assert any(g.t0 <= b.t0 < g.t1 for g in gens for b in busy)  # judged while rolling out
    assert res.summary["steps"] == 2


@pytest.mark.parametrize(("judge", "field"), [
    ({"model": "qwen2.5-0.5b"}, "pool"),  # dedicated needs its GPUs
    ({"model": "qwen2.5-0.5b", "placement": "mps", "pool": "cluster", "gpus": 1}, "drop"),
])
def test_bad_judge_placement_is_one_clear_line(judge, field):
    data = tiny()
    data["reward"] = {"kind": "judge", "judge": judge}
    with pytest.raises(ScenarioError, match=field):
        scenario_from_dict(data)


def test_train_mfu_sets_the_trainer_efficiency():
    slow = simulate(*scenario_from_dict(tiny(train__mfu=0.1)))
    fast = simulate(*scenario_from_dict(tiny(train__mfu=0.4)))
    t_slow, t_fast = (r.summary["phase_time_s"]["train"] for r in (slow, fast))
    assert t_slow > 2 * t_fast
