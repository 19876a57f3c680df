"""RollPacker's stream trainer: start training on finished samples while the tail generates.

Owns the scale-down decision, the streamed gradient computation and what it leaves for the
step's final update (REFERENCES.md, RollPacker; docs/research/rollpacker.md, section 4):

- Between `start` and `stop` of a round's launched responses finished, checked at every
  `every` of them, the second half of the rollout engines is released if the requests
  still running fit the first half's KV cache with room to grow: each is projected to
  end at the `projection_quantile` of the response lengths finished so far in the run
  (the "historical response length distribution") that exceed its current length, since
  a request still running has outlived the shorter ones; its true length stays unknown.
- The released engines' requests migrate to the kept ones, least loaded first: they keep
  their generated tokens, whose KV the kept engines rebuild by prefill.
- A trainer of the same layout on the released GPUs (fewer data-parallel replicas) loads
  its state from host memory, then computes, chunk by chunk as the done prompts' rewards
  complete, the reference/old log-probs and the accumulated gradients of their samples; no
  optimizer step (`Trainer.grads`).
- When the round ends, the chunk in flight completes; the step then trains only the
  samples not streamed, and its single optimizer step and gradient synchronization happen
  there (`Phases.train(..., streamed=...)`).
Scale-down needs a colocated job (the released GPUs change role), at least two engines,
and room for the trainer's state on half the GPUs; otherwise a round simply does not scale.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np
import simpy

from rlsim.entities.engine import Request, RolloutEngine
from rlsim.entities.trainer import Trainer
from rlsim.policies.phases import Phases, Sample, attention_length
from rlsim.trace import CONTROLLER

Migrate = Callable[[list[RolloutEngine]], None]


class StreamTrainer:
    """One per run: the history of response lengths carries over from round to round."""

    def __init__(self, ph: Phases, start: float = 0.2, stop: float = 0.5, every: float = 0.05,
                 projection_quantile: float = 0.9) -> None:
        self.ph = ph
        self.start, self.stop, self.every = start, stop, every
        self.quantile = projection_quantile
        self.history: list[int] = []
        c = ph.cluster
        half = c.placement.rollout_gpus // 2
        self.trainer: Trainer | None = None
        try:
            cost = c.train_cost.with_gpus(half)
        except ValueError:
            cost = None  # half the GPUs do not hold whole model replicas
        if cost is not None and half > 0 and cost.state_bytes_per_gpu() <= cost.gpu.hbm:
            self.trainer = Trainer(c.env, "stream", cost, c.placement.train_pool.name, half,
                                   c.recorder)
            c.recorder.instant("cluster", "entity", 0.0, track=self.trainer.track,
                               kind="trainer", pool=self.trainer.pool, gpus=half)
            c.closables.append(self.trainer)

    # ------------------------------------------------------------------ one round
    def begin_round(self, step: int, launched: int, live: Callable[[], list[Request]],
                    migrate: Migrate) -> None:
        self.step = step
        self.launched = launched
        self.finished = 0
        self.next_check = self.start
        self.live = live
        self.migrate = migrate
        self.scaled = False
        self.ready: list[tuple[float, list[Sample]]] = []  # (rewards done at, samples)
        self.streamed: list[Sample] = []
        self.round_over = False
        self._wake: simpy.Event | None = None
        self._proc: simpy.Process | None = None

    def scaled_now(self) -> bool:
        """Whether this round has released the second half of the rollout GPUs."""
        return self.scaled

    def on_finished(self, response_tokens: int) -> None:
        """A response of `response_tokens` finished (whether or not its prompt trains)."""
        self.finished += 1
        self.history.append(response_tokens)
        if self.scaled or self.trainer is None or self.next_check > self.stop + 1e-9:
            return
        if self.finished < self.next_check * self.launched:
            return
        while self.next_check <= self.stop + 1e-9 and \
                self.finished >= self.next_check * self.launched:
            self.next_check += self.every
        self._try_scale()

    def on_prompt_done(self, samples: list[Sample], rewards_done_s: float) -> None:
        """A prompt's R0 samples train this step; their rewards end at `rewards_done_s`."""
        self.ready.append((rewards_done_s, samples))
        self._poke()

    def end_round(self) -> Generator[simpy.Event, Any, list[Sample]]:
        """Stop streaming after the chunk in flight; returns the samples streamed."""
        self.round_over = True
        self._poke()
        if self._proc is not None:
            yield self._proc
        return self.streamed

    # ------------------------------------------------------------------ internals
    def _try_scale(self) -> None:
        engines = self.ph.cluster.engines
        if len(engines) < 2:
            return
        keep, release = engines[: len(engines) // 2], engines[len(engines) // 2:]
        # Where each running request will end, from what it has generated alone (its true
        # length is unknown to the system): the quantile of the finished lengths that are
        # longer than it already is (a request still running at g tokens is one of those).
        live = self.live()
        done = np.sort(np.asarray(self.history, dtype=float))
        generated = np.array([r.generated for r in live], dtype=float)
        ends = _suffix_quantiles(done, generated, self.quantile)
        projected = float(sum(r.prompt_tokens for r in live)
                          + np.maximum(generated + 1.0, ends).sum())
        capacity: int = sum(e.kv_capacity for e in keep)
        self.ph.rec.instant(CONTROLLER, "decision", self.ph.env.now, step=self.step,
                            what="stream_scale", scaled=projected <= capacity,
                            finished=self.finished, launched=self.launched,
                            projected_kv_tokens=int(projected), kv_capacity_tokens=capacity)
        if projected > capacity:
            return
        self.scaled = True
        self.migrate(release)
        self._proc = self.ph.env.process(self._stream())

    def _poke(self) -> None:
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def _stream(self) -> Generator[simpy.Event, Any, None]:
        env, trainer = self.ph.env, self.trainer
        assert trainer is not None
        yield trainer.reload()  # the trainer's state onto the released GPUs
        t = self.ph.cluster.scenario.train
        while not self.round_over:
            now = env.now
            # Every done prompt whose rewards are in, in the order they became ready.
            chunk = [s for ready_s, group in self.ready if ready_s <= now for s in group]
            self.ready = [(r, g) for r, g in self.ready if r > now]
            if not chunk:
                # Wait for a reward to land, a new done prompt, or the end of the round.
                self._wake = env.event()
                waits: list[simpy.Event] = [self._wake]
                if self.ready:
                    waits.append(env.timeout(min(r for r, _ in self.ready) - now))
                yield env.any_of(waits)
                self._wake = None
                continue
            tokens = sum(s.tokens for s in chunk)
            seq = attention_length(chunk)
            if t.ref_logprob:
                yield trainer.forward(tokens, "ref_logprob", seq, reference=True)
            if t.old_logprob:
                yield trainer.forward(tokens, "old_logprob", seq)
            yield trainer.grads(tokens, seq, step=self.step, samples=len(chunk))
            self.streamed.extend(chunk)


def _suffix_quantiles(done: np.ndarray, above: np.ndarray, q: float) -> np.ndarray:
    """For each value of `above`, the q-quantile (linear interpolation, as np.quantile) of
    the sorted `done` values greater than it; 0 where none is. Vectorised: one call per
    scale-down check, whatever the number of running requests."""
    n = done.size
    start = np.searchsorted(done, above, side="right")
    count = n - start
    out = np.zeros(above.shape, dtype=float)
    has = count > 0
    if not has.any():
        return out
    pos = start[has] + q * (count[has] - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    frac = pos - lo
    out[has] = done[lo] + frac * (done[hi] - done[lo])
    return out


def streamed_rest(samples: Sequence[Sample], streamed: Sequence[Sample]) -> list[Sample]:
    """The samples not streamed (by identity: equal samples are still distinct)."""
    done = {id(s) for s in streamed}
    return [s for s in samples if id(s) not in done]
