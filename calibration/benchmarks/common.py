"""What the benchmark families share: progress callback, timing budgets, grid overrides, and
re-measuring CPU points that a busy neighbour process disturbed.

Budgets are module-level so tests (and a user in a hurry) can shrink them; `GRID_OVERRIDE`
maps a bench name to a replacement list of grid points, which is how tests run each family
on a tiny grid without a private parameter on every `run`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from calibration.measurements import Measurement
from calibration.timing import OtherLoad, summarize, time_call

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
Point = dict[str, Any]


@dataclass(frozen=True)
class Budget:
    """How long `time_call` spends on one grid point."""

    warmup: int
    min_time_s: float
    min_reps: int
    max_reps: int


# CPU timings on a shared VM wander, so a full CPU run spends more time per point; GPU
# timings are steady, and the GPU grids are larger, so a GPU point gets less.
QUICK = Budget(warmup=2, min_time_s=0.15, min_reps=3, max_reps=150)
FULL = Budget(warmup=3, min_time_s=0.3, min_reps=5, max_reps=300)
CUDA_FULL = Budget(warmup=3, min_time_s=0.1, min_reps=5, max_reps=300)

# bench name -> grid points to use instead of the family's own grid (tests shrink grids here).
GRID_OVERRIDE: dict[str, list[Point]] = {}


# A CPU point measured while other processes kept this many cores busy on average is taken
# again (after a pause), up to RETRIES times, while the run's retry allowance lasts; the
# attempt with the lowest median is kept (interference only ever adds time).
CONTENDED_CORES = 0.25
RETRIES = 3
RETRY_PAUSE_S = 0.5
_retry_left_s = 0.0


def allow_retries(seconds: float) -> None:
    """Set how many seconds one run may spend re-measuring contended points."""
    global _retry_left_s
    _retry_left_s = seconds


def budget(quick: bool, device: str = "cpu") -> Budget:
    if quick:
        return QUICK
    return CUDA_FULL if device.startswith("cuda") else FULL


def grid(bench: str, default: list[Point]) -> list[Point]:
    return GRID_OVERRIDE.get(bench, default)


def notify(progress: Progress | None, bench: str, done: int, total: int) -> None:
    if progress is not None:
        progress(bench, done, total)


def timed_point(bench: str, params: Point, fn: Callable[[], object], device: str,
                quick: bool, idle_s: float = 0.0) -> Measurement:
    """Time `fn` under the mode's budget and record it as one grid point (`idle_s`: each
    timed call follows that much idle time, `timing.time_call`)."""
    global _retry_left_s
    b = budget(quick, device)
    best: tuple[float, float, float, int] | None = None
    for attempt in range(RETRIES + 1):
        started = time.perf_counter()
        with OtherLoad() as load:
            result = time_call(fn, device, warmup=b.warmup, min_time_s=b.min_time_s,
                               min_reps=b.min_reps, max_reps=b.max_reps, idle_s=idle_s)
        if best is None or result[0] < best[0]:
            best = result
        # Only the CPU competes with neighbours for the cores that run the op itself.
        if device.startswith("cuda") or load.cores is None or load.cores < CONTENDED_CORES:
            break
        if attempt == RETRIES or _retry_left_s <= 0:
            log.warning("%s %s: measured while other processes used %.2f cores", bench,
                        params, load.cores)
            break
        time.sleep(RETRY_PAUSE_S * (attempt + 1))
        _retry_left_s -= time.perf_counter() - started
    assert best is not None  # the loop runs at least once
    median_s, p10_s, p90_s, reps = best
    return Measurement(bench=bench, params=params, median_s=median_s, p10_s=p10_s,
                       p90_s=p90_s, reps=reps)


def sample_measurement(bench: str, params: Point, samples_s: list[float]) -> Measurement:
    """A grid point from per-call times taken by the family itself (processes, files)."""
    median_s, p10_s, p90_s = summarize(samples_s)
    return Measurement(bench=bench, params=params, median_s=median_s, p10_s=p10_s,
                       p90_s=p90_s, reps=len(samples_s))


def pow2_range(lo: int, hi: int, step: int = 2) -> list[int]:
    """lo, lo*step, ... up to hi inclusive."""
    out = []
    v = lo
    while v <= hi:
        out.append(v)
        v *= step
    return out


MB = 1 << 20
KB = 1 << 10
