"""Where sweep points run: a local process pool, or Ray tasks on a local or remote cluster.

Owns starting and stopping workers and handing back finished points as they complete
(in completion order; the store orders rows by point). Both executors run the same
`rlsim.sweep.worker.run_point`, so they give identical rows.

Local: `concurrent.futures.ProcessPoolExecutor(max_workers=jobs)`. On Linux the workers
are forked: they start in milliseconds with rlsim already imported and the scenario mapping
already in memory (a spawned worker re-imports numpy, scipy, pydantic and simpy, ~1 s each).
Forking is safe here because the workers only simulate (no pyarrow; their one thread,
which watches the parent, starts after the fork). Elsewhere (macOS, Windows) fork is unsafe
or absent and the workers are spawned. The workers ignore SIGINT, so Ctrl-C reaches only
the main process, which stops them; they die with the main process, even after `kill -9`
(`_die_with`). A point that raises, or whose worker dies, is yielded as a failure and the
other points go on.

Ray: one `ray.remote` task per point, collected with `ray.wait` as they finish; the
scenario mapping is put in the object store once. `ray` is imported here only, lazily.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from rlsim.config.errors import ScenarioError
from rlsim.sweep.spec import Point, PointContext
from rlsim.sweep.worker import PointResult, failure_line, run_point

EXECUTORS = ("local", "ray")
RAY_INSTALL = "install with pip install 'rlsim[ray]'"


TICK_S = 0.5
"""How often `run` yields None while no point finishes, so progress redraws by time."""


class Executor(Protocol):
    parallelism: int

    def run(self, points: list[Point]) -> Iterator[PointResult | None]:
        """Yield each point's result as it finishes (`failure` set when it raised or its
        worker died), and None every TICK_S while none does."""
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


def _init_worker(ctx: PointContext, parent: int) -> None:
    global _CONTEXT
    _CONTEXT = ctx
    # Ctrl-C is the main process's to handle; SIGTERM (how the main stops us) must kill.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with(parent)


def _die_with(parent: int) -> None:
    """End this worker when the sweep's main process dies, even by `kill -9`.

    Nothing else would: an orphaned worker blocks on the task queue (its siblings keep the
    pipe open) or finishes its point for no one. On Linux the kernel sends SIGKILL at the
    parent's death (prctl PR_SET_PDEATHSIG); a daemon thread polling the parent's pid covers
    other systems and the instant between fork and prctl.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # no prctl: the thread below still watches
    if os.getppid() != parent:  # died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="rlsim-parent-watch", daemon=True).start()


_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_PARENT_POLL_S = 1.0


def _failed(point: Point, why: str) -> PointResult:
    return PointResult({"point": point.id}, 0.0, why)


def _run_in_worker(point: Point) -> PointResult:
    assert _CONTEXT is not None, "worker not initialized"
    return run_point(_CONTEXT, point)


class LocalExecutor:
    """A process pool on this machine, `jobs` workers.

    At most `jobs` points are submitted at a time, so the points in flight are the points
    running: when a worker dies (out of memory, killed) the pool breaks, those points are
    reported as failed (which of them killed it is unknowable), and a fresh pool runs the
    rest.
    """

    def __init__(self, ctx: PointContext, jobs: int) -> None:
        self.parallelism = jobs
        self._ctx = ctx
        self._pool = self._new_pool()
        self._finished = True  # nothing submitted yet: close() may wait for the pool

    def _new_pool(self) -> ProcessPoolExecutor:
        method = "fork" if sys.platform.startswith("linux") else "spawn"
        return ProcessPoolExecutor(max_workers=self.parallelism,
                                   mp_context=multiprocessing.get_context(method),
                                   initializer=_init_worker, initargs=(self._ctx, os.getpid()))

    def run(self, points: list[Point]) -> Iterator[PointResult | None]:
        self._finished = False
        queue = list(reversed(points))
        pending: dict[Future[PointResult], Point] = {}
        while queue or pending:
            while queue and len(pending) < self.parallelism:
                point = queue.pop()
                pending[self._pool.submit(_run_in_worker, point)] = point
            done, _ = wait(pending, timeout=TICK_S, return_when=FIRST_COMPLETED)
            if not done:
                yield None
                continue
            broken = False
            for fut in sorted(done, key=lambda f: pending[f].id):
                point = pending.pop(fut)
                try:
                    yield fut.result()
                except BrokenProcessPool:
                    broken = True
                    yield _failed(point, "its worker process died (out of memory or killed?)")
                except Exception as err:  # the result could not come back (e.g. pickling)
                    yield _failed(point, failure_line(err))
            if broken:
                # Every point in flight went down with the pool; report them and go on.
                for point in sorted(pending.values(), key=lambda p: p.id):
                    yield _failed(point, "its worker process died (out of memory or killed?) "
                                  "while this point ran beside it")
                pending.clear()
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool()
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

    def run(self, points: list[Point]) -> Iterator[PointResult | None]:
        ray = self._ray
        queue = list(reversed(points))
        while queue or self._pending:
            while queue and len(self._pending) < self._window:
                point = queue.pop()
                self._pending[self._task.remote(self._ctx_ref, point)] = point
            ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=TICK_S)
            if not ready:
                yield None
                continue
            point = self._pending.pop(ready[0])
            try:
                yield ray.get(ready[0])
            except Exception as err:  # the task or its worker died
                yield _failed(point, failure_line(err))

    def close(self) -> None:
        for ref in self._pending:
            self._ray.cancel(ref, force=True)
        self._pending.clear()
        if self._started:
            self._ray.shutdown()
