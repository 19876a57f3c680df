"""Every sample attempt a policy starts ends exactly one way (`Rollout.end`), counted on the
job: under every policy each step trains P0 x R0 samples, and what was not trained is
accounted for (one_off's last batch left open, tail batching's surplus aborted, async's
stale and cancelled attempts as its `outcomes` record says)."""

from __future__ import annotations

from typing import Any

import pytest
import simpy

from rlsim.config.loading import scenario_from_dict
from rlsim.config.streams import stream
from rlsim.entities.cluster import build_cluster
from rlsim.entities.rollout import RolloutJob
from rlsim.policies import Phases, registry
from rlsim.trace import Recorder
from rlsim.workload import Workload
from tests.scenarios import tiny

P0, R0, STEPS = 6, 3, 4
POOLS = [{"name": "r", "gpu": "H100", "nodes": 1}, {"name": "t", "gpu": "H100", "nodes": 1}]


def _job(policy: dict[str, Any], **changes: Any) -> tuple[RolloutJob, Recorder]:
    data = tiny(steps=STEPS, workload__prompts_per_step=P0, workload__samples_per_prompt=R0,
                workload__response_len={"dist": "lognormal", "median": 300, "sigma": 1.0},
                policy=policy, **changes)
    scenario, base = scenario_from_dict(data)
    env = simpy.Environment()
    rec = Recorder("phase")
    ph = Phases(build_cluster(scenario, env, rec))
    workload = Workload(scenario.workload, stream(scenario.seed, "workload"), base)
    env.run(until=env.process(registry.get(scenario.policy.name).run(ph, workload)))
    return ph.job, rec


def test_sync_trains_every_sample_it_starts() -> None:
    job, _ = _job({"name": "sync"})
    assert job.started == STEPS * P0 * R0
    assert job.outcomes == {"trained": STEPS * P0 * R0} and job.open_attempts() == 0


def test_one_off_leaves_its_last_batch_open() -> None:
    job, _ = _job({"name": "one_off", "placement": "disaggregated"}, pools=POOLS,
                  rollout__pool="r", train__pool="t")
    assert job.outcomes == {"trained": STEPS * P0 * R0}
    assert job.open_attempts() == P0 * R0  # generated for the step after the last


def test_tail_batching_aborts_what_it_does_not_train() -> None:
    job, _ = _job({"name": "tail_batching", "tail_batching": {"eta_p": 1.5, "eta_r": 1.5}})
    assert job.outcomes["trained"] == STEPS * P0 * R0
    assert job.outcomes["aborted"] == job.started - STEPS * P0 * R0 > 0
    assert job.open_attempts() == 0


@pytest.mark.parametrize("extra", [0, 1])
def test_async_outcomes_match_its_record(extra: int) -> None:
    job, rec = _job({"name": "async", "placement": "disaggregated",
                     "asynchronous": {"alpha": 1, "extra_groups": extra,
                                      "extra_per_group": extra}},
                    pools=POOLS, rollout__pool="r", train__pool="t")
    (outcomes,) = [i for i in rec.instants if i.name == "outcomes"]
    assert job.outcomes["trained"] == outcomes.attrs["trained"] == STEPS * P0 * R0
    assert job.started == outcomes.attrs["attempts"]
    assert job.open_attempts() == outcomes.attrs["leftover"]
    for how in ("stale", "cancelled"):
        assert job.outcomes[how] == outcomes.attrs[how]
