"""A multi-turn trajectory's context cap (workload.agentic.max_context_len, ROLL's
sequence_length) and what a judge reads of a multi-turn sample (reward.judge.reads): closed
forms on toy trajectories, and the bad input."""

from __future__ import annotations

import pytest

from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.policies.phases import Sample
from rlsim.workload.generator import context_capped
from rlsim.workload.groups import Turn
from tests.scenarios import tiny
from tests.workload.helpers import make_workload

THREE = (Turn(100, 1.0, 50), Turn(100, 1.0, 50), Turn(100))  # 450 tokens after the prompt


def test_an_uncapped_trajectory_is_unchanged():
    assert context_capped(THREE, 100, 551) == THREE  # 100 + 450 = 550 < 551


def test_a_turn_generates_at_most_the_room_left_and_the_trajectory_ends_there():
    # prompt 100, turn 1: 100 -> 200, obs 50 -> 250; turn 2 may generate 300 - 250 = 50
    assert context_capped(THREE, 100, 300) == (Turn(100, 1.0, 50), Turn(50))


def test_an_observation_that_fills_the_context_is_dropped_with_the_turns_after_it():
    # prompt 100, turn 1: 200; its observation would reach 250 >= 240: no turn 2 (ROLL's
    # make_decision returns MAX_LENGTH), and the sample ends at turn 1's response
    assert context_capped(THREE, 100, 240) == (Turn(100),)


def test_a_prompt_without_room_is_refused():
    with pytest.raises(ValueError, match="no room"):
        context_capped(THREE, 300, 300)


def test_capped_trajectories_stay_within_the_cap():
    agentic = {"turns": {"dist": "fixed", "value": 12}, "max_turns": 12,
               "env_step": {"dist": "fixed", "value": 1},
               "obs_tokens": {"dist": "fixed", "value": 100},
               "max_context_len": 4000}
    groups = make_workload(agentic=agentic, max_response_len=1024).batch(0)
    for g in groups:
        assert g.turns is not None
        for sample, total in zip(g.turns, g.response_tokens, strict=True):
            assert g.prompt_tokens + total <= 4000
            assert total == sum(t.response_tokens + t.obs_tokens for t in sample)
            assert sample[-1].obs_tokens == 0 and sample[-1].env_s == 0.0
    uncapped = make_workload(agentic={**agentic, "max_context_len": None},
                             max_response_len=1024).batch(0)
    assert sum(map(sum, (g.response_tokens for g in groups))) < sum(
        map(sum, (g.response_tokens for g in uncapped)))


def test_a_cap_below_the_prompt_cap_names_the_field():
    data = tiny(steps=1)
    data["workload"]["agentic"] = {"turns": {"dist": "fixed", "value": 2},
                                   "env_step": {"dist": "fixed", "value": 1},
                                   "max_context_len": 100}
    data["workload"]["max_prompt_len"] = 512
    with pytest.raises(ScenarioError, match="max_context_len"):
        scenario_from_dict(data)


def test_what_a_judge_reads_of_a_multi_turn_sample():
    s = Sample(0, 100, 450, 0, last_response_tokens=100, observation_tokens=100)
    assert s.judged_tokens("trajectory") == 450
    assert s.judged_tokens("responses") == 350
    assert s.judged_tokens("last_response") == 100
    single = Sample(0, 100, 300, 0)
    assert {single.judged_tokens(r) for r in ("trajectory", "responses",
                                              "last_response")} == {300}

