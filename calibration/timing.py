"""How one call is timed: warm-up, device synchronization, batched repetitions, quantiles.

Every compute microbenchmark times its operation through `time_call`, so the timing rules
live here once. A timed *sample* is a short batch of back-to-back calls divided by the batch
size: tiny ops are batched until one sample lasts about `batch_s`, so the timer's resolution
and the Python loop do not dominate, while many short samples let the median reject the
ones a noisy neighbour or the scheduler stretched (this CPU VM's timings vary 10-40%).
`OtherLoad` measures how much CPU other processes took meanwhile, so a caller can tell a
point measured on a busy machine and measure it again.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence

import torch


def sync(device: str) -> None:
    """Wait for queued device work; kernels on CUDA are asynchronous, CPU ops are not."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values (numpy's default method)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples_s: Sequence[float]) -> tuple[float, float, float]:
    """(median, p10, p90) of per-call times."""
    ordered = sorted(samples_s)
    return quantile(ordered, 0.5), quantile(ordered, 0.1), quantile(ordered, 0.9)


def _timed(fn: Callable[[], object], device: str, calls: int) -> float:
    """Wall time of `calls` back-to-back calls, the device drained before and after."""
    sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(device)
    return time.perf_counter() - start


def time_call(
    fn: Callable[[], object],
    device: str,
    warmup: int = 3,
    reps: int | None = None,
    min_time_s: float = 0.2,
    min_reps: int = 3,
    max_reps: int = 200,
    batch_s: float = 1e-3,
    idle_s: float = 0.0,
) -> tuple[float, float, float, int]:
    """Time one call of `fn` on `device`: (median_s, p10_s, p90_s, timed calls).

    `warmup` untimed calls first (fewer when one call already takes half of `min_time_s`:
    big ops need no more than one to reach steady state). Then samples are taken until at
    least `min_reps` of them and `min_time_s` of timed work were collected, at most
    `max_reps` samples; `reps` fixes the sample count instead. Runs under
    `torch.inference_mode()` so autograd bookkeeping is not timed. With `idle_s` every sample
    is one call after `idle_s` of sleep (untimed): the cost of a call made once after the
    caller idled, as a trainer's first phase of a step is, which back-to-back calls hide.
    """
    with torch.inference_mode():
        # The first call pays lazy initialization (allocator, kernel selection), so the
        # fastest later warm-up call is the estimate that sizes the batches.
        estimate_s = math.inf
        spent_s = 0.0
        for i in range(max(1, warmup)):
            elapsed = _timed(fn, device, 1)
            spent_s += elapsed
            if i > 0:
                estimate_s = min(estimate_s, elapsed)
            # One call as long as the whole sample budget: more warm-up would only cost time.
            if spent_s >= min_time_s / 2 and (i > 0 or elapsed >= min_time_s):
                break
        if math.isinf(estimate_s):
            estimate_s = spent_s
        inner = max(1, math.ceil(batch_s / max(estimate_s, 1e-9))) if idle_s <= 0 else 1
        samples: list[float] = []
        total_s = 0.0
        while True:
            if idle_s > 0:
                time.sleep(idle_s)
            elapsed = _timed(fn, device, inner)
            samples.append(elapsed / inner)
            total_s += elapsed
            if reps is not None:
                if len(samples) >= reps:
                    break
            elif len(samples) >= max_reps or (len(samples) >= min_reps and total_s >= min_time_s):
                break
    median, p10, p90 = summarize(samples)
    return median, p10, p90, len(samples) * inner


def _busy_s(cpus: frozenset[int] | None = None) -> float | None:
    """Busy CPU seconds (steal included) from /proc/stat: of the whole machine, or of the
    cores `cpus` only (the per-core lines)."""
    try:
        with open("/proc/stat") as f:
            lines = [line.split() for line in f if line.startswith("cpu")]
        if cpus is None:
            wanted = [line for line in lines if line[0] == "cpu"]
        else:
            wanted = [line for line in lines if line[0] != "cpu" and int(line[0][3:]) in cpus]
        rows = [[int(v) for v in line[1:]] for line in wanted]
    except (OSError, ValueError):
        return None
    if not rows:
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is
    # already inside user time, idle and iowait are not busy.
    busy = sum(sum(f[:8]) - f[3] - f[4] for f in rows)
    return busy / os.sysconf("SC_CLK_TCK")


def own_cores() -> frozenset[int] | None:
    """The cores the calling thread may run on when that is fewer than the machine has
    (pinned: only they can slow it down), else None (the whole machine)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    mine = frozenset(os.sched_getaffinity(0))
    return mine if len(mine) < (os.cpu_count() or len(mine)) else None


def _own_s() -> float:
    t = os.times()
    return t.user + t.system


class OtherLoad:
    """Context manager: average cores other processes kept busy while the block ran, on the
    cores this thread may run on (`own_cores`: a pinned measurement is only slowed by what
    runs on its own core, not by a neighbour on another one).

    On a shared 2-core VM a neighbour's busy loop does not just slow a multi-threaded op a
    little: every parallel region waits a scheduler tick for the preempted thread, and a
    0.5 ms op reads 8 ms. `cores` is None where /proc/stat is unavailable (not Linux) and
    for blocks shorter than MIN_WINDOW_S: the counters tick every 10 ms, too coarse below.
    """

    MIN_WINDOW_S = 0.1

    def __init__(self) -> None:
        self.cores: float | None = None
        self._cpus: frozenset[int] | None = None
        self._start: tuple[float | None, float, float] = (None, 0.0, 0.0)

    def __enter__(self) -> OtherLoad:
        self._cpus = own_cores()
        self._start = (_busy_s(self._cpus), _own_s(), time.perf_counter())
        return self

    def __exit__(self, *exc: object) -> None:
        busy0, own0, wall0 = self._start
        busy1, own1, wall1 = _busy_s(self._cpus), _own_s(), time.perf_counter()
        if busy0 is None or busy1 is None or wall1 - wall0 < self.MIN_WINDOW_S:
            return
        self.cores = max(0.0, (busy1 - busy0) - (own1 - own0)) / (wall1 - wall0)
