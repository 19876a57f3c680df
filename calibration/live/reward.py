"""Reward workers: exact-match scoring in a pool of worker processes.

`RewardPool.score(items)` sends (answer, response) pairs to the workers in chunks and
returns, per sample, the reward and the seconds its worker spent on it (the per-sample
service time that rlsim's reward pool replays). The pool starts once, before any timed
phase, like a long-lived reward service.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Sequence

from calibration.live.tasks import score


def _score_one(item: tuple[str, str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    reward = score(*item)
    return reward, time.perf_counter() - t0


class RewardPool:
    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError("reward pool needs at least one worker")
        self.workers = workers
        self._pool = mp.get_context("spawn").Pool(workers)
        self._pool.map(_score_one, [("", "")] * workers)  # workers up before timing

    def score(self, items: Sequence[tuple[str, str]]) -> list[tuple[float, float]]:
        if not items:
            return []
        chunk = max(1, len(items) // (4 * self.workers))
        return self._pool.map(_score_one, list(items), chunksize=chunk)

    def close(self) -> None:
        self._pool.terminate()
        self._pool.join()
