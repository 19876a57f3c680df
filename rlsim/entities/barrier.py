"""A countdown barrier: one SimPy event that fires when N callbacks have arrived.

Cheaper than `AllOf` over thousands of per-request events: requests call `arrive` from
their completion callback, and only the last arrival schedules an event.
"""

from __future__ import annotations

from typing import Any

import simpy


class Barrier:
    """Fires `done` when `count` arrivals have happened (at once if count is 0).

    `times[i]` is the simulated time at which `items[i]` arrived.
    """

    __slots__ = ("count", "done", "env", "items", "times")

    def __init__(self, env: simpy.Environment, count: int) -> None:
        self.env = env
        self.count = count
        self.items: list[Any] = []
        self.times: list[float] = []
        self.done = env.event()
        if count == 0:
            self.done.succeed(self.items)

    @property
    def arrived(self) -> int:
        return len(self.items)

    def arrive(self, item: Any = None) -> None:
        # Once per response of a batch: the count is the list's length, `_now` is `now`
        # without the property call.
        items = self.items
        n = len(items) + 1
        if n > self.count:
            raise RuntimeError("barrier: more arrivals than expected")
        items.append(item)
        self.times.append(self.env._now)
        if n == self.count:
            self.done.succeed(items)
