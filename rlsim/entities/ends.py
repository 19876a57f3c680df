"""Ends: a queue of times whose minimum never goes back, for the environment pool's busy
workers.

Owns the structure only. The environment pool, once nearly all its workers are busy, needs
the earliest end of the steps in flight, to drop it and to add a later one (a step starts
when the first busy worker is free). A heap of W ends does that in log2(W) levels of
compared float objects: its cost per step grew with the pool (13 levels at 10,240 workers,
10 at 1,280; issue 40, `benchmarks/bench_turn_scaling.py`). Every end the pool adds is at or
after the last one it took (a step never ends before the time it starts), so the ends can
wait in a calendar, as the timers do (`calendar.Calendar`): buckets of 1/64 s, the earliest
one sorted once when its turn comes, the later ones plain lists. Adding and taking then
cost the same at any pool size, and the values taken are the heap's: the least ones, in
order.
"""

from __future__ import annotations

from rlsim.entities.calendar import PER_S, Calendar


class Ends(Calendar):
    """A multiset of times (floats >= 0) to which no time earlier than the last one taken
    is added: `add`, `first` (the least), `take` (remove and return it), `len()`."""

    def __init__(self) -> None:
        super().__init__()
        # The bucket in progress (`_bucket`) is `_cur`, sorted; its times not yet taken
        # start at `_pos`. Later buckets wait in the calendar.
        self._cur: list[float] = []
        self._pos = 0
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, t: float) -> None:
        """Add time `t` (not before the last time taken)."""
        self._n += 1
        bucket = int(t * PER_S)
        if bucket <= self._bucket:  # the bucket in progress: in its place after `_pos`
            cur = self._cur
            lo, hi = self._pos, len(cur)
            while lo < hi:
                mid = (lo + hi) >> 1
                if t < cur[mid]:
                    hi = mid
                else:
                    lo = mid + 1
            cur.insert(lo, t)
        else:
            self._file(bucket, t)

    def first(self) -> float:
        """The least time (the queue must not be empty: IndexError)."""
        if self._pos == len(self._cur):
            items = self._next_items()
            if items is None:
                raise IndexError("no time in the queue")
            items.sort()
            self._cur = items
            self._pos = 0
        return self._cur[self._pos]

    def take(self) -> float:
        """Remove the least time and return it (the queue must not be empty)."""
        t = self.first()
        self._pos += 1
        self._n -= 1
        return t

    def drop_until(self, t: float) -> None:
        """Remove every time at or before `t`."""
        while self._n and self.first() <= t:
            self._pos += 1
            self._n -= 1

    def values(self) -> list[float]:
        """The times in the queue, in no particular order."""
        out = self._cur[self._pos:]
        for waiting in self._ring:
            if waiting is not None:
                out.extend(waiting)
        for far in self._far.values():
            out.extend(far)
        return out
