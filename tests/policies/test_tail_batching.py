"""tail_batching (RollPacker): exactly P0 x R0 samples per step, every prompt trained at
most once, every queued prompt served once in a long round that starts exactly when the
queue holds P0, and with eta = 1 exactly a sync run."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import lookup_gpu
from rlsim.config.loading import load_scenario, scenario_from_dict
from tests.scenarios import tiny


def _run(**changes):
    scenario, base = scenario_from_dict(tiny(**changes))
    return simulate(scenario, base)


def _decisions(res):
    """The round decisions (one per step), not the planner's or the stream trainer's."""
    return sorted((i for i in res.recorder.instants if i.name == "decision"
                   and i.attrs["what"] in ("short_round", "long_round")),
                  key=lambda i: i.attrs["step"])


def test_eta_one_is_sync():
    for placement in ("colocated", "disaggregated"):
        sync = _run(steps=3, policy={"name": "sync", "placement": placement})
        tail = _run(steps=3, policy={"name": "tail_batching", "placement": placement,
                                     "tail_batching": {"eta_p": 1.0, "eta_r": 1.0}})
        steps = [(s.t0, s.t1) for s in sync.recorder.spans if s.name == "step"]
        assert [(s.t0, s.t1) for s in tail.recorder.spans if s.name == "step"] == steps
        assert tail.summary["throughput"] == sync.summary["throughput"]
        assert all(d.attrs["queued"] == [] for d in _decisions(tail))


def test_over_provisioning_aborts_and_queues():
    res = _run(steps=6, workload__prompts_per_step=8, workload__samples_per_prompt=4,
               workload__response_len={"dist": "lognormal", "median": 300, "sigma": 1.2},
               policy={"name": "tail_batching", "tail_batching": {"eta_p": 1.5,
                                                                  "eta_r": 1.5}})
    aborts = [i for i in res.recorder.instants if i.name == "abort"]
    assert sum(i.attrs["requests"] for i in aborts) > 0
    short = [d for d in _decisions(res) if d.attrs["what"] == "short_round"]
    # ceil(1.5 x 8) = 12 prompts launched, 8 done: 4 queued per short round.
    assert all(len(d.attrs["queued"]) == 4 for d in short)
    assert any(d.attrs["what"] == "long_round" for d in _decisions(res))


def test_without_long_rounds_unfinished_prompts_are_dropped():
    """long_rounds: false is ROLL's redundant environments under sync: every step a short
    round of P0 x R0 trained samples, the prompts not done dropped, never trained later."""
    res = _run(steps=6, workload__prompts_per_step=8, workload__samples_per_prompt=4,
               workload__response_len={"dist": "lognormal", "median": 300, "sigma": 1.2},
               policy={"name": "tail_batching", "tail_batching": {
                   "eta_p": 1.5, "eta_r": 1.5, "long_rounds": False}})
    decisions = _decisions(res)
    assert [d.attrs["what"] for d in decisions] == ["short_round"] * 6
    trained: set[int] = set()
    for d in decisions:
        assert len(d.attrs["trained"]) == 8 and d.attrs["queued"] == []
        assert len(d.attrs["dropped"]) == 4  # ceil(1.5 x 8) = 12 launched, 8 done
        assert not trained & set(d.attrs["trained"])
        trained |= set(d.attrs["trained"])
    dropped = {p for d in decisions for p in d.attrs["dropped"]}
    assert not dropped & trained


@settings(max_examples=30, deadline=None)
@given(
    prompts=st.integers(1, 8),
    samples=st.integers(1, 5),
    sigma=st.floats(0.1, 2.0),
    eta_p=st.floats(1.0, 2.0),
    eta_r=st.floats(1.0, 2.0),
    max_seqs=st.integers(1, 64),
    steps=st.integers(1, 8),
    placement=st.sampled_from(["colocated", "disaggregated"]),
    seed=st.integers(0, 20),
    stream=st.booleans(),
)
def test_round_invariants(prompts, samples, sigma, eta_p, eta_r, max_seqs, steps, placement,
                          seed, stream):
    if stream:  # the stream trainer needs a colocated job and the reward scheduler
        placement = "colocated"
    res = _run(steps=steps, seed=seed, workload__prompts_per_step=prompts,
               workload__samples_per_prompt=samples, rollout__max_running_seqs=max_seqs,
               workload__response_len={"dist": "lognormal", "median": 200, "sigma": sigma},
               policy={"name": "tail_batching", "placement": placement,
                       "tail_batching": {"eta_p": eta_p, "eta_r": eta_r,
                                         "reward_scheduler": stream,
                                         "stream_trainer": stream}})
    rec = res.recorder
    train = sorted((s for s in rec.spans if s.name == "train" and s.track == "controller"),
                   key=lambda s: s.attrs["step"])
    # exactly P0 x R0 samples per step, all on-policy
    assert len(train) == steps
    assert all(s.attrs["samples"] == prompts * samples for s in train)
    assert all(s.attrs["staleness_max"] == 0 for s in train)
    responses = [i for i in rec.instants if i.name == "responses"]
    assert all(len(i.attrs["response_tokens"]) == prompts * samples for i in responses)
    decisions = _decisions(res)
    assert [d.attrs["step"] for d in decisions] == list(range(steps))
    trained: list[int] = []
    queue: list[int] = []
    for d in decisions:
        what, got, queued = d.attrs["what"], d.attrs["trained"], d.attrs["queued"]
        assert len(got) == prompts
        # the long round starts exactly when the queue holds P0 prompts, and takes the
        # P0 oldest
        assert (what == "long_round") == (len(queue) >= prompts)
        if what == "long_round":
            assert got == queue[:prompts] and queued == []
            queue = queue[prompts:]
        else:
            assert not set(got) & set(queued)
            queue += queued
        assert d.attrs["queue"] == len(queue)
        trained += got
    # no prompt trained twice; every queued prompt is trained once or still queued at the end
    assert len(trained) == len(set(trained))
    assert not set(queue) & set(trained)
    step_spans = sorted((s for s in rec.spans if s.name == "step"), key=lambda s: s.t0)
    assert [s.attrs["round"] for s in step_spans] == [
        "long" if d.attrs["what"] == "long_round" else "short" for d in decisions]
    # streamed samples are part of the step's P0 x R0, never more
    assert all(0 <= s.attrs["streamed"] <= s.attrs["samples"] for s in train)
    # no GPU double-booked: engines, the stream trainer and the trainer share the pool
    busy = sorted([(s.t0, s.attrs["gpus"]) for s in rec.spans if s.name == "busy"]
                  + [(s.t1, -s.attrs["gpus"]) for s in rec.spans if s.name == "busy"],
                  key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, g in busy:
        level += g
        peak = max(peak, level)
    assert peak <= 8  # tiny(): one pool of 8 GPUs, whatever the placement
    # aborted requests free their KV: every engine drains and stays within its cache
    capacity = {i.attrs["track"]: i.attrs["kv_capacity_tokens"] for i in rec.instants
                if i.name == "entity" and i.attrs["kind"] == "engine"}
    for c in rec.counters:
        if c.name == "kv_tokens":
            assert c.value <= capacity[c.track]


def test_trace_without_enough_responses_is_a_clear_error():
    root = Path(__file__).resolve().parents[2]
    scenario, base = load_scenario(root / "scenarios" / "quickstart.yaml",
                                   ["policy.name=tail_batching", "steps=1"])
    with pytest.raises(ScenarioError) as err:
        simulate(scenario, base)
    assert "policy.tail_batching.eta_r" in err.value.line()


def test_reward_scheduler_overlaps_scoring_with_generation():
    """One reward worker, 1 s per sample: after generation, sync scores all 32 samples
    (32 s); scored as they finish, only what is left when the last response lands remains,
    which is at least the last sample's own second."""
    common = {"steps": 2, "reward": {"kind": "rule", "latency": {"median": "1 s", "sigma": 0},
                                     "workers": 1}}
    off = _run(**common, policy={"name": "tail_batching",
                                 "tail_batching": {"eta_p": 1.0, "eta_r": 1.0}})
    on = _run(**common, policy={"name": "tail_batching",
                                "tail_batching": {"eta_p": 1.0, "eta_r": 1.0,
                                                  "reward_scheduler": True}})

    def phase(res, name):
        return [s.t1 - s.t0 for s in res.recorder.spans
                if s.track == "controller" and s.name == name]

    # t1 - t0 at a later clock value: exact up to rounding
    assert phase(off, "reward") == pytest.approx([32.0, 32.0], rel=1e-12)
    assert all(1.0 <= r < 32.0 for r in phase(on, "reward"))
    assert on.summary["step_time_s"]["mean"] < off.summary["step_time_s"]["mean"]
    assert phase(on, "gen") == phase(off, "gen")  # scoring does not slow generation
    # the pool scored every launched response once per round, one span per round
    scores = [s for s in on.recorder.spans if s.track == "reward"]
    assert [s.attrs["samples"] for s in scores] == [32, 32]


