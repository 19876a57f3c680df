"""The phases of an RL step as SimPy processes, shared by every policy.

Owns how one phase runs on the cluster's entities and how it is recorded: `gen` dispatches
a batch's responses to the engines and waits for all; `reward`, `ref`, `train`,
`weight_sync` and the colocated `switch` each time one phase. Every phase emits a span on
the `controller` track with the step number, so metrics can be computed from records.
Policies (sync, one_off, ...) only decide the order and overlap of these phases.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from rlsim.config.streams import rng
from rlsim.entities.barrier import Barrier
from rlsim.entities.cluster import Cluster
from rlsim.entities.engine import Request
from rlsim.trace import CONTROLLER
from rlsim.workload import PromptGroup


@dataclass(frozen=True, slots=True)
class Sample:
    """A finished response ready for training."""

    prompt_id: int
    prompt_tokens: int
    response_tokens: int
    version: int  # policy version (weights) it was generated with

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.response_tokens


Progress = Callable[[int, int], None]


class Phases:
    """Phase processes over one cluster; policies compose them."""

    def __init__(self, cluster: Cluster, progress: Progress | None = None) -> None:
        self.c = cluster
        self.env = cluster.env
        self.rec = cluster.recorder
        self.progress = progress
        self._rid = 0
        self.rollout_loaded = True  # colocated engines start with weights resident

    def phase(self, name: str, step: int, body: Generator[simpy.Event, Any, Any],
              **attrs: Any) -> simpy.Process:
        """Run `body` as a process and record it as phase `name` of `step`."""
        return self.env.process(self._timed(name, step, body, attrs))

    def _timed(self, name: str, step: int, body: Generator[simpy.Event, Any, Any],
               attrs: dict[str, Any]) -> Generator[simpy.Event, Any, Any]:
        t0 = self.env.now
        result = yield from body
        self.rec.span(CONTROLLER, name, t0, self.env.now, step=step, **attrs)
        return result

    # ------------------------------------------------------------------ gen
    def gen(self, step: int, groups: Sequence[PromptGroup], version: int) -> simpy.Process:
        return self.phase("gen", step, self._gen(groups, version),
                          samples=sum(len(g.response_tokens) for g in groups))

    def _gen(self, groups: Sequence[PromptGroup],
             version: int) -> Generator[simpy.Event, Any, list[Sample]]:
        engines = self.c.engines
        reqs: list[Request] = []
        for g in groups:
            for out in g.response_tokens:
                self._rid += 1
                reqs.append(Request(self._rid, g.prompt_tokens, out, tag=g.prompt_id))
        barrier = Barrier(self.env, len(reqs))
        # veRL splits the batch into equal contiguous chunks, one per engine, so the samples
        # of one prompt land together and no engine rebalances: the long tail stays put.
        per, extra = divmod(len(reqs), len(engines))
        start = 0
        for i, engine in enumerate(engines):
            end = start + per + (1 if i < extra else 0)
            for req in reqs[start:end]:
                req.on_done = barrier.arrive
                engine.submit(req)
            start = end
        done = yield barrier.done
        return [Sample(r.tag, r.prompt_tokens, r.generated, version) for r in done]

    # ------------------------------------------------------------------ reward
    def reward(self, step: int, samples: Sequence[Sample]) -> simpy.Process:
        return self.phase("reward", step, self._reward(step, samples), samples=len(samples))

    def _reward(self, step: int, samples: Sequence[Sample]) -> Generator[simpy.Event, Any, None]:
        cfg = self.c.scenario.reward
        if cfg.kind == "judge":
            yield from self._judge(samples)
            return
        lat = self.reward_latencies(step, len(samples))
        yield self.c.reward.score(lat.tolist())

    def reward_latencies(self, step: int, n: int) -> np.ndarray:
        """Per-sample reward latencies of a step, from the reward stream (same for all
        policies): lognormal around the median, cut at the timeout for sandboxes."""
        cfg = self.c.scenario.reward
        draw = rng(self.c.scenario.seed, "reward", step).standard_normal(n)
        lat = cfg.latency.median * np.exp(cfg.latency.sigma * draw)
        return np.minimum(lat, cfg.timeout)

    def _judge(self, samples: Sequence[Sample]) -> Generator[simpy.Event, Any, None]:
        jc = self.c.scenario.reward.judge
        assert jc is not None
        barrier = Barrier(self.env, len(samples))
        judges = self.c.judges
        for i, s in enumerate(samples):
            self._rid += 1
            req = Request(self._rid, s.response_tokens + jc.prompt_overhead_tokens,
                          jc.output_tokens, on_done=barrier.arrive)
            judges[i % len(judges)].submit(req)
        yield barrier.done

    # ------------------------------------------------------------------ train side
    def ref(self, step: int, samples: Sequence[Sample]) -> simpy.Process:
        return self.phase("ref", step, self._ref(samples))

    def _ref(self, samples: Sequence[Sample]) -> Generator[simpy.Event, Any, None]:
        tokens = sum(s.tokens for s in samples)
        t = self.c.scenario.train
        if t.ref_logprob:
            yield self.c.trainer.forward(tokens, "ref_logprob")
        if t.old_logprob:
            yield self.c.trainer.forward(tokens, "old_logprob")

    def train(self, step: int, samples: Sequence[Sample], version: int) -> simpy.Process:
        stale = [version - s.version for s in samples]
        tokens = sum(s.tokens for s in samples)
        return self.phase(
            "train", step, self._train(tokens, step), samples=len(samples), tokens=tokens,
            response_tokens=sum(s.response_tokens for s in samples),
            staleness_mean=float(np.mean(stale)) if stale else 0.0,
            staleness_max=max(stale, default=0),
        )

    def _train(self, tokens: int, step: int) -> Generator[simpy.Event, Any, None]:
        yield self.c.trainer.train(tokens, step=step)
        if self.progress is not None:
            self.progress(step + 1, self.c.scenario.steps)

    def weight_sync(self, step: int) -> simpy.Process:
        return self.phase("weight_sync", step, self._weight_sync())

    def _weight_sync(self) -> Generator[simpy.Event, Any, None]:
        yield self.c.link.transfer(self.c.weight_bytes, "weights")

    # ------------------------------------------------------------------ colocated switch
    def switch(self, step: int, to: str) -> simpy.Process:
        """Colocated only: hand the GPUs to the trainer (`to="train"`) or back to rollout."""
        return self.phase("switch", step, self._switch(to), to=to)

    def _switch(self, to: str) -> Generator[simpy.Event, Any, None]:
        trainer, cost = self.c.trainer, self.c.engine_cost
        if to == "train":
            # Engines drop their KV cache and move weights to host memory (veRL sleep mode);
            # the trainer's parameters, gradients and optimizer state come back to the GPUs.
            yield self.env.timeout(cost.weight_reload_s())
            yield trainer.reload()
        else:
            # The trainer's state goes back to host memory and the engines wake up (KV cache
            # and runtime re-allocated: the fixed part of a warm start); their weights come
            # from the weight sync that follows, so nothing else moves over PCIe.
            yield trainer.offload()
            yield self.env.timeout(cost.profile.engine_warm_start_base_s)

    def step_span(self, step: int, t0: float, **attrs: Any) -> None:
        self.rec.span(CONTROLLER, "step", t0, self.env.now, step=step, **attrs)
