"""async (ROLL Flash): staleness never exceeds alpha at training time, every step trains
exactly P0 x R0 samples and no prompt more than R0 times, alpha = 0 trains each batch on the
weights it started with, and async needs separate GPUs."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from tests.scenarios import tiny

POOLS = [{"name": "r", "gpu": "H100", "nodes": 1}, {"name": "t", "gpu": "H100", "nodes": 1}]


def _run(alpha: int, partial: bool = True, extra_groups: int = 0, extra_per_group: int = 0,
         **changes):
    data = tiny(pools=POOLS, rollout__pool="r", train__pool="t",
                policy={"name": "async", "placement": "disaggregated",
                        "asynchronous": {"alpha": alpha, "partial_rollout": partial,
                                         "extra_groups": extra_groups,
                                         "extra_per_group": extra_per_group}},
                **changes)
    scenario, base = scenario_from_dict(data)
    return simulate(scenario, base)


def _trains(res):
    return sorted((s for s in res.recorder.spans if s.name == "train"
                   and s.track == "controller"), key=lambda s: s.attrs["step"])


def _batches(res):
    return sorted((i for i in res.recorder.instants if i.name == "decision"
                   and i.attrs["what"] == "async_batch"), key=lambda i: i.attrs["step"])


AGENTIC = {"turns": {"dist": "lognormal", "median": 3, "sigma": 0.7}, "max_turns": 8,
           "env_step": {"dist": "normal", "mean": 0.5, "std": 0.5},
           "env_reset": {"dist": "lognormal", "median": 0.3, "sigma": 1.0},
           "obs_tokens": {"dist": "fixed", "value": 30}}


@settings(max_examples=30, deadline=None)
@given(alpha=st.integers(0, 4), partial=st.booleans(), prompts=st.integers(1, 8),
       samples=st.integers(1, 4), sigma=st.floats(0.1, 1.5), max_seqs=st.integers(1, 64),
       steps=st.integers(1, 7), seed=st.integers(0, 20), agentic=st.booleans(),
       extra_groups=st.integers(0, 3), extra_per_group=st.integers(0, 2),
       caching=st.booleans())
def test_staleness_bound_and_exactly_once(alpha, partial, prompts, samples, sigma, max_seqs,
                                          steps, seed, agentic, extra_groups, extra_per_group,
                                          caching):
    res = _run(alpha, partial, extra_groups, extra_per_group, steps=steps, seed=seed,
               rollout__prefix_caching=caching, workload__prompts_per_step=prompts,
               workload__samples_per_prompt=samples, rollout__max_running_seqs=max_seqs,
               workload__response_len={"dist": "lognormal", "median": 200, "sigma": sigma},
               **({"workload__agentic": AGENTIC, "env": {"workers": 4}} if agentic else {}))
    trains = _trains(res)
    assert len(trains) == steps
    assert all(t.attrs["samples"] == prompts * samples for t in trains)
    assert all(t.attrs["staleness_max"] <= alpha for t in trains)
    for b in _batches(res):  # every trained sample started within alpha of its step
        assert all(b.attrs["step"] - alpha <= v <= b.attrs["step"] for v in b.attrs["versions"])
    # a prompt trains at most R0 samples over the whole run (none trained twice)
    per_prompt = Counter()
    for i in res.recorder.instants:
        if i.name == "decision" and i.attrs["what"] == "async_batch":
            per_prompt.update(i.attrs["prompts"])
    assert all(n <= samples for n in per_prompt.values())
    # every attempt ended exactly one way: trained, stale, cancelled, or still open
    (out,) = [i for i in res.recorder.instants if i.name == "outcomes"]
    a = out.attrs
    assert a["trained"] == steps * prompts * samples
    assert a["attempts"] == a["trained"] + a["stale"] + a["cancelled"] + a["leftover"]
    if extra_groups == extra_per_group == 0:
        assert a["cancelled"] == 0
    if alpha == 0 and extra_groups == extra_per_group == 0:  # on-policy, nothing to drop
        steps_ = [s for s in res.recorder.spans if s.name == "step"]
        assert all(s.attrs["dropped_stale"] == 0 and s.attrs["resumed"] == 0 for s in steps_)


def test_alpha_zero_trains_each_batch_on_its_own_weights():
    res = _run(0, steps=4, workload__prompts_per_step=4, workload__samples_per_prompt=2)
    for b in _batches(res):
        step = b.attrs["step"]
        assert b.attrs["versions"] == [step]
        # the step's prompts are exactly its batch's (as sync would train them)
        assert sorted(set(b.attrs["prompts"])) == [step * 1_000_000 + i for i in range(4)]


def test_a_larger_alpha_overlaps_rollout_with_training():
    times = [_run(alpha, steps=6).summary["step_time_s"]["mean"] for alpha in (0, 1)]
    assert times[1] < times[0]


def test_redundant_environments_cut_the_wait_for_slow_ones():
    """Heavy-tailed environment steps: launching more groups and more samples per group
    than needed and keeping the first to finish shortens the step; the rest is cancelled."""
    agentic = {"turns": {"dist": "fixed", "value": 3},
               "env_step": {"dist": "lognormal", "median": 2, "sigma": 1.5}}
    kw = dict(steps=4, workload__prompts_per_step=4, workload__samples_per_prompt=2,
              workload__response_len={"dist": "fixed", "value": 30},
              workload__agentic=agentic, env={"workers": 64})
    plain, redundant = _run(1, **kw), _run(1, extra_groups=2, extra_per_group=1, **kw)
    times = [r.summary["step_time_s"]["mean"] for r in (plain, redundant)]
    assert times[1] < 0.8 * times[0]
    assert redundant.summary["attempts"]["cancelled"] > 0  # the summary counts each kind
    assert plain.summary["attempts"]["cancelled"] == 0


def test_async_needs_separate_gpus():
    data = tiny(policy={"name": "async", "placement": "colocated"})
    with pytest.raises(ScenarioError, match=r"policy\.placement"):
        scenario_from_dict(data)


def test_same_scenario_and_seed_give_identical_runs():
    kw = dict(steps=4, workload__agentic=AGENTIC, env={"workers": 4},
              rollout__prefix_caching=True)
    a, b = (_run(2, True, 1, 1, **kw) for _ in range(2))
    strip = ("wall_s",)
    assert {k: v for k, v in a.summary.items() if k not in strip} == \
        {k: v for k, v in b.summary.items() if k not in strip}
    assert [(s.track, s.name, s.t0, s.t1) for s in a.recorder.spans] == \
        [(s.track, s.name, s.t0, s.t1) for s in b.recorder.spans]


@pytest.mark.parametrize("routing", ["per_sample", "per_prompt"])
def test_routing_spreads_samples_or_keeps_each_group_on_one_engine(routing, monkeypatch):
    from rlsim.policies import asynchronous

    placed: list[tuple[int, str]] = []

    class Spy(asynchronous._AsyncRun):
        def _start(self, s, engine=None):
            if engine is not None:
                placed.append((s.group.prompt_id, engine.name))
            super()._start(s, engine)

    monkeypatch.setattr(asynchronous, "_RUN", Spy)
    _run(1, steps=1, workload__prompts_per_step=6, workload__samples_per_prompt=4,
         policy__asynchronous__routing=routing)
    by_prompt: dict[int, set[str]] = {}
    for pid, name in placed:
        by_prompt.setdefault(pid, set()).add(name)
    assert len(by_prompt) == 12  # two batches of 6 prompts were launched
    if routing == "per_prompt":
        assert all(len(names) == 1 for names in by_prompt.values())
    else:  # 8 engines, 4 samples per prompt: a group spreads over 4 of them
        assert all(len(names) == 4 for names in by_prompt.values())


def test_extra_samples_beyond_the_trace_are_a_clear_error():
    """The quickstart's trace records 8 responses per prompt: a ninth (extra_per_group 1)
    is one line naming the knob, not an internal error from the workload."""
    from pathlib import Path

    from rlsim.config.loading import load_scenario

    root = Path(__file__).resolve().parents[2]
    scenario, base = load_scenario(root / "scenarios" / "quickstart.yaml", [
        "policy.name=async", "policy.placement=disaggregated", "steps=1",
        "policy.asynchronous.extra_per_group=1"])
    with pytest.raises(ScenarioError) as err:
        simulate(scenario, base)
    assert err.value.field == "policy.asynchronous.extra_per_group"
    assert "at most 0" in err.value.line()
