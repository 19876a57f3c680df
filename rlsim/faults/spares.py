"""The spare-node pool: how long a node fault waits for a replacement node.

SimPy-free, shared by the detailed simulation (`policies.recovery`) and the job-level
horizon (`rlsim.horizon`), so both wait alike. Without a count (`spares: None`) a spare is
always there and the wait is the hand-over (`swap_s`). With a count, a fault takes a spare
if one is free; the failed node goes to repair and rejoins the spares `repair_s` later; a
fault finding none waits for the earliest node back from repair (its own, with no spares
at all), then the hand-over.
"""

from __future__ import annotations

import heapq

from rlsim.config.faults import NodeRecoveryConfig


class SparePool:
    """The spares of one run (faults must be taken in time order)."""

    def __init__(self, cfg: NodeRecoveryConfig) -> None:
        self.swap_s = cfg.swap_s
        self.repair_s = cfg.repair_s
        self.free = cfg.spares  # None: unlimited
        self._back: list[float] = []  # when nodes in repair rejoin the spares

    def take(self, now: float) -> float:
        """A node failed at `now`: seconds until its replacement is in the job."""
        if self.free is None:
            return self.swap_s
        assert self.repair_s is not None  # NodeRecoveryConfig requires it with a count
        while self._back and self._back[0] <= now:
            heapq.heappop(self._back)
            self.free += 1
        if self.free > 0:
            self.free -= 1
            heapq.heappush(self._back, now + self.repair_s)
            return self.swap_s
        if self._back and self._back[0] < now + self.repair_s:
            # the next node back from repair replaces it; the failed one goes to repair
            wait = heapq.heappop(self._back) - now
            heapq.heappush(self._back, now + self.repair_s)
            return wait + self.swap_s
        return self.repair_s + self.swap_s  # no spare at all: its own repair
