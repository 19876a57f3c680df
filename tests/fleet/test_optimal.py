"""Offline optimum and lower bounds of RollMux's placement problem (rlsim/fleet/optimal.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.fleet.optimal import (
    StaticJob,
    TraceJob,
    brute_force_optimum,
    placement_feasible,
    set_partitions,
    static_lower_bound,
    work_lower_bound_usd,
)

R, T = 8 * 1.85, 8 * 5.28  # one H20 node, one H800 node, $/h [P Weave Table 1]


def test_set_partitions_are_bell_many_and_distinct() -> None:
    for n, bell in enumerate((1, 1, 2, 5, 15, 52)):
        parts = list(set_partitions(list(range(n))))
        assert len(parts) == bell
        canon = {tuple(sorted(tuple(sorted(b)) for b in p)) for p in parts}
        assert len(canon) == bell


def test_two_balanced_jobs_share_both_nodes() -> None:
    # loads 200 on each node = the solo iteration: the cycle stays 200, SLO 1.0 holds
    best = brute_force_optimum([StaticJob(100, 100, 1.0)] * 2, R, T)
    assert best.usd_per_hour == pytest.approx(R + T)


def test_two_rollout_heavy_jobs_share_only_the_train_node() -> None:
    # one rollout node would carry 800 s > 1.5 x 500 s; the train node carries 200 s
    best = brute_force_optimum([StaticJob(400, 100, 1.5)] * 2, R, T)
    assert best.usd_per_hour == pytest.approx(2 * R + T)
    assert len(best.roll_blocks) == 2 and len(best.train_blocks) == 1


def test_three_balanced_jobs_at_slo_1_2_need_two_pairs() -> None:
    # any node carrying all three is loaded 300 s > 1.2 x 200 s
    best = brute_force_optimum([StaticJob(100, 100, 1.2)] * 3, R, T)
    assert best.usd_per_hour == pytest.approx(2 * (R + T))


def test_group_size_limit() -> None:
    best = brute_force_optimum([StaticJob(100, 100, 1.0)] * 2, R, T, max_group=1)
    assert best.usd_per_hour == pytest.approx(2 * (R + T))
    assert not placement_feasible([StaticJob(10, 10, 2.0)] * 3, [[0, 1, 2]], [[0, 1, 2]], 2)


def test_work_bound_counts_every_phase_once() -> None:
    jobs = [TraceJob(steps=10, roll_s=360, train_s=180), TraceJob(2, 3600, 0, roll_nodes=2)]
    assert work_lower_bound_usd(jobs, R, T) == pytest.approx(
        (10 * 360 + 2 * 3600 * 2) / 3600 * R + 10 * 180 / 3600 * T)


jobs_st = st.lists(
    st.builds(StaticJob, st.floats(10, 600), st.floats(10, 600), st.floats(1.0, 2.0)),
    min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(jobs_st, st.integers(1, 5))
def test_static_bound_never_above_the_optimum(jobs: list[StaticJob], max_group: int) -> None:
    best = brute_force_optimum(jobs, R, T, max_group)
    assert static_lower_bound(jobs, R, T, max_group) <= best.usd_per_hour + 1e-9
    # and the optimum is never worse than every job alone on its own nodes
    assert best.usd_per_hour <= len(jobs) * (R + T) + 1e-9
    assert placement_feasible(jobs, [list(b) for b in best.roll_blocks],
                              [list(b) for b in best.train_blocks], max_group)


def test_appendix_arrivals_match_the_published_segment() -> None:
    # the stand-in for the Philly segment [P Weave 6.5]: 300 jobs, 580 h, 14.4 h, 142.9 h
    import csv
    from pathlib import Path

    path = Path(__file__).parents[2] / "scenarios/rollmux/appendix/arrivals.csv"
    rows = list(csv.DictReader(path.open()))
    dur = [float(r["duration_h"]) for r in rows]
    arr = [float(r["arrival_s"]) / 3600 for r in rows]
    assert len(rows) == 300
    assert sum(dur) / len(dur) == pytest.approx(14.4, abs=0.005)
    assert max(dur) == pytest.approx(142.9, abs=0.005)
    assert arr == sorted(arr) and arr[0] >= 0 and arr[-1] <= 580
