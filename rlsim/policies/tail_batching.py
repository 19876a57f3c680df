"""`tail_batching`: RollPacker's short and long rounds (REFERENCES.md, RollPacker).

Synchronous RL waits for the slowest response of every step. Tail batching confines the
long tail to a few long rounds so that most rounds are short:

- A **short round** launches ceil(eta_p P0) fresh prompts x ceil(eta_r R0) responses. A
  prompt is done when its first R0 responses finish; its other responses are aborted at
  once (the engine frees their KV). When P0 prompts are done, every other request is
  aborted and the prompts that were not done join the long-prompt queue.
- Once the queue holds at least P0 prompts, the next step is a **long round**: the P0
  oldest queued prompts, R0 responses each, no over-provisioning; it waits for all of them.
- Every step trains exactly P0 x R0 samples, all on-policy (staleness 0).
- With `long_rounds: false` the prompts a short round did not finish are dropped, not
  queued: every step is a short round. This is ROLL's redundant environments under sync
  (num_env_groups and group_size above the batch, the first complete groups used, the
  rest stopped: ROLL Flash A.2).
- A response is a sample's whole life (`entities.rollout.Rollout`): a multi-turn sample
  runs its turns with environment steps between them, a prompt is done when R0 of its
  samples have finished their last turn, and an aborted sample is stopped between turns
  as well as mid-turn. A queued multi-turn prompt replays the same trajectories in its long
  round (`Workload.redraw` has no others to give); its samples run each on its own
  (per_trajectory), without the stream trainer (which projects single responses).

Choices the paper leaves open, documented in docs/design.md: a queued prompt restarts from
scratch in its long round (its partial responses are discarded) with R0 fresh responses
(`Workload.redraw`: the prompt's difficulty, new per-response draws, as the real system
re-generates them); prompts done at the very instant the P0-th prompt is done are queued
too, so that exactly P0 train; the phases after generation are those of `sync`
(colocated or disaggregated). Each round records a
`decision` instant on the controller track with the prompt ids it trained and queued.
With eta_p = eta_r = 1 a short round is exactly a `sync` step.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

import simpy

from rlsim.config.policies.tail_batching import TAIL_BATCHING
from rlsim.cost.inference import InferenceCost
from rlsim.entities.engine import Request, RolloutEngine
from rlsim.entities.rollout import LIVE, Rollout, release
from rlsim.policies.adaptive_timeout import AdaptiveTimeout
from rlsim.policies.phases import Phases, Sample
from rlsim.policies.registry import PolicySpec, register
from rlsim.policies.scoring import Scorer, sandbox_caps
from rlsim.policies.stream_trainer import StreamTrainer, streamed_rest
from rlsim.trace import CONTROLLER
from rlsim.workload import PromptGroup, Workload


def run_tail_batching(ph: Phases, workload: Workload) -> Generator[simpy.Event, Any, None]:
    sc = ph.cluster.scenario
    p0, r0 = sc.workload.prompts_per_step, sc.workload.samples_per_prompt
    cfg = TAIL_BATCHING.settings(sc)  # its combinations were checked when sc was loaded
    n_prompts = TAIL_BATCHING.short_round_prompts(sc)
    n_responses = TAIL_BATCHING.responses_per_prompt(sc)
    adaptive = (AdaptiveTimeout(cfg.timeout_lambda, cfg.timeout_floor)
                if cfg.adaptive_timeout else None)
    caps = sandbox_caps(sc)
    colocated = ph.cluster.placement.colocated
    stream = StreamTrainer(ph, cfg.stream_start, cfg.stream_stop, cfg.stream_every,
                           cfg.stream_projection_quantile) if cfg.stream_trainer else None
    planner = _Planner(ph, cfg.planner_jump, cfg.planner_calm_steps) if cfg.planner else None
    state = _Queue()

    def one_step(step: int) -> Generator[simpy.Event, Any, None]:
        queue = state.queue
        state.saved[step] = (list(queue), state.draws)
        t0 = ph.env.now
        if planner is not None:
            yield from planner.apply(step)
        preempted_before = sum(e.preemptions for e in ph.cluster.engines)
        cut_before = (adaptive.cut, adaptive.false_cut) if adaptive else (0, 0)
        if len(queue) >= p0:
            groups = [queue.popleft() for _ in range(p0)]
            ph.rec.instant(CONTROLLER, "decision", t0, step=step, what="long_round",
                           queue=len(queue), trained=[g.prompt_id for g in groups],
                           queued=[])
            kind = "long"
        else:
            groups = workload.batch(state.draws, n_prompts, n_responses)
            state.draws += 1
            kind = "short"
        launched = sum(len(g.response_tokens) for g in groups)
        # With the reward scheduler, every response is scored as it finishes, so the
        # latencies are drawn per launched response (in launch order) up front.
        lat: list[float | None] | None = None
        if cfg.reward_scheduler:
            if sc.reward.by_task:  # judged tasks (None) go to the judge engines
                lat = ph.task_reward_latencies(
                    step, [g.task for g in groups for _ in g.response_tokens])
            elif sc.reward.kind == "judge":
                lat = [None] * launched
            else:
                lat = list(ph.reward_latencies(step, launched).tolist())
        scorer = None if lat is None else Scorer(
            ph, lat, adaptive, caps, stream.scaled_now if stream is not None else None)
        rnd: _Round = yield ph.phase("gen", step, _round(ph, step, groups, p0, r0, step, scorer,
                                                         stream),
                                     samples=p0 * r0, launched=launched, round=kind)
        samples = rnd.samples
        preempted = sum(e.preemptions for e in ph.cluster.engines) - preempted_before
        if planner is not None:
            planner.observe(step, preempted)
        if kind == "short":
            left = [g.prompt_id for g in rnd.left]
            if cfg.long_rounds:
                queue.extend(workload.redraw(g, r0) for g in rnd.left)
            # (`dropped` only without long rounds: the records of RollPacker's runs stay as
            # they were)
            fate = {"queued": left} if cfg.long_rounds else {"queued": [], "dropped": left}
            ph.rec.instant(CONTROLLER, "decision", ph.env.now, step=step, what="short_round",
                           queue=len(queue), trained=sorted({s.prompt_id for s in samples}),
                           **fate)
        streamed: list[Sample] = []
        if stream is not None:
            # The streamed chunk in flight completes before the GPUs change hands.
            streamed = yield ph.env.process(stream.end_round())
        if colocated:
            yield ph.switch(step, "train")
        if rnd.reward_done_s is None:
            yield ph.reward(step, samples)
        else:
            # Only the rewards still running when generation ended are waited for: on the
            # workers, and on the judge engines for judged samples.
            yield ph.phase("reward", step, _rewards_done(ph, rnd.judged, rnd.reward_done_s),
                           samples=len(samples), overlapped=True)
        yield ph.controller(step, samples)  # the driver: Ray calls, batch bytes, advantages
        yield ph.ref(step, streamed_rest(samples, streamed))
        yield ph.train(step, samples, version=step, streamed=streamed)
        if colocated:
            yield ph.switch(step, "rollout")
        yield ph.weight_sync(step)
        cuts = {} if adaptive is None else {
            "sandbox_cut": adaptive.cut - cut_before[0],
            "sandbox_false_cut": adaptive.false_cut - cut_before[1]}
        ph.step_span(step, t0, samples=len(samples), round=kind, queue=len(queue),
                     preemptions=preempted, rollout_tp=planner.tp if planner else sc.rollout.tp,
                     backlog=len(queue) * r0, **cuts)

    yield from ph.run_steps(sc.steps, one_step, start=state.restore)
    # A queue that is not empty is a cycle cut short: its long round never ran.
    queue = state.queue
    ph.left(backlog=len(queue) * r0, queued_prompts=len(queue), long_round_prompts=p0)


class _Queue:
    """The controller's state between rounds: the long-prompt queue and the short rounds
    drawn so far, as each step began (a job restart resumes from the state its step
    began with: the controller's state is checkpointed with the trainer's)."""

    def __init__(self) -> None:
        self.queue: deque[PromptGroup] = deque()
        self.draws = 0  # short rounds so far: each takes a fresh batch of prompts
        self.saved: dict[int, tuple[list[PromptGroup], int]] = {}

    def restore(self, step: int) -> Generator[simpy.Event, Any, None]:
        """The state step `step` began with (nothing to do at the start)."""
        if step in self.saved:
            queue, self.draws = self.saved[step]
            self.queue = deque(queue)
            for later in [k for k in self.saved if k > step]:
                del self.saved[later]
        yield from ()


class _Planner:
    """RollPacker's parallelism planner: rollout TP follows the preemptions of each step.

    After a step whose preemptions exceed `jump` times the previous step's, the TP doubles
    (while it fits a node and leaves one engine); after `calm` steps in a row without
    preemption it halves, down to the scenario's rollout.tp. The change happens before the
    next step's generation: the engines at the new TP warm-start (runtime start and each
    GPU's weight shard from host memory, `InferenceCost.warm_start_s`), recorded as a
    `switch` span with `what: reshard`.
    """

    def __init__(self, ph: Phases, jump: float, calm: int) -> None:
        self.ph = ph
        self.jump = jump
        self.calm = calm
        self.base_tp = self.tp = ph.cluster.scenario.rollout.tp
        self.node = ph.cluster.placement.rollout_pool.nvlink_domain
        self.gpus = ph.cluster.placement.rollout_gpus
        self.previous: int | None = None
        self.quiet = 0
        self.target = self.tp

    def observe(self, step: int, preemptions: int) -> None:
        prev = self.previous
        self.previous = preemptions
        self.quiet = self.quiet + 1 if preemptions == 0 else 0
        target = self.tp
        if prev is not None and preemptions > 0 and preemptions > self.jump * prev:
            # Doubled engines must tile the rollout GPUs (none left idle) inside a domain.
            if (2 * self.tp <= min(self.node, self.gpus) and self.gpus % (2 * self.tp) == 0
                    and self._runs_at(2 * self.tp)):
                target = 2 * self.tp
        elif self.quiet >= self.calm and self.tp > self.base_tp:
            target = self.tp // 2
            self.quiet = 0
        if target != self.tp:
            self.ph.rec.instant(CONTROLLER, "decision", self.ph.env.now, step=step,
                                what="rollout_tp", tp_from=self.tp, tp_to=target,
                                preemptions=preemptions, previous=prev)
        self.target = target

    def _runs_at(self, tp: int) -> bool:
        """Whether the model runs at this TP (it must divide the attention heads, and the
        engine's options hold there: e.g. expert parallelism must divide it)."""
        try:
            c = self.ph.cluster
            InferenceCost(c.model, c.placement.rollout_pool.gpu_spec, tp, c.engine_cost.profile,
                          options=c.engine_cost.options)
        except ValueError:
            return False
        return True

    def apply(self, step: int) -> Generator[simpy.Event, Any, None]:
        if self.target == self.tp:
            return
        c = self.ph.cluster
        c.relayout(self.target)
        self.tp = self.target
        yield self.ph.phase("switch", step, _until(self.ph, self.ph.env.now
                                                   + c.engine_cost.warm_start_s()),
                            what="reshard", tp=self.tp)


@dataclass(frozen=True, slots=True)
class _Round:
    samples: list[Sample]  # P0 x R0, in finishing order
    left: list[PromptGroup]  # prompts not done, in launch order
    reward_done_s: float | None  # when the trained samples' rewards end (reward scheduler)
    judged: list[simpy.Event]  # the verdicts of the trained judged samples


def _rewards_done(ph: Phases, verdicts: list[simpy.Event],
                  t_s: float) -> Generator[simpy.Event, Any, None]:
    if verdicts:
        yield ph.env.all_of(verdicts)
    yield from _until(ph, t_s)


def _until(ph: Phases, t_s: float) -> Generator[simpy.Event, Any, None]:
    if t_s > ph.env.now:
        yield ph.env.timeout(t_s - ph.env.now)


def _round(ph: Phases, step: int, groups: Sequence[PromptGroup], p0: int, r0: int,
           version: int, scorer: Scorer | None,
           stream: StreamTrainer | None = None,
           ) -> Generator[simpy.Event, Any, _Round]:
    """Generate until P0 prompts have R0 finished responses each. A long round launches P0
    prompts x R0, so it waits for every response. With a `scorer` (the reward scheduler),
    each response is scored on the reward pool as it finishes. With
    `stream`, the stream trainer may release half the engines mid-round."""
    env = ph.env
    t0 = env.now
    enough = env.event()
    by_prompt: dict[int, list[Rollout]] = {}
    # prompt -> (sample, finish time, id of its last request) of its finished responses
    finished: dict[int, list[tuple[Sample, float, int]]] = {}
    done: list[int] = []
    made: dict[int, list[tuple[Sample, float, int]]] = {}  # done prompt -> its R0 trained
    reward_end: dict[int, float] = {}  # rid -> when its reward is done
    jc = ph.cluster.scenario.reward.judge
    reads = jc.reads if jc is not None else "trajectory"
    pool = ph.cluster.reward

    def abort(targets: Sequence[Rollout]) -> None:
        """Stop these samples; their requests on the engines are aborted, engine by
        engine, each engine's in the order they were submitted."""
        live: dict[str, list[Request]] = {}
        for req in sorted((r.request for r in targets
                           if r.request is not None and r.request.status in LIVE), key=_rid):
            live.setdefault(req.engine, []).append(req)
        for r in targets:
            r.stop()
        for engine in ph.cluster.engines:
            if engine.name in live:
                engine.abort(live[engine.name])

    def on_finish(sample: Sample) -> None:
        if enough.triggered:
            return  # a response that finished after the round ended
        r = sample.rollout
        assert r is not None
        pid, rid = r.prompt_id, r.rid
        if stream is not None:
            stream.on_finished(sample.response_tokens)
        if scorer is not None:
            end = scorer.submit(r.slot, pid, r.task)
            if end is None:
                scorer.judge(rid, sample.judged_tokens(reads))
            else:
                reward_end[rid] = end
        got = finished.setdefault(pid, [])
        got.append((sample, env.now, rid))
        if len(got) != r0:
            return  # not yet done, or a surplus response landing as the prompt got done
        done.append(pid)
        made[pid] = list(got)
        if stream is not None:
            ends = [reward_end.get(x, math.inf) for _, _, x in got]
            stream.on_prompt_done([smp for smp, _, _ in got],
                                  max(ends) if scorer is not None else math.inf)
        if len(done) == p0:
            enough.succeed()
            abort(rollouts)
        else:
            abort(by_prompt[pid])  # the prompt's surplus responses free their KV now

    # every response's request id is taken at launch, in launch order; a multi-turn
    # sample takes recovery's fault hooks, keyed on its step and place
    rollouts = ph.rollouts(groups, on_finish, reserve=True, fault_step=step)
    for r in rollouts:
        by_prompt.setdefault(r.prompt_id, []).append(r)

    def migrate(release: list[RolloutEngine]) -> None:
        """Move the released engines' requests to the kept ones, least loaded first; each
        keeps its generated tokens (re-prefilled there)."""
        keep = [e for e in ph.cluster.engines if e not in release]
        moved = [r for e in release for r in e.abort()]
        for req in moved:
            owner = req.tag
            assert isinstance(owner, Rollout)
            owner.resume(req, min(keep, key=lambda e: e.load))

    def live() -> list[Request]:
        """The requests on the engines, in the order they were submitted."""
        return sorted((r.request for r in rollouts
                       if r.request is not None and r.request.status in LIVE), key=_rid)

    if stream is not None:
        stream.begin_round(step, len(rollouts), live, migrate)
    for engine, chunk in ph.engine_chunks(rollouts):
        for r in chunk:
            r.start(version, engine)
    yield enough
    trained_by_time = sorted((m for pid in done for m in made[pid]), key=lambda m: m[1])
    samples = [smp for smp, _, _ in trained_by_time]
    ph.record_responses(step, t0, samples, [t for _, t, _ in trained_by_time])
    kept = {id(smp.rollout) for smp in samples}
    for r in rollouts:  # surplus responses, and those of prompts not done: work in vain
        if id(r) not in kept:
            r.end("aborted")
    release(rollouts)  # each is finished or stopped
    trained = set(done)
    reward_done = None
    if scorer is not None:
        pool.close_batch()
        # Responses of prompts that were not done were scored too (work spent in vain),
        # but the step waits only for the rewards of the samples it trains.
        reward_done = max((reward_end[rid] for _, _, rid in trained_by_time if rid in reward_end),
                          default=env.now)
        judged = [scorer.judging[rid] for _, _, rid in trained_by_time
                  if rid in scorer.judging]
    else:
        judged = []
    return _Round(samples, [g for g in groups if g.prompt_id not in trained], reward_done,
                  judged)


def _rid(req: Request) -> int:
    return req.rid


register(PolicySpec(TAIL_BATCHING, run_tail_batching))  # declared in config/policies/
