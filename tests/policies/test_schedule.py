"""policy.schedule (ROLL's Sync-ROLL rollout, rlsim/policies/sync.py): the defaults are
plain sync; prompt replication spreads a prompt's responses over engines; the request cap
holds; every launched sample is trained, filtered or cancelled exactly once; zero-variance
filtering refills as ROLL does."""

from __future__ import annotations

from collections import defaultdict

import pytest

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.entities import rollout as rollout_mod
from tests.scenarios import tiny


def _run(schedule=None, **changes):
    policy = {"name": "sync", "placement": "colocated"}
    if schedule is not None:
        policy["schedule"] = schedule
    scenario, base = scenario_from_dict(tiny(policy=policy, **changes))
    return simulate(scenario, base)


def _steps(res):
    return [(s.t0, s.t1) for s in res.recorder.spans if s.name == "step"]


def _starts(monkeypatch):
    """Record (prompt id, engine name, the engine's load before) at every attempt start."""
    seen: list[tuple[int, str, int]] = []
    original = rollout_mod.Rollout.start

    def start(self, version, engine=None, held=False):
        assert engine is not None  # the schedule always names the engine
        seen.append((self.prompt_id, engine.name, engine.load))
        return original(self, version, engine, held)

    monkeypatch.setattr(rollout_mod.Rollout, "start", start)
    return seen


def test_defaults_and_replication_alone_are_plain_sync():
    plain = _run()
    assert _steps(_run({})) == _steps(plain)
    # without queue scheduling a prompt's copies stay in one contiguous chunk (ROLL)
    assert _steps(_run({"prompt_replication": True})) == _steps(plain)


@pytest.mark.parametrize("replicate", [False, True])
def test_prompt_replication_spreads_a_prompt(monkeypatch, replicate):
    seen = _starts(monkeypatch)
    _run({"queue_scheduling": True, "prompt_replication": replicate}, steps=1,
         workload__prompts_per_step=2, workload__samples_per_prompt=4)
    engines = defaultdict(set)
    for pid, engine, _ in seen:
        engines[pid].add(engine)
    assert len(engines) == 2
    for used in engines.values():
        # with replication each response goes to the least-loaded engine (8 engines, 8
        # responses: all on different ones); without, the group stays on one engine
        assert len(used) == (4 if replicate else 1)


def test_request_cap_holds(monkeypatch):
    seen = _starts(monkeypatch)
    res = _run({"queue_scheduling": True, "prompt_replication": True,
                "max_running_requests": 1}, steps=1, workload__prompts_per_step=8,
               workload__samples_per_prompt=4)
    assert len(seen) == 32  # every response dispatched, one at a time per engine
    assert all(load == 0 for _, _, load in seen)
    assert res.summary["steps"] == 1


def _schedule(res):
    return sorted((i.attrs for i in res.recorder.instants if i.name == "schedule"),
                  key=lambda a: a["step"])


@pytest.mark.parametrize("schedule", [
    {"zero_variance_fraction": 0.5},  # batch rollout: whole further batches
    {"queue_scheduling": True, "zero_variance_fraction": 0.5},  # +0, refilled
    {"queue_scheduling": True, "zero_variance_fraction": 0.5, "additional_prompts": 4},
    {"queue_scheduling": True, "zero_variance_fraction": 0.5,
     "use_additional_prompts": False},  # ROLL's ReplayBuffer: only filtered replaced
    {"queue_scheduling": True, "additional_prompts": 3, "prompt_replication": True},
    {"gen_batch_prompts": 24, "zero_variance_fraction": 0.5},  # veRL DAPO: rounds of 3b
    {"gen_batch_prompts": 3, "zero_variance_fraction": 0.25},  # rounds smaller than b
])
def test_every_launched_sample_ends_once(schedule):
    b, k, steps = 8, 4, 4
    res = _run(schedule, steps=steps, workload__prompts_per_step=b,
               workload__samples_per_prompt=k)
    trained = [s.attrs["samples"] for s in res.recorder.spans
               if s.track == "controller" and s.name == "train"]
    assert trained == [b * k] * steps
    for a in _schedule(res):
        assert a["launched_prompts"] * k == b * k + a["filtered_groups"] * k \
            + a["cancelled_samples"]
        if schedule.get("zero_variance_fraction"):
            assert a["launched_prompts"] >= b + a["filtered_groups"]
        if "additional_prompts" not in schedule and "rounds" not in a \
                and schedule.get("use_additional_prompts") is False:
            # no redundant generation: only filtered prompts are replaced
            assert a["launched_prompts"] == b + a["filtered_groups"]
            assert a["cancelled_samples"] == 0
    if not schedule.get("queue_scheduling"):
        per_round = schedule.get("gen_batch_prompts", b)
        assert all(a["launched_prompts"] == a["rounds"] * per_round for a in _schedule(res))


