"""Trainer: the DP x TP x PP x CP training job on its GPUs.

Owns the mechanism of training-side work in simulated time: a train step, forward-only
passes (reference and old-policy log-probs), and moving its state to and from host memory
when colocated. Durations come from `rlsim.cost.TrainCost`; busy spans carry the pool and
GPU count for utilization.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, Protocol

import simpy

from rlsim.trace import Recorder


class _StepCost(Protocol):
    @property
    def total_s(self) -> float: ...


class TrainerCost(Protocol):
    """The slice of `rlsim.cost.TrainCost` the trainer uses."""

    def train_step(self, tokens: int, seq_tokens: float | None = None,
                   lengths: Sequence[int] | None = None,
                   prompts: int | None = None) -> _StepCost: ...
    def forward_s(self, tokens: int, seq_tokens: float | None = None,
                  lengths: Sequence[int] | None = None, reference: bool = False) -> float: ...
    def grad_s(self, tokens: int, seq_tokens: float | None = None,
               lengths: Sequence[int] | None = None) -> float: ...
    def offload_s(self) -> float: ...
    def reload_s(self) -> float: ...


def _samples(lengths: Sequence[int] | None, prompts: int | None) -> dict[str, Any]:
    """The per-sample arguments a cost model takes, only those given (a cost model priced
    by tokens alone need not accept them)."""
    out: dict[str, Any] = {}
    if lengths is not None:
        out["lengths"] = lengths
    if prompts is not None:
        out["prompts"] = prompts
    return out


class Trainer:
    """Runs one thing at a time on its GPUs (a SimPy resource of capacity 1)."""

    def __init__(self, env: simpy.Environment, name: str, cost: TrainerCost, pool: str,
                 gpus: int, recorder: Recorder) -> None:
        self.env = env
        self.name = name
        self.cost = cost
        self.pool = pool
        self.gpus = gpus
        self.recorder = recorder
        self.track = f"train.{name}"
        self._gpus = simpy.Resource(env, capacity=1)
        self.slowdown = 1.0
        """fail-slow: a pass that starts while this is above 1 takes this many times longer
        (a straggler GPU holds every collective of the pass)."""
        self._ops: list[simpy.Process] = []  # passes queued or running, for `kill`
        # the pass holding the GPUs: (start, name, compute, attrs), for `close`
        self._running: tuple[float, str, bool, dict[str, Any]] | None = None

    def train(self, tokens: int, seq_tokens: float | None = None,
              lengths: Sequence[int] | None = None, prompts: int | None = None,
              label: str = "train", extra_s: float = 0.0, **attrs: Any) -> simpy.Process:
        """The train pass on `tokens` tokens: the samples' own `lengths` (which the cost
        model packs into micro-batches) from `prompts` prompts (which set the mini-batches),
        or, without them, sequences whose attention costs as if each were `seq_tokens` long
        (None: the cost model's default length). `label` names the span (the PPO critic's
        update is `critic_update`); `extra_s`: fixed seconds the pass also holds the GPUs
        (a fitted `framework.update_overhead`)."""
        step = self.cost.train_step(tokens, seq_tokens, **_samples(lengths, prompts))
        if extra_s > 0:
            attrs["framework_overhead_s"] = extra_s
        return self._op(self._busy(label, step.total_s + extra_s, tokens=tokens, **attrs))

    def forward(self, tokens: int, label: str = "forward",
                seq_tokens: float | None = None,
                lengths: Sequence[int] | None = None,
                reference: bool = False) -> simpy.Process:
        """A forward-only pass (log-prob inference) over `tokens` tokens (of `lengths`);
        `reference`: the reference model's pass (its own padding, `train.ref_pad_to`)."""
        cost_s = self.cost.forward_s(tokens, seq_tokens, **_samples(lengths, None),
                                     reference=reference)
        return self._op(self._busy(label, cost_s, tokens=tokens))

    def grads(self, tokens: int, seq_tokens: float | None = None,
              lengths: Sequence[int] | None = None, **attrs: Any) -> simpy.Process:
        """Forward and backward with the gradients accumulated, no optimizer step (a
        streamed micro-batch of the stream trainer)."""
        return self._op(self._busy(
            "grads", self.cost.grad_s(tokens, seq_tokens, **_samples(lengths, None)),
            tokens=tokens, **attrs))

    def offload(self) -> simpy.Process:
        return self._op(self._busy("offload", self.cost.offload_s(), compute=False))

    def reload(self) -> simpy.Process:
        return self._op(self._busy("reload", self.cost.reload_s(), compute=False))

    def kill(self) -> None:
        """The trainer's processes die (a job restart): every pass queued or running
        stops now, and what ran of it is recorded as busy time."""
        for op in self._ops:
            if op.is_alive:
                op.interrupt("killed")
        self._ops.clear()

    def close(self) -> None:
        """The run ends now: a pass still holding the GPUs is recorded up to now (marked
        `open`); the rest of it is not simulated."""
        if self._running is None:
            return
        t0, name, compute, attrs = self._running
        now = self.env.now
        if compute:
            self.recorder.span(self.track, "busy", t0, now, pool=self.pool, gpus=self.gpus,
                               work=name, open=True)
        self.recorder.span(self.track, name, t0, now, **attrs, open=True)
        self._running = None

    def _op(self, body: Generator[simpy.Event, Any, float]) -> simpy.Process:
        proc = self.env.process(body)
        self._ops = [op for op in self._ops if op.is_alive]
        self._ops.append(proc)
        return proc

    def _busy(self, name: str, duration_s: float, compute: bool = True,
              **attrs: Any) -> Generator[simpy.Event, Any, float]:
        with self._gpus.request() as req:
            t0 = None  # when the pass got the GPUs
            try:
                yield req
                t0 = self.env.now
                duration_s *= self.slowdown
                self._running = (t0, name, compute, attrs)
                yield self.env.timeout(duration_s)
            except simpy.Interrupt:
                attrs = {**attrs, "killed": True}
            self._running = None
            if t0 is None:
                return 0.0  # killed while queued: it never ran
            if compute:
                self.recorder.span(self.track, "busy", t0, self.env.now, pool=self.pool,
                                   gpus=self.gpus, work=name)
            self.recorder.span(self.track, name, t0, self.env.now, **attrs)
        return duration_s
