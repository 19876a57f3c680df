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


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_takes_what_a_heap_takes(ops):
    ends, heap = Ends(), []
    last = 0.0  # the last time taken (or dropped up to): nothing earlier is added
    for op, gap in ops:
        if op == "add":
            ends.add(last + gap)
            heapq.heappush(heap, last + gap)
        elif op == "take" and heap:
            assert ends.first() == heap[0]
            last = ends.take()
            assert last == heapq.heappop(heap)
        elif op == "drop":
            last += gap
            ends.drop_until(last)
            while heap and heap[0] <= last:
                heapq.heappop(heap)
        assert len(ends) == len(heap)
        assert sorted(ends.values()) == sorted(heap)
    while heap:
        assert ends.take() == heapq.heappop(heap)
    assert len(ends) == 0 and ends.values() == []


def test_an_empty_queue_has_no_first():
    with pytest.raises(IndexError):
        Ends().first()
    ends = Ends()
    ends.drop_until(1e9)  # nothing to drop: fine
    assert len(ends) == 0
