"""The environment worker pool: FCFS onto the first free worker, one event per step."""

from __future__ import annotations

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.entities.env import EnvPool
from rlsim.trace import Recorder


def _steps(workers: int, jobs: list[tuple[float, float]], detail: str = "request"):
    """Submit (arrival, latency) jobs; returns their finish times and the recorder."""
    env = simpy.Environment()
    rec = Recorder(detail)
    pool = EnvPool(env, workers, rec)
    done: dict[int, float] = {}

    def job(i: int, at: float, lat: float):
        yield env.timeout(at)
        yield pool.run(lat)
        done[i] = env.now

    for i, (at, lat) in enumerate(jobs):
        env.process(job(i, at, lat))
    env.run()
    return [done[i] for i in range(len(jobs))], rec


def test_steps_queue_for_the_first_free_worker():
    # 2 workers: jobs 0 and 1 start at once; job 2 (t=0.5) waits for job 1 (free at 1);
    # job 3 (t=0.5) waits for job 0 (free at 2); job 4 arrives at 10 to an idle pool.
    ends, rec = _steps(2, [(0, 2.0), (0, 1.0), (0.5, 3.0), (0.5, 1.0), (10, 0.5)])
    assert ends == pytest.approx([2.0, 1.0, 4.0, 3.0, 10.5])
    spans = [s for s in rec.spans if s.track == "env"]
    assert len(spans) == 5 and all(s.name == "env_step" for s in spans)
    queued = sorted(round(s.attrs["queued_s"], 9) for s in spans)
    assert queued == [0.0, 0.0, 0.0, 0.5, 1.5]


def test_one_worker_serializes_and_zero_latency_still_waits():
    ends, _ = _steps(1, [(0, 1.0), (0, 0.0), (0, 1.0)])
    assert ends == pytest.approx([1.0, 1.0, 2.0])


def test_spans_only_at_request_detail():
    _, rec = _steps(2, [(0, 1.0)], detail="phase")
    assert rec.spans == []


def test_bad_arguments():
    env = simpy.Environment()
    with pytest.raises(ValueError, match="at least one worker"):
        EnvPool(env, 0, Recorder())
    with pytest.raises(ValueError, match=">= 0"):
        EnvPool(env, 1, Recorder()).run(-1.0)


def _list_schedule(workers: int, jobs: list[tuple[float, float]]) -> list[float]:
    """Finish times by list scheduling as first written: FCFS in submission order, each job
    on the worker free first (a full scan, no heap)."""
    free = [0.0] * workers
    ends = [0.0] * len(jobs)
    for i in sorted(range(len(jobs)), key=lambda i: (jobs[i][0], i)):
        at, lat = jobs[i]
        w = min(range(workers), key=lambda w: max(free[w], at))
        free[w] = ends[i] = max(free[w], at) + lat
    return ends


@settings(max_examples=150, deadline=None)
@given(workers=st.integers(1, 12),
       jobs=st.lists(st.tuples(st.integers(0, 40).map(lambda t: t / 4),
                               st.integers(0, 24).map(lambda t: t / 4)), max_size=60),
       detail=st.sampled_from(["phase", "request"]))
def test_schedule_matches_list_scheduling(workers, jobs, detail):
    # The pool keeps the busy workers' ends as a list while few are busy and as a heap
    # when nearly all are (`EnvPool._take`); whichever, every step starts at the list
    # schedule's time. Quarter seconds: exact in binary, so ties are real ties.
    ends, _ = _steps(workers, jobs, detail)
    assert ends == _list_schedule(workers, jobs)


def test_run_then_and_run_share_the_workers():
    env = simpy.Environment()
    pool = EnvPool(env, 2, Recorder())
    done: list[tuple[str, float]] = []
    pool.run_then(2.0, lambda tag: done.append((tag, env.now)), "a")
    pool.run_then(1.0, lambda tag: done.append((tag, env.now)), "b")
    pool.run(1.0).callbacks.append(lambda _ev: done.append(("c", env.now)))
    env.run()
    assert done == [("b", 1.0), ("a", 2.0), ("c", 2.0)]
