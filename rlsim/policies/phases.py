"""The phases of an RL step as SimPy processes, shared by every policy.

Owns how one phase runs on the cluster's entities and how it is recorded: `gen` dispatches
a batch's responses to the engines and waits for all (a recorded multi-turn sample runs its
turns on one engine, with an environment step on the env pool between turns); `reward`,
`ref`, `train`, `weight_sync` and the colocated `switch` each time one phase. Every phase
emits a span on the `controller` track with the step number, so metrics can be computed
from records.
Policies (sync, one_off, ...) only decide the order and overlap of these phases.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from rlsim.config.streams import rng
from rlsim.cost.controller import ControllerCost, controller_cost
from rlsim.cost.weightsync import SwitchCost, SyncCost, layout_sync_cost, switch_cost
from rlsim.entities.barrier import Barrier
from rlsim.entities.cluster import Cluster
from rlsim.entities.engine import Request, RolloutEngine
from rlsim.entities.env import EnvPool
from rlsim.policies.recovery import RecoverableTrajectory, Recovery
from rlsim.trace import CONTROLLER
from rlsim.workload import PromptGroup, Turn


@dataclass(frozen=True, slots=True)
class Sample:
    """A finished response ready for training."""

    prompt_id: int
    prompt_tokens: int
    response_tokens: int  # the whole trajectory after the prompt for a multi-turn sample
    version: int  # policy version (weights) it was generated with
    reward_s: float | None = None  # recorded reward latency (replayed rollouts), else drawn
    task: str | None = None  # its task in a mixed workload (workload.tasks)
    last_response_tokens: int | None = None  # multi-turn: its final turn; None: single-turn
    observation_tokens: int = 0  # multi-turn: its observations (within response_tokens)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.response_tokens

    def judged_tokens(self, reads: str) -> int:
        """The tokens of it a judge reads (reward.judge.reads), before the judge's prompt."""
        if reads == "responses":
            return self.response_tokens - self.observation_tokens
        if reads == "last_response" and self.last_response_tokens is not None:
            return self.last_response_tokens
        return self.response_tokens


Progress = Callable[[int, int], None]


def attention_length(samples: Sequence[Sample]) -> float | None:
    """The sequence length at which causal attention over these samples costs what it does:
    sum(L^2) / sum(L), since a sequence of L tokens has about L^2 / 2 causal pairs."""
    total = sum(s.tokens for s in samples)
    if total == 0:
        return None
    return sum(s.tokens * s.tokens for s in samples) / total


class _Trajectory:
    """A multi-turn sample in flight: turn i runs on its engine; when it finishes, the env
    step after it runs on the env pool; then turn i+1 goes to the same engine with the whole
    context so far as its prompt (a full re-prefill: no prefix cache). After the last turn
    the finished Sample arrives at the gen barrier."""

    __slots__ = ("arrive", "context", "engine", "env_pool", "next_rid", "prompt_id",
                 "prompt_tokens", "reward_s", "turn", "turns", "version")

    def __init__(self, prompt_id: int, prompt_tokens: int, turns: tuple[Turn, ...],
                 reward_s: float | None, version: int, engine: RolloutEngine,
                 env_pool: EnvPool, next_rid: Callable[[], int],
                 arrive: Callable[[Sample], None]) -> None:
        self.prompt_id = prompt_id
        self.prompt_tokens = prompt_tokens
        self.turns = turns
        self.reward_s = reward_s
        self.version = version
        self.engine = engine
        self.env_pool = env_pool
        self.next_rid = next_rid
        self.arrive = arrive
        self.turn = 0
        self.context = prompt_tokens

    def turn_done(self, req: Request) -> None:
        turn = self.turns[self.turn]
        self.context += req.generated + turn.obs_tokens
        if self.turn == len(self.turns) - 1:
            self.arrive(Sample(self.prompt_id, self.prompt_tokens,
                               self.context - self.prompt_tokens, self.version, self.reward_s,
                               last_response_tokens=req.generated,
                               observation_tokens=sum(t.obs_tokens for t in self.turns)))
            return
        self.env_pool.run(turn.env_s).callbacks.append(self._next_turn)

    def _next_turn(self, _event: simpy.Event) -> None:
        self.turn += 1
        self.engine.submit(Request(self.next_rid(), self.context,
                                   self.turns[self.turn].response_tokens,
                                   on_done=self.turn_done, tag=self.prompt_id, cache_key=self))


