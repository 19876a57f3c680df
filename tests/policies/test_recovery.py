"""Recovery schemes against closed forms on toy scenarios, and invariants over fault
times (hypothesis): nothing vanishes, recovered trajectories resume consistently, the same
seed gives the same faults and results."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.api import RunResult, simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.faults import FaultSpec
from rlsim.config.loading import scenario_from_dict
from rlsim.entities.cluster import build_cluster
from rlsim.faults import fault_times
from rlsim.trace import CONTROLLER, Recorder
from tests.scenarios import tiny

PROMPT, RESPONSE = 500, 2000


def one_request(**changes: Any) -> dict[str, Any]:
    """One engine on one GPU generating one response of RESPONSE tokens (disaggregated)."""
    data = tiny(steps=1, rollout={"pool": "cluster", "gpus": 1, "tp": 1},
                train={"pool": "cluster", "gpus": 1, "tp": 1},
                policy={"name": "sync", "placement": "disaggregated"},
                workload={"prompts_per_step": 1, "samples_per_prompt": 1,
                          "prompt_len": {"dist": "fixed", "value": PROMPT},
                          "response_len": {"dist": "fixed", "value": RESPONSE},
                          "max_response_len": 4096})
    data.update(changes)
    return data


def run(data: dict[str, Any]) -> RunResult:
    scenario, base = scenario_from_dict(data)
    return simulate(scenario, base)


def gen_s(result: RunResult) -> float:
    (span,) = [s for s in result.recorder.spans if s.track == CONTROLLER and s.name == "gen"]
    return span.t1 - span.t0


def records(result: RunResult, name: str) -> list[dict[str, Any]]:
    return [dict(i.attrs, t=i.t) for i in result.recorder.instants
            if i.track == "faults" and i.name == name]


def test_an_engine_crash_under_cold_restart_costs_detection_a_cold_start_and_a_rerun() -> None:
    base = run(one_request())
    g = gen_s(base)
    t = round(g / 2, 3) + 0.05
    cold = run(one_request(faults={"engine": [{"times": [t]}]},
                           recovery={"engine": {"scheme": "cold_restart", "detect_s": 10,
                                                "cold_start_s": 90}}))
    (rec,) = records(cold, "recovered")
    assert rec["recovery_s"] == pytest.approx(100.0, rel=1e-12)
    # the response runs again from scratch, alone on its engine: exactly as long as before
    assert gen_s(cold) == pytest.approx(t + 100.0 + g, rel=1e-9)
    assert 0 < rec["lost_tokens"] < RESPONSE
    assert rec["reprefill_tokens"] == PROMPT


def test_an_engine_crash_under_a_shadow_costs_the_poll_promotion_and_a_re_prefill() -> None:
    base = run(one_request())
    g = gen_s(base)
    t = round(g / 2, 3) + 0.05
    shadow = run(one_request(faults={"engine": [{"times": [t]}]},
                             recovery={"engine": {"scheme": "shadow", "poll_s": 0.2,
                                                  "promote_s": 1.0, "token_log_every": 1}}))
    (rec,) = records(shadow, "recovered")
    wait = 0.2 - math.fmod(t, 0.2)
    assert rec["recovery_s"] == pytest.approx(wait + 1.0, rel=1e-9)
    assert rec["lost_tokens"] == 0  # every generated token was logged
    kept = rec["reprefill_tokens"] - PROMPT
    assert 0 < kept < RESPONSE
    # after the promotion: one prefill of prompt + kept tokens, then the rest of the decode
    # as the fault-free run did it (up to the one iteration in flight at the crash)
    scenario, _ = scenario_from_dict(one_request(recovery={"engine": {"scheme": "shadow"}}))
    cost = build_cluster(scenario, simpy.Environment(), Recorder()).engine_cost
    need = PROMPT + kept
    prefill = cost.step(0, 0, need, 0, [(need, 0)]).total_s
    step_s = sum(cost.decode_affine(1)) * (PROMPT + RESPONSE)  # bounds one iteration
    expected = t + wait + 1.0 + prefill + (g - t)
    assert gen_s(shadow) == pytest.approx(expected, abs=step_s)


def test_a_shadow_covers_one_fault_then_needs_a_cold_start_of_its_own() -> None:
    base = run(one_request())
    t = round(gen_s(base) / 4, 3) + 0.05
    data = one_request(faults={"engine": [{"times": [t, t + 5]}]},
                       recovery={"engine": {"scheme": "shadow", "cold_start_s": 60,
                                            "detect_s": 10}})
    first, second = records(run(data), "recovered")
    assert first["scheme"] == "shadow" and first["recovery_s"] < 1.5
    assert second["scheme"] == "cold_restart" and second["recovery_s"] == pytest.approx(70)


def test_a_trainer_fault_rolls_back_to_the_last_checkpoint() -> None:
    data = tiny(steps=4, policy={"name": "sync", "placement": "disaggregated"},
                rollout={"pool": "cluster", "gpus": 4, "tp": 1},
                train={"pool": "cluster", "gpus": 4, "tp": 1},
                recovery={"trainer": {"checkpoint_every": 1, "checkpoint_write_s": 5,
                                      "detect_s": 30, "restart_s": 100}})
    base = run(data)
    steps = sorted((s for s in base.recorder.spans if s.name == "step"), key=lambda s: s.t0)
    gens = sorted((s for s in base.recorder.spans if s.name == "gen"), key=lambda s: s.t0)
    # during step 2's generation: steps 0 and 1 are checkpointed
    t = (gens[2].t0 + gens[2].t1) / 2
    faulty = run({**data, "faults": {"trainer": [{"times": [t]}]}})
    lost = t - steps[1].t1 - 5  # back to the end of step 1's checkpoint
    assert faulty.summary["sim_time_s"] == pytest.approx(
        base.summary["sim_time_s"] + lost + 130, rel=1e-9)
    assert faulty.summary["steps"] == 4
    assert faulty.summary["throughput"]["samples_per_s"] < base.summary["throughput"][
        "samples_per_s"]
    (rec,) = records(faulty, "recovered")
    assert rec["recovery_s"] == pytest.approx(130) and rec["rolled_back_steps"] == 0
    # over the whole run and over the steady state (after step 0), which the restart is in
    ratio = faulty.summary["whole_run"]["effective_training_time_ratio"]
    assert ratio == pytest.approx(sum(s.t1 - s.t0 for s in steps)
                                  / faulty.summary["sim_time_s"], rel=1e-9)
    start = steps[0].t1
    assert faulty.summary["effective_training_time_ratio"] == pytest.approx(
        sum(s.t1 - s.t0 for s in steps[1:]) / (faulty.summary["sim_time_s"] - start),
        rel=1e-9)


def agentic(**changes: Any) -> dict[str, Any]:
    data = tiny(steps=2, policy={"name": "sync", "placement": "disaggregated"},
                rollout={"pool": "cluster", "gpus": 4, "tp": 1},
                train={"pool": "cluster", "gpus": 4, "tp": 1},
                env={"workers": 16},
                workload={"prompts_per_step": 4, "samples_per_prompt": 3,
                          "prompt_len": {"dist": "fixed", "value": 300},
                          "response_len": {"dist": "lognormal", "median": 100, "sigma": 0.5},
                          "max_response_len": 1000, "max_prompt_len": 512,
                          "agentic": {"turns": {"dist": "lognormal", "median": 5,
                                                "sigma": 0.5},
                                      "max_turns": 12,
                                      "env_step": {"dist": "lognormal", "median": 4,
                                                   "sigma": 0.5},
                                      "env_reset": {"dist": "fixed", "value": 10},
                                      "obs_tokens": {"dist": "fixed", "value": 50}}})
    data.update(changes)
    return data


# p up to 0.25: at 0.375 a 12-turn trajectory replayed from its first turn succeeds once
# in ~270 tries, and the stall bound rightly stops the run (hypothesis found it)
@settings(max_examples=20, deadline=None)
@given(p=st.floats(0.02, 0.25), crashes=st.lists(st.floats(1, 400), max_size=4),
       trainer=st.lists(st.floats(1, 600), max_size=2),
       slow=st.lists(st.floats(0, 400), max_size=2),
       checkpoint_every=st.sampled_from([None, 1]),
       engine=st.sampled_from(["cold_restart", "shadow"]),
       env=st.sampled_from(["restart", "checkpoint"]),
       policy=st.sampled_from(["never", "always", "every_k", "adaptive"]),
       seed=st.integers(0, 5))
def test_no_trajectory_vanishes_and_recoveries_resume_consistently(
        p: float, crashes: list[float], trainer: list[float], slow: list[float],
        checkpoint_every: int | None, engine: str, env: str, policy: str,
        seed: int) -> None:
    faults: dict[str, Any] = {"env": [{"probability": p}]}
    engine_faults = []
    if crashes:
        engine_faults.append({"times": crashes, "targets": [0, 1, 2, 3]})
    if slow:
        engine_faults.append({"mode": "slow", "times": slow, "targets": [1, 2],
                              "factor": 2, "duration": "60 s"})
    if engine_faults:
        faults["engine"] = engine_faults
    if trainer:
        faults["trainer"] = [{"times": trainer}]
    data = agentic(seed=seed, faults=faults,
                   recovery={"engine": {"scheme": engine, "cold_start_s": 20},
                             "env": {"scheme": env, "checkpoints": {"policy": policy}},
                             "trainer": {"checkpoint_every": checkpoint_every,
                                         "detect_s": 5, "restart_s": 20}})
    result = run(data)  # a recovered trajectory with an inconsistent context raises
    batch = 4 * 3
    for s in result.recorder.spans:
        if s.track == CONTROLLER and s.name in ("gen", "train"):
            assert s.attrs["samples"] == batch  # every trajectory arrived, once
    assert result.summary["steps"] == 2  # every step kept once, after any restarts
    faults_seen = records(result, "fault")
    closed = {r["id"] for r in records(result, "recovered")}
    end = result.summary["sim_time_s"]
    for f in faults_seen:  # every fault is recovered, or still in progress at the end:
        # an engine coming back (at most detect_s + cold_start_s, 30 s) or a slowdown
        assert f["id"] in closed or f["mode"] == "slow" or (
            f["kind"] == "engine" and f["t"] + 30.0 > end)
        if f["kind"] == "env":
            assert 0 <= f["resume_turn"] <= f["execution"]
            if env == "restart" or policy == "never":
                assert f["resume_turn"] == 0
    again = run(data)
    assert {k: v for k, v in again.summary.items() if k != "wall_s"} == {
        k: v for k, v in result.summary.items() if k != "wall_s"}


def test_schemes_see_the_same_faults() -> None:
    """Engine faults come from the same per-engine streams, and each trajectory's first
    environment fault at the same execution, whatever the schemes (common random numbers;
    a fault that finds its engine still down is not injected)."""
    faults = {"env": [{"probability": 0.1}], "engine": [{"mtbf": "300 s"}]}
    spec = FaultSpec(mtbf=300)
    streams = {str(i): set(itertools.islice(fault_times(spec, "engine", 0, i, seed=0), 50))
               for i in range(4)}
    firsts = []
    for engine, env in (("cold_restart", "restart"), ("shadow", "checkpoint")):
        result = run(agentic(faults=faults, recovery={"engine": {"scheme": engine},
                                                      "env": {"scheme": env}}))
        seen: dict[str, int] = {}
        crashes = 0
        for f in records(result, "fault"):
            if f["kind"] == "env":
                seen.setdefault(f["target"], f["execution"])
            else:
                assert f["t"] in streams[f["target"]]
                crashes += 1
        assert crashes
        firsts.append(seen)
    assert firsts[0] and firsts[0] == firsts[1]


def test_a_rollout_gpus_fault_hits_the_engine_spanning_it() -> None:
    # engines of tp 1 x pp 2: GPUs 0-1 are engine 0, GPUs 2-3 engine 1 (GPU 3 was once
    # taken for a third engine that does not exist)
    data = one_request(rollout={"pool": "cluster", "gpus": 4, "tp": 1, "pp": 2},
                       faults={"gpu": [{"times": ["1 s", "2 s"], "targets": [3, 1]}]})
    result = run(data)
    assert [(f["kind"], f["target"]) for f in records(result, "fault")] == [
        ("engine", "1"), ("engine", "0")]


@pytest.mark.parametrize(("changes", "field"), [
    ({"faults": {"engine": [{"times": ["10 s"], "targets": [9]}]}}, "faults.engine.0.targets"),
    ({"faults": {"gpu": [{"times": ["10 s"], "targets": [99]}]}}, "faults.gpu.0.targets"),
])
def test_fault_targets_must_exist(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError) as err:
        run(one_request(**changes))
    assert err.value.field == field


@pytest.mark.parametrize(("changes", "message"), [
    ({"recovery": {"scope": "role"}}, "checkpoint_every: 1"),
    ({"recovery": {"scope": "role", "trainer": {"checkpoint_every": 2}}},
     "checkpoint_every: 1"),
    ({"faults": {"env": [{"probability": 0.1}]}}, "workload.agentic"),
])
def test_unsupported_fault_setups_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        scenario_from_dict(one_request(**changes))


def phase_s(result: RunResult, name: str) -> float:
    return sum(s.t1 - s.t0 for s in result.recorder.spans
               if s.track == CONTROLLER and s.name == name)


def test_fail_slow_components_stretch_their_phases_by_the_factor() -> None:
    base = run(one_request())
    slow = {"mode": "slow", "times": [0.0], "factor": 3, "duration": "10 h"}
    result = run(one_request(faults={"engine": [slow], "trainer": [slow], "link": [slow]}))
    for name in ("gen", "train", "ref", "weight_sync"):
        expected = 3 * phase_s(base, name)
        if name == "weight_sync":  # only the link transfer is slowed, not its latency nor
            # the sync's fixed parts (gather, per-bucket, load: rlsim.cost.weightsync)
            fixed = sum(s.attrs["gather_s"] + s.attrs["fixed_s"] + s.attrs["load_s"]
                        + s.attrs["pipeline_s"] for s in base.recorder.spans
                        if s.track == CONTROLLER and s.name == name)
            expected -= 2 * base.scenario.link.latency + 2 * fixed
        if name in ("train", "ref"):  # the driver's copies before the passes run at speed
            driver = sum(s.attrs["driver_s"] for s in base.recorder.spans
                         if s.track == CONTROLLER and s.name == name)
            assert driver > 0
            expected -= 2 * driver
        assert phase_s(result, name) == pytest.approx(expected, rel=1e-6), name


def test_a_slow_engine_treated_as_crashed_is_replaced_after_detection() -> None:
    g = gen_s(run(one_request()))
    result = run(one_request(
        faults={"engine": [{"mode": "slow", "times": [0.0], "factor": 3, "duration": "1 h"}]},
        recovery={"engine": {"detect_s": 10, "cold_start_s": 90},
                  "slow": {"detect_s": 5, "mitigation": "fail_stop"}}))
    # slow for 5 s, then a cold restart (10 + 90 s), then the response from scratch at speed
    assert gen_s(result) == pytest.approx(5 + 100 + g, rel=1e-9)
    kinds = [(f["kind"], f["mode"]) for f in records(result, "fault")]
    assert kinds == [("engine", "slow"), ("engine", "stop")]


def test_an_environment_that_keeps_failing_is_refused_before_the_run() -> None:
    # restarted from its first turn, a trajectory of ~4 executions failing 99% each is
    # hopeless: refused up front (faults.bounds), naming the spec
    data = agentic(faults={"env": [{"probability": 0.99}]})
    with pytest.raises(ScenarioError) as err:
        run(data)
    assert err.value.field == "faults.env.0.probability"
    assert "never ends" in err.value.message


def test_an_execution_that_keeps_failing_stops_the_run_with_a_clear_error() -> None:
    # restored from a snapshot after every execution, a 99.99% failure rate passes the
    # estimate (9.2 expected failures per execution) but the first execution, which has
    # no snapshot before it, never gets through: the run stops at its 1000th try
    data = agentic(faults={"env": [{"probability": 0.9999}]},
                   recovery={"env": {"scheme": "checkpoint",
                                     "checkpoints": {"policy": "always"}}})
    with pytest.raises(ScenarioError) as err:
        run(data)
    assert err.value.field == "faults.env"
    assert "1000 times" in err.value.message


def test_rebalancing_moves_a_slow_engines_queue_to_the_healthy_engines() -> None:
    data = tiny(steps=1, rollout={"pool": "cluster", "gpus": 2, "tp": 1, "max_running_seqs": 2},
                train={"pool": "cluster", "gpus": 2, "tp": 1},
                policy={"name": "sync", "placement": "disaggregated"},
                workload={"prompts_per_step": 4, "samples_per_prompt": 4,
                          "response_len": {"dist": "fixed", "value": 500},
                          "max_response_len": 1000})
    slow = {"engine": [{"mode": "slow", "times": [0.0], "factor": 5, "duration": "1 h"}]}
    runs = {m: run({**data, "faults": slow, "recovery": {"slow": {"detect_s": 1,
                                                                   "mitigation": m}}})
            for m in ("none", "rebalance")}
    moved = [i.attrs["requests"] for i in runs["rebalance"].recorder.instants
             if i.name == "rebalance"]
    assert moved == [6]  # engine 0 had 8 requests, 2 of them running
    assert gen_s(runs["rebalance"]) < gen_s(runs["none"])
    for r in runs.values():
        (train,) = [s for s in r.recorder.spans if s.track == CONTROLLER and s.name == "train"]
        assert train.attrs["samples"] == 16


def restartable(**recovery: Any) -> dict[str, Any]:
    return tiny(steps=4, policy={"name": "sync", "placement": "disaggregated"},
                rollout={"pool": "cluster", "gpus": 4, "tp": 1},
                train={"pool": "cluster", "gpus": 4, "tp": 1},
                recovery={"trainer": {"detect_s": 30, "restart_s": 100, **recovery}})


def test_a_trainer_fault_during_a_checkpoint_write_loses_that_checkpoint() -> None:
    data = restartable(checkpoint_every=1, checkpoint_write_s=50)
    base = run(data)
    ckpts = sorted((s for s in base.recorder.spans if s.name == "checkpoint"),
                   key=lambda s: s.t0)
    t = (ckpts[1].t0 + ckpts[1].t1) / 2
    faulty = run({**data, "faults": {"trainer": [{"times": [t]}]}})
    (rollback,) = [i for i in faulty.recorder.instants if i.name == "rollback"]
    assert rollback.t == pytest.approx(t) and rollback.attrs["to_step"] == 1
    (rec,) = records(faulty, "recovered")
    assert rec["recovery_s"] == pytest.approx(130)
    assert rec["lost_work_s"] == pytest.approx(t - ckpts[0].t1)
    assert faulty.summary["sim_time_s"] == pytest.approx(
        base.summary["sim_time_s"] + (t - ckpts[0].t1) + 130, rel=1e-9)
    # a rolled-back step's phases are not a step's cost; its samples are not goodput
    for phase in ("gen", "train", "ref"):
        assert faulty.summary["phase_time_s"][phase] == pytest.approx(
            base.summary["phase_time_s"][phase], rel=1e-9)
    # the restart's downtime per step: of the 4 steps, or of the steady state's 3
    assert faulty.summary["whole_run"]["phase_time_s"]["recovery"] == pytest.approx(130 / 4)
    assert faulty.summary["phase_time_s"]["recovery"] == pytest.approx(130 / 3)
    assert faulty.summary["throughput"]["samples_per_s"] > faulty.summary[
        "goodput_samples_per_s"]


def test_two_restarts_from_one_checkpoint_lose_only_the_work_since_the_last() -> None:
    faulty = run({**restartable(), "faults": {"trainer": [{"times": [3, 136]}]}})
    first, second = records(faulty, "recovered")
    assert first["lost_work_s"] == pytest.approx(3)
    assert second["lost_work_s"] == pytest.approx(136 - 133)  # since the first restart


def test_a_job_restart_stops_the_abandoned_steps_trainer_work() -> None:
    data = restartable()
    base = run(data)
    ref = min((s for s in base.recorder.spans if s.track.startswith("train.")
               and s.name == "ref_logprob"), key=lambda s: s.t0)
    t = (ref.t0 + ref.t1) / 2
    faulty = run({**data, "faults": {"trainer": [{"times": [t]}]}})
    after = [s for s in faulty.recorder.spans if s.track.startswith("train.")
             and s.name != "busy" and t <= s.t1 and s.t0 < t + 130]
    # the pass running at the fault stops there; nothing of the dead step runs after it
    assert [(s.name, s.attrs.get("killed"), s.t1) for s in after] == [
        ("ref_logprob", True, pytest.approx(t))]


def test_a_job_restart_voids_the_first_turns_still_waiting_for_their_reset() -> None:
    data = agentic(steps=1, output={"detail": "request"},
                   faults={"trainer": [{"times": [5]}]},
                   recovery={"trainer": {"detect_s": 0, "restart_s": 1}})
    data["workload"]["agentic"]["turns"] = {"dist": "fixed", "value": 1}
    result = run(data)
    requests = [s for s in result.recorder.spans if s.track.endswith(".requests")]
    assert len(requests) == 4 * 3  # only the restarted step's; none of the voided one's


def test_overlapping_link_slowdowns_leave_the_link_healthy_when_they_end() -> None:
    base = run(one_request())
    slow = {"link": [{"mode": "slow", "times": [0, 1], "factor": 4, "duration": "5 s"}]}
    result = run(one_request(faults=slow))
    assert phase_s(result, "weight_sync") == pytest.approx(phase_s(base, "weight_sync"),
                                                           rel=1e-9)


def test_slowness_outlasts_a_crash_and_ends_with_the_fault_that_set_it() -> None:
    data = one_request(faults={"engine": [
        {"mode": "slow", "times": [1, 27], "factor": 3, "duration": "30 s"},
        {"times": [20]}]}, recovery={"engine": {"detect_s": 0, "cold_start_s": 5}})
    data["workload"]["response_len"] = {"dist": "fixed", "value": 4000}
    data["workload"]["max_response_len"] = 8000
    result = run(data)
    changes = [(i.t, i.attrs["factor"]) for i in result.recorder.instants
               if i.name == "slowdown"]
    assert result.summary["sim_time_s"] > 31
    assert changes == [(1.0, 3.0), (31.0, 1.0)]  # the second slow fault found it slow
    slow = [r for r in records(result, "recovered") if r.get("mitigation") == "none"]
    assert [r["recovery_s"] for r in slow] == [pytest.approx(30)]


def test_one_off_rollouts_recover_from_engine_and_environment_faults() -> None:
    data = agentic(steps=3, policy={"name": "one_off", "placement": "disaggregated",
                                    "env_interaction": "per_trajectory"},
                   faults={"env": [{"probability": 0.1}],
                           "engine": [{"times": [20, 60], "targets": [0, 2]}]},
                   recovery={"engine": {"scheme": "shadow"},
                             "env": {"scheme": "checkpoint",
                                     "checkpoints": {"policy": "always"}}})
    result = run(data)
    trains = [s for s in result.recorder.spans if s.track == CONTROLLER and s.name == "train"]
    assert [s.attrs["samples"] for s in trains] == [12, 12, 12]
    assert result.summary["faults"]["injected"] == result.summary["faults"]["recovered"] > 2


def test_one_gpu_fault_of_a_colocated_job_counts_once() -> None:
    """A colocated GPU hosts an engine and a trainer rank: one fault takes down both (two
    components hit, each recovered) but is one fault injected."""
    plain = run(tiny(steps=3))
    half = plain.summary["step_time_s"]["mean"] / 2
    result = run(tiny(steps=3, faults={"gpu": [{"times": [f"{half} s"], "targets": [0]}]}))
    hits = records(result, "fault")
    assert sorted(f["kind"] for f in hits) == ["engine", "trainer"]
    assert len({f["cause"] for f in hits}) == 1
    faults = result.summary["faults"]
    assert (faults["injected"], faults["hits"]) == (1, 2)
    assert faults["by_kind"]["engine"]["injected"] == faults["by_kind"]["trainer"]["injected"] == 1
    assert faults["open"] == faults["hits"] - faults["recovered"]