def test_gen_batch_rounds_generate_the_whole_round_and_train_the_batch():
    """veRL DAPO (filter_groups, data.gen_batch_size 3x the batch): with nothing filtered
    one round of 3b prompts is generated whole, the first b groups train and the other 2b
    are dropped, so generation is the 3b batch's while training is b's."""
    b, k = 8, 4
    plain = _run(None, steps=2, workload__prompts_per_step=b, workload__samples_per_prompt=k)
    triple = _run({"gen_batch_size": 3 * b}, steps=2, workload__prompts_per_step=b,
                  workload__samples_per_prompt=k)  # veRL's name is an alias
    big = _run(None, steps=2, workload__prompts_per_step=3 * b,
               workload__samples_per_prompt=k)
    for a in _schedule(triple):
        assert (a["rounds"], a["launched_prompts"]) == (1, 3 * b)
        assert (a["filtered_groups"], a["cancelled_samples"]) == (0, 2 * b * k)
    trained = [s.attrs["samples"] for s in triple.recorder.spans
               if s.track == "controller" and s.name == "train"]
    assert trained == [b * k] * 2

    def gen(res):
        return res.summary["phase_time_s"]["gen"]

    # the round is the 3b batch's generation (the same prompts, the same engines)
    assert gen(triple) == pytest.approx(gen(big), rel=1e-9)
    assert gen(triple) > gen(plain)
    assert triple.summary["phase_time_s"]["train"] == pytest.approx(
        plain.summary["phase_time_s"]["train"], rel=1e-9)


def test_gen_batch_needs_batch_rollout():
    with pytest.raises(ScenarioError, match="gen_batch_prompts"):
        _run({"queue_scheduling": True, "gen_batch_prompts": 16})
    with pytest.raises(ScenarioError, match="gen_batch_prompts"):
        _run({"gen_batch_prompts": 0})


def test_filtering_draws_are_common_to_every_setting():
    """The same prompt is zero-variance under every schedule (its own keyed draw), so
    batch rollout and queue scheduling filter the same prompts among those both ran."""
    batch = _schedule(_run({"zero_variance_fraction": 0.5}, steps=1))
    queue = _schedule(_run({"queue_scheduling": True, "zero_variance_fraction": 0.5,
                            "use_additional_prompts": False}, steps=1))
    # the refill-only-filtered queue runs prompts 0..n-1 in order, as the batch rounds do
    n = min(batch[0]["launched_prompts"], queue[0]["launched_prompts"])
    assert n >= 8
    assert queue[0]["filtered_groups"] == queue[0]["launched_prompts"] - 8


def test_additional_prompts_shorten_generation():
    """Queue +16 takes the first groups of many, so its generation is no longer than
    queue +0's on the same prompts (a regression check on a toy, seed 0)."""
    def gen(schedule):
        res = _run(schedule, steps=3, workload__prompts_per_step=8,
                   workload__samples_per_prompt=4)
        return res.summary["phase_time_s"]["gen"]
    plus0 = gen({"queue_scheduling": True, "zero_variance_fraction": 0.5})
    plus16 = gen({"queue_scheduling": True, "zero_variance_fraction": 0.5,
                  "additional_prompts": 16})
    assert plus16 <= plus0


@pytest.mark.parametrize("policy, field", [
    ({"name": "async", "placement": "disaggregated",
      "schedule": {"queue_scheduling": True}}, "policy.schedule"),
    ({"name": "sync", "schedule": {"generate_opt_level": 2}}, "generate_opt_level"),
    ({"name": "sync", "schedule": {"additional_prompts": 4}}, "queue_scheduling"),
])
def test_bad_schedules_are_refused(policy, field):
    pools = [{"name": "cluster", "gpu": "H100", "nodes": 1}]
    data = tiny(policy=policy)
    if policy["name"] == "async":
        pools = [{"name": "rollout", "gpu": "H100", "nodes": 1},
                 {"name": "train", "gpu": "H100", "nodes": 1}]
        data["rollout"]["pool"], data["train"]["pool"] = "rollout", "train"
    data["pools"] = pools
    with pytest.raises((ScenarioError, ValueError), match=field):
        scenario_from_dict(data)


def test_rolls_names_are_aliases():
    scenario, _ = scenario_from_dict(tiny(policy={"name": "sync", "schedule": {
        "generate_opt_level": 1, "is_num_return_sequences_expand": True,
        "max_additional_running_prompts": 16, "is_use_additional_prompts": True}}))
    s = scenario.policy.schedule
    assert (s.queue_scheduling, s.prompt_replication, s.additional_prompts,
            s.use_additional_prompts) == (True, True, 16, True)


def test_trainer_checkpoints_run_with_the_schedule_faults_do_not():
    # an imported ROLL sync job (its request scheduler, its save_steps) runs: checkpoints
    # are written between steps; a fault (a job restart) is still refused
    res = _run({"queue_scheduling": True}, steps=4,
               recovery={"trainer": {"checkpoint_every": 2, "checkpoint_write_s": 3.0}})
    writes = [s for s in res.recorder.spans if s.name == "checkpoint"]
    assert [round(s.t1 - s.t0, 9) for s in writes] == [3.0]  # after step 2; none after 4
    with pytest.raises(ScenarioError, match=r"faults\.trainer.*drop policy\.schedule"):
        _run({"queue_scheduling": True},
             faults={"trainer": [{"times": ["10 s"]}]})
