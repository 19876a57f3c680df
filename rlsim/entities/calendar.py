"""Calendar: future items in buckets of simulated time, the mechanism the timers
(`timers.Timers`) and the environment pool's busy ends (`ends.Ends`) share.

Owns the buckets after the one in progress: item lists filed by bucket (1/64 s of
simulated time each), in a ring of RING slots while fewer than RING buckets ahead, else
in a dict, and the heap of their bucket numbers. The subclass keeps the bucket in progress
(sorted its own way) and asks for the next one when it is done. A list index, not a dict
lookup, per item: the dict of ~2,000 buckets missed the caches (issue 40).
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any, Final

from mypy_extensions import i64

RING: Final = 4096  # buckets held in a ring of lists: 64 s ahead
SLOT: Final = RING - 1  # a bucket's slot: bucket & SLOT
PER_S: Final = 64.0  # buckets per simulated second


class Calendar:
    """Later buckets of items; `_bucket` is the number of the bucket in progress."""

    def __init__(self) -> None:
        # A bucket far when its first item came and near for a later one has a list in
        # both (merged when its turn comes) and its number twice in `_ids`.
        self._bucket: i64 = -1
        self._ring: list[list[Any] | None] = [None] * RING
        self._far: dict[int, list[Any]] = {}
        self._ids: list[int] = []

    def _file(self, bucket: i64, item: Any) -> None:
        """Put `item` in bucket `bucket`, after the one in progress, after the items
        already there."""
        if bucket - self._bucket < RING:
            ring = self._ring
            waiting = ring[bucket & SLOT]
            if waiting is None:
                ring[bucket & SLOT] = [item]
                heappush(self._ids, bucket)
            else:
                waiting.append(item)
        else:
            far = self._far.get(bucket)
            if far is None:
                self._far[bucket] = [item]
                heappush(self._ids, bucket)
            else:
                far.append(item)

    def _next_items(self) -> list[Any] | None:
        """The items of the next bucket that has any, which becomes the one in progress,
        in the order they were filed; None when no bucket has any."""
        ids = self._ids
        while ids:
            bucket: i64 = heappop(ids)
            if bucket <= self._bucket:
                continue  # its number's second entry: it has been taken
            # A pending bucket's ring slot holds its list or none: one in the same slot
            # RING buckets later came only after this one's turn.
            items = self._ring[bucket & SLOT]
            self._ring[bucket & SLOT] = None
            if self._far:
                far = self._far.pop(bucket, None)
                if far is not None:
                    if items is not None:  # the far ones came first
                        far.extend(items)
                    items = far
            if items is not None:
                self._bucket = bucket
                return items
        return None
