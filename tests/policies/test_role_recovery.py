"""Role-based recovery (RobustRL, `recovery.scope: role`) against closed forms on toy
clusters, beside the whole-job restart it is compared with (`scope: job`)."""

from __future__ import annotations

from typing import Any

import pytest

from rlsim.api import RunResult, simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.trace import CONTROLLER
from tests.policies.test_recovery import gen_s, one_request, records
from tests.scenarios import tiny

DETECT, ROLE, JOB = 5.0, 20.0, 50.0


def toy(scope: str = "role", policy: str = "sync", **changes: Any) -> dict[str, Any]:
    """Four steps on one rollout GPU and one training GPU, a checkpoint after every step
    (2 s to write)."""
    pol: dict[str, Any] = {"name": policy, "placement": "disaggregated"}
    if policy == "async":
        pol["asynchronous"] = {"alpha": 2}
    data = tiny(steps=4, rollout={"pool": "cluster", "gpus": 1, "tp": 1},
                train={"pool": "cluster", "gpus": 1, "tp": 1}, policy=pol,
                recovery={"scope": scope, "role_restart_s": ROLE,
                          "trainer": {"checkpoint_every": 1, "checkpoint_write_s": 2,
                                      "detect_s": DETECT, "restart_s": JOB}})
    data.update(changes)
    return data


def run(data: dict[str, Any]) -> RunResult:
    scenario, base = scenario_from_dict(data)
    return simulate(scenario, base)


def passes(result: RunResult, name: str = "train") -> list[Any]:
    """The trainer's passes called `name`, in time order."""
    return sorted((s for s in result.recorder.spans
                   if s.track.startswith("train.") and s.name == name), key=lambda s: s.t0)


def phases(result: RunResult, name: str) -> list[Any]:
    return sorted((s for s in result.recorder.spans if s.track == CONTROLLER
                   and s.name == name), key=lambda s: s.t0)


def test_a_trainer_restarted_alone_redoes_only_the_pass_it_lost() -> None:
    base = run(toy())
    p = passes(base)[1]  # step 1's update: step 0 is checkpointed
    t = (p.t0 + p.t1) / 2
    faulty = run(toy(faults={"trainer": [{"times": [t]}]}))
    (rec,) = records(faulty, "recovered")
    assert rec["scope"] == "role" and rec["recovery_s"] == pytest.approx(DETECT + ROLE)
    assert rec["lost_work_s"] == pytest.approx(t - p.t0)
    killed, redo = passes(faulty)[1:3]
    assert killed.attrs["killed"] and killed.t1 == pytest.approx(t)
    assert redo.t0 == pytest.approx(t + DETECT + ROLE)
    assert redo.t1 - redo.t0 == pytest.approx(p.t1 - p.t0, rel=1e-12)
    # the step is longer by the pass's lost part and the restart; nothing is rolled back
    assert faulty.summary["sim_time_s"] == pytest.approx(
        base.summary["sim_time_s"] + (t - p.t0) + DETECT + ROLE, rel=1e-12)
    assert not [i for i in faulty.recorder.instants if i.name == "rollback"]
    (span,) = phases(faulty, "recovery")
    assert span.attrs == {"step": 1, "scope": "role"}


def test_the_whole_job_restart_it_is_compared_with_loses_the_step_and_restarts_all() -> None:
    base = run(toy("job"))
    p = passes(base)[1]
    t = (p.t0 + p.t1) / 2
    faulty = run(toy("job", faults={"trainer": [{"times": [t]}]}))
    (ckpt0,) = [s for s in phases(base, "checkpoint") if s.attrs["step"] == 0]
    # back to the end of step 0's checkpoint: everything since is lost, then a restart
    assert faulty.summary["sim_time_s"] == pytest.approx(
        base.summary["sim_time_s"] + (t - ckpt0.t1) + DETECT + JOB, rel=1e-9)
    (rollback,) = [i for i in faulty.recorder.instants if i.name == "rollback"]
    assert rollback.attrs["to_step"] == 1


