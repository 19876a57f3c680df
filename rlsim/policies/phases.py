"""The phases of an RL step as SimPy processes, shared by every policy.

Owns how one phase runs on the cluster's entities and how it is recorded: `gen` launches a
batch's samples (`entities.rollout.Rollout`: each runs its turns on one engine, with an
environment step on the env pool between turns) and waits for all; `reward`, `ref`,
`train`, `weight_sync` and the colocated `switch` each time one phase. Every phase emits a
span on the `controller` track with the step number, so metrics can be computed from
records. `Phases` is the library; the job's mutable state (request ids, the epoch of job
restarts, the samples' outcomes) is its `RolloutJob`, `Phases.job`.
Policies (sync, one_off, ...) only decide the order and overlap of these phases: they run
their steps through `run_steps` and their side processes through `spawn`.

Hook points (`StepHooks`, `Phases.hooks`): how the steps are run, how a phase or a side
process is guarded, and how the trainer's work is run. `PlainSteps`, the default, runs
each step once, in order, and every phase and trainer pass as it is; a plug-in replaces it
(recovery, `policies.recovery.Recovery`: trainer checkpoints and job restarts, a trainer
restarted alone), so no phase or policy branches on whether faults are injected.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import simpy
from simpy.core import SimTime

from rlsim.config.streams import rng
from rlsim.cost.controller import ControllerCost, controller_cost
from rlsim.cost.weightsync import SwitchCost, SyncCost, layout_sync_cost, switch_cost
from rlsim.entities.barrier import Barrier
from rlsim.entities.cluster import Cluster
from rlsim.entities.engine import Request, RolloutEngine
from rlsim.entities.rollout import Rollout, RolloutJob, Sample, release
from rlsim.trace import CONTROLLER
from rlsim.workload import PromptGroup
from rlsim.workload.portable import exp

__all__ = ["Phases", "PlainSteps", "Progress", "Sample", "StepBody", "StepHooks",
           "attention_length"]

Progress = Callable[[int, int], None]
StepBody = Callable[[int], Generator[simpy.Event, Any, None]]
"""A policy's step `step` (or its pipeline's start at `step`), as a SimPy generator."""
_T = TypeVar("_T")
_R = TypeVar("_R")
Work = Generator[simpy.Event, Any, _R]



_ROUND6_FAST_BELOW = 8e9  # x * 1e6 below this: its rounding error is under 1e-6
_ROUND6_MARGIN = 1e-5  # a fraction this close to one half goes to round() itself


def round6(x: float) -> float:
    """`round(x, 6)`, the same double, without its decimal conversion in the common case
    (a batch's latencies are rounded once per response: round() cost 5% of a large run).
    round() gives the double nearest to the decimal n / 10**6, n the correctly rounded
    x * 10**6; IEEE division of the exact n by the exact 1e6 gives that same double. n is
    read off y = x * 1e6 unless y's fraction is within the margin of a half, where the
    product's own rounding (under 1e-6 below the bound) could flip it; there, and for
    x <= 0 (the sign of a zero), round() decides."""
    y = x * 1e6
    if 0.0 < y < _ROUND6_FAST_BELOW:
        n = int(y)
        frac = y - n
        if frac < 0.5 - _ROUND6_MARGIN:
            return n / 1e6
        if frac > 0.5 + _ROUND6_MARGIN:
            return (n + 1) / 1e6
    return round(x, 6)


class StepHooks(Protocol):
    """The hook points of a job that a plug-in takes over (`PlainSteps` is the default)."""

    def run_steps(self, steps: int, one_step: StepBody,
                  start: StepBody | None = None) -> Generator[simpy.Event, Any, None]:
        """Run `start(0)` (a pipeline's fill, if the policy has one), then steps
        0..steps-1; a plug-in may run `start(k)` and the steps from k again (a job restart
        from the checkpoint after step k - 1)."""
        ...

    def guard(self, body: Work[_R]) -> Work[_R]:
        """`body` (a phase, or a side process of a step) as it should run: a plug-in may
        stop it at a job restart (it then returns None)."""
        ...

    def trainer_work(self, work: Callable[[], Work[_R]]) -> Work[_R]:
        """Run the trainer's work `work()` (a pass, a weight send): a plug-in may hold it
        while the trainer is down and run it again when a fault killed it."""
        ...


class PlainSteps:
    """The default hooks: every step once, in order; phases and trainer work as they are."""

    def run_steps(self, steps: int, one_step: StepBody,
                  start: StepBody | None = None) -> Generator[simpy.Event, Any, None]:
        if start is not None:
            yield from start(0)
        for step in range(steps):
            yield from one_step(step)

    def guard(self, body: Work[_R]) -> Work[_R]:
        return body

    def trainer_work(self, work: Callable[[], Work[_R]]) -> Work[_R]:
        return work()


def _wait(event: simpy.Event) -> Generator[simpy.Event, Any, Any]:
    return (yield event)


def _slot(r: Rollout) -> int:
    return r.slot


def attention_length(samples: Sequence[Sample]) -> float | None:
    """The sequence length at which causal attention over these samples costs what it does:
    sum(L^2) / sum(L), since a sequence of L tokens has about L^2 / 2 causal pairs."""
    return _attention([s.tokens for s in samples])[1]


def _attention(lengths: Sequence[int]) -> tuple[int, float | None]:
    """The total tokens of sequences of these lengths, and their `attention_length`."""
    total = sum(lengths)
    if total == 0:
        return 0, None
    return total, sum(n * n for n in lengths) / total


class Phases:
    """Phase processes over one cluster; policies compose them."""

    def __init__(self, cluster: Cluster, progress: Progress | None = None) -> None:
        self.cluster = cluster
        self.env = cluster.env
        self.rec = cluster.recorder
        self.progress = progress
        self.job = RolloutJob(cluster)
        self.hooks: StepHooks = PlainSteps()
        """Replaced by a plug-in before the policy runs (`api.simulate` attaches recovery
        when the scenario has faults or trainer checkpoints)."""
        # policy.env_interaction, read once here: `gen` runs multi-turn samples in lock-step
        # when batched (sync, one_off; the policies that run trajectories on their own
        # refuse it when the scenario is loaded)
        self.batched_env = cluster.scenario.policy.env_interaction == "batched"
        self._controller_costs: dict[int, ControllerCost] = {}
        # step -> the controller cost its `controller` phase priced: `ref` and `train`
        # charge their calls' transfers from it (veRL times them inside those calls)
        self._step_calls: dict[int, ControllerCost] = {}

    def run_steps(self, steps: int, one_step: StepBody,
                  start: StepBody | None = None) -> Generator[simpy.Event, Any, None]:
        """The policy's steps 0..steps-1, after `start(0)` if given (`StepHooks.run_steps`:
        with recovery, a job restart runs `start(k)` and the steps from k again)."""
        return self.hooks.run_steps(steps, one_step, start)

    def spawn(self, body: Generator[simpy.Event, Any, _R]) -> simpy.Process:
        """Run a side process of a step (e.g. one_off's next batch): guarded as a phase is,
        so a job restart stops it too."""
        return self.env.process(self.hooks.guard(body))

    def phase(self, name: str, step: int, body: Generator[simpy.Event, Any, Any],
              **attrs: Any) -> simpy.Process:
        """Run `body` as a process and record it as phase `name` of `step`."""
        return self.env.process(self._timed(name, step, body, attrs))

    def _timed(self, name: str, step: int, body: Generator[simpy.Event, Any, Any],
               attrs: dict[str, Any]) -> Generator[simpy.Event, Any, Any]:
        t0 = self.env.now
        job = self.job
        epoch = job.epoch
        result = yield from self.hooks.guard(body)
        if epoch == job.epoch:  # a phase a job restart stopped records nothing
            self.rec.span(CONTROLLER, name, t0, self.env.now, step=step, **attrs)
        return result

    # ------------------------------------------------------------------ gen
    def gen(self, step: int, groups: Sequence[PromptGroup], version: int) -> simpy.Process:
        return self.phase("gen", step, self._gen(step, groups, version),
                          samples=sum(len(g.response_tokens) for g in groups))

    def next_rid(self) -> int:
        """A fresh request id (unique within the run)."""
        return self.job.next_rid()

    def rollouts(self, groups: Sequence[PromptGroup],
                 on_finish: Callable[[Sample], None] | None,
                 keyed: bool = False, reserve: bool = False,
                 fault_step: int | None = None) -> list[Rollout]:
        """One rollout per response of `groups`, in launch order (`slot`), each handing
        its sample to `on_finish`. `reserve`: each first turn's request id is taken now,
        in launch order. `fault_step`: the step whose fault draws multi-turn samples key
        on, when the job's recovery attaches fault hooks (they number every turn when it
        is submitted)."""
        job = self.job
        counts = job.counts  # the request ids, natively
        faults = job.faults if fault_step is not None else None
        out: list[Rollout] = []
        slot = 0
        for g in groups:
            pid, prompt, task = g.prompt_id, g.prompt_tokens, g.task
            turns_of, rewards, resets = g.turns, g.reward_s, g.reset_s
            if turns_of is None and rewards is None and resets is None:
                for resp in g.response_tokens:
                    rid = 0
                    if reserve:
                        counts.rid = rid = counts.rid + 1
                    out.append(Rollout(job, pid, prompt, resp, None, slot, None, 0.0, task,
                                       keyed, on_finish, rid))
                    slot += 1
                continue
            for j, resp in enumerate(g.response_tokens):
                turns = turns_of[j] if turns_of is not None else None
                if turns is not None and len(turns) < 2 and not keyed:
                    turns = None  # one turn: a single-turn sample
                rid = job.next_rid() if reserve else 0
                r = Rollout(job, pid, prompt, resp, turns, slot=slot,
                            reward_s=rewards[j] if rewards is not None else None,
                            reset_s=resets[j] if resets is not None else 0.0, task=task,
                            keyed=keyed, on_finish=on_finish)
                slot += 1
                if faults is not None and r.last > 0:
                    assert fault_step is not None
                    r.faults = faults(r, (fault_step, r.slot))  # its reserved id stays unused
                else:
                    r.first_rid = rid
                out.append(r)
        return out

    def _gen(self, step: int, groups: Sequence[PromptGroup],
             version: int) -> Generator[simpy.Event, Any, list[Sample]]:
        if self.batched_env and any(g.turns is not None for g in groups):
            return (yield from self._gen_batched(step, groups, version))
        t0 = self.env.now
        samples, times = yield from self.run_batch(groups, version, fault_step=step)
        self.record_responses(step, t0, samples, times)
        return samples

    def run_batch(self, groups: Sequence[PromptGroup], version: int,
                  fault_step: int | None = None,
                  ) -> Generator[simpy.Event, Any, tuple[list[Sample], list[float]]]:
        """Batch rollout: the groups' samples in contiguous chunks, one per engine, until
        every one has finished; (samples, their arrival times), in arrival order. Every
        first turn is numbered at launch, in launch order; a sample's turns keep the engine
        its first turn is dispatched to. `fault_step`: as `rollouts`."""
        barrier = Barrier(self.env, sum(len(g.response_tokens) for g in groups))
        rollouts = self.rollouts(groups, barrier.arrive, reserve=True, fault_step=fault_step)
        for engine, chunk in self.engine_chunks(rollouts):
            for r in chunk:
                r.start(version, engine)
        samples: list[Sample] = yield barrier.done
        release(rollouts)
        return samples, barrier.times

    def _gen_batched(self, step: int, groups: Sequence[PromptGroup],
                     version: int) -> Generator[simpy.Event, Any, list[Sample]]:
        """Multi-turn samples in lock-step (policy.env_interaction: batched): every reset,
        then turn t of every trajectory still going, then all their environment steps, then
        turn t + 1. Each trajectory keeps the engine its first turn was dispatched to."""
        env = self.env
        t0 = env.now
        rollouts = self.rollouts(groups, None, keyed=True)
        for engine, chunk in self.engine_chunks(rollouts):
            for r in chunk:
                r.start(version, engine, held=True)
        resetting = [r for r in rollouts if r.reset_s > 0]
        if resetting:
            yield self._held_env(resetting, Rollout.reset)
        out: list[Sample] = []
        times: list[float] = []
        active = rollouts
        while active:
            barrier = Barrier(env, len(active))
            for r in active:  # a turn ends in its sample (the last) or held for its step
                r.on_finish = r.after_turn = barrier.arrive
                r.submit()
            done: list[Sample | Rollout] = yield barrier.done
            going: list[Rollout] = []
            for item, at in zip(done, barrier.times, strict=True):
                if isinstance(item, Sample):
                    out.append(item)
                    times.append(at)
                else:
                    going.append(item)
            if going:
                yield self._held_env(going, Rollout.env_step)
            active = sorted(going, key=_slot)
        release(rollouts)
        self.record_responses(step, t0, out, times)
        return out

    def _held_env(self, rollouts: list[Rollout],
                  run: Callable[[Rollout], None]) -> simpy.Event:
        """Lock-step: `run` (the reset, or the environment step after the turn) of every
        held rollout; the event fires when all have run."""
        barrier = Barrier(self.env, len(rollouts))
        for r in rollouts:
            r.after_env = barrier.arrive
            run(r)
        return barrier.done

    def engine_chunks(self, items: Sequence[_T]) -> list[tuple[RolloutEngine, Sequence[_T]]]:
        """veRL's dispatch: the batch in equal contiguous chunks, one per engine, so the
        samples of one prompt land together and no engine rebalances (the long tail stays
        put)."""
        engines = self.cluster.engines
        per, extra = divmod(len(items), len(engines))
        out: list[tuple[RolloutEngine, Sequence[_T]]] = []
        start = 0
        for i, engine in enumerate(engines):
            end = start + per + (1 if i < extra else 0)
            out.append((engine, items[start:end]))
            start = end
        return out

    def record_responses(self, step: int, t0: SimTime, samples: Sequence[Sample],
                         times: Sequence[float]) -> None:
        """The report's length and latency distributions come from this one record per
        batch (in arrival order), not from per-request spans, which only request detail
        keeps."""
        self.rec.instant(CONTROLLER, "responses", self.env.now, step=step,
                         response_tokens=[s.response_tokens for s in samples],
                         latency_s=[round6(t - t0) for t in times])

    # ------------------------------------------------------------------ reward
    def reward(self, step: int, samples: Sequence[Sample]) -> simpy.Process:
        return self.phase("reward", step, self._reward(step, samples), samples=len(samples))

    def _reward(self, step: int, samples: Sequence[Sample]) -> Generator[simpy.Event, Any, None]:
        cfg = self.cluster.scenario.reward
        if cfg.by_task:
            # A mixed workload: CPU-scored samples on the workers and judged ones on the
            # judge engines, at the same time.
            mixed = self.task_reward_latencies(step, [s.task for s in samples])
            cpu = [x for x in mixed if x is not None]
            judged = [s for s, x in zip(samples, mixed, strict=True) if x is None]
            jobs = [self.cluster.reward.score(cpu)] if cpu else []
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
        yield self.cluster.reward.score(lat.tolist())

    def reward_latencies(self, step: int, n: int) -> np.ndarray:
        """Per-sample reward latencies of a step, from the reward stream (same for all
        policies): lognormal around the median, or the timeout for the `hang_fraction` of
        runs that never finish, cut at the timeout for sandboxes."""
        # Vectorised (a step can score thousands of samples); the same draws as
        # task_reward_latencies gives an untasked workload.
        cfg = self.cluster.scenario.reward
        seed = self.cluster.scenario.seed
        draw = rng(seed, "reward", step).standard_normal(n)
        lat = np.minimum(cfg.latency.median * exp(cfg.latency.sigma * draw), cfg.timeout)
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
        cfg = self.cluster.scenario.reward
        n = len(tasks)
        draw = rng(self.cluster.scenario.seed, "reward", step).standard_normal(n)
        specs = [cfg.by_task.get(t) if t is not None else None for t in tasks]
        lats = [spec.latency if spec is not None else cfg.latency for spec in specs]
        # One vectorised exp, the same function reward_latencies uses (rlsim.workload.portable)
        spread = exp(np.array([lat.sigma for lat in lats]) * draw).tolist()
        hangs = (rng(self.cluster.scenario.seed, "reward-hang", step).random(n).tolist()
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
                out.append(min(lat.median * spread[i], timeout))
        return out

    def judge(self, samples: Sequence[Sample]) -> Generator[simpy.Event, Any, None]:
        """Score samples on the judge engines (round-robin); ends when all are judged."""
        jc = self.cluster.scenario.reward.judge
        assert jc is not None
        if self.cluster.judge_load_s:
            yield self.env.timeout(self.cluster.judge_load_s)  # a time-shared judge wakes up first
        barrier = Barrier(self.env, len(samples))
        judges = self.cluster.judges
        for i, s in enumerate(samples):
            req = Request(self.job.next_rid(),
                          s.judged_tokens(jc.reads) + jc.prompt_overhead_tokens,
                          jc.output_tokens, on_done=barrier.arrive)
            judges[i % len(judges)].submit(req)
        yield barrier.done

    # ------------------------------------------------------------------ train side
    def ref(self, step: int, samples: Sequence[Sample]) -> simpy.Process:
        """The log-prob (and, under PPO, value) passes, each after the driver's dispatch
        and collect of its call (`driver_s` on the span; zero without `controller`)."""
        driver = self._call_transfers(step, ("old_logprob", "ref_logprob", "critic_values"))
        return self.phase("ref", step, self._ref(samples, driver),
                          driver_s=sum(driver.values()))

    def _call_transfers(self, step: int, calls: Sequence[str]) -> dict[str, float]:
        """Seconds of each of `calls`' dispatch and collect in `step` (its `controller`
        phase priced them; none when the policy ran no controller phase)."""
        cost = self._step_calls.get(step)
        return {c: cost.transfer_of(c) if cost is not None else 0.0 for c in calls}

    def _ref(self, samples: Sequence[Sample],
             driver: dict[str, float]) -> Generator[simpy.Event, Any, None]:
        lengths = [s.tokens for s in samples]  # the cost model packs them into micro-batches
        tokens, seq = _attention(lengths)
        t = self.cluster.scenario.train
        trainer = self.cluster.trainer
        work = self.hooks.trainer_work
        # each pass is trainer work of its own: the log-probs it computed are the driver's
        # data, kept when the trainer restarts alone
        if t.ref_logprob:
            yield from self._driver(driver["ref_logprob"])
            yield from work(lambda: _wait(trainer.forward(tokens, "ref_logprob", seq, lengths,
                                                          reference=True)))
        if t.old_logprob:
            yield from self._driver(driver["old_logprob"])
            yield from work(lambda: _wait(trainer.forward(tokens, "old_logprob", seq,
                                                          lengths)))
        if t.critic:  # PPO: the critic's values of every sample
            yield from self._driver(driver["critic_values"])
            yield from work(lambda: _wait(trainer.forward(tokens, "critic_values", seq,
                                                          lengths)))

    def _driver(self, seconds: float) -> Generator[simpy.Event, Any, None]:
        """The driver's serial work before a call's workers start (dispatch and collect
        of the call's batch)."""
        if seconds > 0:
            yield self.env.timeout(seconds)

    def train(self, step: int, samples: Sequence[Sample], version: int,
              streamed: Sequence[Sample] = ()) -> simpy.Process:
        """Train on `samples`; those in `streamed` already have their gradients (a stream
        trainer computed them during generation), so only the rest are computed here, and
        the one optimizer step covers all."""
        stale = [version - s.version for s in samples]
        # The samples' own lengths and prompts: the cost model packs micro-batches from them
        # and cuts one mini-batch (optimizer step) per train.ppo_mini_batch_size prompts.
        lengths = [s.tokens for s in samples]
        tokens, seq = _attention(lengths)
        rest = samples
        if streamed:
            done = {id(s) for s in streamed}
            rest = [s for s in samples if id(s) not in done]
            lengths = [s.tokens for s in rest]
            work, work_seq = _attention(lengths)
        else:
            work, work_seq = tokens, seq
        prompts = len({s.prompt_id for s in rest})
        driver = self._call_transfers(step, ("update_actor", "update_critic"))
        self._step_calls.pop(step, None)
        return self.phase(
            "train", step, self._train(work, work_seq, step, lengths, prompts, samples,
                                       driver),
            samples=len(samples), driver_s=sum(driver.values()),
            tokens=tokens, streamed=len(streamed),
            seq_tokens=seq, response_tokens=sum(s.response_tokens for s in samples),
            staleness_mean=float(np.mean(stale)) if stale else 0.0,
            staleness_max=max(stale, default=0),
            staleness_hist={str(k): v for k, v in sorted(Counter(stale).items())},
        )

    def _train(self, tokens: int, seq_tokens: float | None, step: int,
               lengths: Sequence[int] | None = None, prompts: int | None = None,
               samples: Sequence[Sample] = (),
               driver: dict[str, float] | None = None) -> Generator[simpy.Event, Any, None]:
        job = self.job
        epoch = job.epoch
        trainer = self.cluster.trainer
        critic = self.cluster.scenario.train.critic

        # A fitted framework overhead (framework.update_overhead): the trainer's fixed work
        # per actor update that rlsim does not price, on the trainer's GPUs.
        update_s = self.cluster.scenario.framework.update_overhead

        def update() -> Generator[simpy.Event, Any, None]:
            # one unit of trainer work: a restarted trainer is back at the last checkpoint,
            # so it redoes the actor's update with the critic's
            yield trainer.train(tokens, seq_tokens, lengths, prompts, step=step,
                                extra_s=update_s)
            if critic:  # PPO: the critic's update after the actor's
                yield trainer.train(tokens, seq_tokens, lengths, prompts,
                                    label="critic_update", step=step)

        # the driver dispatches each update's batch before its workers start (veRL: in
        # timing_s/update_actor and update_critic); the critic's call comes first
        driver = driver or {}
        yield from self._driver(driver.get("update_critic", 0.0)
                                + driver.get("update_actor", 0.0))
        yield from self.hooks.trainer_work(update)
        if epoch != job.epoch:
            return
        job.end_samples(samples, "trained")  # each sample's one outcome
        if self.progress is not None:
            self.progress(step + 1, self.cluster.scenario.steps)

    def weight_sync(self, step: int) -> simpy.Process:
        """Trainer -> engines (`rlsim.cost.weightsync`, scheme `weight_sync.scheme`): the
        bytes each engine rank receives cross the link (fair-shared, fault-slowed); the
        gather, per-tensor / per-bucket, load and host-store parts are fixed times. The
        span carries each part."""
        c = self.cluster
        cfg = c.scenario.weight_sync
        cost = layout_sync_cost(c.train_cost, c.engine_cost, c.weight_bytes, cfg.scheme,
                                cfg.bucket_size, cfg.delta_fraction,
                                framework=cfg.framework, store_transport=cfg.store_transport,
                                colocated=c.placement.colocated)
        # A fitted framework overhead (framework.weight_sync_overhead): fixed time the
        # framework adds to every sync, before the bytes move.
        extra_s = self.cluster.scenario.framework.weight_sync_overhead
        attrs = cost.attrs()
        if extra_s > 0:
            attrs["framework_overhead_s"] = extra_s
        return self.phase("weight_sync", step, self.hooks.trainer_work(
            lambda: self._weight_sync(cost, extra_s)), **attrs)

    def _weight_sync(self, cost: SyncCost,
                     extra_s: float = 0.0) -> Generator[simpy.Event, Any, None]:
        if extra_s > 0:
            yield self.env.timeout(extra_s)
        if cost.fixed_total_s > 0:
            yield self.env.timeout(cost.fixed_total_s)
        if cost.link_bytes > 0 or cost.scheme == "link":
            yield self.cluster.link.transfer(cost.link_bytes, "weights")

    # ------------------------------------------------------------------ colocated switch
    def switch(self, step: int, to: str) -> simpy.Process:
        """Colocated only: hand the GPUs to the trainer (`to="train"`) or back to rollout.
        The span carries each term (`rlsim.cost.weightsync.switch_cost`)."""
        cost = self._switch_cost(to)
        attrs: dict[str, Any] = dict(cost.attrs())
        # A fitted framework overhead (framework.switch_overhead): the framework's work
        # around the wake-up that rlsim does not price, once per switch back to rollout.
        extra_s = self.cluster.scenario.framework.switch_overhead if to == "rollout" else 0.0
        if extra_s > 0:
            attrs["framework_overhead_s"] = extra_s
        return self.phase("switch", step, self._switch(cost, extra_s), to=to, **attrs)

    def _switch_cost(self, to: str) -> SwitchCost:
        engine, train = self.cluster.engine_cost, self.cluster.train_cost
        state_s = train.reload_s() if to == "train" else train.offload_s()
        return switch_cost(to, engine.weight_bytes_per_gpu(),
                           engine.gpu.pcie_bandwidth * engine.profile.pcie_efficiency,
                           state_s, engine.profile.engine_warm_start_base_s,
                           self.cluster.scenario.weight_sync.engine_sleep_level)

    def _switch(self, cost: SwitchCost, extra_s: float) -> Generator[simpy.Event, Any, None]:
        trainer = self.cluster.trainer
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
            yield self.env.timeout(cost.engine_weights_s + cost.engine_wake_s + extra_s)

    def step_span(self, step: int, t0: SimTime, **attrs: Any) -> None:
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
        The log-prob and update calls' transfers are charged in `ref` and `train` (their
        spans' `driver_s`), the generate call's here (`transfer_here_s`). Zero-length with
        `controller.enabled: false`. A policy calls it between reward and the trainer's
        log-prob passes."""
        cost = self.controller_cost(len(samples))
        self._step_calls[step] = cost
        # A fitted framework overhead (framework.step_overhead): the driver's work rlsim
        # does not price, once per step, with or without `controller.enabled`.
        extra_s = self.cluster.scenario.framework.step_overhead
        attrs: dict[str, Any] = dict(cost.attrs())
        # the later calls' transfers are charged in `ref` and `train`, where veRL times
        # them; the generate call's here (its collect ends the generation)
        here_s = cost.transfer_of("generate")
        attrs["transfer_here_s"] = here_s
        seconds = cost.call_s + here_s + cost.advantage_s
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
            sc = self.cluster.scenario
            cfg, w, t, place = sc.controller, sc.workload, sc.train, self.cluster.placement
            if not cfg.enabled:
                cost = ControllerCost(0, 0.0, 0.0, 0.0, 0, 0.0)
            else:
                cost = controller_cost(
                    responses, w.max_prompt_len, w.max_response_len,
                    max(1, place.rollout_gpus), max(1, place.train_gpus),
                    call_latency_s=cfg.call_latency, per_worker_call_s=cfg.per_worker_call,
                    bytes_per_s=cfg.bandwidth,
                    advantage_per_element_s=cfg.advantage_per_element,
                    old_logprob=t.old_logprob, ref_logprob=t.ref_logprob, critic=t.critic,
                    receive_bytes_per_s=cfg.receive_bandwidth)
            self._controller_costs[responses] = cost
        return cost

    def _controller(self, seconds: float) -> Generator[simpy.Event, Any, None]:
        if seconds > 0:
            yield self.env.timeout(seconds)