def _planner_run(util: float, jump: float = 1.05, calm: int = 4):
    return _run(steps=12, model="qwen2.5-7b", rollout__gpu_memory_utilization=util,
                rollout__max_running_seqs=256, workload__prompts_per_step=32,
                workload__samples_per_prompt=8,
                workload__response_len={"dist": "lognormal", "median": 1500, "sigma": 1.0},
                pools=[{"name": "r", "gpu": "H100", "nodes": 1},
                       {"name": "t", "gpu": "H100", "nodes": 1}],
                rollout__pool="r", train__pool="t", train__tp=2,
                policy={"name": "tail_batching", "placement": "disaggregated",
                        "tail_batching": {"planner": True, "planner_jump": jump,
                                          "planner_calm_steps": calm}})


# The same KV budgets as 25% and 28% of an 80e9-byte card, where both directions happen
# (the catalogue H100 has the 81559 MiB nvidia-smi reports).
H100_BYTES = lookup_gpu("H100").hbm


@pytest.mark.parametrize("util", [0.25 * 80e9 / H100_BYTES, 0.28 * 80e9 / H100_BYTES])
def test_planner_follows_its_rule_and_reshards(util):
    """Replaying the rule on each step's recorded preemptions gives the recorded TP of
    every step; each change costs one reshard before the step that uses it, and only the
    engines of the step's TP work during its generation."""
    res = _planner_run(util)
    rec = res.recorder
    steps = sorted((s for s in rec.spans if s.name == "step"), key=lambda s: s.attrs["step"])
    tp, base, quiet, prev = 1, 1, 0, None
    expected = []
    for s in steps:
        expected.append(tp)
        n = s.attrs["preemptions"]
        quiet = quiet + 1 if n == 0 else 0
        if prev is not None and n > 0 and n > 1.05 * prev and 2 * tp <= 8:
            tp *= 2
        elif quiet >= 4 and tp > base:
            tp //= 2
            quiet = 0
        prev = n
    assert [s.attrs["rollout_tp"] for s in steps] == expected
    changes = sum(1 for a, b in pairwise(expected) if a != b)
    assert changes >= 2  # both directions happen at these memory settings
    reshards = [s for s in rec.spans if s.name == "switch" and s.attrs.get("what") == "reshard"]
    assert len(reshards) == changes and all(s.t1 > s.t0 for s in reshards)
    for s in steps:
        gen = next(g for g in rec.spans if g.name == "gen" and g.attrs["step"] == s.attrs["step"])
        prefix = "rollout.engine" if s.attrs["rollout_tp"] == 1 else \
            f"rollout.tp{s.attrs['rollout_tp']}-engine"
        busy = [b for b in rec.spans if b.name == "busy" and b.track.startswith("rollout.")
                and b.t0 < gen.t1 and b.t1 > gen.t0]
        assert busy and all(b.track.startswith(prefix) for b in busy)
    # the weight sync (bucketed broadcast, the default) sends every engine rank the full
    # tensors, whatever the rollout TP: the same bytes, the same time at every layout
    syncs = [s for s in rec.spans if s.name == "weight_sync"]
    assert len({s.attrs["link_bytes"] for s in syncs}) == 1
    per_tp = [s.t1 - s.t0 for s in syncs]
    assert max(per_tp) == pytest.approx(min(per_tp), rel=1e-9)


