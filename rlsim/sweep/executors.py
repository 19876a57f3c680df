"""Where sweep points run: a local process pool, or Ray tasks on a local or remote cluster.

Owns starting and stopping workers and handing back finished points as they complete
(in completion order; the store orders rows by point). Both executors run the same
`rlsim.sweep.worker.run_point`, so they give identical rows.

Local: `concurrent.futures.ProcessPoolExecutor(max_workers=jobs)`. On Linux the workers
are forked: they start in milliseconds with rlsim already imported and the scenario mapping
already in memory (a spawned worker re-imports numpy, scipy, pydantic and simpy, ~1 s each).
Forking is safe here because the workers only simulate (no pyarrow, no threads of their
own). Elsewhere (macOS, Windows) fork is unsafe or absent and the workers are spawned. The
workers ignore SIGINT, so Ctrl-C reaches only the main process, which stops them.

Ray: one `ray.remote` task per point, collected with `ray.wait` as they finish; the
scenario mapping is put in the object store once. `ray` is imported here only, lazily.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from rlsim.config.errors import ScenarioError
from rlsim.sweep.spec import Point, PointContext
from rlsim.sweep.worker import PointResult, run_point

EXECUTORS = ("local", "ray")
RAY_INSTALL = "install with pip install 'rlsim[ray]'"


class PointFailed(RuntimeError):
    """A point raised an internal error (not a ScenarioError): the sweep stops."""


class Executor(Protocol):
    parallelism: int

    def run(self, points: list[Point]) -> Iterator[PointResult]:
        """Yield each point's result as it finishes."""
        ...

    def close(self) -> None:
        """Stop the workers (cancelling points not yet finished)."""
        ...


def check_executor(name: str, jobs: int | None, address: str | None) -> None:
    """Reject bad executor options before anything runs or is written."""
    if name not in EXECUTORS:
        raise ScenarioError("--executor", f"choose local or ray, got {name!r}")
    if jobs is not None and jobs < 1:
        raise ScenarioError("--jobs", f"must be >= 1, got {jobs}")
    if address is not None and name != "ray":
        raise ScenarioError("--address", "only with --executor ray (the Ray cluster to use)")
    if name == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise ScenarioError("--executor", f"ray is not installed; {RAY_INSTALL}")


def make_executor(name: str, ctx: PointContext, jobs: int | None,
                  address: str | None) -> Executor:
    """Start the workers: `jobs` of them (default: one per CPU; a cluster's CPUs for Ray)."""
    if name == "ray":
        return RayExecutor(ctx, jobs, address)
    return LocalExecutor(ctx, jobs or os.cpu_count() or 1)


# --- local process pool ---------------------------------------------------------------

_CONTEXT: PointContext | None = None  # one per worker process, set by _init_worker


def _init_worker(ctx: PointContext) -> None:
    global _CONTEXT
    _CONTEXT = ctx
    # Ctrl-C is the main process's to handle; SIGTERM (how the main stops us) must kill.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_in_worker(point: Point) -> PointResult:
    assert _CONTEXT is not None, "worker not initialized"
    return run_point(_CONTEXT, point)


class LocalExecutor:
    """A process pool on this machine, `jobs` workers."""

    def __init__(self, ctx: PointContext, jobs: int) -> None:
        method = "fork" if sys.platform.startswith("linux") else "spawn"
        self.parallelism = jobs
        self._pool = ProcessPoolExecutor(max_workers=jobs,
                                         mp_context=multiprocessing.get_context(method),
                                         initializer=_init_worker, initargs=(ctx,))
        self._finished = True  # nothing submitted yet: close() may wait for the pool

    def run(self, points: list[Point]) -> Iterator[PointResult]:
        self._finished = False
        pending: dict[Future[PointResult], Point] = {
            self._pool.submit(_run_in_worker, p): p for p in points}
        for fut in as_completed(pending):
            point = pending[fut]
            try:
                yield fut.result()
            except BrokenProcessPool:
                raise PointFailed(f"a worker process died while running point {point.id} "
                                  "(out of memory?)") from None
            except Exception as err:
                raise PointFailed(f"point {point.id}: {type(err).__name__}: {err}") from err
        self._finished = True

    def close(self) -> None:
        if self._finished:
            self._pool.shutdown(wait=True)
            return
        # A running point cannot be cancelled through the pool API, so its process is
        # terminated. `_processes` is the pool's private map of workers (stable since 3.8);
        # it is read before shutdown(), which drops it.
        procs = list((getattr(self._pool, "_processes", None) or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        for proc in procs:
            proc.join(timeout=5)


# --- Ray -----------------------------------------------------------------------------

def _ray_run(ctx: PointContext, point: Point) -> PointResult:
    return run_point(ctx, point)


class RayExecutor:
    """Ray tasks: a local Ray with `jobs` CPUs, or the cluster at `address`.

    Points are submitted a window at a time (so Ctrl-C has little to cancel and a shared
    cluster is not flooded): on a cluster with --jobs, at most `jobs` are in flight;
    otherwise twice the CPUs, so no worker waits for the driver. A Ray started here is
    shut down on close; one the caller started (ray.is_initialized()) is left running.
    """

    def __init__(self, ctx: PointContext, jobs: int | None, address: str | None) -> None:
        import ray

        self._ray = ray
        self._started = not ray.is_initialized()
        if address is not None:
            ray.init(address=address, log_to_driver=False, ignore_reinit_error=True)
        else:
            ray.init(num_cpus=jobs or os.cpu_count() or 1, include_dashboard=False,
                     log_to_driver=False, ignore_reinit_error=True)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        if address is not None and jobs is not None:
            self.parallelism, self._window = min(jobs, cpus), jobs
        else:
            self.parallelism = min(jobs, cpus) if jobs else cpus
            self._window = 2 * self.parallelism
        self._ctx_ref = ray.put(ctx)
        self._task = ray.remote(num_cpus=1, max_retries=0)(_ray_run)
        self._pending: dict[Any, Point] = {}

    def run(self, points: list[Point]) -> Iterator[PointResult]:
        ray = self._ray
        queue = list(reversed(points))
        while queue or self._pending:
            while queue and len(self._pending) < self._window:
                point = queue.pop()
                self._pending[self._task.remote(self._ctx_ref, point)] = point
            ready, _ = ray.wait(list(self._pending), num_returns=1)
            point = self._pending.pop(ready[0])
            try:
                yield ray.get(ready[0])
            except Exception as err:
                raise PointFailed(f"point {point.id}: {type(err).__name__}: {err}") from err

    def close(self) -> None:
        for ref in self._pending:
            self._ray.cancel(ref, force=True)
        self._pending.clear()
        if self._started:
            self._ray.shutdown()
