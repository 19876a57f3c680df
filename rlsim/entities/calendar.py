"""Calendar: future items in buckets of simulated time, the mechanism the timers
(`timers.Timers`) and the environment pool's busy ends (`ends.Ends`) share.

Owns the buckets after the one in progress: item lists filed by bucket (1/64 s of
simulated time each), in a ring of RING slots while fewer than RING buckets ahead, else
in a dict with a heap of their numbers. The subclass keeps the bucket in progress (sorted
its own way) and asks for the next one when it is done. A list index, not a dict lookup,
per item: the dict of ~2,000 buckets missed the caches (issue 40). The next bucket is
found by walking the ring from the one in progress, a list index and a test for None a
slot, where a heap of every pending bucket's number (thousands at 128 GPUs) cost ~1,700
instructions of compared int objects a bucket (issue 40: 5% of a turn at 128 GPUs).
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any, Final

from mypy_extensions import i64

RING: Final = 4096  # buckets held in a ring of lists: 64 s ahead
SLOT: Final = RING - 1  # a bucket's slot: bucket & SLOT
PER_S: Final = 64.0  # buckets per simulated second
_NONE: Final = 1 << 62  # `_far_next` when no bucket is far


class Calendar:
    """Later buckets of items; `_bucket` is the number of the bucket in progress."""

    def __init__(self) -> None:
        self._bucket: i64 = -1
        self._ring: list[list[Any] | None] = [None] * RING
        self._near: i64 = 0  # ring slots holding a list
        # A bucket far when its first item came and near for a later one has a list in
        # both (the far one first when its turn comes).
        self._far: dict[int, list[Any]] = {}
        self._far_ids: list[int] = []  # a heap of `_far`'s buckets, each once
        self._far_next: i64 = _NONE  # its least

    def _file(self, bucket: i64, item: Any) -> None:
        """Put `item` in bucket `bucket`, after the one in progress, after the items
        already there."""
        if bucket - self._bucket < RING:
            ring = self._ring
            waiting = ring[bucket & SLOT]
            if waiting is None:
                ring[bucket & SLOT] = [item]
                self._near += 1
            else:
                waiting.append(item)
        else:
            far = self._far.get(bucket)
            if far is None:
                self._far[bucket] = [item]
                heappush(self._far_ids, bucket)
                if bucket < self._far_next:
                    self._far_next = bucket
            else:
                far.append(item)

    def _next_items(self) -> list[Any] | None:
        """The items of the next bucket that has any, which becomes the one in progress,
        in the order they were filed; None when no bucket has any."""
        ring = self._ring
        b = self._bucket + 1
        while True:
            if self._near == 0:  # none near: the next far one, if any
                if self._far_next == _NONE:
                    return None
                b = self._far_next
            # A slot holds the list of the one pending bucket that maps to it (one a whole
            # ring later is filed only after this one's turn), and the walk meets every
            # pending bucket in order.
            items = ring[b & SLOT]
            if items is not None:
                ring[b & SLOT] = None
                self._near -= 1
            if b == self._far_next:
                far = self._far.pop(b)
                heappop(self._far_ids)
                self._far_next = self._far_ids[0] if self._far_ids else _NONE
                if items is not None:  # the far ones came first
                    far.extend(items)
                items = far
            if items is not None:
                self._bucket = b
                return items
            b += 1