def test_planner_never_picks_a_tp_the_model_cannot_run():
    """Qwen2.5-7B has 28 attention heads: TP 8 does not divide them, so from TP 4 the
    planner stays at 4 however preemptions rise."""
    res = _run(steps=6, model="qwen2.5-7b", rollout__tp=4, rollout__gpu_memory_utilization=0.3,
               workload__prompts_per_step=32, workload__samples_per_prompt=8,
               workload__response_len={"dist": "lognormal", "median": 3000, "sigma": 1.0},
               policy={"name": "tail_batching", "tail_batching": {"planner": True}})
    assert not [i for i in res.recorder.instants
                if i.name == "decision" and i.attrs["what"] == "rollout_tp"]
    assert {s.attrs["rollout_tp"] for s in res.recorder.spans if s.name == "step"} == {4}


def test_stream_trainer_streams_gradients_and_keeps_one_optimizer_step():
    """Long tails on a colocated job: the second half of the engines is released, their
    requests finish on the first half, and part of each step's gradients are computed on the
    released GPUs before the step's single train (optimizer) phase."""
    res = _run(steps=4, workload__prompts_per_step=8, workload__samples_per_prompt=4,
               workload__response_len={"dist": "lognormal", "median": 300, "sigma": 1.2},
               policy={"name": "tail_batching", "placement": "colocated",
                       "tail_batching": {"reward_scheduler": True, "stream_trainer": True}})
    rec = res.recorder
    decisions = [i for i in rec.instants if i.name == "decision"
                 and i.attrs["what"] == "stream_scale"]
    assert decisions and all(d.attrs["scaled"] for d in decisions)
    grads = [s for s in rec.spans if s.track == "train.stream" and s.name == "grads"]
    train = [s for s in rec.spans if s.track == "controller" and s.name == "train"]
    assert grads and sum(s.attrs["streamed"] for s in train) == \
        sum(g.attrs["samples"] for g in grads)
    assert len([s for s in rec.spans if s.track == "train.trainer" and s.name == "train"]) == 4
    # the stream trainer runs on half the pool while the kept engines generate
    stream_busy = [s for s in rec.spans if s.track == "train.stream" and s.name == "busy"]
    assert {s.attrs["gpus"] for s in stream_busy} == {4}


