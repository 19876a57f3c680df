"""Synthetic agentic trajectories (workload.agentic): turn counts, per-turn responses,
environment steps and resets drawn deterministically, trajectories that add up, and a toy
job whose generation time is the closed-form sum of its resets and environment steps."""

from __future__ import annotations

import numpy as np
import pytest

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from tests.scenarios import tiny
from tests.workload.helpers import DAPO, make_workload

AGENTIC = {"turns": {"dist": "lognormal", "median": 6, "sigma": 0.6}, "max_turns": 15,
           "env_step": {"dist": "normal", "mean": 10, "std": 5},
           "env_reset": {"dist": "lognormal", "median": 3, "sigma": 1.0},
           "obs_tokens": {"dist": "fixed", "value": 50}}


def test_trajectories_add_up_and_are_deterministic():
    w = make_workload(agentic=AGENTIC, max_response_len=2048)
    groups = w.batch(0)
    assert groups == make_workload(agentic=AGENTIC, max_response_len=2048).batch(0)
    steps, resets = [], []
    for g in groups:
        assert g.turns is not None and g.reset_s is not None
        assert len(g.turns) == len(g.response_tokens) == len(g.reset_s) == 8
        for sample, total in zip(g.turns, g.response_tokens, strict=True):
            assert 1 <= len(sample) <= 15
            assert total == sum(t.response_tokens + t.obs_tokens for t in sample)
            assert sample[-1].env_s == 0.0 and sample[-1].obs_tokens == 0
            assert all(1 <= t.response_tokens <= 2048 for t in sample)
            assert all(t.obs_tokens == 50 for t in sample[:-1])
            steps += [t.env_s for t in sample[:-1]]
        resets += list(g.reset_s)
    assert min(steps) >= 0.0 and 9.0 < float(np.mean(steps)) < 11.0  # N(10, 5), cut at 0
    assert min(resets) > 0.0 and 2.0 < float(np.median(resets)) < 4.5
    # a larger batch starts with the smaller one (chunked draws)
    larger = make_workload(agentic=AGENTIC, max_response_len=2048).batch(0, 80)
    assert larger[:64] == groups
    # and the groups from the 21st on alone are the same (numbers converted by blocks of
    # groups from wherever the batch starts)
    assert make_workload(agentic=AGENTIC, max_response_len=2048).batch(0, 80, first=21) \
        == larger[21:]
    # each sample's turns come packed as a rollout keeps them
    from rlsim.entities.rollout import pack_turns
    for g in larger:
        for t in g.turns:
            assert t.packed == pack_turns(t.response_tokens, t.obs_tokens, t.env_s)


@pytest.mark.parametrize("block", [1, 5, 16, 64])
def test_groups_are_the_same_whatever_the_block_they_are_drawn_in(monkeypatch, block):
    """Groups drawn a block at a time (`_BLOCK_GROUPS`), each kind's rows read on from its
    streams, are those of one draw of the batch: with chunks of 24 prompts, blocks that
    straddle chunks and batches that start inside one."""
    from rlsim.workload import generator

    monkeypatch.setattr(generator, "CHUNK_PROMPTS", 24)
    whole = [make_workload(agentic=AGENTIC, max_response_len=2048).batch(0, 90, first=f)
             for f in (0, 31)]
    monkeypatch.setattr(generator, "_BLOCK_GROUPS", block)
    for f, expected in zip((0, 31), whole, strict=True):
        assert make_workload(agentic=AGENTIC, max_response_len=2048).batch(0, 90, first=f) \
            == expected
    assert whole[1] == whole[0][31:]
    # the rows of a kind, taken in pieces across chunks, are one draw per chunk
    rows = generator._NormalRows(np.random.SeedSequence(3), 2, 7, (2,), 5)
    taken = np.concatenate([rows.take(k) for k in (3, 20, 1, 30)])
    chunks = [generator.keyed_stream(np.random.SeedSequence(3), 2, c, 7).standard_normal(
        (24, 2)) for c in range(3)]
    assert np.array_equal(taken, np.concatenate(chunks)[5:59])