@pytest.mark.parametrize("second", [False, True])
def test_role_recovery_escalates_to_a_job_restart(second: bool) -> None:
    """In the first step (no checkpoint to restart the trainer from) and at a second
    fault in the same step, as RobustRL does."""
    base = run(toy())
    p = passes(base)[1 if second else 0]
    t = (p.t0 + p.t1) / 2
    times = [t, t + DETECT + ROLE + 0.5 * (p.t1 - p.t0)] if second else [t]
    faulty = run(toy(faults={"trainer": [{"times": times}]}))
    (rollback,) = [i for i in faulty.recorder.instants if i.name == "rollback"]
    assert rollback.attrs["to_step"] == (1 if second else 0)
    scopes = [r.get("scope") for r in records(faulty, "recovered")]
    assert scopes == (["role", None] if second else [None])
    assert faulty.summary["steps"] == 4


def test_a_weight_send_the_fault_cut_is_sent_again_point_to_point() -> None:
    base = run(toy())
    ws = phases(base, "weight_sync")[1]
    t = (ws.t0 + ws.t1) / 2
    faulty = run(toy(faults={"trainer": [{"times": [t]}]}))
    again = phases(faulty, "weight_sync")[1]
    # the partial send is dropped when it ends; the rollouts pull it whole once the
    # trainer is back
    assert again.t1 - again.t0 == pytest.approx(
        max(ws.t1, t + DETECT + ROLE) - ws.t0 + (ws.t1 - ws.t0), rel=1e-9)


def test_rollouts_keep_generating_while_the_trainer_restarts_alone() -> None:
    base = run(toy(policy="async"))
    p = passes(base)[1]
    t = (p.t0 + p.t1) / 2
    role = run(toy(policy="async", faults={"trainer": [{"times": [t]}]}))
    job = run(toy("job", policy="async", faults={"trainer": [{"times": [t]}]}))
    window = (t, t + DETECT + ROLE)

    def generating(result: RunResult) -> float:
        return sum(max(0.0, min(s.t1, window[1]) - max(s.t0, window[0]))
                   for s in result.recorder.spans
                   if s.track.startswith("rollout.") and s.name == "busy")

    assert generating(role) > 0  # the engine went on (up to alpha steps ahead)
    assert generating(job) < 0.01  # the whole job was down (but the iteration in flight)
    assert role.summary["attempts"]["trained"] == 4 * 8 * 4
    assert role.summary["sim_time_s"] < job.summary["sim_time_s"]


def test_a_crashed_engines_turns_move_to_the_live_engines_at_detection() -> None:
    two = {"pool": "cluster", "gpus": 2, "tp": 1}
    base = run(one_request(rollout=two))
    g = gen_s(base)
    t = round(g / 2, 3) + 0.05
    engine = {"detect_s": 10, "cold_start_s": 90}
    data = one_request(rollout=two, faults={"engine": [{"times": [t]}]})
    role = run({**data, "recovery": {"scope": "role", "engine": engine,
                                     "trainer": {"checkpoint_every": 1}}})
    job = run({**data, "recovery": {"engine": engine}})
    # role: the response starts over on the other engine once the crash is noticed;
    # job: it waits for its engine's cold restart
    assert gen_s(role) == pytest.approx(t + 10 + g, rel=1e-9)
    assert gen_s(job) == pytest.approx(t + 100 + g, rel=1e-9)
    (moved,) = [i for i in role.recorder.instants if i.name == "reassign"]
    assert moved.t == pytest.approx(t + 10) and moved.attrs["requests"] == 1
    # the replacement serves again after its cold start (the run had ended by then)
    longer = run({**data, "steps": 3, "recovery": {"scope": "role", "engine": engine,
                                                    "trainer": {"checkpoint_every": 1}}})
    rec = records(longer, "recovered")[0]
    assert rec["reassigned"] == 1 and rec["recovery_s"] == pytest.approx(100)


def test_role_recovery_needs_separate_gpus() -> None:
    data = toy(policy="sync")
    data["policy"]["placement"] = "colocated"
    with pytest.raises(ScenarioError) as err:
        run(data)
    assert err.value.field == "recovery.scope"
