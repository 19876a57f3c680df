"""The co-execution estimate against closed forms on toy groups."""

from __future__ import annotations

import pytest

from rlsim.fleet.cycle import CycleJob, iteration_times, spec_iteration_times, specs, stretched_s

R0, T0 = ("roll", 0), ("train", 0)


def cj(name: str, roll: float, train: float, sync: float = 0.0, warm_r: float = 0.0,
       warm_t: float = 0.0, **tail: float) -> CycleJob:
    return CycleJob(name, (R0,), (T0,), roll, train, sync, warm_r, warm_t, **tail)


def test_alone_a_job_iterates_at_its_chain() -> None:
    assert iteration_times([cj("a", 100, 60, sync=5)])["a"] == pytest.approx(165)


@pytest.mark.parametrize(("ra", "ta", "rb", "tb"), [
    (100, 60, 80, 90),     # rollout-bound: sum of rollouts binds
    (40, 100, 50, 90),     # train-bound
    (100, 100, 100, 100),  # fully complementary
    (30, 200, 200, 30),    # mirror images
])
def test_two_job_group_cycle_is_the_closed_form(ra: float, ta: float, rb: float,
                                                tb: float) -> None:
    """Two jobs sharing one rollout and one train node: every job iterates once per
    meta-iteration of max(sum of rollouts, sum of trains) plus the switches (each node
    switches twice), or its own chain if longer."""
    wr, wt, sync = 2.0, 3.0, 5.0
    a = cj("a", ra, ta, sync, wr, wt)
    b = cj("b", rb, tb, sync, wr, wt)
    times = iteration_times([a, b], iterations=40)
    closed = max(ra + rb + 2 * wr, ta + tb + 2 * wt,
                 ra + ta + sync + wr + wt, rb + tb + sync + wr + wt)
    assert times["a"] == pytest.approx(closed, rel=0.01)
    assert times["b"] == pytest.approx(closed, rel=0.01)


def test_job_level_sharing_serializes_whole_iterations() -> None:
    a, b = cj("a", 100, 60, 5, 2, 3), cj("b", 80, 90, 5, 2, 3)
    times = iteration_times([a, b], interleave=False, iterations=20)
    closed = (100 + 60 + 3) + (80 + 90 + 3)  # a switch costs the larger of its warm starts
    assert times["a"] == pytest.approx(closed, rel=0.01)


def test_stretched_phase_closed_form() -> None:
    # a tail holds 40% of the node until t=10: the first 10 s run at 60%
    assert stretched_s(0.0, 6.0, [(10.0, 0.4)]) == pytest.approx(10.0)
    assert stretched_s(0.0, 10.0, [(10.0, 0.4)]) == pytest.approx(14.0)
    assert stretched_s(20.0, 5.0, [(10.0, 0.4)]) == pytest.approx(5.0)


def test_migration_lets_the_next_rollout_start_early() -> None:
    """A long-tailed rollout that migrates at 50% frees most of its node; the other job's
    rollout runs beside its tail and the pair iterates faster than without migration."""
    tail = {"tail_at": 0.5, "tail_fraction": 0.25, "tail_stretch": 1.0}
    plain = iteration_times([cj("a", 100, 10), cj("b", 100, 10)], iterations=20)
    moved = iteration_times([cj("a", 100, 10, **tail), cj("b", 100, 10, **tail)],
                            iterations=20)
    assert moved["a"] < plain["a"]
    assert plain["a"] == pytest.approx(200, rel=0.01)


def test_the_replay_depends_on_the_group_shape_only() -> None:
    """The scheduler memoizes replays on `specs`: renaming jobs and renumbering nodes (in
    the same order) must give the same key and the same times."""
    a = CycleJob("a", (("roll", 3), ("roll", 5)), (("train", 2),), 120, 40, 5, 2, 2)
    b = CycleJob("b", (("roll", 5),), (("train", 2), ("train", 7)), 80, 90, 5, 2, 2)
    x = CycleJob("x", (("roll", 10), ("roll", 11)), (("train", 0),), 120, 40, 5, 2, 2)
    y = CycleJob("y", (("roll", 11),), (("train", 0), ("train", 1)), 80, 90, 5, 2, 2)
    assert specs([a, b]) == specs([x, y])
    ab, xy = iteration_times([a, b]), iteration_times([x, y])
    assert (ab["a"], ab["b"]) == (xy["x"], xy["y"]) == spec_iteration_times(specs([a, b]))
    assert specs([b, a]) != specs([a, b])  # the order is the replay's tie-break
