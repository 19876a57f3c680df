"""Reward worker pool: scores responses with per-sample latencies on W parallel workers.

Owns the mechanism only: FCFS list scheduling of sample latencies onto workers, computed
in one pass (a heap of worker free times) so a batch of thousands of samples costs one
SimPy event. Latencies are drawn by the caller (from the workload's random stream) so every
policy sees the same ones.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Sequence
from typing import Any

import simpy

from rlsim.entities.timers import Timers
from rlsim.trace import Recorder


class RewardPool:
    """W workers; each sample occupies one worker for its latency."""

    def __init__(self, env: simpy.Environment, workers: int, recorder: Recorder,
                 track: str = "reward") -> None:
        if workers <= 0:
            raise ValueError("reward pool needs at least one worker")
        self.env = env
        self.workers = workers
        self.recorder = recorder
        self.track = track
        self._free_at = [0.0] * workers  # heap of the times each worker becomes free
        self._open: list[float] | None = None  # submitted batch: [first submit, last end, n]
        # The clock read natively where a sample is scored (`submit`): `env.now` is a
        # property of the interpreted Environment, a Python call a read (issue 40).
        self._timers = Timers.of(env)

    def completion_times(self, latencies_s: Sequence[float]) -> list[float]:
        """Finish time of each sample submitted now, FCFS onto the first free worker."""
        now = self._timers.now()
        free = self._free_at
        out = []
        for lat in latencies_s:
            start = max(heapq.heappop(free), now)
            end = start + lat
            heapq.heappush(free, end)
            out.append(end)
        return out

    def submit(self, latency_s: float) -> float:
        """Score one sample submitted now (asynchronous reward); returns its finish time.

        The samples submitted since the last `close_batch` are recorded as one `score` span
        when the batch is closed, so per-sample scoring costs no SimPy event.
        """
        end = self.completion_times([latency_s])[0]
        if self._open is None:
            self._open = [self._timers.now(), end, 0]
        self._open[1] = max(self._open[1], end)
        self._open[2] += 1
        return end

    def close_batch(self) -> None:
        """Record the samples submitted one by one since the last call as one span."""
        if self._open is not None:
            t0, t1, n = self._open
            self.recorder.span(self.track, "score", t0, t1, samples=int(n))
            self._open = None

    def score(self, latencies_s: Sequence[float]) -> simpy.Process:
        """Score a batch submitted now; the process ends when the last sample is scored."""
        return self.env.process(self._score(list(latencies_s)))

    def _score(self, latencies_s: list[float]) -> Generator[simpy.Event, Any, float]:
        t0 = self.env.now
        ends = self.completion_times(latencies_s)
        end = max(ends, default=t0)
        yield self.env.timeout(end - t0)
        self.recorder.span(self.track, "score", t0, end, samples=len(latencies_s))
        return end
