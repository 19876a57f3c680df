"""async's environment instances (env.instances): ROLL's env managers, one trajectory each
from its reset to its end, so no more trajectories are live at once than instances; one
that finds none free waits and starts, in launch order, when one is freed. Unset (None)
changes nothing; single-turn samples take none."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.policies import asynchronous
from tests.policies.test_async import AGENTIC, _run
from tests.policies.test_async_over_age import (
    SLOW,
    _decisions,
    _outcomes,
    _over_age,
    assert_one_outcome_each,
    assert_steps_within_alpha,
)


class _Live:
    """Every slot started so far; checks, at each start, that the trajectories live (an
    attempt open and not yet scored: running, being scored, or a replaced one running out)
    are no more than the instances."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, cap: int | None) -> None:
        self.slots: dict[int, asynchronous._Slot] = {}
        self.peak = 0
        live = self

        def record(s):
            if s.turns is None:
                return
            live.slots[id(s)] = s
            n = sum(1 for x in live.slots.values() if x.is_open and not x.done)
            live.peak = max(live.peak, n)
            if cap is not None:
                assert n <= cap, f"{n} trajectories live, {cap} instances"

        class Spy(asynchronous._AsyncRun):
            def _begin(self, s, engine):  # every start goes through it
                super()._begin(s, engine)
                record(s)

        monkeypatch.setattr(asynchronous, "_RUN", Spy)


def _agentic(alpha: int = 1, instances: int | None = None, **changes):
    env = {"workers": 64} if instances is None else {"workers": 64, "instances": instances}
    kw = dict(steps=4, seed=5, workload__prompts_per_step=4, workload__samples_per_prompt=4,
              workload__agentic=AGENTIC, env=env)
    return _run(alpha, False, **{**kw, **changes})


def _strip(summary):
    return {k: v for k, v in summary.items() if k != "wall_s"}


def test_unset_is_no_cap_and_changes_no_record():
    from rlsim.config.scenario import EnvConfig

    assert EnvConfig().instances is None
    a = _agentic()
    b = _agentic(env={"workers": 64, "instances": None})
    assert _strip(a.summary) == _strip(b.summary)
    # A cap no run ever reaches takes the same path as no cap: the same records.
    c = _agentic(instances=10_000)
    assert _strip(a.summary) == _strip(c.summary)
    assert [(s.track, s.name, s.t0, s.t1, s.attrs) for s in a.recorder.spans] == \
        [(s.track, s.name, s.t0, s.t1, s.attrs) for s in c.recorder.spans]


@pytest.mark.parametrize("cap", [1, 3, 7])
def test_live_trajectories_never_exceed_the_instances(monkeypatch, cap):
    live = _Live(monkeypatch, cap)
    res = _agentic(instances=cap, extra_groups=1, extra_per_group=1)
    assert live.peak == cap  # the cap binds (16 + redundancy per batch)
    out = _outcomes(res)
    assert out["trained"] == 4 * 16
    assert_one_outcome_each(out)


def test_a_cap_of_one_batch_stops_alpha_one_overlapping_two_batches(monkeypatch):
    """Uncapped, async with alpha 1 launches batches 0 and 1 at once: two batches'
    trajectories live. With as many instances as a batch has trajectories (ROLL's env
    managers), batch 1's start only as batch 0's end."""
    free = _Live(monkeypatch, None)
    uncapped = _agentic()
    assert free.peak == 2 * 16
    capped_live = _Live(monkeypatch, 16)
    capped = _agentic(instances=16)
    assert capped_live.peak == 16
    # fewer trajectories at once: the steps are no shorter
    assert capped.summary["sim_time_s"] >= uncapped.summary["sim_time_s"]


def test_single_turn_samples_take_no_instance(monkeypatch):
    a = _run(1, False, steps=3, seed=2, env={"workers": 4})
    b = _run(1, False, steps=3, seed=2, env={"workers": 4, "instances": 1})
    assert _strip(a.summary) == _strip(b.summary)


def test_a_replaced_trajectory_holds_its_instance_to_its_end(monkeypatch):
    """A replaced group's trajectory in flight runs out on its instance (counted live by
    `_Live` until it ends), and its place in the fresh group waits for an instance."""
    _Live(monkeypatch, 6)
    res = _over_age("replace_group", workload__agentic=AGENTIC,
                    env={"workers": 4, "instances": 6})
    assert _decisions(res, "async_replace")
    out = _outcomes(res)
    assert out["trained"] == SLOW["steps"] * 16
    assert_one_outcome_each(out)


@settings(max_examples=25, deadline=None)
@given(how=st.sampled_from(["replace_group", "reissue"]), alpha=st.integers(0, 3),
       partial=st.booleans(), prompts=st.integers(1, 5), samples=st.integers(1, 4),
       sigma=st.floats(0.1, 1.8), max_seqs=st.integers(1, 16), steps=st.integers(1, 5),
       seed=st.integers(0, 20), extra_groups=st.integers(0, 2),
       extra_per_group=st.integers(0, 2), cap=st.integers(1, 12),
       routing=st.sampled_from(["per_sample", "per_prompt"]))
def test_staleness_bound_and_one_outcome_per_attempt_with_the_cap(
        how, alpha, partial, prompts, samples, sigma, max_seqs, steps, seed, extra_groups,
        extra_per_group, cap, routing):
    with pytest.MonkeyPatch.context() as mp:
        _Live(mp, cap)
        res = _over_age(how, alpha, partial, extra_groups, extra_per_group, steps=steps,
                        seed=seed, workload__prompts_per_step=prompts,
                        workload__samples_per_prompt=samples,
                        rollout__max_running_seqs=max_seqs,
                        workload__response_len={"dist": "lognormal", "median": 200,
                                                "sigma": sigma},
                        policy__asynchronous__routing=routing, workload__agentic=AGENTIC,
                        env={"workers": 4, "instances": cap})
    assert_steps_within_alpha(res, steps, prompts * samples, alpha)
    out = _outcomes(res)
    assert out["trained"] == steps * prompts * samples
    assert_one_outcome_each(out)


@pytest.mark.parametrize("policy", ["sync", "tail_batching"])
def test_a_policy_without_instances_refuses_the_cap(policy: str) -> None:
    """Only async holds an instance per trajectory: elsewhere the field would be ignored, so
    it is refused with the field and the fix."""
    from rlsim.config.errors import ScenarioError
    from rlsim.config.loading import scenario_from_dict
    from tests.scenarios import tiny

    with pytest.raises(ScenarioError, match=r"env.instances: .*drop env.instances or set "
                                             r"policy.name: async"):
        scenario_from_dict(tiny(policy={"name": policy}, workload__agentic=AGENTIC,
                                env={"workers": 4, "instances": 8}))
