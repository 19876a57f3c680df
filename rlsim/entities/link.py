"""Network link with bandwidth fair-shared among concurrent transfers (processor sharing).

Owns the mechanism: each active transfer gets bandwidth / n; the link recomputes the next
completion only when a transfer starts or ends, so a transfer costs O(1) events.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import simpy

from rlsim.trace import Recorder


class Link:
    """A shared pipe of `bandwidth_bytes_per_s` with a fixed one-way latency."""

    def __init__(self, env: simpy.Environment, name: str, bandwidth_bytes_per_s: float,
                 latency_s: float, recorder: Recorder) -> None:
        if bandwidth_bytes_per_s <= 0:
            raise ValueError(f"link {name}: bandwidth must be positive")
        self.env = env
        self.name = name
        self.bandwidth = bandwidth_bytes_per_s
        self.latency_s = latency_s
        self.recorder = recorder
        self._active: dict[int, list[Any]] = {}  # id -> [remaining_bytes, done_event]
        self._next_id = 0
        self._last = 0.0
        self._wake: simpy.Event | None = None
        self._proc = env.process(self._run())

    def transfer(self, size_bytes: float, label: str = "transfer") -> simpy.Process:
        """Send `size_bytes`; the process ends when the last byte has arrived."""
        return self.env.process(self._transfer(size_bytes, label))

    def set_bandwidth(self, bandwidth_bytes_per_s: float) -> None:
        """Change the link's rate from now on (a fail-slow link, or its recovery); bytes
        already sent are charged at the old rate."""
        self._drain()
        self.bandwidth = bandwidth_bytes_per_s
        self._kick()

    def _transfer(self, size_bytes: float, label: str) -> Generator[simpy.Event, Any, float]:
        t0 = self.env.now
        if size_bytes > 0:
            self._drain()
            done = self.env.event()
            self._active[self._next_id] = [float(size_bytes), done]
            self._next_id += 1
            self._kick()
            yield done
        yield self.env.timeout(self.latency_s)
        self.recorder.span(f"link.{self.name}", label, t0, self.env.now, size_bytes=size_bytes)
        return self.env.now - t0

    def _drain(self) -> None:
        """Charge the bytes sent since the last change to every active transfer."""
        now = self.env.now
        if self._active:
            sent = (now - self._last) * self.bandwidth / len(self._active)
            for item in self._active.values():
                item[0] -= sent
        self._last = now

    def _kick(self) -> None:
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def _run(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        while True:
            if not self._active:
                self._wake = env.event()
                yield self._wake
                continue
            rate = self.bandwidth / len(self._active)
            smallest = min(item[0] for item in self._active.values())
            self._wake = env.event()
            yield env.timeout(max(smallest, 0.0) / rate) | self._wake
            self._drain()
            # Bytes within float rounding of zero count as delivered: both a relative epsilon
            # and the bytes that move in one ulp of the clock (at large `now`, a smaller
            # leftover would need a timeout that does not advance time, and never finish).
            eps = max(1e-9 * max(1.0, smallest), 4.0 * math.ulp(env.now) * rate)
            for key in [k for k, item in self._active.items() if item[0] <= eps]:
                _, done = self._active.pop(key)
                done.succeed()
