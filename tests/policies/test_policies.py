"""Policies against closed forms: sync is the sum of its phases; one_off overlaps them."""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest

from rlsim.api import simulate
from rlsim.config.loading import scenario_from_dict
from tests.scenarios import tiny


def _run(data):
    scenario, base = scenario_from_dict(data)
    return simulate(scenario, base)


def _phases(result):
    by_step: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    steps = {}
    for s in result.recorder.spans:
        if s.track != "controller":
            continue
        if s.name == "step":
            steps[s.attrs["step"]] = s
        else:
            by_step[s.attrs["step"]][s.name].append(s)
    return steps, by_step


@pytest.mark.parametrize("placement", ["colocated", "disaggregated"])
def test_sync_step_is_exact_sum_of_phases(placement):
    res = _run(tiny(policy={"name": "sync", "placement": placement}))
    steps, by_step = _phases(res)
    expected = {"gen", "reward", "controller", "ref", "train", "weight_sync"}
    if placement == "colocated":
        expected.add("switch")
    for k, step in steps.items():
        spans = sorted((s for v in by_step[k].values() for s in v), key=lambda s: s.t0)
        assert {s.name for s in spans} == expected
        # contiguous, no overlap, no gap
        assert spans[0].t0 == pytest.approx(step.t0, abs=1e-12)
        for a, b in itertools.pairwise(spans):
            assert b.t0 == pytest.approx(a.t1, abs=1e-9)
        total = sum(s.t1 - s.t0 for s in spans)
        assert step.t1 - step.t0 == pytest.approx(total, rel=1e-12)


def test_sync_phases_match_cost_models():
    from rlsim.entities.cluster import build_cluster  # noqa: F401  (wiring under test)

    # The profile's MFU path (train.backend: profile), whose closed form this test can
    # recompute from a span's tokens; the per-kernel backends are tests/cost/test_backends.py.
    data = tiny(policy={"name": "sync", "placement": "disaggregated"})
    data["train"]["backend"] = "profile"
    res = _run(data)
    scenario = res.scenario
    steps, by_step = _phases(res)
    train_spans = [s for s in res.recorder.spans if s.track == "train.trainer"]
    from rlsim.config.placement import resolve_placement
    from rlsim.cost.profile import builtin_profile
    from rlsim.cost.training import TrainCost

    place = resolve_placement(scenario)
    gpu = place.train_pool.gpu_spec
    cost = TrainCost(scenario.model_spec, gpu, place.train_gpus, 1, 1, 1, builtin_profile(gpu))
    for k in steps:
        (train,) = by_step[k]["train"]
        # Attention is priced at the samples' own lengths: sum(L^2) / sum(L).
        seq = train.attrs["seq_tokens"]
        assert 0 < seq <= scenario.workload.max_prompt_len + scenario.workload.max_response_len
        # each phase also holds the driver's dispatch and collect of its calls
        assert train.t1 - train.t0 == pytest.approx(
            cost.train_step(train.attrs["tokens"], seq).total_s + train.attrs["driver_s"],
            rel=1e-9)
        (ref,) = by_step[k]["ref"]
        assert ref.attrs["driver_s"] > 0 and train.attrs["driver_s"] > 0
        assert ref.t1 - ref.t0 == pytest.approx(
            2 * cost.forward_s(train.attrs["tokens"], seq) + ref.attrs["driver_s"], rel=1e-9)
    assert any(s.name == "train" for s in train_spans)


def test_one_off_overlaps_generation_and_training():
    res = _run(tiny(policy={"name": "one_off", "placement": "disaggregated"}, steps=4))
    steps, by_step = _phases(res)
    assert len(steps) == 4
    for k in range(4):
        step = steps[k]
        (reward,) = by_step[k]["reward"]
        (ctl,) = by_step[k]["controller"]
        (ref,) = by_step[k]["ref"]
        (train,) = by_step[k]["train"]
        (sync,) = by_step[k]["weight_sync"]
        # the train side scores, hands the batch to the driver, re-scores and trains batch
        # k back to back
        assert reward.t0 == pytest.approx(step.t0, abs=1e-9)
        assert ctl.t0 == pytest.approx(reward.t1) and ref.t0 == pytest.approx(ctl.t1)
        assert train.t0 == pytest.approx(ref.t1)
        train_side = train.t1 - reward.t0
        # the next batch generates while this one trains; the last step too (the pipeline
        # runs to the end, so the last step is a steady-state step like the others)
        (gen,) = by_step[k + 1]["gen"]
        assert gen.t0 == pytest.approx(step.t0, abs=1e-9)
        assert gen.t0 < train.t1 and reward.t0 < gen.t1
        expect = max(gen.t1 - gen.t0, train_side) + (sync.t1 - sync.t0)
        assert sync.t0 == pytest.approx(step.t1 - (sync.t1 - sync.t0))
        assert step.t1 - step.t0 == pytest.approx(expect, rel=1e-9)
    assert res.summary["staleness"]["max"] == 1
    # step 0 is on-policy, the later three one step stale: the steady state (after the
    # warm-up step 0) trains only stale samples, the whole run a quarter fresh ones
    assert res.summary["staleness"]["mean"] == pytest.approx(1.0)
    assert res.summary["whole_run"]["staleness"] == {"mean": pytest.approx(3 / 4), "max": 1}


