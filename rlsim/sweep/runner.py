"""Running a sweep: check it, open its store, run the points not yet done, stop cleanly.

Owns the order of a sweep's life. Nothing is written until the sweep is known to be
runnable: bad executor options and a sweep whose every point fails validation with one
and the same error (an unknown key, a bad --set) raise ScenarioError first. Then the store
is opened (or reopened for --resume), the unfinished points go to the executor, and each
finished point is written by this process as it arrives. Ctrl-C (or SIGTERM) stops the
workers and returns with `interrupted` set; the finished points stay on disk.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Protocol

import pyarrow as pa

from rlsim.config.errors import ScenarioError
from rlsim.sweep.executors import Executor, check_executor, make_executor
from rlsim.sweep.spec import ERROR_COLUMN, Point, PointContext, SweepSpec
from rlsim.sweep.store import ResultStore
from rlsim.sweep.worker import error_line, validate


class Progress(Protocol):
    """Told about the sweep as it runs (the CLI draws a bar on stderr)."""

    def start(self, total: int, done: int, parallelism: int) -> None: ...

    def update(self, done: int, failed: int, seconds: float) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class SweepOutcome:
    """Where a sweep stands after this call: its folder, counts and finished rows."""

    out_dir: Path
    points: int
    done: int
    failed: int          # finished points whose scenario was invalid (error rows)
    interrupted: bool
    table: pa.Table      # every finished point, sorted by point


def preflight(ctx: PointContext, points: list[Point]) -> None:
    """Raise the shared error when no point can run because all fail the same way.

    Validation costs ~1 ms a point and stops at the first valid point, so this is cheap
    for any sweep that can run at all.
    """
    first: ScenarioError | None = None
    seen: set[str] = set()
    for point in points:
        try:
            validate(ctx, point)
            return
        except ScenarioError as err:
            first = first or err
            seen.add(error_line(err))
    if first is not None and len(seen) == 1:
        raise first


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM stops the sweep like Ctrl-C (finished points are kept)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _failed(table: pa.Table) -> int:
    return table.num_rows - table.column(ERROR_COLUMN).null_count


def run_sweep(spec: SweepSpec, ctx: PointContext, out_dir: Path, *, executor: str = "local",
              jobs: int | None = None, address: str | None = None, resume: bool = False,
              progress: Progress | None = None) -> SweepOutcome:
    """Run (or resume) the sweep into `out_dir`; see the module docstring for the order."""
    check_executor(executor, jobs, address)
    points = spec.points()
    preflight(ctx, points)
    store = ResultStore.open(out_dir, spec.to_json(), spec.columns(), resume)
    todo = [p for p in points if p.id not in store.done]
    interrupted = False
    if todo:
        failed = _failed(store.read())
        workers: Executor | None = None
        with _sigterm_interrupts():
            try:
                workers = make_executor(executor, ctx, jobs, address)
                if progress is not None:
                    progress.start(len(points), len(store.done), workers.parallelism)
                for result in workers.run(todo):
                    store.write(result.row)
                    failed += result.row[ERROR_COLUMN] is not None
                    if progress is not None:
                        progress.update(len(store.done), failed, result.seconds)
            except KeyboardInterrupt:
                interrupted = True
            finally:
                if workers is not None:
                    workers.close()
                if progress is not None:
                    progress.close()
    table = store.read()
    return SweepOutcome(out_dir, len(points), table.num_rows, _failed(table), interrupted, table)
