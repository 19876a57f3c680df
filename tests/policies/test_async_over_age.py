"""async's over-age groups (policy.asynchronous.over_age): under replace_group (ROLL's
ReplayBuffer.gc / GroupQueue expiry) a group that can no longer train within alpha is
dropped whole at a weight update and a fresh prompt takes its place, none of its samples
trains, and a trajectory in flight runs to its end first; under reissue the same prompt is
issued again (the behaviour before the option). Either way the staleness bound holds, every
attempt ends exactly once, and a seed gives one run."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.policies import asynchronous
from rlsim.workload.generator import PROMPT_ID_STRIDE
from tests.policies.test_async import AGENTIC, _run

# Heavy-tailed responses on few slots: slow groups of batch d finish after the trainer has
# taken batch d + 1's, and are over-age at the next weight update.
SLOW = dict(steps=6, seed=3, workload__prompts_per_step=4, workload__samples_per_prompt=4,
            rollout__max_running_seqs=4,
            workload__response_len={"dist": "lognormal", "median": 200, "sigma": 1.5})


def assert_one_outcome_each(out: dict[str, int]) -> None:
    """Every attempt ended exactly one way (or is left over at the run's end)."""
    assert out["attempts"] == out["trained"] + out["stale"] + out["cancelled"] + \
        out["leftover"]


def assert_steps_within_alpha(res, steps: int, batch: int, alpha: int) -> None:
    """Every step trained its whole batch, no sample more than alpha versions old, and each
    batch launched on weights within alpha of its step."""
    trains = sorted((s for s in res.recorder.spans if s.name == "train"
                     and s.track == "controller"), key=lambda s: s.attrs["step"])
    assert len(trains) == steps
    assert all(t.attrs["samples"] == batch for t in trains)
    assert all(t.attrs["staleness_max"] <= alpha for t in trains)
    for b in _decisions(res, "async_batch"):
        assert all(b["step"] - alpha <= v <= b["step"] for v in b["versions"])


def _over_age(how: str, alpha: int = 1, partial: bool = True, extra_groups: int = 0,
              extra_per_group: int = 0, **changes):
    kw = {**SLOW, **changes}
    return _run(alpha, partial, extra_groups, extra_per_group,
                policy__asynchronous__over_age=how, **kw)


def _decisions(res, what: str):
    return [i.attrs for i in res.recorder.instants
            if i.name == "decision" and i.attrs["what"] == what]


def _outcomes(res):
    (out,) = [i.attrs for i in res.recorder.instants if i.name == "outcomes"]
    return out


def _trained_prompts(res) -> Counter[int]:
    per_prompt: Counter[int] = Counter()
    for b in _decisions(res, "async_batch"):
        per_prompt.update(b["prompts"])
    return per_prompt


def test_default_is_rolls_replace_group():
    from rlsim.config.policies.asynchronous import AsyncConfig

    assert AsyncConfig().over_age == "replace_group"


def test_replace_group_swaps_in_a_fresh_prompt_and_trains_none_of_the_old_group():
    res = _over_age("replace_group")
    replaced = _decisions(res, "async_replace")
    assert replaced, "the slow scenario must age some group out"
    trained = _trained_prompts(res)
    launched = 4  # prompts_per_step, no redundancy: batch d's own prompts are d*STRIDE + 0..3
    old_ids = [p for r in replaced for p in r["replaced"]]
    fresh_ids = [p for r in replaced for p in r["fresh"]]
    assert len(old_ids) == len(fresh_ids) == len(set(fresh_ids))
    assert not set(old_ids) & set(trained)  # none of a replaced group's samples trains
    assert len(set(old_ids)) == len(old_ids)  # a fresh group may age out in turn, once
    for r in replaced:  # fresh prompts are the next ones of the batch's step, never reused
        for p in r["fresh"]:
            step, index = divmod(p, PROMPT_ID_STRIDE)
            assert step == r["batch"] and index >= launched
        # replaced at a weight update, for having started before version - alpha
        assert r["published"] >= 2
    assert all(n == 4 for n in trained.values())  # whole groups of R0, none twice
    assert any(p in trained for p in fresh_ids)  # and the fresh prompts do train
    out = _outcomes(res)
    assert out["replaced_groups"] == len(old_ids)
    steps = [s for s in res.recorder.spans if s.name == "step"]
    assert sum(s.attrs.get("replaced", 0) for s in steps) == len(old_ids)
    # single-turn: every sample of a replaced group ended stale at once
    assert out["stale"] >= 4 * len(old_ids)
    assert_one_outcome_each(out)


def test_reissue_issues_the_same_prompt_again(monkeypatch):
    reissued: list[int] = []

    class Spy(asynchronous._AsyncRun):
        def _reissue(self, g):
            reissued.append(g.prompt_id)
            super()._reissue(g)

    monkeypatch.setattr(asynchronous, "_RUN", Spy)
    res = _over_age("reissue")
    assert not _decisions(res, "async_replace")
    out = _outcomes(res)
    assert out["stale"] > 0 and "replaced_groups" not in out
    trained = _trained_prompts(res)
    # only the batches' own prompts ever train, a dropped one again on newer weights
    assert all(p % PROMPT_ID_STRIDE < 4 for p in trained)
    assert set(reissued) & set(trained)
    steps = [s for s in res.recorder.spans if s.name == "step"]
    assert all("replaced" not in s.attrs for s in steps)


def test_a_replaced_trajectory_runs_to_its_end_before_its_place_starts(monkeypatch):
    """Agentic: as ROLL's env manager plays an expired episode out (its rollout ignored),
    a trajectory of a replaced group finishes, ends stale, and only then does the sample
    that takes its place in the fresh group start."""
    # Slots themselves, not their id(): a finished group's slots are freed, and a later
    # slot may take the same address.
    ends: list[tuple[object, float]] = []  # (the slot taking its place, when it finished)
    starts: dict[object, float] = {}  # a waiting slot -> when it started
    class Spy(asynchronous._AsyncRun):
        def _finished(self, sample):
            s = sample.rollout
            if s.group.replaced:
                nxt = self._handoff.get(s)
                ends.append((nxt, self.env.now))
            super()._finished(sample)

        def _start(self, s, engine=None):
            if s in self._waiting:
                raise AssertionError("a waiting slot started before its trajectory ended")
            starts[s] = self.env.now
            super()._start(s, engine)

    monkeypatch.setattr(asynchronous, "_RUN", Spy)
    res = _over_age("replace_group", workload__agentic=AGENTIC, env={"workers": 4})
    assert _decisions(res, "async_replace")
    assert ends, "some replaced trajectory must have run to its end"
    for nxt, t in ends:
        if nxt is not None:
            assert starts[nxt] == t  # its place starts as it ends, not before
    out = _outcomes(res)
    assert_one_outcome_each(out)


@settings(max_examples=25, deadline=None)
@given(how=st.sampled_from(["replace_group", "reissue"]), alpha=st.integers(0, 3),
       partial=st.booleans(), prompts=st.integers(1, 6), samples=st.integers(1, 4),
       sigma=st.floats(0.1, 1.8), max_seqs=st.integers(1, 16), steps=st.integers(1, 6),
       seed=st.integers(0, 20), agentic=st.booleans(), extra_groups=st.integers(0, 2),
       extra_per_group=st.integers(0, 2), routing=st.sampled_from(["per_sample",
                                                                   "per_prompt"]))
def test_staleness_bound_and_one_outcome_per_attempt(how, alpha, partial, prompts, samples,
                                                     sigma, max_seqs, steps, seed, agentic,
                                                     extra_groups, extra_per_group, routing):
    res = _over_age(how, alpha, partial, extra_groups, extra_per_group, steps=steps,
                    seed=seed, workload__prompts_per_step=prompts,
                    workload__samples_per_prompt=samples, rollout__max_running_seqs=max_seqs,
                    workload__response_len={"dist": "lognormal", "median": 200,
                                            "sigma": sigma},
                    policy__asynchronous__routing=routing,
                    **({"workload__agentic": AGENTIC, "env": {"workers": 4}}
                       if agentic else {}))
    assert_steps_within_alpha(res, steps, prompts * samples, alpha)
    trained = _trained_prompts(res)
    assert all(n <= samples for n in trained.values())
    replaced = [p for r in _decisions(res, "async_replace") for p in r["replaced"]]
    assert not set(replaced) & set(trained)
    if how == "reissue":
        assert not replaced
    out = _outcomes(res)
    assert out["trained"] == steps * prompts * samples
    assert_one_outcome_each(out)
    assert out.get("replaced_groups", 0) == len(replaced)
    if alpha == 0 and extra_groups == extra_per_group == 0:  # on-policy: nothing ages out
        assert not replaced and out["stale"] == 0


def test_same_seed_same_run_with_replacements():
    kw = dict(workload__agentic=AGENTIC, env={"workers": 4}, rollout__prefix_caching=True)
    a, b = (_over_age("replace_group", 1, True, 1, 1, **kw) for _ in range(2))
    assert _decisions(a, "async_replace")
    strip = ("wall_s",)
    assert {k: v for k, v in a.summary.items() if k not in strip} == \
        {k: v for k, v in b.summary.items() if k not in strip}
    assert [(s.track, s.name, s.t0, s.t1, s.attrs) for s in a.recorder.spans] == \
        [(s.track, s.name, s.t0, s.t1, s.attrs) for s in b.recorder.spans]
    assert _decisions(a, "async_replace") == _decisions(b, "async_replace")
