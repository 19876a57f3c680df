"""Running a sweep: check it, open its store, run the points not yet done, stop cleanly.

Owns the order of a sweep's life. Nothing is written until the sweep is known to be
runnable: bad executor options, a sweep too large to finish (more than `max_points`
points, or a point over the run-size limits of `rlsim.config.limits`), and a sweep whose
every point fails validation with one and the same error (an unknown key, a bad --set)
raise ScenarioError first. Then the store is opened (or reopened for --resume), the
unfinished points go to the executor, and each finished point is written by this process
as it arrives. A point that raises an internal error (or whose worker dies) is not
written and does not stop the others: it comes back in `SweepOutcome.crashed`. Ctrl-C (or
SIGTERM) stops the workers and returns with `interrupted` set; the finished points stay
on disk. DIR/status.json then records whether the sweep is complete or partial.
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
from rlsim.config.limits import WorkEstimate, check_work, format_duration
from rlsim.sweep.executors import Executor, check_executor, make_executor
from rlsim.sweep.spec import ERROR_COLUMN, Point, PointContext, PointSpec
from rlsim.sweep.store import ResultStore, write_status
from rlsim.sweep.worker import error_line, validate

DEFAULT_MAX_POINTS = 10_000
"""Points a sweep may have without --max-points: at the ~0.25 s of a small scenario, about
40 min on one core; a 10^6-point grid (days, and a million Parquet files) is refused."""
MAX_POINTS_FLAG = "--max-points"
SIZE_SAMPLE = 256
"""Settings whose scenarios are sized (evenly spaced, plus the last) to find the largest
point and the sweep's work; ~0.2 ms each."""


