"""Reward workers: exact-match scoring in a pool of worker processes.

`RewardPool.score(items)` sends (answer, response) pairs to the workers in chunks and
returns, per sample, the reward and its seconds as the job paid them (what rlsim's reward
pool replays): the call's wall time (pickling, the pool's queues and pipes, the workers'
wake-ups, the scoring, the answers' way back) spread over the samples so that the pool's
W workers, replaying them, take that time: each sample's own scoring time plus an equal
share of the rest. Exact match scores in microseconds, and the dispatch, which no worker
runs in parallel, is nearly all of the 1-7 ms a step waits; timing the scoring function
alone left the simulated `reward` phase at ~0.01 ms. The pool starts once, before any timed
phase, like a long-lived reward service.

`RewardWorkers` score each response as it finishes (the async mode, where rlsim's `Scorer`
sends every finished sample to the reward pool at once): worker processes fed through
pipes by the rollout process (`envpool.PipeWorkers`); a response goes at once to the worker
with the fewest queued, so scoring never waits for the rollout process's next iteration.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from calibration.live.cores import become_helper
from calibration.live.envpool import PipeWorkers
from calibration.live.tasks import score


def _score_one(item: tuple[str, str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    reward = score(*item)
    return reward, time.perf_counter() - t0


def job_seconds(batch_s: float, workers: int, scoring_s: Sequence[float]) -> list[float]:
    """Per sample, its scoring seconds plus an equal share of what the batch cost beyond
    them (`batch_s`, the call's wall time, on `workers` workers), so that W workers
    replaying the samples (rlsim's FCFS pool) take about `batch_s`."""
    if not scoring_s:
        return []
    extra = max(batch_s * workers - sum(scoring_s), 0.0) / len(scoring_s)
    return [x + extra for x in scoring_s]


def _init_worker(idle: bool) -> None:
    become_helper(idle)


def _serve_reward(conn: Connection) -> None:
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            return
        reward, secs = _score_one(msg)
        conn.send((reward, secs, time.perf_counter()))  # the answer's time, for the latency


class RewardWorkers(PipeWorkers):
    """Per-response scoring: `submit(key, answer, response)`, then `poll()` gives
    (key, reward, seconds) as they finish. A response's seconds are its service time as the
    job saw it: from when its worker could take it (sent to the worker, or the worker's
    previous answer if that came later) to its answer, so a wait for CPU counts and a wait
    behind other responses in the same worker does not (the simulator queues those)."""

    def __init__(self, workers: int, depth: int = 64, idle: bool = False) -> None:
        super().__init__(workers, _serve_reward, (), "reward worker", depth, idle)
        self._answered = [0.0] * workers  # each worker's last answer

    def submit(self, key: Any, answer: str, response: str) -> None:
        self.submit_job(key, (answer, response))

    def poll(self, timeout: float = 0.0) -> list[tuple[Any, float, float]]:
        out = []
        for key, (r, secs, answered), sent, w in self._poll(timeout):
            start = max(sent, self._answered[w])
            self._answered[w] = answered
            out.append((key, r, max(answered - start, secs)))
        return out


class RewardPool:
    def __init__(self, workers: int, idle: bool = False) -> None:
        if workers < 1:
            raise ValueError("reward pool needs at least one worker")
        self.workers = workers
        self._pool = mp.get_context("spawn").Pool(workers, initializer=_init_worker,
                                                  initargs=(idle,))
        self._pool.map(_score_one, [("", "")] * workers)  # workers up before timing

    def pids(self) -> list[int]:
        return [w.pid for w in self._pool._pool if w.pid is not None]  # type: ignore[attr-defined]

    def score(self, items: Sequence[tuple[str, str]]) -> list[tuple[float, float]]:
        if not items:
            return []
        chunk = max(1, len(items) // (4 * self.workers))
        t0 = time.perf_counter()
        scored = self._pool.map(_score_one, list(items), chunksize=chunk)
        batch_s = time.perf_counter() - t0
        secs = job_seconds(batch_s, self.workers, [x for _, x in scored])
        return [(r, x) for (r, _), x in zip(scored, secs, strict=True)]

    def close(self) -> None:
        self._pool.terminate()
        self._pool.join()
