"""`async`: ROLL Flash's asynchronous RL, rollout and training decoupled by an async ratio.

Rollout and training run on separate GPUs (REFERENCES.md, ROLL Flash;
docs/research/rollflash.md):

- **Producer.** Batch d is launched once the engines hold weights of version >= d - alpha,
  so rollout runs at most alpha steps ahead of training. A batch is P0 prompt groups of R0
  samples, plus `extra_groups` groups and `extra_per_group` samples per group when
  environments are redundant. Every sample is its own request (prompt replication) on the
  least-loaded engine (queue scheduling; an engine runs at most rollout.max_running_seqs at
  once and queues the rest), starts at the engines' current version, and is scored on its
  own as it finishes (the reward scheduler's `Scorer`).
- **Groups.** A group is complete at its first R0 scored samples; its other samples are
  cancelled (aborted at once). A batch uses its first P0 complete groups; its other groups
  are cancelled.
- **Trainer.** Step n waits for P0 complete groups whose samples all started at version
  >= n - alpha, oldest first. A group with an older sample is dropped and its prompt issued
  again on the current weights (every sample a fresh attempt). It then computes log-probs,
  trains and publishes version n + 1 over the weight-sync link. The wait is recorded as the
  step's `gen` phase: the time training waits for rollout.
- **Partial rollout** (`partial_rollout: true`). At each weight update every request in
  flight is aborted and resumed on the new weights with prompt + partial output (its KV
  recomputed by prefill). A resumed sample keeps the version it started at, so its
  staleness counts from the oldest weights that wrote any of its tokens (as ROLL does).
- **Trajectories** (multi-turn samples: `workload.agentic` or recorded rollouts) keep the
  engine of their first turn; the environment resets before the first turn and steps
  after every other one on the env pool, each trajectory on its own (environment-level
  async: no barrier across environments). Staleness is checked at the start of every turn:
  an attempt that started before the engines' version - alpha starts over on the current
  weights, reset included.

Every attempt ends exactly one way, counted in `outcomes`: trained, stale (dropped for
staleness), cancelled (redundant), or left over when the run ends (in flight, or scored
but not needed). Each step span adds the step's `dropped_stale`, `cancelled` and `resumed`
(requests resumed on new weights). With alpha = 0 and no redundancy every sample is
on-policy: batch n runs on version n once step n - 1 has published it, as in
disaggregated `sync` (which routes by contiguous chunks instead).
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from rlsim.config.errors import ScenarioError
from rlsim.config.policy_caps import ASYNC
from rlsim.entities.engine import RolloutEngine
from rlsim.entities.rollout import Rollout, RolloutJob
from rlsim.entities.timers import Timers
from rlsim.policies.phases import Phases, Sample
from rlsim.policies.registry import PolicySpec, register
from rlsim.policies.scoring import Scorer, sandbox_caps
from rlsim.trace import CONTROLLER
from rlsim.workload import Turn, Workload


class _Slot(Rollout):
    """One sample being produced (its life is the `Rollout`): the group it belongs to and
    whether its current attempt is scored."""

    __slots__ = ("done", "group")

    def __init__(self, job: RolloutJob, group: _Group, slot: int, response_tokens: int,
                 turns: tuple[Turn, ...] | None, reset_s: float) -> None:
        super().__init__(job, group.prompt_id, group.prompt_tokens, response_tokens, turns,
                         slot=slot, reset_s=reset_s, task=group.task, keyed=True)
        self.group = group
        self.done = False  # scored for the current attempt


@dataclass(slots=True, eq=False)
class _Group:
    """One prompt of a batch with its R0 (+ redundant) samples."""

    batch: _Batch
    prompt_id: int
    prompt_tokens: int
    task: str | None
    slots: list[_Slot] = field(default_factory=list)
    scored: list[Sample] = field(default_factory=list)
    closed: bool = False  # complete or cancelled: takes no more samples
    counted: bool = False  # one of its batch's P0 (a reissued group stays counted)


@dataclass(slots=True, eq=False)
class _Batch:
    index: int
    scorer: Scorer
    groups: list[_Group] = field(default_factory=list)
    complete: int = 0


class _AsyncRun:
    """The rollout side and the trainer's queue of one run, from step `first` (0, or the
    step a job restart resumed at: its weights, version `first`, on the engines)."""

    def __init__(self, ph: Phases, workload: Workload, first: int = 0) -> None:
        self.ph = ph
        self.env = ph.env
        self.job = ph.job
        self.workload = workload
        sc = ph.cluster.scenario
        self.cfg = sc.policy.asynchronous
        self.p0, self.r0 = sc.workload.prompts_per_step, sc.workload.samples_per_prompt
        self.steps = sc.steps
        self.published = first  # the engines' weights version
        self.launched = first  # batches launched so far
        self.caps = sandbox_caps(sc)
        self.batches: list[_Batch] = []
        self.ready: deque[_Group] = deque()  # complete groups, oldest first
        self.outcomes: Counter[str] = ph.job.outcomes  # attempts by how they ended
        self.resumed = 0
        self._trainer_wake: simpy.Event | None = None
        self.timers = Timers.of(self.env)
        self.alpha = self.cfg.alpha
        self._on_finish = self._finished  # bound once: every sample's hooks
        self._admit = self._fresh
        self._producer_wake: simpy.Event | None = None

    @property
    def attempts(self) -> int:
        """Sample attempts started so far."""
        return self.job.started

    # ------------------------------------------------------------------ producer
    def produce(self) -> Generator[simpy.Event, Any, None]:
        """Launch batch after batch while the staleness bound allows."""
        while self.launched < self.steps + self.cfg.alpha:
            if self.launched > self.published + self.cfg.alpha:
                self._producer_wake = self.env.event()
                yield self._producer_wake
                continue
            self._launch_batch(self.launched)
            self.launched += 1

    def _launch_batch(self, d: int) -> None:
        ph, cfg = self.ph, self.cfg
        sc = ph.cluster.scenario
        per_group = self.r0 + cfg.extra_per_group
        groups = self.workload.batch(d, self.p0 + cfg.extra_groups, per_group)
        tasks = [g.task for g in groups for _ in g.response_tokens]
        if sc.reward.by_task:
            lat = ph.task_reward_latencies(d, tasks)
        elif sc.reward.kind == "judge":
            lat = [None] * len(tasks)
        else:
            lat = list(ph.reward_latencies(d, len(tasks)).tolist())
        batch = _Batch(d, Scorer(ph, lat, None, self.caps))
        self.batches.append(batch)
        slot = 0
        for g in groups:
            group = _Group(batch, g.prompt_id, g.prompt_tokens, g.task)
            batch.groups.append(group)
            for j, out in enumerate(g.response_tokens):
                s = _Slot(self.job, group, slot, out,
                          g.turns[j] if g.turns is not None else None,
                          g.reset_s[j] if g.reset_s is not None else 0.0)
                s.on_finish, s.admit = self._on_finish, self._admit
                self.job.attach_faults(s, (d, slot))  # recovery's hooks, if any
                group.slots.append(s)
                slot += 1
        # Least-loaded dispatch of the whole batch from one heap of the engines' loads (a
        # scan of every engine per trajectory costs O(engines) each on large clusters);
        # a crashed engine (faults) takes nothing new.
        engines = self.ph.cluster.engines
        heap = [(e.load, i) for i, e in enumerate(engines) if not e.down] or \
            [(e.load, i) for i, e in enumerate(engines)]
        heapq.heapify(heap)
        per_prompt = self.cfg.routing == "per_prompt"
        for group in batch.groups:
            if per_prompt:  # the whole group on one engine (ROLL's async RLVR [C])
                load, i = heapq.heappop(heap)
                heapq.heappush(heap, (load + len(group.slots), i))
            for s in group.slots:
                if not per_prompt:
                    load, i = heapq.heappop(heap)
                    heapq.heappush(heap, (load + 1, i))
                self._start(s, engines[i])

    def _start(self, s: _Slot, engine: RolloutEngine | None = None) -> None:
        """A fresh attempt on the current weights: reset the environment, then turn 0 on
        `engine` (default: the least-loaded one when the turn is submitted)."""
        s.done = False
        s.start(self.published, engine)

    def _fresh(self, s: Rollout) -> bool:
        """Before each turn: an attempt that can no longer train within alpha starts over
        on the current weights (False: it did)."""
        if s.version >= self.published - self.alpha:
            return True
        assert isinstance(s, _Slot)
        s.end("stale")
        self._start(s)
        return False

    def _finished(self, sample: Sample) -> None:
        """A sample's last turn is done: score it (on the reward pool, or a judge)."""
        s = sample.rollout
        assert isinstance(s, _Slot)
        attempt = s.attempt
        g = s.group
        scorer = g.batch.scorer
        end = scorer.submit(s.slot, g.prompt_id, g.task)
        if end is None:
            jc = self.ph.cluster.scenario.reward.judge
            assert jc is not None
            scorer.judge(s.rid, sample.judged_tokens(jc.reads))
            scorer.judging.pop(s.rid).callbacks.append(
                lambda _e: self._scored(s, sample, attempt))
        else:
            self.timers.call_in(max(0.0, end - self.env.now), self._reward_done,
                                (s, sample, attempt))

    def _reward_done(self, job: tuple[_Slot, Sample, int]) -> None:
        self._scored(*job)

    def _scored(self, s: _Slot, sample: Sample, attempt: int) -> None:
        g = s.group
        if attempt != s.attempt or g.closed:
            return  # cancelled or restarted while its reward ran
        s.done = True
        g.scored.append(sample)
        if len(g.scored) < self.r0:
            return
        g.closed = True
        for other in g.slots:  # the group's redundant samples still running
            if not other.done:
                self._cancel(other)
        self.ready.append(g)
        batch = g.batch
        if not g.counted:
            g.counted = True
            batch.complete += 1
        if batch.complete == self.p0:
            for other_group in batch.groups:  # the batch's redundant groups
                if not other_group.closed and not other_group.counted:
                    other_group.closed = True
                    for other in other_group.slots:
                        if not other.done:
                            self._cancel(other)
                        else:
                            other.end("cancelled")  # scored, never needed
        _wake(self._trainer_wake)

    @staticmethod
    def _cancel(s: _Slot) -> None:
        """Stop a redundant attempt: its request is aborted, its env callbacks lapse."""
        s.end("cancelled")
        s.cancel()

    # ------------------------------------------------------------------ weight update
    def publish(self, version: int) -> None:
        """The engines now hold `version`: resume or drop what is in flight."""
        self.published = version
        if self.cfg.partial_rollout:
            for engine in self.ph.cluster.engines:
                for req in engine.abort():
                    s = req.tag
                    if not isinstance(s, _Slot) or s.request is not req:
                        continue
                    s.request = None
                    if s.version >= version - self.cfg.alpha:
                        self.resumed += 1
                    # The turn resumes with its tokens (or, too stale, starts over).
                    s.resume(req)
        _wake(self._producer_wake)

    # ------------------------------------------------------------------ trainer
    def take(self, step: int) -> Generator[simpy.Event, Any, list[Sample]]:
        """The step's P0 groups of R0 samples: the oldest complete ones within alpha; a
        group with an older sample is dropped and its prompt issued again. (The train
        phase ends the samples it trains as trained.)"""
        floor = step - self.cfg.alpha
        taken: list[_Group] = []
        while len(taken) < self.p0:
            while self.ready and len(taken) < self.p0:
                g = self.ready.popleft()
                if all(smp.version >= floor for smp in g.scored):
                    taken.append(g)
                    continue
                for s in g.slots:
                    if s.done:
                        s.end("stale")
                self._reissue(g)
            if len(taken) < self.p0:
                self._trainer_wake = self.env.event()
                yield self._trainer_wake
        return [smp for g in taken for smp in g.scored]

    def _reissue(self, g: _Group) -> None:
        """Every sample of a stale group again, on the current weights."""
        g.scored.clear()
        g.closed = False
        for s in g.slots:  # the redundant ones too: each is a fresh attempt
            self._start(s)

    def open_attempts(self) -> int:
        """Sample attempts started whose outcome is still open (in flight, or scored in a
        group not trained yet): `leftover` as a running count."""
        return self.job.open_attempts()

    def leftover(self) -> int:
        """Attempts whose outcome is still open when the run ends: in flight, or scored in
        a group that was not trained yet."""
        return sum(1 for b in self.batches for g in b.groups for s in g.slots if s.is_open)


