"""What the live job pays outside its compute, as the derived scenario replays it: the
reward pool's per-sample seconds as the job saw them (dispatch and pipes included)."""

from __future__ import annotations

import statistics
import time

import pytest
import simpy

from calibration.live.reward import RewardPool, job_seconds
from calibration.live.tasks import draw_batch
from rlsim.entities.reward import RewardPool as SimRewardPool
from rlsim.trace import Recorder


def _replayed_makespan_s(secs: list[float], workers: int) -> float:
    """rlsim's reward pool scoring these per-sample seconds as one batch (sync's reward)."""
    pool = SimRewardPool(simpy.Environment(), workers, Recorder())
    return max(pool.completion_times(secs))


def test_a_batch_cost_is_spread_so_the_pool_replays_it_in_the_same_time() -> None:
    # 1 s of wall time on 2 workers for 4 samples that scored in 0.1 s together: each
    # keeps its own scoring time and takes a quarter of the other 1.9 worker-seconds.
    secs = job_seconds(1.0, 2, [0.04, 0.03, 0.02, 0.01])
    assert secs == pytest.approx([0.04 + 0.475, 0.03 + 0.475, 0.02 + 0.475, 0.01 + 0.475])
    assert _replayed_makespan_s(secs, 2) == pytest.approx(1.0, rel=0.05)
    # Scoring that already fills the wall time gets nothing added; an empty batch nothing.
    assert job_seconds(0.1, 1, [0.06, 0.05]) == pytest.approx([0.06, 0.05])
    assert job_seconds(0.1, 2, []) == []


def test_replayed_reward_seconds_cover_what_the_job_waited_for_the_pool() -> None:
    """Regression: the pool recorded only the scoring function's microseconds, so the
    simulated sync `reward` phase took ~0.01 ms where the job waited 1-7 ms for the pool."""
    problems = draw_batch(0, 0, 32)
    items = [(p.answer, p.answer if k % 2 else "wrong") for p in problems for k in range(4)]
    pool = RewardPool(2)
    ratios = []
    try:
        for _ in range(7):
            t0 = time.perf_counter()
            scored = pool.score(items)
            wall_s = time.perf_counter() - t0
            assert [r for r, _ in scored] == [1.0 if k % 2 else 0.0
                                              for _ in problems for k in range(4)]
            ratios.append(_replayed_makespan_s([s for _, s in scored], pool.workers) / wall_s)
    finally:
        pool.close()
    # The median call (a call is 0.2-2 ms, so one preemption outside the timed map can
    # halve a single ratio); the old code's ratio was about 0.01.
    assert 0.5 <= statistics.median(ratios) <= 1.5, ratios


def test_link_latency_makes_a_simulated_sync_cost_the_measured_median() -> None:
    pytest.importorskip("torch")  # calibration.live.weightsync times torch copies
    from calibration.live.weightsync import link_latency_s

    sync_s = [1.2e-3, 1.0e-3, 1.5e-3]
    weight_bytes, bandwidth = 2.6e6, 2.6e10  # a 0.1 ms bandwidth term
    latency = link_latency_s(sync_s, weight_bytes, bandwidth)
    assert latency + weight_bytes / bandwidth == pytest.approx(1.2e-3)
    # A sync the bandwidth term already covers keeps the schema's 10 us floor.
    assert link_latency_s([1e-5], weight_bytes, bandwidth) == 1e-5