def _submit_later(engine: RolloutEngine, req: Request, phases: Phases
                  ) -> Callable[[simpy.Event], None]:
    """A callback that submits `req` to `engine` when the event it waits on fires, unless a
    job restart voided its step meanwhile."""
    epoch = phases.epoch

    def submit(_event: simpy.Event) -> None:
        if phases.epoch == epoch:
            engine.submit(req)
    return submit


class Phases:
    """Phase processes over one cluster; policies compose them."""

    def __init__(self, cluster: Cluster, progress: Progress | None = None) -> None:
        self.c = cluster
        self.env = cluster.env
        self.rec = cluster.recorder
        self.progress = progress
        self._rid = 0
        self.rollout_loaded = True  # colocated engines start with weights resident
        self.epoch = 0
        """Moves on at every job restart (`recovery.Recovery.run_steps`): a phase of an
        older epoch records nothing when it ends."""
        self.recovery: Recovery | None = None
        self._controller_costs: dict[int, ControllerCost] = {}

    def phase(self, name: str, step: int, body: Generator[simpy.Event, Any, Any],
              **attrs: Any) -> simpy.Process:
        """Run `body` as a process and record it as phase `name` of `step`."""
        return self.env.process(self._timed(name, step, body, attrs))

    def _timed(self, name: str, step: int, body: Generator[simpy.Event, Any, Any],
               attrs: dict[str, Any]) -> Generator[simpy.Event, Any, Any]:
        t0 = self.env.now
        epoch = self.epoch
        if self.recovery is None:
            result = yield from body
        else:  # a job restart stops the phase at its next event: nothing more of it runs
            result = None
            try:
                event = next(body)
                while True:
                    try:
                        value = yield event
                    except simpy.Interrupt as err:
                        event = body.throw(err)
                        continue
                    if epoch != self.epoch:
                        body.close()
                        return None
                    event = body.send(value)
            except StopIteration as stop:
                result = stop.value
        if epoch == self.epoch:
            self.rec.span(CONTROLLER, name, t0, self.env.now, step=step, **attrs)
        return result

    # ------------------------------------------------------------------ gen
    def gen(self, step: int, groups: Sequence[PromptGroup], version: int) -> simpy.Process:
        return self.phase("gen", step, self._gen(step, groups, version),
                          samples=sum(len(g.response_tokens) for g in groups))

    def next_rid(self) -> int:
        """A fresh request id (unique within the run)."""
        self._rid += 1
        return self._rid

    def _gen(self, step: int, groups: Sequence[PromptGroup],
             version: int) -> Generator[simpy.Event, Any, list[Sample]]:
        if self.c.scenario.policy.env_interaction == "batched" and \
                any(g.turns is not None for g in groups):
            return (yield from self._gen_batched(step, groups, version))
        t0 = self.env.now
        reqs: list[Request] = []
        # Recorded rollouts only (both empty otherwise): rid of a first turn -> the turns of
        # its multi-turn sample; rid -> the sample's recorded reward latency.
        multi: dict[int, tuple[Turn, ...]] = {}
        rewards: dict[int, float | None] = {}
        resets: dict[int, float] = {}  # rid of a first turn -> its environment reset
        for g in groups:
            if g.turns is None and g.reward_s is None:
                for out in g.response_tokens:
                    self._rid += 1
                    reqs.append(Request(self._rid, g.prompt_tokens, out, tag=g.prompt_id))
                continue
            for j, out in enumerate(g.response_tokens):
                self._rid += 1
                turns = g.turns[j] if g.turns is not None else ()
                if len(turns) > 1:
                    multi[self._rid] = turns
                    out = turns[0].response_tokens
                if g.reward_s is not None:
                    rewards[self._rid] = g.reward_s[j]
                if g.reset_s is not None and g.reset_s[j] > 0:
                    resets[self._rid] = g.reset_s[j]
                reqs.append(Request(self._rid, g.prompt_tokens, out, tag=g.prompt_id))
        barrier = Barrier(self.env, len(reqs))
        position = -1  # the request's place in the batch: its fault draws' key
        for engine, chunk in self.engine_chunks(reqs):
            for req in chunk:
                position += 1
                sample_turns = multi.get(req.rid) if multi else None
                if sample_turns is None:
                    req.on_done = barrier.arrive
                elif self.recovery is not None:
                    RecoverableTrajectory(
                        self.recovery, (step, position), req.tag, req.prompt_tokens,
                        sample_turns, rewards.get(req.rid), version, engine, self.next_rid,
                        barrier.arrive, resets.get(req.rid, 0.0), Sample).start()
                    continue
                else:
                    # A multi-turn sample keeps its engine for every turn.
                    traj = _Trajectory(
                        req.tag, req.prompt_tokens, sample_turns, rewards.get(req.rid), version,
                        engine, self.c.env_pool, self.next_rid, barrier.arrive)
                    req.on_done, req.cache_key = traj.turn_done, traj
                reset = resets.get(req.rid)
                if reset is None:
                    engine.submit(req)
                else:  # the environment resets (on an env worker) before the first turn
                    self.c.env_pool.run(reset).callbacks.append(
                        _submit_later(engine, req, self))
        done = yield barrier.done
        if not multi and not rewards:
            task_of = {g.prompt_id: g.task for g in groups}
            samples = [Sample(r.tag, r.prompt_tokens, r.generated, version,
                              task=task_of[r.tag]) for r in done]
        else:
            samples = [x if isinstance(x, Sample)
                       else Sample(x.tag, x.prompt_tokens, x.generated, version,
                                   rewards.get(x.rid))
                       for x in done]
        self.record_responses(step, t0, samples, barrier.times)
        return samples

    def _gen_batched(self, step: int, groups: Sequence[PromptGroup],
                     version: int) -> Generator[simpy.Event, Any, list[Sample]]:
        """Multi-turn samples in lock-step (policy.env_interaction: batched): every reset,
        then turn t of every trajectory still going, then all their environment steps, then
        turn t + 1. Each trajectory keeps the engine its first turn was dispatched to."""
        env, pool = self.env, self.c.env_pool
        t0 = env.now
        # (prompt id, prompt tokens, turns, recorded reward latency, reset) per sample
        trajs = [(g.prompt_id, g.prompt_tokens,
                  g.turns[j] if g.turns is not None else (Turn(out),),
                  g.reward_s[j] if g.reward_s is not None else None,
                  g.reset_s[j] if g.reset_s is not None else 0.0)
                 for g in groups for j, out in enumerate(g.response_tokens)]
        first = [Request(0, t[1], t[2][0].response_tokens) for t in trajs]  # dispatch only
        engine_of: list[RolloutEngine] = []
        for engine, chunk in self.engine_chunks(first):
            engine_of += [engine] * len(chunk)
        resets = [pool.run(t[4]) for t in trajs if t[4] > 0]
        if resets:
            yield env.all_of(resets)
        context = [t[1] for t in trajs]
        out: list[Sample] = []
        times: list[float] = []
        active = list(range(len(trajs)))
        turn = 0
        while active:
            barrier = Barrier(env, len(active))
            for i in active:
                req = Request(self.next_rid(), context[i], trajs[i][2][turn].response_tokens,
                              tag=i, on_done=barrier.arrive, cache_key=(t0, i))
                engine_of[i].submit(req)
            done: list[Request] = yield barrier.done
            going = []
            for req, at in zip(done, barrier.times, strict=True):
                i = req.tag
                turns = trajs[i][2]
                context[i] += req.generated + turns[turn].obs_tokens
                if turn == len(turns) - 1:
                    pid, prompt, _, reward_s, _ = trajs[i]
                    out.append(Sample(pid, prompt, context[i] - prompt, version, reward_s,
                                      last_response_tokens=req.generated,
                                      observation_tokens=sum(t.obs_tokens for t in turns)))
                    times.append(at)
                else:
                    going.append(i)
            if going:
                yield env.all_of([pool.run(trajs[i][2][turn].env_s) for i in going])
            active = sorted(going)
            turn += 1
        self.record_responses(step, t0, out, times)
        return out

    def engine_chunks(self, reqs: Sequence[Request]) -> list[tuple[RolloutEngine,
                                                                   Sequence[Request]]]:
        """veRL's dispatch: the batch in equal contiguous chunks, one per engine, so the
        samples of one prompt land together and no engine rebalances (the long tail stays
        put)."""
        engines = self.c.engines
        per, extra = divmod(len(reqs), len(engines))
        out: list[tuple[RolloutEngine, Sequence[Request]]] = []
        start = 0
        for i, engine in enumerate(engines):
            end = start + per + (1 if i < extra else 0)
            out.append((engine, reqs[start:end]))
            start = end
        return out

    def record_responses(self, step: int, t0: float, samples: Sequence[Sample],
                         times: Sequence[float]) -> None:
        """The report's length and latency distributions come from this one record per
        batch (in arrival order), not from per-request spans, which only request detail
        keeps."""
        self.rec.instant(CONTROLLER, "responses", self.env.now, step=step,
                         response_tokens=[s.response_tokens for s in samples],
                         latency_s=[round(t - t0, 6) for t in times])

    # ------------------------------------------------------------------ reward
    def reward(self, step: int, samples: Sequence[Sample]) -> simpy.Process:
        return self.phase("reward", step, self._reward(step, samples), samples=len(samples))

    def _reward(self, step: int, samples: Sequence[Sample]) -> Generator[simpy.Event, Any, None]:
        cfg = self.c.scenario.reward
        if cfg.by_task:
            # A mixed workload: CPU-scored samples on the workers and judged ones on the
            # judge engines, at the same time.
            mixed = self.task_reward_latencies(step, [s.task for s in samples])
            cpu = [x for x in mixed if x is not None]
            judged = [s for s, x in zip(samples, mixed, strict=True) if x is None]
            jobs = [self.c.reward.score(cpu)] if cpu else []
            if judged:
                jobs.append(self.env.process(self.judge(judged)))
            yield self.env.all_of(jobs)
            return
        if cfg.kind == "judge":
            yield from self.judge(samples)
            return
        if samples and all(s.reward_s is not None for s in samples):
            # Replayed rollouts: the measured latencies, in sample order, still held to the
            # timeout like drawn ones.
            lat = np.minimum(np.array([s.reward_s for s in samples], dtype=float), cfg.timeout)
        else:
            lat = self.reward_latencies(step, len(samples))
        yield self.c.reward.score(lat.tolist())

    def reward_latencies(self, step: int, n: int) -> np.ndarray:
        """Per-sample reward latencies of a step, from the reward stream (same for all
        policies): lognormal around the median, or the timeout for the `hang_fraction` of
        runs that never finish, cut at the timeout for sandboxes."""
        # Vectorised (a step can score thousands of samples); the same draws as
        # task_reward_latencies gives an untasked workload.
        cfg = self.c.scenario.reward
        seed = self.c.scenario.seed
        draw = rng(seed, "reward", step).standard_normal(n)
        lat = np.minimum(cfg.latency.median * np.exp(cfg.latency.sigma * draw), cfg.timeout)
        if cfg.latency.hang_fraction:
            lat[rng(seed, "reward-hang", step).random(n) < cfg.latency.hang_fraction] = \
                cfg.timeout
        return lat

    def task_reward_latencies(self, step: int,
                              tasks: Sequence[str | None]) -> list[float | None]:
        """Per-sample reward latencies of a mixed workload, from the reward stream (one
        normal draw per sample, and one uniform from the hang stream when a task hangs, so
        every policy sees the same ones): lognormal around the sample's task's median, or
        the timeout for its task's `hang_fraction`, cut at its timeout; None where the
        task is judged."""
        cfg = self.c.scenario.reward
        n = len(tasks)
        draw = rng(self.c.scenario.seed, "reward", step).standard_normal(n).tolist()
        specs = [cfg.by_task.get(t) if t is not None else None for t in tasks]
        lats = [spec.latency if spec is not None else cfg.latency for spec in specs]
        hangs = (rng(self.c.scenario.seed, "reward-hang", step).random(n).tolist()
                 if any(lat.hang_fraction for lat in lats) else None)
        out: list[float | None] = []
        for i, (spec, lat) in enumerate(zip(specs, lats, strict=True)):
            kind = spec.kind if spec is not None else cfg.kind
            if kind == "judge":
                out.append(None)
                continue
            timeout = spec.timeout if spec is not None else cfg.timeout
            if hangs is not None and hangs[i] < lat.hang_fraction:
                out.append(timeout)
            else:
                out.append(min(lat.median * math.exp(lat.sigma * draw[i]), timeout))
        return out

    def judge(self, samples: Sequence[Sample]) -> Generator[simpy.Event, Any, None]:
        """Score samples on the judge engines (round-robin); ends when all are judged."""
        jc = self.c.scenario.reward.judge
        assert jc is not None
        if self.c.judge_load_s:
            yield self.env.timeout(self.c.judge_load_s)  # a time-shared judge wakes up first
        barrier = Barrier(self.env, len(samples))
        judges = self.c.judges
        for i, s in enumerate(samples):
            self._rid += 1
            req = Request(self._rid, s.judged_tokens(jc.reads) + jc.prompt_overhead_tokens,
                          jc.output_tokens, on_done=barrier.arrive)
            judges[i % len(judges)].submit(req)
        yield barrier.done

    # ------------------------------------------------------------------ train side
    def ref(self, step: int, samples: Sequence[Sample]) -> simpy.Process:
        return self.phase("ref", step, self._ref(samples))

    def _ref(self, samples: Sequence[Sample]) -> Generator[simpy.Event, Any, None]:
        tokens = sum(s.tokens for s in samples)
        seq = attention_length(samples)
        lengths = [s.tokens for s in samples]  # the cost model packs them into micro-batches
        t = self.c.scenario.train
        if t.ref_logprob:
            yield self.c.trainer.forward(tokens, "ref_logprob", seq, lengths, reference=True)
        if t.old_logprob:
            yield self.c.trainer.forward(tokens, "old_logprob", seq, lengths)
        if t.critic:  # PPO: the critic's values of every sample
            yield self.c.trainer.forward(tokens, "critic_values", seq, lengths)

    def train(self, step: int, samples: Sequence[Sample], version: int,
              streamed: Sequence[Sample] = ()) -> simpy.Process:
        """Train on `samples`; those in `streamed` already have their gradients (a stream
        trainer computed them during generation), so only the rest are computed here, and
        the one optimizer step covers all."""
        stale = [version - s.version for s in samples]
        tokens = sum(s.tokens for s in samples)
        seq = attention_length(samples)
        rest = list(samples)
        if streamed:
            done = {id(s) for s in streamed}
            rest = [s for s in samples if id(s) not in done]
            work, work_seq = sum(s.tokens for s in rest), attention_length(rest)
        else:
            work, work_seq = tokens, seq
        # The samples' own lengths and prompts: the cost model packs micro-batches from them
        # and cuts one mini-batch (optimizer step) per train.ppo_mini_batch_size prompts.
        lengths = [s.tokens for s in rest]
        prompts = len({s.prompt_id for s in rest})
        return self.phase(
            "train", step, self._train(work, work_seq, step, lengths, prompts),
            samples=len(samples),
            tokens=tokens, streamed=len(streamed),
            seq_tokens=seq, response_tokens=sum(s.response_tokens for s in samples),
            staleness_mean=float(np.mean(stale)) if stale else 0.0,
            staleness_max=max(stale, default=0),
            staleness_hist={str(k): v for k, v in sorted(Counter(stale).items())},
        )

    def _train(self, tokens: int, seq_tokens: float | None, step: int,
               lengths: Sequence[int] | None = None,
               prompts: int | None = None) -> Generator[simpy.Event, Any, None]:
        epoch = self.epoch
        trainer = self.c.trainer
        yield trainer.train(tokens, seq_tokens, lengths, prompts, step=step)
        if self.c.scenario.train.critic:  # PPO: the critic's update after the actor's
            yield trainer.train(tokens, seq_tokens, lengths, prompts, label="critic_update",
                                step=step)
        if self.progress is not None and epoch == self.epoch:
            self.progress(step + 1, self.c.scenario.steps)

    def weight_sync(self, step: int) -> simpy.Process:
        """Trainer -> engines (`rlsim.cost.weightsync`, scheme `weight_sync.scheme`): the
        bytes each engine rank receives cross the link (fair-shared, fault-slowed); the
        gather, per-tensor / per-bucket, load and host-store parts are fixed times. The
        span carries each part."""
        cfg = self.c.scenario.weight_sync
        cost = layout_sync_cost(self.c.train_cost, self.c.engine_cost, self.c.weight_bytes,
                                cfg.scheme, cfg.bucket_size, cfg.delta_fraction,
                                framework=cfg.framework, store_transport=cfg.store_transport,
                                colocated=self.c.placement.colocated)
        # A fitted framework overhead (framework.weight_sync_overhead): fixed time the
        # framework adds to every sync, before the bytes move.
        extra_s = self.c.scenario.framework.weight_sync_overhead
        attrs = cost.attrs()
        if extra_s > 0:
            attrs["framework_overhead_s"] = extra_s
        return self.phase("weight_sync", step, self._weight_sync(cost, extra_s), **attrs)

    def _weight_sync(self, cost: SyncCost,
                     extra_s: float = 0.0) -> Generator[simpy.Event, Any, None]:
        if extra_s > 0:
            yield self.env.timeout(extra_s)
        if cost.fixed_total_s > 0:
            yield self.env.timeout(cost.fixed_total_s)
        if cost.link_bytes > 0 or cost.scheme == "link":
            yield self.c.link.transfer(cost.link_bytes, "weights")

    # ------------------------------------------------------------------ colocated switch
    def switch(self, step: int, to: str) -> simpy.Process:
        """Colocated only: hand the GPUs to the trainer (`to="train"`) or back to rollout.
        The span carries each term (`rlsim.cost.weightsync.switch_cost`)."""
        cost = self._switch_cost(to)
        return self.phase("switch", step, self._switch(cost), to=to, **cost.attrs())

    def _switch_cost(self, to: str) -> SwitchCost:
        engine, train = self.c.engine_cost, self.c.train_cost
        state_s = train.reload_s() if to == "train" else train.offload_s()
        return switch_cost(to, engine.weight_bytes_per_gpu(),
                           engine.gpu.pcie_bandwidth * engine.profile.pcie_efficiency,
                           state_s, engine.profile.engine_warm_start_base_s,
                           self.c.scenario.weight_sync.engine_sleep_level)

    def _switch(self, cost: SwitchCost) -> Generator[simpy.Event, Any, None]:
        trainer = self.c.trainer
        if cost.to == "train":
            # Engines drop their KV cache and (sleep level 1) copy their weights to host
            # memory (veRL sleep mode); then the trainer's parameters, gradients and
            # optimizer state come back to the GPUs.
            yield self.env.timeout(cost.engine_weights_s)
            yield trainer.reload()
        else:
            # The trainer's state goes back to host memory; the engines wake up: (level 1)
            # their weights come back from host memory, then the KV cache is re-mapped (the
            # fixed part of a warm start). The sync that follows overwrites the weights.
            yield trainer.offload()
            yield self.env.timeout(cost.engine_weights_s + cost.engine_wake_s)

    def step_span(self, step: int, t0: float, **attrs: Any) -> None:
        """The step's span; `backlog` (default 0) is the samples queued or in flight and
        not trained yet at its end (docs/metrics.md: the steady window's balance)."""
        attrs.setdefault("backlog", 0)
        self.rec.span(CONTROLLER, "step", t0, self.env.now, step=step, **attrs)

    def left(self, backlog: int = 0, **attrs: Any) -> None:
        """What the run leaves undone when it ends (a `left` instant on the controller
        track): `backlog` samples queued or in flight and not trained, and policy-specific
        state (tail_batching: the prompts queued for a long round that did not run).
        metrics.py turns it into `summary.warnings` when it biases the figures."""
        self.rec.instant(CONTROLLER, "left", self.env.now, backlog=backlog, **attrs)

    # ------------------------------------------------------------------ controller
    def controller(self, step: int, samples: Sequence[Sample]) -> simpy.Process:
        """The single controller's own work of a step (veRL's driver: one Ray call per
        worker group, the padded batch sent and gathered, advantages on the driver;
        `rlsim.cost.controller`), as phase `controller`; the span carries each term.
        Zero-length with `controller.enabled: false`. A policy calls it between reward and
        the trainer's log-prob passes."""
        cost = self.controller_cost(len(samples))
        # A fitted framework overhead (framework.step_overhead): the driver's work rlsim
        # does not price, once per step, with or without `controller.enabled`.
        extra_s = self.c.scenario.framework.step_overhead
        attrs: dict[str, Any] = dict(cost.attrs())
        seconds = cost.total_s
        if extra_s > 0:
            attrs["framework_overhead_s"] = extra_s
            seconds += extra_s
        return self.phase("controller", step, self._controller(seconds),
                          tokens=sum(s.tokens for s in samples), **attrs)

    def controller_cost(self, responses: int) -> ControllerCost:
        """`controller_cost` for `responses` samples of this scenario (memoized: a
        policy's batches mostly have the same size)."""
        cost = self._controller_costs.get(responses)
        if cost is None:
            sc = self.c.scenario
            cfg, w, t, place = sc.controller, sc.workload, sc.train, self.c.placement
            if not cfg.enabled:
                cost = ControllerCost(0, 0.0, 0.0, 0.0, 0, 0.0)
            else:
                cost = controller_cost(
                    responses, w.max_prompt_len, w.max_response_len,
                    max(1, place.rollout_gpus), max(1, place.train_gpus),
                    call_latency_s=cfg.call_latency, per_worker_call_s=cfg.per_worker_call,
                    bytes_per_s=cfg.bandwidth,
                    advantage_per_element_s=cfg.advantage_per_element,
                    old_logprob=t.old_logprob, ref_logprob=t.ref_logprob, critic=t.critic)
            self._controller_costs[responses] = cost
        return cost

    def _controller(self, seconds: float) -> Generator[simpy.Event, Any, None]:
        if seconds > 0:
            yield self.env.timeout(seconds)