class Progress(Protocol):
    """Told about the sweep as it runs (the CLI draws a bar on stderr)."""

    def start(self, total: int, done: int, parallelism: int) -> None: ...

    def update(self, done: int, failed: int, seconds: float) -> None: ...

    def tick(self) -> None:
        """Called about twice a second while no point finishes (time-based redraw)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class FailedPoint:
    """A point that did not give metrics: its id, `key=value`s and the one-line reason."""

    point: int
    values: tuple[str, ...]
    why: str

    def line(self) -> str:
        where = f" ({', '.join(self.values)})" if self.values else ""
        return f"point {self.point}{where}: {self.why}"


@dataclass(frozen=True)
class SweepOutcome:
    """Where a sweep stands after this call: its folder, counts and finished rows."""

    out_dir: Path
    points: int
    done: int
    failed: int          # finished points whose scenario was invalid (error rows)
    interrupted: bool
    table: pa.Table      # every finished point, sorted by point
    crashed: tuple[FailedPoint, ...] = ()  # raised an internal error: not stored, rerun
    keys: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        """Points are left to run (interrupted, or crashed): --resume continues it."""
        return self.done < self.points

    def failures(self) -> list[FailedPoint]:
        """Every point without metrics: invalid (error rows) and crashed, by point."""
        bad = [FailedPoint(int(r["point"]), _assignments(self.keys, r), str(r[ERROR_COLUMN]))
               for r in self.table.to_pylist() if r.get(ERROR_COLUMN) is not None]
        return sorted([*bad, *self.crashed], key=lambda f: f.point)

    def status(self) -> dict[str, object]:
        """DIR/status.json: complete or partial, with the counts."""
        return {"state": "partial" if self.partial else "complete", "points": self.points,
                "done": self.done, "failed": self.failed + len(self.crashed),
                "interrupted": self.interrupted,
                "failures": [f.line() for f in self.failures()]}


def _assignments(keys: tuple[str, ...], row: dict[str, object]) -> tuple[str, ...]:
    return tuple(f"{k}={row.get(k)}" for k in keys)


def _size(spec: PointSpec, ctx: PointContext, ids: list[int]) -> list[tuple[WorkEstimate,
                                                                             Point]]:
    """Work estimates of the listed points whose scenarios are valid."""
    out = []
    for pid in ids:
        point = spec.point(pid)
        try:
            job = validate(ctx, point)
        except ScenarioError:
            continue  # an invalid point costs nothing; it is reported as a row
        out.append((job.work, point))
    return out


def check_size(spec: PointSpec, ctx: PointContext, max_points: int,
               allow_large: bool) -> None:
    """Refuse, before anything is expanded or written, a sweep with more than `max_points`
    points, and one whose largest sized point is over the run-size limits."""
    n = spec.n_points
    if n > max_points:
        # The first and last grid settings at random index 0: drawing up to a huge random
        # index would itself take the memory this check is here to protect.
        per_setting = max(spec.random, 1) * spec.reps
        sized = _size(spec, ctx, sorted({0, n - per_setting}))
        mean_s = sum(e.wall_s for e, _ in sized) / len(sized) if sized else 0.0
        work = (f", about {format_duration(mean_s * n)} of simulation on one core (from its first "
                "and last settings)" if sized else "")
        raise ScenarioError(MAX_POINTS_FLAG, f"the sweep has {n:,} points{work}, over the "
                            f"limit of {max_points:,}; sweep fewer values, or pass "
                            f"{MAX_POINTS_FLAG} {n} to run it anyway")
    settings = n // spec.reps  # replicates differ only in their seed: the same size
    step = max(1, settings // SIZE_SAMPLE)
    ids = sorted({*range(0, settings, step), settings - 1})
    sized = _size(spec, ctx, [i * spec.reps for i in ids])
    if sized:
        _, largest = max(sized, key=lambda ep: (ep[0].wall_s, ep[0].memory_bytes))
        try:
            check_work(validate(ctx, largest).scenario, allow_large)
        except ScenarioError as err:
            where = ", ".join(f"{k}={v}" for k, v in zip(spec.keys, largest.values,
                                                          strict=True))
            raise ScenarioError(err.field, f"point {largest.id} ({where}): {err.message}"
                                ) from None


def preflight(ctx: PointContext, points: list[Point], keys: tuple[str, ...] = ()) -> None:
    """Refuse a sweep none of whose points can run, before anything is written: the shared
    error when all fail the same way, else the first point's error saying that every point
    is invalid (exit 2; a sweep with some invalid points runs, and exits 1).

    Validation costs ~1 ms a point and stops at the first valid point, so this is cheap
    for any sweep that can run at all.
    """
    first: tuple[Point, ScenarioError] | None = None
    seen: set[str] = set()
    for point in points:
        try:
            validate(ctx, point)
            return
        except ScenarioError as err:
            first = first or (point, err)
            seen.add(error_line(err))
    if first is None:
        return
    point, error = first
    if len(seen) == 1:
        raise error
    where = ", ".join(f"{k}={v}" for k, v in zip(keys, point.values, strict=True))
    # The point's source (the scenario file) leads the line, as it does for one error.
    raise ScenarioError(error.field, f"every point of the sweep is invalid ({len(points)} of "
                        f"{len(points)}, {len(seen)} different errors); the first, point "
                        f"{point.id} ({where}), says: {error.field}: {error.message}",
                        source=error.source)


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


def run_sweep(spec: PointSpec, ctx: PointContext, out_dir: Path, *, executor: str = "local",
              jobs: int | None = None, address: str | None = None, resume: bool = False,
              progress: Progress | None = None, max_points: int = DEFAULT_MAX_POINTS,
              allow_large: bool = False) -> SweepOutcome:
    """Run (or resume) the sweep into `out_dir`; see the module docstring for the order."""
    check_executor(executor, jobs, address)
    if max_points < 1:
        raise ScenarioError(MAX_POINTS_FLAG, f"must be >= 1, got {max_points}")
    check_size(spec, ctx, max_points, allow_large)
    points = spec.points()
    preflight(ctx, points, spec.keys)
    store = ResultStore.open(out_dir, spec.to_json(), spec.columns(), resume)
    todo = [p for p in points if p.id not in store.done]
    interrupted = False
    crashed: list[FailedPoint] = []
    if todo:
        failed = _failed(store.read())
        by_id = {p.id: p for p in todo}
        workers: Executor | None = None
        with _sigterm_interrupts():
            try:
                workers = make_executor(executor, ctx, jobs, address)
                if progress is not None:
                    progress.start(len(points), len(store.done), workers.parallelism)
                for result in workers.run(todo):
                    if result is None:
                        if progress is not None:
                            progress.tick()
                        continue
                    if result.failure is not None:
                        point = by_id[int(result.row["point"])]
                        crashed.append(FailedPoint(point.id, _assignments(
                            spec.keys, dict(zip(spec.keys, point.values, strict=True))),
                            result.failure))
                        failed += 1
                    else:
                        store.write(result.row)
                        failed += result.row[ERROR_COLUMN] is not None
                    if progress is not None:
                        progress.update(len(store.done) + len(crashed), failed,
                                        result.seconds)
            except KeyboardInterrupt:
                interrupted = True
            finally:
                if workers is not None:
                    workers.close()
                if progress is not None:
                    progress.close()
    table = store.read()
    outcome = SweepOutcome(out_dir, len(points), table.num_rows, _failed(table), interrupted,
                           table, tuple(crashed), spec.keys)
    write_status(out_dir, outcome.status())
    return outcome