@pytest.mark.parametrize("policy", [
    {"placement": "disaggregated", "tail_batching": {"reward_scheduler": True,
                                                     "stream_trainer": True}},
    {"placement": "colocated", "tail_batching": {"stream_trainer": True}},
])
def test_stream_trainer_needs_colocated_and_the_reward_scheduler(policy):
    with pytest.raises(ScenarioError) as err:
        _run(steps=1, policy={"name": "tail_batching", **policy})
    assert "policy.tail_batching.stream_trainer" in err.value.line()


@settings(max_examples=60, deadline=None)
@given(done=st.lists(st.integers(1, 5000), max_size=60),
       above=st.lists(st.integers(0, 6000), min_size=1, max_size=20),
       q=st.floats(0.0, 1.0))
def test_stream_projection_is_the_quantile_of_the_longer_finished_lengths(done, above, q):
    """The stream trainer's projection of a running request: np.quantile of the finished
    lengths longer than it already is (0 when none is), computed for all at once."""
    import numpy as np

    from rlsim.policies.stream_trainer import _suffix_quantiles

    d = np.sort(np.array(done, dtype=float))
    got = _suffix_quantiles(d, np.array(above, dtype=float), q)
    want = [float(np.quantile(d[d > a], q)) if (d > a).any() else 0.0 for a in above]
    assert np.allclose(got, want)
