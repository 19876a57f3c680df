"""`async`: ROLL Flash's asynchronous RL, rollout and training decoupled by an async ratio.

Rollout and training run on separate GPUs (REFERENCES.md, ROLL Flash):

- **Producer.** Batch d (P0 prompts x R0 samples, every sample its own request: prompt
  replication) is launched once the engines hold weights of version >= d - alpha, so
  rollout runs at most alpha steps ahead of training. Each request goes to the least-loaded
  engine (queue scheduling; an engine runs at most rollout.max_running_seqs at once and
  queues the rest), starts at the engines' current version, and is scored on its own as it
  finishes (the reward scheduler's `Scorer`).
- **Trainer.** Step n waits for P0 x R0 scored samples that started at version >= n - alpha,
  oldest first, drops the rest as stale (their prompts are issued again on the current
  weights), computes log-probs, trains, and publishes version n + 1 over the weight-sync
  link. The wait is recorded as the step's `gen` phase: the time training waits for rollout.
- **Partial rollout** (`partial_rollout: true`). At each weight update every request in
  flight is aborted and resumed on the new weights with prompt + partial output (its KV
  recomputed by prefill). A resumed sample keeps the version it started at, so its
  staleness counts from the oldest weights that wrote any of its tokens (documented choice).
  Requests that can no longer train within alpha (started before the new version - alpha)
  are dropped instead and their prompts issued again.

- **Trajectories** (multi-turn samples: `workload.agentic` or recorded rollouts) keep the
  engine of their first turn; the environment resets before the first turn and steps
  after every other one on the env pool, each trajectory on its own (environment-level
  async: no barrier across environments). Staleness is checked at the start of every turn:
  an attempt that started before the engines' version - alpha starts over on the current
  weights, reset included.

Every sample is trained at most once; a step span counts `dropped_stale` (attempts dropped
for staleness since the last step) and `resumed` (requests resumed on new weights).
With alpha = 0 every sample is on-policy: batch n starts on version n once step n - 1 has
published it, as in disaggregated `sync` (which routes by contiguous chunks instead).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import simpy

from rlsim.config.errors import ScenarioError
from rlsim.entities.engine import Request, RolloutEngine
from rlsim.policies.phases import Phases, Sample
from rlsim.policies.scoring import Scorer, sandbox_caps
from rlsim.trace import CONTROLLER
from rlsim.workload import Turn, Workload


@dataclass(slots=True, eq=False)
class _Slot:
    """One sample being produced: its batch, launch slot, prompt, turns and current attempt.
    A single-turn sample is a trajectory of one turn without environment steps."""

    batch: int
    slot: int
    prompt_id: int
    prompt_tokens: int
    turns: tuple[Turn, ...]
    reset_s: float
    task: str | None
    version: int = 0  # weights the current attempt started with
    turn: int = 0  # the turn in progress
    context: int = 0  # tokens so far: prompt, earlier turns' responses and observations
    engine: RolloutEngine | None = None  # a trajectory keeps its engine for every turn


class _AsyncRun:
    def __init__(self, ph: Phases, workload: Workload) -> None:
        self.ph = ph
        self.env = ph.env
        self.workload = workload
        sc = ph.c.scenario
        self.cfg = sc.policy.asynchronous
        self.p0, self.r0 = sc.workload.prompts_per_step, sc.workload.samples_per_prompt
        self.batch = self.p0 * self.r0
        self.steps = sc.steps
        self.published = 0  # the engines' weights version
        self.launched = 0  # batches launched so far
        self.scorers: dict[int, Scorer] = {}
        self.caps = sandbox_caps(sc)
        self.live: dict[int, tuple[_Slot, Request]] = {}  # rid -> request in flight
        self.ready: deque[tuple[Sample, _Slot]] = deque()  # scored samples, oldest first
        self.dropped = 0
        self.resumed = 0
        self._trainer_wake: simpy.Event | None = None
        self._producer_wake: simpy.Event | None = None

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
        ph = self.ph
        sc = ph.c.scenario
        groups = self.workload.batch(d)
        tasks = [g.task for g in groups for _ in g.response_tokens]
        if sc.reward.by_task:
            lat = ph.task_reward_latencies(d, tasks)
        elif sc.reward.kind == "judge":
            lat = [None] * len(tasks)
        else:
            lat = list(ph.reward_latencies(d, len(tasks)).tolist())
        self.scorers[d] = Scorer(ph, lat, None, self.caps)
        slot = 0
        for g in groups:
            for j, out in enumerate(g.response_tokens):
                turns = g.turns[j] if g.turns is not None else (Turn(out),)
                reset = g.reset_s[j] if g.reset_s is not None else 0.0
                self._start(_Slot(d, slot, g.prompt_id, g.prompt_tokens, turns, reset, g.task))
                slot += 1

    def _start(self, s: _Slot) -> None:
        """A fresh attempt on the current weights: reset the environment, then turn 0."""
        s.version, s.turn, s.context, s.engine = self.published, 0, s.prompt_tokens, None
        if s.reset_s > 0:
            self.ph.c.env_pool.run(s.reset_s).callbacks.append(
                lambda _e: self._turn(s, prefix=0))
        else:
            self._turn(s, prefix=0)

    def _turn(self, s: _Slot, prefix: int) -> None:
        """Generate the current turn (`prefix` of its tokens already exist). Staleness is
        checked at every turn: an attempt that can no longer train within alpha starts over
        on the current weights."""
        if s.version < self.published - self.cfg.alpha:
            self.dropped += 1
            self._start(s)
            return
        ph = self.ph
        turn = s.turns[s.turn]
        req = Request(ph.next_rid(), s.context, turn.response_tokens, prefix_tokens=prefix,
                      on_done=self._done, tag=s.prompt_id)
        self.live[req.rid] = (s, req)
        if s.engine is None:
            s.engine = min(ph.c.engines, key=lambda e: e.load)
        s.engine.submit(req)

    def _done(self, req: Request) -> None:
        if req.status != "finished":
            return  # aborted: the weight update that aborted it decides what follows
        entry = self.live.pop(req.rid, None)
        if entry is None:
            return
        s = entry[0]
        turn = s.turns[s.turn]
        s.context += req.generated + turn.obs_tokens
        if s.turn < len(s.turns) - 1:
            s.turn += 1
            self.ph.c.env_pool.run(turn.env_s).callbacks.append(
                lambda _e: self._turn(s, prefix=0))
            return
        sample = Sample(s.prompt_id, s.prompt_tokens, s.context - s.prompt_tokens, s.version,
                        task=s.task)
        scorer = self.scorers[s.batch]
        end = scorer.submit(s.slot, s.prompt_id, s.task)
        if end is None:
            scorer.judge(req.rid, req.generated)
            scorer.judging.pop(req.rid).callbacks.append(lambda _e: self._arrive(sample, s))
        else:
            self.env.timeout(max(0.0, end - self.env.now)).callbacks.append(
                lambda _e: self._arrive(sample, s))

    def _arrive(self, sample: Sample, s: _Slot) -> None:
        self.ready.append((sample, s))
        _wake(self._trainer_wake)

    # ------------------------------------------------------------------ weight update
    def publish(self, version: int) -> None:
        """The engines now hold `version`: resume or drop what is in flight."""
        self.published = version
        if self.cfg.partial_rollout:
            for engine in self.ph.c.engines:
                for req in engine.abort():
                    entry = self.live.pop(req.rid, None)
                    if entry is None:
                        continue
                    s = entry[0]
                    if s.version >= version - self.cfg.alpha:
                        self.resumed += 1
                    # The turn resumes with its tokens (or, too stale, `_turn` starts over).
                    self._turn(s, prefix=min(req.generated, req.output_tokens - 1))
        _wake(self._producer_wake)

    # ------------------------------------------------------------------ trainer
    def take(self, step: int) -> Generator[simpy.Event, Any, list[Sample]]:
        """The step's P0 x R0 samples: the oldest scored ones within alpha; stale ones are
        dropped and their prompts issued again on the current weights."""
        floor = step - self.cfg.alpha
        batch: list[Sample] = []
        while len(batch) < self.batch:
            while self.ready and len(batch) < self.batch:
                sample, slot = self.ready.popleft()
                if sample.version >= floor:
                    batch.append(sample)
                else:
                    self.dropped += 1
                    self._start(slot)  # a fresh attempt on the current weights
            if len(batch) < self.batch:
                self._trainer_wake = self.env.event()
                yield self._trainer_wake
        return batch


def _wake(event: simpy.Event | None) -> None:
    if event is not None and not event.triggered:
        event.succeed()


def run_async(ph: Phases, workload: Workload) -> Generator[simpy.Event, Any, None]:
    if ph.c.scenario.policy.env_interaction == "batched":
        raise ScenarioError("policy.env_interaction", "async runs every trajectory on its own "
                            "(environment-level async); batched interaction is for sync and "
                            "one_off: drop it or set per_trajectory")
    run = _AsyncRun(ph, workload)
    env = ph.env
    env.process(run.produce())
    for step in range(run.steps):
        t0 = env.now
        dropped0, resumed0 = run.dropped, run.resumed
        samples: list[Sample] = yield ph.phase("gen", step, run.take(step),
                                               samples=run.batch, waiting=True)
        ph.rec.instant(CONTROLLER, "decision", env.now, step=step, what="async_batch",
                       versions=sorted({s.version for s in samples}), published=run.published,
                       prompts=[s.prompt_id for s in samples])
        yield ph.ref(step, samples)
        yield ph.train(step, samples, version=step)
        yield ph.weight_sync(step)
        run.publish(step + 1)
        ph.step_span(step, t0, samples=len(samples), dropped_stale=run.dropped - dropped0,
                     resumed=run.resumed - resumed0)
