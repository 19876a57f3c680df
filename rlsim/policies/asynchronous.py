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
  >= n - alpha, oldest first. It then computes log-probs, trains and publishes version
  n + 1 over the weight-sync link. The wait is recorded as the step's `gen` phase: the time
  training waits for rollout.
- **Over-age groups** (`over_age`). A group that can no longer train within alpha:
  `replace_group` (the default, as ROLL's code does): at every weight update each group
  with an attempt that started before the new version - alpha is dropped whole, its scored
  samples too (outcome `stale`), and a fresh prompt drawn from the workload takes its place
  in its batch on the current weights (ROLL's ReplayBuffer.gc then the freed slot's next
  dataset item: roll/distributed/scheduler/generate_scheduler.py:400-433, 546-557,
  245-268). A single-turn sample in flight is aborted at once; a trajectory in flight runs
  to its end and is then dropped, and only then does its place in the fresh group start
  (ROLL's agentic GroupQueue ignores the expired group's rollouts while each env manager
  finishes its episode before taking the next: rollout_scheduler.py:274-292, 326-327;
  traj_env_manager.py:114-141). `reissue`: a group with an older sample is dropped when the
  trainer takes it and its prompt issued again on the current weights (every sample a fresh
  attempt), and an attempt is checked before each of its turns (below).
- **Partial rollout** (`partial_rollout: true`). At each weight update every request in
  flight is aborted and resumed on the new weights with prompt + partial output (its KV
  recomputed by prefill). A resumed sample keeps the version it started at, so its
  staleness counts from the oldest weights that wrote any of its tokens (as ROLL does).
- **Trajectories** (multi-turn samples: `workload.agentic` or recorded rollouts) keep the
  engine of their first turn; the environment resets before the first turn and steps
  after every other one on the env pool, each trajectory on its own (environment-level
  async: no barrier across environments). Under `reissue` staleness is checked at the
  start of every turn: an attempt that started before the engines' version - alpha starts
  over on the current weights, reset included.
- **Environment instances** (`env.instances`, None: no cap). A trajectory holds one
  instance from its start (reset) to its end: scored, cancelled, dropped stale or replaced
  (a replaced one at the end of the episode it runs out), or voided by a job restart. One
  that finds none free waits, and a freed instance starts the waiting trajectory first in
  launch order (batch, then slot in the batch: a replacement group's slots come after
  its batch's others); a restarted or reissued one waits like any other. ROLL runs one env
  manager per instance, each playing its episode out before resetting for the next
  (roll/pipeline/agentic/env_manager/traj_env_manager.py:94-143), num_env_groups x
  group_size of them (agentic_config.py:149-160, 395-427), so async never has more
  trajectories live than instances. Single-turn samples take none.

Every attempt ends exactly one way, counted in `outcomes`: trained, stale (dropped for
staleness, a replaced group's samples included), cancelled (redundant), or left over when
the run ends (in flight, or scored but not needed). Each step span adds the step's
`dropped_stale`, `cancelled` and `resumed` (requests resumed on new weights), and
`replaced` (groups replaced) when there are any; so does `outcomes` (`replaced_groups`).
With alpha = 0 and no redundancy every sample is on-policy: batch n runs on version n
once step n - 1 has published it, as in disaggregated `sync` (which routes by contiguous
chunks instead).
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import simpy
from mypy_extensions import mypyc_attr

from rlsim.config.policies.asynchronous import ASYNC, AsyncConfig
from rlsim.entities.engine import RolloutEngine
from rlsim.entities.rollout import Rollout, RolloutJob
from rlsim.entities.timers import Timers
from rlsim.policies.phases import Phases, Sample
from rlsim.policies.registry import PolicySpec, register
from rlsim.policies.scoring import Scorer, sandbox_caps
from rlsim.trace import CONTROLLER
from rlsim.workload import PromptGroup, Turn, Workload


class _Slot(Rollout):
    """One sample being produced (its life is the `Rollout`): the group it belongs to and
    whether its current attempt is scored, or has finished (its last turn done)."""

    __slots__ = ("done", "finished", "group")

    def __init__(self, job: RolloutJob, group: _Group, slot: int, response_tokens: int,
                 turns: Sequence[Turn] | None, reset_s: float) -> None:
        super().__init__(job, group.prompt_id, group.prompt_tokens, response_tokens, turns,
                         slot=slot, reset_s=reset_s, task=group.task, keyed=True)
        self.group = group
        self.done = False  # scored for the current attempt
        self.finished = False  # its last turn done for the current attempt


@dataclass(slots=True, eq=False)
class _Group:
    """One prompt of a batch with its R0 (+ redundant) samples."""

    batch: _Batch
    prompt_id: int
    prompt_tokens: int
    task: str | None
    source: PromptGroup  # what the workload drew (a recorded one is replayed again)
    slots: list[_Slot] = field(default_factory=list)
    scored: list[Sample] = field(default_factory=list)
    closed: bool = False  # complete or cancelled: takes no more samples
    counted: bool = False  # one of its batch's P0 (a reissued or replacing group stays so)
    replaced: bool = False  # over-age, dropped for a fresh prompt (over_age: replace_group)


@dataclass(slots=True, eq=False)
class _Batch:
    """One step's launch: its groups still in play, and what its launch slots were."""

    index: int
    scorer: Scorer
    drawn: int  # prompts drawn from the workload for it: launched, then replacements
    # Its groups not yet over, in launch order. A group leaves once it is trained, cancelled
    # as redundant or replaced, so a straggler reissued for steps keeps only itself alive,
    # not its batch's thousands of finished samples and their turns (issue 24).
    groups: dict[_Group, None] = field(default_factory=dict)
    tasks: list[str | None] = field(default_factory=list)  # every launch slot's task
    complete: int = 0


# Compiled (rlsim/compiled.py), the class still takes Python subclasses: tests spy on its
# steps through a subclass put in `_RUN`.
@mypyc_attr(allow_interpreted_subclasses=True)
class _AsyncRun:
    """The rollout side and the trainer's queue of one run under settings `cfg`, from step
    `first` (0, or the step a job restart resumed at: its weights, version `first`, on the
    engines)."""

    def __init__(self, ph: Phases, workload: Workload, cfg: AsyncConfig, first: int = 0) -> None:
        self.ph = ph
        self.env = ph.env
        self.job = ph.job
        self.workload = workload
        sc = ph.cluster.scenario
        self.cfg = cfg
        self.p0, self.r0 = sc.workload.prompts_per_step, sc.workload.samples_per_prompt
        self.per_group = ASYNC.responses_per_prompt(sc)  # R0 + extra_per_group
        self.steps = sc.steps
        self.published = first  # the engines' weights version
        self.launched = first  # batches launched so far
        self.caps = sandbox_caps(sc)
        # No list of the batches launched: a batch lives while its groups do (`_retire`).
        self.ready: deque[_Group] = deque()  # complete groups, oldest first
        self.outcomes: Counter[str] = ph.job.outcomes  # attempts by how they ended
        self.resumed = 0
        self._trainer_wake: simpy.Event | None = None
        self.timers = Timers.of(self.env)
        self.alpha = self.cfg.alpha
        self._on_finish = self._finished  # bound once: every sample's hooks
        self.replace = self.cfg.over_age == "replace_group"
        # replace_group checks at weight updates only (ROLL's gc), never per turn.
        self._admit = None if self.replace else self._fresh
        self._admit_from()
        self._producer_wake: simpy.Event | None = None
        self.open_groups: dict[_Group, None] = {}  # launched, not trained/cancelled/replaced
        self.replaced = 0  # groups replaced so far
        # A trajectory of a replaced group runs to its end; its place in the fresh group
        # starts then (the env manager takes the next episode): zombie <-> waiting slot.
        self._handoff: dict[_Slot, _Slot] = {}
        self._waiting: dict[_Slot, _Slot] = {}
        # Environment instances (env.instances): the trajectories holding one, and the ones
        # waiting, a heap by launch order (batch, slot) with a ticket per entry (`_queued`:
        # an entry whose ticket is not there any more was withdrawn).
        self.instances = sc.env.instances
        self._free = self.instances or 0
        self._holding: set[_Slot] = set()
        self._queue: list[tuple[int, int, int, _Slot, RolloutEngine | None]] = []
        self._queued: dict[_Slot, int] = {}
        self._ticket = 0
        self._epoch = ph.job.epoch  # a job restart voids this run: it starts nothing more

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
        cfg = self.cfg
        n = self.p0 + cfg.extra_groups
        groups = self.workload.batch(d, n, self.per_group)
        tasks = [g.task for g in groups for _ in g.response_tokens]
        batch = _Batch(d, Scorer(self.ph, self._latencies(d, tasks), None, self.caps), n)
        self._dispatch(self._add_groups(batch, groups))
        self._pump()

    def _latencies(self, d: int, tasks: list[str | None]) -> list[float | None]:
        """Reward latencies of batch d's launch slots, one per task in slot order (from the
        reward stream: a longer list extends a shorter one)."""
        ph = self.ph
        sc = ph.cluster.scenario
        if sc.reward.by_task:
            return ph.task_reward_latencies(d, tasks)
        if sc.reward.kind == "judge":
            return [None] * len(tasks)
        return list(ph.reward_latencies(d, len(tasks)).tolist())

    def _add_groups(self, batch: _Batch, groups: list[PromptGroup]) -> list[_Group]:
        """The batch's groups for `groups` (drawn prompts), with their samples in the next
        launch slots; none started yet."""
        slot = len(batch.tasks)
        out = []
        for g in groups:
            group = _Group(batch, g.prompt_id, g.prompt_tokens, g.task, g)
            batch.groups[group] = None
            batch.tasks += [g.task] * len(g.response_tokens)
            self.open_groups[group] = None
            for j, resp in enumerate(g.response_tokens):
                s = _Slot(self.job, group, slot, resp,
                          g.turns[j] if g.turns is not None else None,
                          g.reset_s[j] if g.reset_s is not None else 0.0)
                s.on_finish, s.admit = self._on_finish, self._admit
                self.job.attach_faults(s, (batch.index, slot))  # recovery's hooks, if any
                group.slots.append(s)
                slot += 1
            out.append(group)
        return out

    def _dispatch(self, groups: list[_Group]) -> None:
        """Start the groups' samples (but those waiting for a replaced trajectory); with
        env.instances, queue the trajectories (the caller then runs `_pump`)."""
        # Least-loaded dispatch of the whole batch from one heap of the engines' loads (a
        # scan of every engine per trajectory costs O(engines) each on large clusters);
        # a crashed engine (faults) takes nothing new.
        engines = self.ph.cluster.engines
        heap = [(e.load, i) for i, e in enumerate(engines) if not e.down] or \
            [(e.load, i) for i, e in enumerate(engines)]
        heapq.heapify(heap)
        per_prompt = self.cfg.routing == "per_prompt"
        waiting = self._waiting
        capped = self.instances is not None
        for group in groups:
            slots = [s for s in group.slots if s not in waiting] if waiting else group.slots
            if per_prompt:  # the whole group on one engine (ROLL's async RLVR [C])
                load, i = heapq.heappop(heap)
                heapq.heappush(heap, (load + len(slots), i))
            for s in slots:
                if capped and s.turns is not None and len(self._queued) >= self._free:
                    # Waits for an instance: its engine is the least-loaded one when it
                    # starts (per_prompt: its group's).
                    s.done = s.finished = False
                    self._enqueue(s, engines[i] if per_prompt else None)
                    continue
                if not per_prompt:
                    load, i = heapq.heappop(heap)
                    heapq.heappush(heap, (load + 1, i))
                if capped and s.turns is not None:  # an instance is free: the pump starts it
                    s.done = s.finished = False
                    self._enqueue(s, engines[i])
                    continue
                self._start(s, engines[i])

    def _start(self, s: _Slot, engine: RolloutEngine | None = None) -> None:
        """A fresh attempt on the current weights: reset the environment, then turn 0 on
        `engine` (default: the least-loaded one when the turn is submitted); a trajectory
        with env.instances once an instance is free for it."""
        s.done = s.finished = False
        if self.instances is not None and s.turns is not None:
            self._enqueue(s, engine)
            self._pump()
            return
        self._begin(s, engine)

    def _begin(self, s: _Slot, engine: RolloutEngine | None) -> None:
        """`s`'s attempt starts now, on the current weights (every start goes through
        here)."""
        s.start(self.published, engine)

    # ------------------------------------------------------------------ env instances
    def _enqueue(self, s: _Slot, engine: RolloutEngine | None) -> None:
        """`s` waits for an environment instance, in launch order (batch, slot)."""
        assert s not in self._queued and s not in self._holding, "queued twice"
        self._ticket += 1
        self._queued[s] = self._ticket
        heapq.heappush(self._queue, (s.group.batch.index, s.slot, self._ticket, s, engine))

    def _unqueue(self, s: _Slot) -> bool:
        """Withdraw `s` if it waits for an instance (it never started: no attempt)."""
        return self._queued.pop(s, None) is not None

    def _release(self, s: _Slot, pump: bool = True) -> None:
        """`s`'s trajectory is over (however it ended): its instance takes the next one."""
        if s in self._holding:
            self._holding.remove(s)
            self._free += 1
            if pump:
                self._pump()

    def _pump(self) -> None:
        """Start waiting trajectories, first in launch order, while instances are free."""
        if self.job.epoch != self._epoch:  # voided by a job restart: its slots never start
            return
        q, queued = self._queue, self._queued
        while self._free and q:
            _, _, ticket, s, engine = heapq.heappop(q)
            if queued.get(s) != ticket:
                continue  # withdrawn (cancelled, replaced)
            del queued[s]
            self._free -= 1
            self._holding.add(s)
            self._begin(s, engine)

    @property
    def live_trajectories(self) -> int:
        """Trajectories holding an environment instance now (env.instances set)."""
        return len(self._holding)

    def _admit_from(self) -> None:
        """Tell the rollouts which weights `_fresh` admits without a call: those within
        alpha of the engines' (`JobCounts.admit_from`)."""
        self.job.counts.admit_from = self.published - self.alpha

    def _fresh(self, s: Rollout) -> bool:
        """Before each turn: an attempt that can no longer train within alpha starts over
        on the current weights (False: it did)."""
        if s.version >= self.published - self.alpha:
            return True
        assert isinstance(s, _Slot)
        s.end("stale")
        self._release(s, pump=False)  # its restart waits for an instance in launch order
        self._start(s)
        return False

    def _finished(self, sample: Sample) -> None:
        """A sample's last turn is done: score it (on the reward pool, or a judge)."""
        s = sample.rollout
        assert isinstance(s, _Slot)
        g = s.group
        if g.replaced:  # a replaced group's trajectory, run to its end (ROLL: ignored)
            s.end("stale")
            self._release(s, pump=False)
            nxt = self._handoff.pop(s, None)
            if nxt is not None:  # its env takes the fresh group's episode
                del self._waiting[nxt]
                self._start(nxt)
            self._pump()
            return
        s.finished = True
        attempt = s.attempt
        scorer = g.batch.scorer
        end = scorer.submit(s.slot, g.prompt_id, g.task)
        if end is None:
            jc = self.ph.cluster.scenario.reward.judge
            assert jc is not None
            scorer.judge(s.rid, sample.judged_tokens(jc.reads))
            scorer.judging.pop(s.rid).callbacks.append(
                lambda _e: self._scored(s, sample, attempt))
        else:
            self.timers.call_in(max(0.0, end - self.timers.now()), self._reward_done,
                                (s, sample, attempt))

    def _reward_done(self, job: tuple[_Slot, Sample, int]) -> None:
        self._scored(*job)

    def _scored(self, s: _Slot, sample: Sample, attempt: int) -> None:
        if attempt != s.attempt:
            return  # cancelled or restarted while its reward ran
        # Scored: the episode is over, its instance takes the next trajectory, once the
        # samples this one makes redundant are cancelled (none of them starts just to stop).
        self._release(s, pump=False)
        self._keep(s, sample)
        self._pump()

    def _keep(self, s: _Slot, sample: Sample) -> None:
        """A scored sample into its group: a complete group is ready for the trainer, its
        redundant samples (and its batch's, when the batch is complete) cancelled."""
        g = s.group
        if g.closed:
            return
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
            for other_group in list(batch.groups):  # the batch's redundant groups
                if not other_group.closed and not other_group.counted:
                    other_group.closed = True
                    self.open_groups.pop(other_group, None)
                    for other in other_group.slots:
                        if not other.done:
                            self._cancel(other)
                        else:
                            other.end("cancelled")  # scored, never needed
                    _retire(other_group)
        _wake(self._trainer_wake)

    def _cancel(self, s: _Slot) -> None:
        """Stop a redundant attempt: its request is aborted, its env callbacks lapse (one
        still waiting for a replaced trajectory or an instance will not start). Its
        instance is freed; the caller starts the next trajectory (`_pump`)."""
        if self._queued and self._unqueue(s):
            return
        if s.state is None:
            del self._handoff[self._waiting.pop(s)]
            return
        s.end("cancelled")
        s.cancel()
        self._release(s, pump=False)

    # ------------------------------------------------------------------ weight update
    def publish(self, version: int) -> None:
        """The engines now hold `version`: replace the over-age groups (replace_group),
        then resume or drop what is in flight (ROLL's pause_sampling: gc, then abort_all,
        generate_scheduler.py:552-556)."""
        self.published = version
        self._admit_from()
        if self.replace:
            self._replace_over_age()
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

    # ------------------------------------------------------------------ over-age groups
    def _replace_over_age(self) -> None:
        """Every group that can no longer train within alpha (an open attempt from before
        the engines' version - alpha) is replaced by a fresh prompt: ROLL's ReplayBuffer.gc
        at each weight update drops the prompts started <= step - ceil(alpha) whole,
        roll/distributed/scheduler/generate_scheduler.py:400-433, and agentic's
        GroupQueue.advance_step its expired groups, rollout_scheduler.py:274-292."""
        floor = self.published - self.alpha
        over: dict[_Batch, list[_Group]] = {}
        for g in self.open_groups:
            if any(s.is_open and s.version < floor for s in g.slots):
                over.setdefault(g.batch, []).append(g)
        for batch, groups in over.items():
            self._replace(batch, groups, pump=False)
        self._pump()  # once every over-age group is out: none of theirs starts now
        if over:
            self.ready = deque(g for g in self.ready if not g.replaced)

    def _replace(self, batch: _Batch, old: list[_Group], pump: bool = True) -> None:
        """Drop `old` (groups of `batch`) whole, and launch as many fresh prompts in their
        places: the next prompts of the batch's step from the workload, as a new batch's
        are drawn (ROLL polls its next dataset item for the freed slot,
        generate_scheduler.py:245-268, 916). Recorded rollouts hold no other prompt: the
        group's own recorded one is replayed (Workload.redraw)."""
        per_group = self.per_group
        if self.workload.recorded_steps is not None:
            fresh = [self.workload.redraw(g.source, per_group) for g in old]
        else:
            n = batch.drawn + len(old)
            fresh = self.workload.batch(batch.index, n, per_group, first=batch.drawn)
            batch.drawn = n
        tasks = batch.tasks + [g.task for g in fresh for _ in g.response_tokens]
        lat = batch.scorer.latencies_s
        lat.extend(self._latencies(batch.index, tasks)[len(lat):])
        new = self._add_groups(batch, fresh)
        for g, ng in zip(old, new, strict=True):
            g.closed = g.replaced = True
            ng.counted = g.counted  # takes its place in the batch's P0 (or its redundancy)
            del self.open_groups[g]
            for s, ns in zip(g.slots, ng.slots, strict=True):
                if self._queued and self._unqueue(s):  # waited for an instance: ns now does
                    continue
                if s.state is None:  # never started
                    z = self._waiting.pop(s, None)
                    if z is not None:  # it waited for a replaced trajectory: ns now does
                        self._handoff[z] = ns
                        self._waiting[ns] = z
                    # else cancelled before it started (its group completed without it)
                elif not s.is_open:  # ended (cancelled as redundant)
                    continue
                elif s.last > 0 and not s.finished:
                    # A trajectory in flight runs to its end, as ROLL's env manager plays
                    # its episode out (traj_env_manager.py:114-141; the rollout is then
                    # ignored, rollout_scheduler.py:326-327); ns starts after it.
                    self._handoff[s] = ns
                    self._waiting[ns] = s
                else:  # scored, being scored, or a single-turn request: aborted now
                    s.end("stale")
                    s.cancel()
                    self._release(s, pump=False)
            _retire(g)  # a trajectory run to its end needs only its group's flag
        self.replaced += len(old)
        self.ph.rec.instant(CONTROLLER, "decision", self.env.now, what="async_replace",
                            published=self.published, batch=batch.index,
                            replaced=[g.prompt_id for g in old],
                            fresh=[g.prompt_id for g in new])
        self._dispatch(new)
        if pump:
            self._pump()

    # ------------------------------------------------------------------ trainer
    def take(self, step: int) -> Generator[simpy.Event, Any, list[Sample]]:
        """The step's P0 groups of R0 samples: the oldest complete ones within alpha; a
        group with an older sample is dropped and its prompt issued again (reissue) or
        replaced by a fresh one (replace_group). (The train phase ends the samples it trains
        as trained.)"""
        floor = step - self.cfg.alpha
        taken: list[_Group] = []
        while len(taken) < self.p0:
            while self.ready and len(taken) < self.p0:
                g = self.ready.popleft()
                if all(smp.version >= floor for smp in g.scored):
                    taken.append(g)
                    self.open_groups.pop(g, None)
                    continue
                if self.replace:  # not reached: publish replaced it already
                    self._replace(g.batch, [g])
                    continue
                for s in g.slots:
                    if s.done:
                        s.end("stale")
                self._reissue(g)
            if len(taken) < self.p0:
                self._trainer_wake = self.env.event()
                yield self._trainer_wake
        samples = [smp for g in taken for smp in g.scored]
        for g in taken:
            _retire(g)
        return samples

    def _reissue(self, g: _Group) -> None:
        """Every sample of a stale group again, on the current weights."""
        g.scored.clear()
        g.closed = False
        for s in g.slots:  # the redundant ones too: each is a fresh attempt
            self._start(s)

    def open_attempts(self) -> int:
        """Sample attempts started whose outcome is still open (in flight, or scored in a
        group not trained yet); at the run's end, its `leftover`. A job restart voids
        (ends) every attempt of the run before it, so the job's count is this run's."""
        return self.job.open_attempts()


# The class a run is made of: `_AsyncRun`, or a test's subclass of it that spies on its steps
# (not Final, so a test can replace it; read once per run).
_RUN: type[_AsyncRun] = _AsyncRun


def _retire(g: _Group) -> None:
    """`g` is over (trained, cancelled as redundant, or replaced): out of its batch, and its
    slots and samples let go, so that reference counting frees them (group -> sample ->
    slot -> group was a cycle left to the collector) and a straggler of the batch keeps
    only itself alive (issue 24: by 20 steps the 1,024-GPU async agentic benchmark held
    2.5 M turns)."""
    del g.batch.groups[g]
    g.slots = []
    g.scored = []


def _wake(event: simpy.Event | None) -> None:
    if event is not None and not event.triggered:
        event.succeed()


def run_async(ph: Phases, workload: Workload) -> Generator[simpy.Event, Any, None]:
    sc = ph.cluster.scenario
    job = _AsyncJob(ph, workload, ASYNC.settings(sc))
    yield from ph.run_steps(ph.cluster.scenario.steps, job.step, start=job.start)
    run = job.run
    voided = run.outcomes["voided"]
    extra = {"voided": voided} if voided else {}
    if run.replaced:  # only when any (records of runs without replacements unchanged)
        extra["replaced_groups"] = run.replaced
    ph.rec.instant(CONTROLLER, "outcomes", ph.env.now, attempts=run.attempts,
                   trained=run.outcomes["trained"], stale=run.outcomes["stale"],
                   cancelled=run.outcomes["cancelled"], leftover=run.open_attempts(), **extra)
    ph.left(backlog=job.backlog)


class _AsyncJob:
    """The run across job restarts (recovery): `start(k)` begins the rollout side afresh at
    step k (a job restart voids every sample in flight or queued: `voided`), `step(n)` is
    the trainer's step n."""

    def __init__(self, ph: Phases, workload: Workload, cfg: AsyncConfig) -> None:
        self.ph = ph
        self.workload = workload
        self.cfg = cfg
        self.run = _RUN(ph, workload, cfg)
        self.backlog = 0
        self._started = False

    def start(self, first: int) -> Generator[simpy.Event, Any, None]:
        if self._started:  # after a job restart: a fresh rollout side
            self.run = _RUN(self.ph, self.workload, self.cfg, first)
        self._started = True
        self.ph.spawn(self.run.produce())
        yield from ()

    def step(self, step: int) -> Generator[simpy.Event, Any, None]:
        ph, run = self.ph, self.run
        env = ph.env
        t0 = env.now
        before = Counter(run.outcomes)
        resumed0, replaced0 = run.resumed, run.replaced
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
        replaced = run.replaced - replaced0
        ph.step_span(step, t0, samples=len(samples),
                     dropped_stale=run.outcomes["stale"] - before["stale"],
                     cancelled=run.outcomes["cancelled"] - before["cancelled"],
                     resumed=run.resumed - resumed0, backlog=self.backlog,
                     **({"replaced": replaced} if replaced else {}))


register(PolicySpec(ASYNC, run_async))  # declared in config/policies/asynchronous.py