def test_env_time_of_a_toy_trajectory_is_its_reset_plus_its_steps():
    data = tiny(steps=1, workload__prompts_per_step=1, workload__samples_per_prompt=1,
                workload__response_len={"dist": "fixed", "value": 20})
    data["workload"]["agentic"] = {"turns": {"dist": "fixed", "value": 3},
                                   "env_step": {"dist": "fixed", "value": 10},
                                   "env_reset": {"dist": "fixed", "value": 5},
                                   "obs_tokens": {"dist": "fixed", "value": 40}}
    scenario, base = scenario_from_dict(data)
    res = simulate(scenario, base)
    gen = res.summary["phase_time_s"]["gen"]
    # 5 s reset + 2 x 10 s steps, plus three 20-token turns of a 0.5B model (well under 1 s)
    assert 25.0 < gen < 26.0
    lengths = [i.attrs["response_tokens"] for i in res.recorder.instants
               if i.name == "responses"]
    assert lengths == [[3 * 20 + 2 * 40]]


def test_agentic_with_a_trace_is_one_clear_error():
    data = tiny()
    data["workload"]["agentic"] = AGENTIC
    data["workload"]["trace"] = {"path": str(DAPO)}
    with pytest.raises(ScenarioError, match="agentic"):
        scenario_from_dict(data)


def _agentic_job(interaction: str, **changes):
    data = tiny(steps=1, workload__prompts_per_step=4, workload__samples_per_prompt=2,
                workload__response_len={"dist": "lognormal", "median": 50, "sigma": 0.5},
                env={"workers": 64}, **changes)
    data["workload"]["agentic"] = {"turns": {"dist": "lognormal", "median": 4, "sigma": 0.6},
                                   "env_step": {"dist": "lognormal", "median": 5, "sigma": 1.0},
                                   "obs_tokens": {"dist": "fixed", "value": 20}}
    data["policy"] = {"name": "sync", "env_interaction": interaction}
    scenario, base = scenario_from_dict(data)
    return simulate(scenario, base)


def test_batched_interaction_waits_for_the_slowest_env_step_of_every_turn():
    own, batched = _agentic_job("per_trajectory"), _agentic_job("batched")
    lengths = [sorted(i.attrs["response_tokens"]) for r in (own, batched)
               for i in r.recorder.instants if i.name == "responses"]
    assert lengths[0] == lengths[1]  # the same trajectories
    gen = [r.summary["phase_time_s"]["gen"] for r in (own, batched)]
    assert gen[1] > gen[0]  # lock-step pays each turn's slowest step



def test_a_lock_step_turn_waits_for_every_reset_and_every_step():
    """With fixed turns and steps, lock-step gen time is the slowest reset plus, per turn
    boundary, the slowest environment step: here 7 s + 2 x 10 s, plus generation."""
    data = tiny(steps=1, workload__prompts_per_step=2, workload__samples_per_prompt=2,
                workload__response_len={"dist": "fixed", "value": 20}, env={"workers": 8})
    data["workload"]["agentic"] = {"turns": {"dist": "fixed", "value": 3},
                                   "env_step": {"dist": "normal", "mean": 8, "std": 1.5},
                                   "env_reset": {"dist": "normal", "mean": 5, "std": 1.5}}
    data["policy"] = {"name": "sync", "env_interaction": "batched"}
    scenario, base = scenario_from_dict(data)
    from rlsim.config.streams import stream
    from rlsim.workload import Workload

    groups = Workload(scenario.workload, stream(scenario.seed, "workload"), base).batch(0)
    samples = [(g.reset_s[j], g.turns[j]) for g in groups for j in range(2)]
    expect = max(r for r, _ in samples) + sum(
        max(turns[t].env_s for _, turns in samples) for t in range(2))
    gen = simulate(scenario, base).summary["phase_time_s"]["gen"]
    assert expect < gen < expect + 1.0  # three 20-token turns of a 0.5B model


def test_async_refuses_batched_interaction():
    data = tiny(pools=[{"name": "r", "gpu": "H100", "nodes": 1},
                       {"name": "t", "gpu": "H100", "nodes": 1}],
                rollout__pool="r", train__pool="t",
                policy={"name": "async", "placement": "disaggregated",
                        "env_interaction": "batched"})
    with pytest.raises(ScenarioError, match=r"policy\.env_interaction"):
        scenario_from_dict(data)  # async's declaration refuses it when loaded
