"""Environment worker pool: the sandboxes that run the steps between turns of a rollout.

Owns the mechanism only: W workers; each environment step occupies the first free worker
(FCFS in submission order) for its latency, so steps queue when all workers are busy. The
schedule is list scheduling over the ends of the steps in flight, so one step costs one
SimPy event (`run`), or one timer (`run_then`, a callback without an event object: see
`timers.Timers`). Latencies come from the caller (a recorded rollout), never drawn here. A
span per step (track `env`, name `env_step`) is recorded only at request detail, like engine
request spans, to keep phase-level records small.
"""

from __future__ import annotations

import heapq
from typing import Any, Final

import simpy
from librt.vecs import append, vec
from simpy.events import Timeout

from rlsim.entities.ends import Ends
from rlsim.entities.timers import Callback, Timers, TimerTarget
from rlsim.trace import Recorder

# Final: compiled, a static each, not a lookup in the module's globals per step.
_heapreplace: Final = heapq.heapreplace


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
        # (time the worker becomes free, worker index): ties go to the lowest index. Kept
        # only at request detail, where each step's span names its worker.
        self._free_at = [(0.0, i) for i in range(workers)] if recorder.per_request else []
        # Otherwise only start times matter, and a step starts at the earliest time a worker
        # is free whichever worker that is: the ends of the steps still running say when,
        # once all W are busy. While fewer than 7/8 of the workers are busy they are a plain
        # list, appended to and purged of past ends only when it reaches W entries (no
        # ordered structure per step: most pools never run out of workers; a purge comes at
        # most once every W/8 steps); beyond that, a calendar of ends (`ends.Ends`: the
        # same cost at any pool size, where a heap's grew with it), until the steps in
        # flight fall to 3/4 of the workers (`_take`).
        # Unboxed (`librt.vecs`): a purge reads all W ends, and at 10,240 workers a list of
        # float objects, each made at its step, was W objects out of the CPU's caches.
        self._busy: vec[float] = vec[float]()
        self._ends = Ends()
        self._saturated = False
        self._list_max = workers * 7 // 8
        self._list_min = workers * 3 // 4
        self.steps = 0
        self._timers = Timers.of(env)

    def _schedule(self, latency_s: float) -> tuple[float, float, int]:
        """(start, end, worker) of a step submitted now (worker -1 when not recorded)."""
        if latency_s < 0:
            raise ValueError(f"environment step latency must be >= 0, got {latency_s}")
        now = self._timers.now()
        self.steps += 1
        free_at = self._free_at
        if free_at:
            free, worker = free_at[0]  # the first free worker
            start = now if now > free else free  # max(free, now), as a float at t = 0
            end = start + latency_s
            _heapreplace(free_at, (end, worker))
            return start, end, worker
        start = self._take(now, latency_s)
        return start, start + latency_s, -1

    def _take(self, now: float, latency_s: float) -> float:
        """When a step submitted now starts (its end is kept as a busy worker's)."""
        ends = self._ends
        if not self._saturated:
            busy = self._busy
            if len(busy) < self.workers:  # fewer entries than workers: one is free
                self._busy = append(busy, now + latency_s)
                return now
            # Steps that have ended free their workers.
            kept = vec[float](capacity=len(busy))
            for end in busy:
                if end > now:
                    kept = append(kept, end)
            if len(kept) < self._list_max:
                self._busy = append(kept, now + latency_s)
                return now
            for end in kept:
                ends.add(end)
            self._busy = vec[float]()
            self._saturated = True
        ends.drop_until(now)  # steps that have ended free their workers
        if len(ends) < self.workers:
            ends.add(now + latency_s)
            if len(ends) <= self._list_min:  # a plain list from here on
                self._busy = vec[float](ends.values())
                self._ends = Ends()
                self._saturated = False
            return now
        start = ends.take()  # every worker busy: the first to finish takes it
        ends.add(start + latency_s)
        return start

    def run(self, latency_s: float) -> simpy.Event:
        """An environment step submitted now; the event fires when it has finished."""
        start, end, worker = self._schedule(latency_s)
        now = self._timers.now()
        done = Timeout(self.env, end - now)
        if self.recorder.per_request:
            rec, track = self.recorder, self.track
            done.callbacks.append(lambda _ev: rec.span(
                track, "env_step", start, end, worker=worker, queued_s=start - now))
        return done

    def run_then(self, latency_s: float, fn: Callback, arg: Any = None) -> None:
        """An environment step submitted now; `fn(arg)` (`fn.on_timer(arg)` for a
        `TimerTarget`) runs when it has finished, in the order a callback on `run`'s event
        would."""
        if self._free_at or latency_s < 0:
            now = self._timers.now()
            start, end, worker = self._schedule(latency_s)
            if self.recorder.per_request:
                self._timers.call_in(end - now, self._recorded,
                                     (start, end, worker, start - now, fn, arg))
            else:
                self._timers.call_in(end - now, fn, arg)
            return
        # Unrecorded: floats throughout (compiled: no boxed numbers), the same values.
        now_s = self._timers.now_s()
        self.steps += 1
        end_s = self._take(now_s, latency_s) + latency_s
        self._timers.call_in_s(end_s - now_s, fn, arg)

    def _recorded(self, job: tuple[float, float, int, float, Callback, Any]) -> None:
        start, end, worker, queued, fn, arg = job
        self.recorder.span(self.track, "env_step", start, end, worker=worker, queued_s=queued)
        if isinstance(fn, TimerTarget):
            fn.on_timer(arg)
        else:
            fn(arg)
