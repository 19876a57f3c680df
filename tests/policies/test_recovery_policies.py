"""Recovery composes with every policy: invariants (hypothesis) under every policy x fault
kind, on small agentic jobs.

- nothing vanishes: every sample attempt a policy starts ends exactly one way (trained,
  stale, cancelled, aborted, or voided by a job restart) or is still open when the run
  ends (one_off's next batch, async's leftover); every kept step trains P0 x R0 samples;
  the train spans count every `trained` outcome; every fault is recovered, or still open
  for a reason (its trajectory was given up, or the run ended first);
- no sample trained twice: no attempt, and no sample life, ends `trained` twice;
- the staleness bound held (0 on-policy, 1 one_off, alpha async) in every train span;
- recovered contexts consistent: a multi-turn sample with fault hooks checks its finished
  context (prompt, every turn's response and observation exactly once) and raises
  otherwise; an environment fault resumes at or before the execution it hit;
- same seed, same result.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.config.loading import scenario_from_dict
from rlsim.config.streams import stream
from rlsim.entities.cluster import build_cluster
from rlsim.entities.rollout import RolloutJob
from rlsim.policies import Phases, registry
from rlsim.policies.recovery import Recovery
from rlsim.report.metrics import summarize
from rlsim.trace import CONTROLLER, Recorder
from rlsim.workload import Workload
from tests.policies.test_recovery import agentic

P0, R0, STEPS = 4, 3, 3
ALPHA = 1

POLICIES: dict[str, dict[str, Any]] = {
    "sync": {"name": "sync", "placement": "disaggregated"},
    "sync_colocated": {"name": "sync", "placement": "colocated"},
    "one_off": {"name": "one_off", "placement": "disaggregated"},
    "async": {"name": "async", "placement": "disaggregated",
              "asynchronous": {"alpha": ALPHA, "partial_rollout": True,
                               "extra_per_group": 1, "extra_groups": 1}},
    "tail_batching": {"name": "tail_batching", "placement": "disaggregated",
                      "tail_batching": {"eta_p": 1.5, "eta_r": 1.5}},
}
KINDS = ("engine", "env", "trainer", "gpu", "link", "slow")


def _faults(kind: str, times: list[float], p: float, scope: str) -> dict[str, Any]:
    """The `faults:` and `recovery:` of one fault kind at these times."""
    trainer = {"detect_s": 5, "restart_s": 20, "checkpoint_every": 1}
    recovery: dict[str, Any] = {"trainer": trainer, "scope": scope,
                                "engine": {"cold_start_s": 15, "detect_s": 3}}
    if kind == "engine":
        faults = {"engine": [{"times": times, "targets": [0, 1, 2, 3]}]}
    elif kind == "env":
        faults = {"env": [{"probability": p}]}
        recovery["env"] = {"scheme": "checkpoint", "checkpoints": {"policy": "every_k",
                                                                   "k": 2}}
    elif kind == "trainer":
        faults = {"trainer": [{"times": times}]}
    elif kind == "gpu":  # 4 rollout GPUs then 4 training GPUs (colocated: 4 in all)
        faults = {"gpu": [{"times": times, "targets": [1, 3, 0, 2]}]}
    elif kind == "link":
        faults = {"link": [{"mode": "slow", "times": times, "factor": 3, "duration": "40 s"}]}
    else:  # fail-slow engines and trainer, the slow engines rebalanced
        faults = {"engine": [{"mode": "slow", "times": times, "targets": [0, 1],
                              "factor": 3, "duration": "40 s"}],
                  "trainer": [{"mode": "slow", "times": times[:1], "factor": 2,
                               "duration": "40 s"}]}
        recovery["slow"] = {"detect_s": 5, "mitigation": "rebalance"}
    return {"faults": faults, "recovery": recovery}


def scenario(policy: str, kind: str, times: list[float], p: float = 0.1, seed: int = 0,
             scope: str = "job") -> dict[str, Any]:
    if policy == "sync_colocated":
        scope = "job"  # role-based recovery needs separate GPUs
    data = agentic(steps=STEPS, seed=seed,
                   policy={**POLICIES[policy], "env_interaction": "per_trajectory"},
                   **_faults(kind, times, p, scope))
    # turns long enough that crashes find requests in flight
    data["workload"].update(prompts_per_step=P0, samples_per_prompt=R0,
                            response_len={"dist": "lognormal", "median": 500, "sigma": 0.5})
    return data


class _Run:
    """One run, with the job's state and every `trained` outcome as it was ended."""

    def __init__(self, data: dict[str, Any]) -> None:
        sc, base = scenario_from_dict(data)
        env = simpy.Environment()
        self.rec = Recorder("phase")
        ph = Phases(build_cluster(sc, env, self.rec))
        ph.hooks = Recovery(ph)
        self.job: RolloutJob = ph.job
        self.trained: list[tuple[int, int, int]] = []  # (life, attempt, epoch)
        self.lives: list[Any] = []
        job, trained, lives = self.job, self.trained, self.lives
        end_samples = job.end_samples

        def spy(samples: Any, how: str) -> None:
            samples = list(samples)
            if how == "trained":
                for s in samples:
                    r = s.rollout
                    if r is not None and r.epoch == job.epoch and r.is_open:
                        lives.append(r)  # keep it alive: ids stay unique
                        trained.append((id(r), r.attempt, r.epoch))
            end_samples(samples, how)

        job.end_samples = spy  # type: ignore[method-assign]
        workload = Workload(sc.workload, stream(sc.seed, "workload"), base)
        proc = env.process(registry.get(sc.policy.name).run(ph, workload))
        env.run(until=proc)
        ph.cluster.close()
        self.summary = summarize(self.rec, 0.0, 0)
        self.scenario = sc