def _wake(event: simpy.Event | None) -> None:
    if event is not None and not event.triggered:
        event.succeed()


def run_async(ph: Phases, workload: Workload) -> Generator[simpy.Event, Any, None]:
    if ph.cluster.scenario.policy.env_interaction == "batched":
        raise ScenarioError("policy.env_interaction", "async runs every trajectory on its own "
                            "(environment-level async); batched interaction is for sync and "
                            "one_off: drop it or set per_trajectory")
    job = _AsyncJob(ph, workload)
    yield from ph.run_steps(ph.cluster.scenario.steps, job.step, start=job.start)
    run = job.run
    voided = run.outcomes["voided"]
    ph.rec.instant(CONTROLLER, "outcomes", ph.env.now, attempts=run.attempts,
                   trained=run.outcomes["trained"], stale=run.outcomes["stale"],
                   cancelled=run.outcomes["cancelled"], leftover=run.leftover(),
                   **({"voided": voided} if voided else {}))
    ph.left(backlog=job.backlog)


class _AsyncJob:
    """The run across job restarts (recovery): `start(k)` begins the rollout side afresh at
    step k (a job restart voids every sample in flight or queued: `voided`), `step(n)` is
    the trainer's step n."""

    def __init__(self, ph: Phases, workload: Workload) -> None:
        self.ph = ph
        self.workload = workload
        self.run = _AsyncRun(ph, workload)
        self.backlog = 0
        self._started = False

    def start(self, first: int) -> Generator[simpy.Event, Any, None]:
        if self._started:  # after a job restart: a fresh rollout side
            self.run = _AsyncRun(self.ph, self.workload, first)
        self._started = True
        self.ph.spawn(self.run.produce())
        yield from ()

    def step(self, step: int) -> Generator[simpy.Event, Any, None]:
        ph, run = self.ph, self.run
        env = ph.env
        t0 = env.now
        before = Counter(run.outcomes)
        resumed0 = run.resumed
        samples: list[Sample] = yield ph.phase("gen", step, run.take(step),
                                               samples=run.p0 * run.r0, waiting=True)
        ph.rec.instant(CONTROLLER, "decision", env.now, step=step, what="async_batch",
                       versions=sorted({s.version for s in samples}), published=run.published,
                       prompts=[s.prompt_id for s in samples])
        yield ph.controller(step, samples)  # the driver: Ray calls, batch bytes, advantages
        yield ph.ref(step, samples)
        yield ph.train(step, samples, version=step)
        yield ph.weight_sync(step)
        # Before the publish: what the launch it allows adds is the next step's work, and
        # after the last step it would only run once the run has ended.
        self.backlog = run.open_attempts()
        run.publish(step + 1)
        ph.step_span(step, t0, samples=len(samples),
                     dropped_stale=run.outcomes["stale"] - before["stale"],
                     cancelled=run.outcomes["cancelled"] - before["cancelled"],
                     resumed=run.resumed - resumed0, backlog=self.backlog)


register(PolicySpec(ASYNC, run_async))  # capabilities: rlsim/config/policy_caps.py
