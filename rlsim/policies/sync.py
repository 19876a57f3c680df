"""`sync`: on-policy RL, phases strictly in sequence (veRL).

Colocated: rollout and trainer time-share the same GPUs, so each step is
gen -> switch(to train) -> reward -> controller -> ref -> train -> switch(to rollout) ->
weight_sync. Disaggregated ("Solo-D"): separate GPUs, no switch: gen -> reward ->
controller -> ref -> train -> weight_sync. Either way nothing overlaps, so a step is
exactly the sum of its phases.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from rlsim.config.policy_caps import SYNC
from rlsim.policies.phases import Phases
from rlsim.policies.registry import PolicySpec, register
from rlsim.workload import Workload


def run_sync(ph: Phases, workload: Workload) -> Generator[simpy.Event, Any, None]:
    # each step is whole in itself: a job restart (recovery) runs the steps from the one
    # after its last checkpoint again, and needs nothing else from the policy
    yield from ph.run_steps(ph.cluster.scenario.steps, lambda step: _step(ph, workload, step))
    ph.left()  # nothing in flight between steps


def _step(ph: Phases, workload: Workload, step: int) -> Generator[simpy.Event, Any, None]:
    colocated = ph.cluster.placement.colocated
    t0 = ph.env.now
    samples = yield ph.gen(step, workload.batch(step), version=step)
    if colocated:
        yield ph.switch(step, "train")
    yield ph.reward(step, samples)
    yield ph.controller(step, samples)  # the driver: Ray calls, batch bytes, advantages
    yield ph.ref(step, samples)
    yield ph.train(step, samples, version=step)
    if colocated:
        yield ph.switch(step, "rollout")
    yield ph.weight_sync(step)
    ph.step_span(step, t0, samples=len(samples))


register(PolicySpec(SYNC, run_sync))  # capabilities: rlsim/config/policy_caps.py