def test_one_off_beats_sync_disaggregated_on_same_gpus():
    sync = _run(tiny(policy={"name": "sync", "placement": "disaggregated"}, steps=4))
    off = _run(tiny(policy={"name": "one_off", "placement": "disaggregated"}, steps=4))
    # the same four batches trained sooner (one_off's run also generates a fifth batch
    # during its last step, which sync does not, so sim_time_s is not the same work)
    def trained_by(res):
        return max(s.t1 for s in res.recorder.spans if s.name == "train")
    assert trained_by(off) < trained_by(sync)


def test_every_response_consumed_exactly_once():
    res = _run(tiny(steps=3))
    trained = sum(s.attrs["samples"] for s in res.recorder.spans
                  if s.track == "controller" and s.name == "train")
    assert trained == 3 * 8 * 4


def test_determinism_and_seed_sensitivity():
    a = _run(tiny()).summary
    b = _run(tiny()).summary
    c = _run(tiny(seed=1)).summary
    strip = lambda s: {k: v for k, v in s.items() if k != "wall_s"}  # noqa: E731
    assert strip(a) == strip(b)
    assert strip(a) != strip(c)


def test_skip_mode_matches_iteration_mode_with_20x_fewer_events():
    # Long-tailed lengths (lognormal sigma 1.2, capped at 8k) on 8 engines, with a KV cache
    # small enough to preempt: the reference mode prices every decode iteration one by one.
    data = tiny(workload__response_len={"dist": "lognormal", "median": 600, "sigma": 1.2},
                workload__max_response_len=8000, workload__prompts_per_step=16,
                workload__samples_per_prompt=8, rollout__max_running_seqs=16)
    skip = _run(data)
    data["engine_mode"] = "iteration"
    it = _run(data)
    s, i = skip.summary, it.summary
    assert s["step_time_s"]["mean"] == pytest.approx(i["step_time_s"]["mean"], rel=1e-3)
    assert s["phase_time_s"]["gen"] == pytest.approx(i["phase_time_s"]["gen"], rel=1e-3)
    assert i["events"] >= 20 * s["events"], (s["events"], i["events"])
    print(f"events: skip {s['events']}, iteration {i['events']}, "
          f"ratio {i['events'] / s['events']:.0f}x")


def test_judge_reward_runs_on_its_own_engines():
    data = tiny(
        pools=[{"name": "cluster", "gpu": "H100", "nodes": 1},
               {"name": "judges", "gpu": "H100", "nodes": 1, "gpus_per_node": 2}],
        reward={"kind": "judge", "judge": {"model": "qwen2.5-0.5b", "pool": "judges",
                                           "gpus": 2, "output_tokens": 8}},
    )
    res = _run(data)
    steps, by_step = _phases(res)
    judge_busy = [s for s in res.recorder.spans
                  if s.track.startswith("rollout.judge") and s.name == "busy"]
    assert len({s.track for s in judge_busy}) == 2
    for k in steps:
        (reward,) = by_step[k]["reward"]
        # the judge engines work exactly during the reward phase
        inside = [s for s in judge_busy if reward.t0 <= s.t0 and s.t1 <= reward.t1 + 1e-9]
        assert inside and max(s.t1 for s in inside) == pytest.approx(reward.t1)
    assert res.summary["gpu_util"]["judges"] > 0


def test_sandbox_timeout_bounds_reward_phase():
    slow = _run(tiny(reward={"kind": "sandbox", "latency": {"median": "20 s", "sigma": 1.0},
                             "timeout": "30 s", "workers": 1000}))
    # every sample runs in parallel and none exceeds the 30 s timeout
    assert slow.summary["phase_time_s"]["reward"] == pytest.approx(30.0)
