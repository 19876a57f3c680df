"""`one_off`: one-step off-policy RL on separate rollout and train GPUs.

Train step k scores (reward), re-scores (ref/old log-probs) and trains on the rollouts of
step k, generated with the weights of version k-1, while the engines already generate step
k+1 with the same weights (as veRL's one-step-off-policy recipe does). A barrier joins
both, then the new weights are synced. Step 0 has nothing to overlap with: its rollouts come first.
Staleness is therefore 0 for step 0 and 1 afterwards.

The pipeline keeps running to the end: the last step also generates the next batch, as
every step does, so the last step is a steady-state step like the others (without it, it
would be shorter by the generation it skips, and a short run would look faster than a long
one). That batch is never trained; it is the `backlog` at the end (docs/metrics.md). Only
recorded rollouts with no batch beyond the last step skip it.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from rlsim.config.policy_caps import ONE_OFF
from rlsim.policies.phases import Phases, Sample
from rlsim.policies.registry import PolicySpec, register
from rlsim.workload import Workload


def run_one_off(ph: Phases, workload: Workload) -> Generator[simpy.Event, Any, None]:
    steps = ph.cluster.scenario.steps
    env = ph.env
    recorded = workload.recorded_steps
    batches = steps + 1 if recorded is None or recorded > steps else steps
    ready: list[Sample] = yield env.process(_rollout(ph, workload, 0, version=0))
    for step in range(steps):
        t0 = env.now
        nxt = env.process(_rollout(ph, workload, step + 1, version=step)) \
            if step + 1 < batches else None
        train = env.process(_train(ph, step, ready))
        yield train
        ready = []
        if nxt is not None:
            ready = yield nxt
        yield ph.weight_sync(step)
        # backlog: the next batch, generated and not trained yet
        ph.step_span(step, t0, backlog=len(ready))
    ph.left(backlog=len(ready))


def _rollout(ph: Phases, workload: Workload, step: int,
             version: int) -> Generator[simpy.Event, Any, list[Sample]]:
    samples: list[Sample] = yield ph.gen(step, workload.batch(step), version=version)
    return samples


def _train(ph: Phases, step: int, samples: list[Sample]) -> Generator[simpy.Event, Any, None]:
    # The trainer side scores its batch (reward), then computes log-probs and updates,
    # all while the engines already generate the next batch.
    yield ph.reward(step, samples)
    yield ph.controller(step, samples)  # the driver: Ray calls, batch bytes, advantages
    yield ph.ref(step, samples)
    yield ph.train(step, samples, version=step)


register(PolicySpec(ONE_OFF, run_one_off))  # capabilities: rlsim/config/policy_caps.py
