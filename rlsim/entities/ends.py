"""Ends: a queue of times whose minimum never goes back, for the environment pool's busy
workers.

Owns the structure only. The environment pool, once nearly all its workers are busy, needs
the earliest end of the steps in flight, to drop it and to add a later one (a step starts
when the first busy worker is free). A heap of W ends does that in log2(W) levels of
compared float objects: its cost per step grew with the pool (13 levels at 10,240 workers,
10 at 1,280; issue 40, `benchmarks/bench_turn_scaling.py`). Every end the pool adds is at or
after the last one it took (a step never ends before the time it starts), so the ends can
wait in a calendar, as the timers do (`timers.Timers`): buckets of 1/64 s, the earliest one
sorted once when its turn comes, the later ones plain lists in a ring (or a dict beyond
it). Adding and taking then cost the same at any pool size, and the values taken are the
heap's: the least ones, in order.
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Final

_RING: Final = 4096  # buckets held in a ring of lists: 64 s ahead
_SLOT: Final = _RING - 1  # a bucket's slot: bucket & _SLOT
_PER_S: Final = 64.0  # buckets per second


class Ends:
    """A multiset of times (floats >= 0) to which no time earlier than the last one taken
    is added: `add`, `first` (the least), `take` (remove and return it), `len()`."""

    def __init__(self) -> None:
        # The bucket in progress is `_cur`, sorted; its times not yet taken start at `_pos`.
        # Later buckets wait as lists in `_ring` (slot: bucket mod _RING) while fewer than
        # _RING buckets ahead, else in `_far`; their numbers in the heap `_ids` (a bucket
        # far when its first time came and near for a later one is in both, merged when its
        # turn comes, and its number is in `_ids` twice).
        self._cur: list[float] = []
        self._pos = 0
        self._bucket = -1
        self._ring: list[list[float] | None] = [None] * _RING
        self._far: dict[int, list[float]] = {}
        self._ids: list[int] = []
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, t: float) -> None:
        """Add time `t` (not before the last time taken)."""
        self._n += 1
        bucket = int(t * _PER_S)
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
        elif bucket - self._bucket < _RING:
            ring = self._ring
            waiting = ring[bucket & _SLOT]
            if waiting is None:
                ring[bucket & _SLOT] = [t]
                heappush(self._ids, bucket)
            else:
                waiting.append(t)
        else:
            far = self._far.get(bucket)
            if far is None:
                self._far[bucket] = [t]
                heappush(self._ids, bucket)
            else:
                far.append(t)

    def first(self) -> float:
        """The least time (the queue must not be empty)."""
        if self._pos == len(self._cur):
            self._next_bucket()
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

    def _next_bucket(self) -> None:
        """Make the next bucket with times the one in progress."""
        ids = self._ids
        while True:
            bucket = heappop(ids)  # IndexError when empty: `first` of an empty queue
            if bucket <= self._bucket:
                continue  # its number's second entry: it has been taken
            # A pending bucket's ring slot holds its list or none: one in the same slot
            # _RING buckets later came only after this one's turn.
            cur = self._ring[bucket & _SLOT]
            self._ring[bucket & _SLOT] = None
            if self._far:
                far = self._far.pop(bucket, None)
                if far is not None:
                    if cur is not None:
                        far.extend(cur)
                    cur = far
            if cur is not None:
                break
        cur.sort()
        self._cur = cur
        self._pos = 0
        self._bucket = bucket