def check_invariants(run: _Run, policy: str) -> None:
    job, rec, summary = run.job, run.rec, run.summary
    # every attempt ended once, or is open for the policy's reason
    assert job.started == sum(job.outcomes.values()) + job.open_attempts()
    batch = P0 * R0
    if policy in ("sync", "sync_colocated", "tail_batching"):
        assert job.open_attempts() == 0
    elif policy == "one_off":
        assert job.open_attempts() in (0, batch)  # the next batch (none if voided at the end)
    else:
        (end,) = [i.attrs for i in rec.instants if i.name == "outcomes"]
        assert job.open_attempts() == end["leftover"]
        assert end["attempts"] == (end["trained"] + end["stale"] + end["cancelled"]
                                   + end["leftover"] + end.get("voided", 0))
    # every kept step trains the batch; the train spans count every trained outcome
    trains = [s for s in rec.spans if s.track == CONTROLLER and s.name == "train"]
    assert sum(s.attrs["samples"] for s in trains) == job.outcomes["trained"]
    assert summary["steps"] == STEPS
    steps = sorted((s for s in rec.spans if s.track == CONTROLLER and s.name == "step"),
                   key=lambda s: s.t1)
    by_step: dict[int, Any] = {}
    for s in trains:
        by_step[s.attrs["step"]] = s  # the last train span of a step is the kept one
    assert sorted(by_step) == list(range(STEPS)) and len(steps) >= STEPS
    assert all(by_step[k].attrs["samples"] == batch for k in range(STEPS))
    # no sample trained twice
    assert len(set(run.trained)) == len(run.trained)
    assert len({life for life, _, _ in run.trained}) == len(run.trained)
    # the staleness bound
    bound = {"one_off": 1, "async": ALPHA}.get(policy, 0)
    assert all(s.attrs["staleness_max"] <= bound for s in trains)
    # every fault recovered or open for a reason
    faults = [i for i in rec.instants if i.track == "faults" and i.name == "fault"]
    closed = {i.attrs["id"] for i in rec.instants if i.track == "faults"
              and i.name == "recovered"}
    end_t = summary["sim_time_s"]
    for f in faults:
        a = f.attrs
        if a["kind"] == "env":
            assert 0 <= a["resume_turn"] <= a["execution"]
        if a["id"] in closed or a["mode"] == "slow":
            continue
        if a["kind"] == "env":  # its trajectory given up (cancelled, stale, aborted) or cut
            assert policy in ("async", "tail_batching") or f.t + 400 > end_t
        else:  # still coming back when the run ended
            assert f.t + 60 > end_t, a
    assert summary["faults"]["hits"] == len(faults)
    # one drawn fault may take several components down (a colocated GPU: engine and trainer)
    assert summary["faults"]["injected"] == len({f.attrs["cause"] for f in faults})


@settings(max_examples=100, deadline=None)
@given(policy=st.sampled_from(sorted(POLICIES)), kind=st.sampled_from(KINDS),
       times=st.lists(st.floats(1, 300), min_size=1, max_size=3),
       p=st.floats(0.02, 0.25), seed=st.integers(0, 3),
       scope=st.sampled_from(["job", "role"]))
def test_every_policy_recovers_from_every_fault_kind(policy: str, kind: str,
                                                     times: list[float], p: float,
                                                     seed: int, scope: str) -> None:
    data = scenario(policy, kind, sorted(times), p, seed, scope)
    run = _Run(data)  # an inconsistent recovered context raises
    check_invariants(run, policy)
    again = _Run(data)
    assert again.summary == run.summary
    assert Counter(again.job.outcomes) == Counter(run.job.outcomes)


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("kind", KINDS)
def test_each_policy_and_fault_kind(policy: str, kind: str) -> None:
    """The whole grid once, at fixed times (hypothesis samples it above)."""
    run = _Run(scenario(policy, kind, [20.0, 90.0, 160.0]))
    check_invariants(run, policy)
    assert run.summary["faults"]["injected"] > 0


@pytest.mark.parametrize("policy", ["one_off", "async", "tail_batching"])
def test_a_job_restart_voids_what_was_in_flight_and_resumes_after_the_checkpoint(
        policy: str) -> None:
    base = _Run(scenario(policy, "trainer", [1e9]))  # a fault after the run: none
    steps = sorted((s for s in base.rec.spans if s.track == CONTROLLER and s.name == "step"),
                   key=lambda s: s.t1)
    t = (steps[1].t0 + steps[1].t1) / 2  # mid step 1: step 0 is checkpointed
    run = _Run(scenario(policy, "trainer", [t]))
    check_invariants(run, policy)
    (rollback,) = [i for i in run.rec.instants if i.name == "rollback"]
    assert rollback.attrs["to_step"] == 1 and rollback.attrs["from_step"] == 1
    assert run.job.outcomes["voided"] > 0
    assert run.summary["sim_time_s"] > base.summary["sim_time_s"] + 25  # detect + restart


def test_async_keeps_its_staleness_bound_through_engine_crashes_and_partial_rollout() -> None:
    run = _Run(scenario("async", "engine", [10.0, 12.0, 30.0, 31.0, 70.0]))
    check_invariants(run, "async")
    stale = [s.attrs["staleness_max"] for s in run.rec.spans
             if s.track == CONTROLLER and s.name == "train"]
    assert max(stale) <= ALPHA
    lost = [i.attrs["requests"] for i in run.rec.instants if i.name == "recovered"]
    assert len(lost) == 5 and sum(lost) > 0  # the crashes took requests in flight
    resumed = sum(s.attrs["resumed"] for s in run.rec.spans if s.name == "step")
    assert resumed > 0  # and partial rollout resumed others on new weights
