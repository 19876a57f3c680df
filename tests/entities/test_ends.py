"""`Ends`, the environment pool's calendar of busy workers' ends: it must take exactly what
a heap would, the least times in order, whatever buckets they fall in."""

from __future__ import annotations

import heapq

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.entities.ends import Ends

# An operation: add (the last time taken plus a gap), take, or drop until (the last time
# taken plus a gap). Gaps from ties (0) to within a bucket, across buckets and beyond the
# ring (64 s ahead).
GAPS = st.one_of(st.just(0.0), st.floats(0.0, 0.05), st.floats(0.0, 30.0),
                 st.floats(60.0, 500.0), st.integers(0, 4000).map(lambda k: k / 64))
OPS = st.lists(st.tuples(st.sampled_from(["add", "add", "take", "drop"]), GAPS),
               max_size=300)


class _Mirrored:
    """An `Ends` and a heap given the same operations, compared at each."""

    def __init__(self) -> None:
        self.ends, self.heap = Ends(), []

    def add(self, t: float) -> None:
        self.ends.add(t)
        heapq.heappush(self.heap, t)

    def take(self) -> float:
        assert self.ends.first() == self.heap[0]
        t = self.ends.take()
        assert t == heapq.heappop(self.heap)
        return t

    def drop_until(self, t: float) -> None:
        self.ends.drop_until(t)
        while self.heap and self.heap[0] <= t:
            heapq.heappop(self.heap)
        assert len(self.ends) == len(self.heap)

    def drain(self) -> None:
        """Both hold the same times; take them all."""
        assert len(self.ends) == len(self.heap)
        assert sorted(self.ends.values()) == sorted(self.heap)
        while self.heap:
            self.take()
        assert len(self.ends) == 0 and self.ends.values() == []


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_takes_what_a_heap_takes(ops):
    both = _Mirrored()
    last = 0.0  # the last time taken (or dropped up to): nothing earlier is added
    for op, gap in ops:
        if op == "add":
            both.add(last + gap)
        elif op == "take" and both.heap:
            last = both.take()
        elif op == "drop":
            last += gap
            both.drop_until(last)
        assert len(both.ends) == len(both.heap)
        assert sorted(both.ends.values()) == sorted(both.heap)
    both.drain()


def test_an_empty_queue_has_no_first():
    with pytest.raises(IndexError):
        Ends().first()
    ends = Ends()
    ends.drop_until(1e9)  # nothing to drop: fine
    assert len(ends) == 0


def test_takes_what_a_heap_takes_from_a_busy_pool():
    """A busy pool's ends (thousands a second, tens a bucket), some far ahead while their
    bucket fills near: the least times in order."""
    import random

    rng = random.Random(7)
    both = _Mirrored()
    for _ in range(2_000):  # 2,000 workers busy, their steps ending within 1 s
        both.add(rng.uniform(0, 1.0))
    for _ in range(20_000):  # each end frees a worker, which starts the next step
        last = both.take()
        t = last + rng.choice((0.0, rng.uniform(0, 1.0), rng.uniform(0, 1.0),
                               rng.uniform(60, 90)))
        for _ in range(rng.choice((1, 1, 2))):
            both.add(t)
        if rng.random() < 0.3:
            both.drop_until(last)
        assert len(both.ends) == len(both.heap)
    both.drain()


def test_a_far_bucket_comes_before_a_later_near_one():
    """A bucket filed far (over 64 s ahead) and one filed near once the calendar moved on,
    later than it: the walk of the ring takes the far one in its turn, merged with the
    near ends of its own bucket."""
    ends = Ends()
    ends.add(100.0)  # 6,400 buckets ahead: far
    ends.add(50.0)
    assert ends.take() == 50.0  # the calendar is at 50 s: 100 s is near now
    for t in (110.0, 100.5, 100.001):  # 100.001: near, in the far one's bucket
        ends.add(t)
    assert [ends.take() for _ in range(4)] == [100.0, 100.001, 100.5, 110.0]
    assert len(ends) == 0
