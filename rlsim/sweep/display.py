"""What a sweep shows on stderr: progress with an ETA, the closing summary, the failures.

Owns only text. Progress appears once a sweep has run `SHOW_AFTER_S` and is redrawn by
time, never per point: on a terminal a rich bar (done/total, failed, elapsed, ETA) at most
every `REFRESH_S`; in a log or pipe one plain line every `LOG_EVERY_S` and one at the end.
The ETA is the mean time of the points finished in this run times the rounds of
`parallelism` points still to go. The summary names where the results are and the best
setting per ranked metric (mean over replicates; ties named as ties; a fault sweep ranked
by goodput, `rlsim.report.sweep_report.FAULT_RANKED`); the failure lines name each point
that gave no metrics and why.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from rlsim.report.sweep_report import FAULT_RANKED, RANKED, best_of, is_fault_sweep
from rlsim.sweep.runner import SweepOutcome
from rlsim.sweep.spec import ERROR_COLUMN
from rlsim.sweep.store import RESULTS_DIR, STATUS_FILE

SHOW_AFTER_S = 2.0
REFRESH_S = 0.25
LOG_EVERY_S = 10.0
MAX_FAILURE_LINES = 20


def _clock(seconds: float) -> str:
    s = round(seconds)
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class ProgressBar:
    """Sweep progress on stderr; see the module docstring for when and how it is drawn."""

    def __init__(self, stream: TextIO | None = None, enabled: bool = True,
                 clock: Callable[[], float] = time.perf_counter, label: str = "sweep",
                 unit: str = "points") -> None:
        self.label, self.unit = label, unit  # "draws", "runs" for `--draws`
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.clock = clock
        self.total = self.parallelism = self.start_done = 0
        self.done = self.failed = 0
        self.run_s: list[float] = []
        self.t0 = clock()
        self.last_draw: float | None = None
        self._live: Any = None  # rich Progress, once shown on a terminal
        self._task: Any = None

    def start(self, total: int, done: int, parallelism: int) -> None:
        self.total, self.start_done, self.parallelism = total, done, max(parallelism, 1)
        self.done = done
        self.t0 = self.clock()
        if self.enabled and done:
            self._write(f"{self.label}: resuming, {done}/{total} {self.unit} already done")

    def update(self, done: int, failed: int, seconds: float) -> None:
        self.run_s.append(seconds)
        self.done, self.failed = done, failed
        self._draw()

    def tick(self) -> None:
        self._draw()

    def eta_s(self, done: int) -> float | None:
        remaining = self.total - done
        if not self.run_s:
            return None
        mean = sum(self.run_s) / len(self.run_s)
        return mean * math.ceil(remaining / self.parallelism)

    def _eta_text(self) -> str:
        eta = self.eta_s(self.done)
        return "-" if eta is None else _clock(eta)

    def line(self, done: int, failed: int) -> str:
        width = 24
        fill = width * done // max(self.total, 1)
        return (f"{self.label} [{'#' * fill}{'-' * (width - fill)}] {done}/{self.total} "
                f"{self.unit}, "
                f"{failed} failed, elapsed {_clock(self.clock() - self.t0)}, "
                f"ETA {self._eta_text()}")

    def _draw(self, final: bool = False) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self.t0 < SHOW_AFTER_S:
            return  # a short sweep shows only its summary
        interval = REFRESH_S if self.tty else LOG_EVERY_S
        if not final and self.last_draw is not None and now - self.last_draw < interval:
            return
        self.last_draw = now
        if not self.tty:
            self._write(self.line(self.done, self.failed))
            return
        if self._live is None:
            self._start_live()
        self._live.update(self._task, completed=self.done, failed=self.failed,
                          elapsed=_clock(now - self.t0), eta=self._eta_text())
        self._live.refresh()

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        # Elapsed is the sweep's, not the bar's (which appears SHOW_AFTER_S late).
        self._live = Progress(
            TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TextColumn(
                self.unit + ", {task.fields[failed]} failed, elapsed {task.fields[elapsed]}, "
                "ETA {task.fields[eta]}"),
            console=Console(file=self.stream), auto_refresh=False)
        self._task = self._live.add_task(self.label, total=self.total, completed=self.done,
                                         failed=self.failed, elapsed="0:00",
                                         eta=self._eta_text())
        self._live.start()

    def _write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self.last_draw is not None:
            self._draw(final=True)  # the last state, whatever the interval
        if self._live is not None:
            self._live.stop()
            self._live = None


def summary_lines(outcome: SweepOutcome, keys: tuple[str, ...],
                  overrides: tuple[str, ...] = ()) -> list[str]:
    """Where the results are, and the best setting per ranked metric (ties as ties)."""
    results = outcome.out_dir / RESULTS_DIR
    failed = outcome.failed + len(outcome.crashed)
    state = (f"; partial, {STATUS_FILE} says so: resume with --resume" if outcome.partial
             else "")
    lines = [f"{outcome.done} of {outcome.points} points done ({failed} failed{state}): "
             f"{results}/ (pyarrow.parquet.read_table({str(results)!r}))"]
    rows = [r for r in outcome.table.to_pylist() if r[ERROR_COLUMN] is None]
    injected = [r.get("faults.injected") for r in rows]
    fault = is_fault_sweep(keys, overrides, injected)
    ranked = FAULT_RANKED if fault else RANKED
    metrics = [(m, better) for m, better in ranked if m in outcome.table.column_names]
    if not rows or not metrics:
        return lines
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    table = [["metric", "best", "point", *keys]]
    for metric, better in metrics:
        means = {g: sum(r[metric] for r in rs) / len(rs) for g, rs in groups.items()
                 if all(r[metric] is not None for r in rs)}
        best = best_of(means, better)
        if not best:
            continue
        first = min(min(r["point"] for r in groups[g]) for g in best)
        if len(best) == 1:
            where = [str(first), *(_fmt(v) for v in best[0])]
        else:
            tie = f"all {len(best)} tie" if len(best) == len(groups) else f"tie of {len(best)}"
            where = [tie, *("/".join(_short_values([g[i] for g in best]))
                            for i in range(len(keys)))]
        table.append([f"{metric} ({better})", f"{means[best[0]]:.4g}", *where])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    title = "best per metric" + (" (mean over replicates)" if len(rows) > len(groups) else "")
    if fault:
        first = "the horizon's ETTR" if metrics and metrics[0][0].startswith("horizon.") \
            else "goodput"
        title += (f" (fault sweep: ranked by {first}; step time leaves the time lost to "
                  "faults out, so it is not ranked)")
    lines.append(title + ":")
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in table]
    return lines


def failure_lines(outcome: SweepOutcome, limit: int = MAX_FAILURE_LINES) -> list[str]:
    """One line per point without metrics (invalid or crashed), at most `limit`."""
    failures = outcome.failures()
    lines = [f"failed: {f.line()}" for f in failures[:limit]]
    if len(failures) > limit:
        lines.append(f"failed: ... and {len(failures) - limit} more (the `error` column of "
                     f"{RESULTS_DIR}/ and {STATUS_FILE} list them)")
    return lines


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _short_values(values: list[Any], limit: int = 4) -> list[str]:
    distinct = list(dict.fromkeys(_fmt(v) for v in values))
    return distinct if len(distinct) <= limit else [*distinct[:limit], "..."]
