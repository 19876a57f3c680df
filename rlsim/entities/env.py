"""Environment worker pool: the sandboxes that run the steps between turns of a rollout.

Owns the mechanism only: W workers; each environment step occupies the first free worker
(FCFS in submission order) for its latency, so steps queue when all workers are busy. The
schedule is list scheduling over a heap of worker free times, so one step costs one SimPy
event. Latencies come from the caller (a recorded rollout), never drawn here. A span per
step (track `env`, name `env_step`) is recorded only at request detail, like engine request
spans, to keep phase-level records small.
"""

from __future__ import annotations

import heapq

import simpy

from rlsim.trace import Recorder


class EnvPool:
    """W environment workers; `run(latency_s)` is one environment step."""

    def __init__(self, env: simpy.Environment, workers: int, recorder: Recorder,
                 track: str = "env") -> None:
        if workers <= 0:
            raise ValueError("environment pool needs at least one worker")
        self.env = env
        self.workers = workers
        self.recorder = recorder
        self.track = track
        # (time the worker becomes free, worker index): ties go to the lowest index.
        self._free_at = [(0.0, i) for i in range(workers)]
        self.steps = 0

    def run(self, latency_s: float) -> simpy.Event:
        """An environment step submitted now; the event fires when it has finished."""
        if latency_s < 0:
            raise ValueError(f"environment step latency must be >= 0, got {latency_s}")
        now = self.env.now
        free, worker = heapq.heappop(self._free_at)
        start = max(free, now)
        end = start + latency_s
        heapq.heappush(self._free_at, (end, worker))
        self.steps += 1
        done = self.env.timeout(end - now)
        if self.recorder.per_request:
            rec, track = self.recorder, self.track
            done.callbacks.append(lambda _ev: rec.span(
                track, "env_step", start, end, worker=worker, queued_s=start - now))
        return done
