"""`sync`: on-policy RL, phases strictly in sequence (veRL, or ROLL's "Sync-ROLL").

Colocated: rollout and trainer time-share the same GPUs, so each step is
gen -> switch(to train) -> reward -> controller -> ref -> train -> switch(to rollout) ->
weight_sync. Disaggregated ("Solo-D"): separate GPUs, no switch: gen -> reward ->
controller -> ref -> train -> weight_sync. Either way nothing overlaps, so a step is
exactly the sum of its phases.

Owns also how a step's generation is scheduled (`policy.schedule`, ROLL Flash 5.1; ROLL's
`DynamicSamplingScheduler` at the paper's release, alibaba/ROLL cec5234a
roll/distributed/scheduler/generate_scheduler.py). The default is batch rollout
(`Phases.gen`: the batch in contiguous chunks, one per engine). With zero-variance
filtering and no queue scheduling, batch rollout generates whole further batches until
prompts_per_step groups pass (ROLL's `get_batch_opt_level_0`). Queue scheduling
(`_Queue`): each prompt is a task on the least-loaded engine (a group, or with prompt
replication each response on its own), prompts_per_step + additional_prompts in flight,
refilled as they complete or are filtered, until prompts_per_step groups pass; then
whatever is still in flight is aborted. Every launched sample ends once: trained,
`filtered` (its group's rewards were all equal), or `cancelled` (aborted or surplus).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from rlsim.config.policies.sync import SYNC, ScheduleConfig
from rlsim.config.streams import rng
from rlsim.entities.rollout import Rollout, Sample, release
from rlsim.policies.phases import Phases
from rlsim.policies.registry import PolicySpec, register
from rlsim.trace import CONTROLLER
from rlsim.workload import PromptGroup, Workload

_DRAW_CHUNK = 1024  # zero-variance draws per stream: prompt i's draw never depends on n


def run_sync(ph: Phases, workload: Workload) -> Generator[simpy.Event, Any, None]:
    sched = SYNC.settings(ph.cluster.scenario)
    # each step is whole in itself: a job restart (recovery) runs the steps from the one
    # after its last checkpoint again, and needs nothing else from the policy
    yield from ph.run_steps(ph.cluster.scenario.steps,
                            lambda step: _step(ph, workload, step, sched))
    ph.left()  # nothing in flight between steps


def _step(ph: Phases, workload: Workload, step: int,
          sched: ScheduleConfig) -> Generator[simpy.Event, Any, None]:
    colocated = ph.cluster.placement.colocated
    t0 = ph.env.now
    if not sched.queue_scheduling and sched.zero_variance_fraction == 0.0 \
            and sched.gen_batch_prompts is None:
        # batch rollout (prompt replication alone changes nothing: ROLL's batch interface
        # keeps a prompt's copies contiguous, so they land in the same engine's chunk)
        samples = yield ph.gen(step, workload.batch(step), version=step)
    else:
        w = ph.cluster.scenario.workload
        samples = yield ph.phase("gen", step, _scheduled_gen(ph, workload, step, sched),
                                 samples=w.prompts_per_step * w.samples_per_prompt)
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


class _Prompts:
    """Prompt i of a step, drawn on demand (a batch of n is a prefix of any larger one),
    and whether its group is zero-variance (its own uniform draw, keyed by seed, step and
    i, so every setting filters the same prompts)."""

    def __init__(self, ph: Phases, workload: Workload, step: int, fraction: float) -> None:
        self.workload, self.step, self.fraction = workload, step, fraction
        self.seed = ph.cluster.scenario.seed
        self.groups: list[PromptGroup] = []
        self._draws: dict[int, np.ndarray] = {}

    def __getitem__(self, i: int) -> PromptGroup:
        if i >= len(self.groups):
            n = max(i + 1, 2 * len(self.groups), self.workload.cfg.prompts_per_step)
            self.groups = self.workload.batch(self.step, n)
        return self.groups[i]

    def filtered(self, i: int) -> bool:
        if self.fraction == 0.0:
            return False
        chunk, row = divmod(i, _DRAW_CHUNK)
        draws = self._draws.get(chunk)
        if draws is None:
            draws = self._draws[chunk] = rng(self.seed, "zero-variance", self.step,
                                             chunk).random(_DRAW_CHUNK)
        return bool(draws[row] < self.fraction)


def _scheduled_gen(ph: Phases, workload: Workload, step: int,
                   sched: ScheduleConfig) -> Generator[simpy.Event, Any, list[Sample]]:
    t0 = ph.env.now
    prompts = _Prompts(ph, workload, step, sched.zero_variance_fraction)
    if sched.queue_scheduling:
        queue = _Queue(ph, prompts, step, sched)
        yield queue.done
        samples, times, stats = queue.samples, queue.times, queue.stats
    else:
        samples, times, stats = yield from _batch_rounds(ph, prompts, step,
                                                         sched.gen_batch_prompts)
    ph.rec.instant(CONTROLLER, "schedule", ph.env.now, step=step, **stats)
    ph.record_responses(step, t0, samples, times)
    return samples


def _batch_rounds(ph: Phases, prompts: _Prompts, step: int, round_prompts: int | None = None,
                  ) -> Generator[simpy.Event, Any, tuple[list[Sample], list[float], dict]]:
    """Batch rollout with zero-variance filtering (ROLL's get_batch_opt_level_0; veRL
    DAPO's filter_groups with `round_prompts` = data.gen_batch_size): a round of
    `round_prompts` (default prompts_per_step) in contiguous chunks, all of it generated,
    then the groups filtered; while fewer than prompts_per_step groups passed, a further
    round of the next prompts. The first prompts_per_step passing groups, in prompt
    order, train."""
    w = ph.cluster.scenario.workload
    b = w.prompts_per_step
    per_round = round_prompts or b
    passed: list[tuple[list[Sample], list[float]]] = []
    filtered = cancelled = rounds = 0
    job = ph.job
    while len(passed) < b:
        groups = [prompts[rounds * per_round + i] for i in range(per_round)]
        done, arrived = yield from ph.run_batch(groups, step)
        by_prompt: dict[int, tuple[list[Sample], list[float]]] = {
            g.prompt_id: ([], []) for g in groups}
        for s, at in zip(done, arrived, strict=True):
            entry = by_prompt[s.prompt_id]
            entry[0].append(s)
            entry[1].append(at)
        for i, g in enumerate(groups):
            got = by_prompt[g.prompt_id]
            if prompts.filtered(rounds * per_round + i):
                job.end_samples(got[0], "filtered")
                filtered += 1
            elif len(passed) < b:
                passed.append(got)
            else:  # a passing group beyond the batch: dropped (ROLL and veRL keep the
                # first b: veRL's batch[:train_batch_size * n])
                job.end_samples(got[0], "cancelled")
                cancelled += len(got[0])
        rounds += 1
    samples = [s for got in passed for s in got[0]]
    times = [t for got in passed for t in got[1]]
    return samples, times, {"rounds": rounds, "launched_prompts": rounds * per_round,
                            "filtered_groups": filtered, "cancelled_samples": cancelled}


class _Group:
    """One prompt in flight under queue scheduling: its rollouts, and its samples so far."""

    __slots__ = ("engine", "engines", "filtered", "index", "rollouts", "samples", "times")

    def __init__(self, index: int, rollouts: list[Rollout], filtered: bool) -> None:
        self.index = index
        self.rollouts = rollouts
        self.filtered = filtered
        self.samples: list[Sample] = []
        self.times: list[float] = []
        self.engine = -1  # the engine of its whole group (without prompt replication)
        self.engines = [-1] * len(rollouts)  # each response's (with prompt replication)


class _Queue:
    """Queue scheduling of one step (ROLL's DynamicSamplingScheduler, generate_opt_level 1).

    A dispatch unit is a prompt's whole group (one request of n responses, as ROLL counts
    it) or, with prompt replication, one response. Units go in launch order to the engine
    with the fewest units in flight (ties: the lowest index, as ROLL sorts (load, rank)),
    while that engine has fewer than max_running_requests; the rest wait. A unit leaves its
    engine when its last response finishes. Prompts in flight: prompts_per_step +
    additional_prompts; with use_additional_prompts every completed or filtered prompt is
    replaced (ROLL cec5234a: running_prompts < batch_size + max_additional_running_prompts,
    decremented at every completion, so the batch is its first passing groups), without
    it only a filtered one (running + completed < batch_size, ROLL's ReplayBuffer at
    8eb27cc2). At the prompts_per_step-th passing group
    `done` fires; every rollout still in flight is aborted (ROLL stops sampling and drops
    what it has not collected)."""

    def __init__(self, ph: Phases, prompts: _Prompts, step: int, sched: ScheduleConfig) -> None:
        self.ph, self.prompts, self.step = ph, prompts, step
        w = ph.cluster.scenario.workload
        self.b, self.k = w.prompts_per_step, w.samples_per_prompt
        self.extra = sched.extra_prompts
        self.refill = sched.refill
        self.replicate = sched.prompt_replication
        self.cap = sched.max_running_requests or math.inf
        self.engines = ph.cluster.engines
        self.units = [0] * len(self.engines)  # ROLL's load_balance_coordinator
        self.pending: deque[list[Rollout]] = deque()
        self.live: dict[int, _Group] = {}  # prompt_id -> group in flight
        self.passed: list[_Group] = []
        self.launched = self.filtered_groups = self.cancelled = 0
        self.done = ph.env.event()
        self.samples: list[Sample] = []
        self.times: list[float] = []
        self.stats: dict[str, int] = {}
        self._fill()
        self._dispatch()

    def _fill(self) -> None:
        b, limit = self.b, self.b + self.extra
        while len(self.live) < limit and (self.refill or len(self.live) + len(self.passed) < b):
            i = self.launched
            self.launched += 1
            group = self.prompts[i]
            rollouts = self.ph.rollouts([group], self._finished, reserve=True)
            g = _Group(i, rollouts, self.prompts.filtered(i))
            self.live[group.prompt_id] = g
            if self.replicate:
                self.pending.extend([r] for r in rollouts)
            else:
                self.pending.append(rollouts)

    def _dispatch(self) -> None:
        units, engines, pending = self.units, self.engines, self.pending
        while pending:
            e = min(range(len(units)), key=units.__getitem__)
            if units[e] >= self.cap:
                return
            units[e] += 1
            unit = pending.popleft()
            engine = engines[e]
            g = self.live[unit[0].prompt_id]
            if self.replicate:
                g.engines[unit[0].slot] = e
            else:
                g.engine = e
            for r in unit:
                r.start(self.step, engine)

    def _finished(self, sample: Sample) -> None:
        if self.done.triggered:
            return
        g = self.live[sample.prompt_id]
        g.samples.append(sample)
        g.times.append(self.ph.env.now)
        r = sample.rollout
        assert r is not None
        if self.replicate:
            self.units[g.engines[r.slot]] -= 1
        if len(g.samples) < len(g.rollouts):
            self._dispatch()
            return
        if not self.replicate:
            self.units[g.engine] -= 1
        del self.live[sample.prompt_id]
        if g.filtered:
            self.ph.job.end_samples(g.samples, "filtered")
            self.filtered_groups += 1
        else:
            self.passed.append(g)
            if len(self.passed) == self.b:
                self._close()
                return
        self._fill()
        self._dispatch()

    def _close(self) -> None:
        """The batch is complete: abort and drop every prompt still in flight."""
        cancelled = 0
        for g in self.live.values():
            for r in g.rollouts:
                if r.is_open:
                    r.cancel()
                    r.end("cancelled")
                    cancelled += 1
            release(g.rollouts)
        for g in self.passed:
            release(g.rollouts)
        self.live.clear()
        self.pending.clear()
        self.samples = [s for g in self.passed for s in g.samples]
        self.times = [t for g in self.passed for t in g.times]
        self.stats = {"launched_prompts": self.launched,
                      "filtered_groups": self.filtered_groups,
                      "cancelled_samples": cancelled}
        self.done.succeed(self.samples)


register(PolicySpec(SYNC, run_sync))  # declared in config/policies/sync.py
