"""What a sweep shows on stderr: a progress bar with an ETA, and the closing summary.

Owns only text. The ETA is the mean time of the points finished in this run times the
rounds of `parallelism` points still to go; the summary names where the results are and
the best setting for each main metric (mean over replicates).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, TextIO

from rlsim.sweep.runner import SweepOutcome
from rlsim.sweep.spec import ERROR_COLUMN
from rlsim.sweep.store import RESULTS_DIR

# (column, better) shown in the closing table when present.
MAIN_METRICS = (
    ("step_time_s.mean", "min"),
    ("throughput.samples_per_s", "max"),
    ("goodput_samples_per_s", "max"),
    ("cost.usd_per_1k_samples", "min"),
)


def _clock(seconds: float) -> str:
    s = round(seconds)
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class ProgressBar:
    """`sweep [####------] 12/24 points, 1 failed, elapsed 0:14, ETA 0:13` on stderr.

    On a terminal the line redraws in place; otherwise a line is printed at every tenth.
    """

    def __init__(self, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.total = self.parallelism = self.start_done = 0
        self.run_s: list[float] = []
        self.t0 = time.perf_counter()
        self.last_tenth = -1

    def start(self, total: int, done: int, parallelism: int) -> None:
        self.total, self.start_done, self.parallelism = total, done, max(parallelism, 1)
        self.t0 = time.perf_counter()
        self.last_tenth = 10 * done // max(total, 1)
        self._draw(done, 0, force=True)

    def update(self, done: int, failed: int, seconds: float) -> None:
        self.run_s.append(seconds)
        self._draw(done, failed)

    def eta_s(self, done: int) -> float | None:
        remaining = self.total - done
        if not self.run_s:
            return None
        mean = sum(self.run_s) / len(self.run_s)
        return mean * math.ceil(remaining / self.parallelism)

    def line(self, done: int, failed: int) -> str:
        width = 24
        fill = width * done // max(self.total, 1)
        eta = self.eta_s(done)
        return (f"sweep [{'#' * fill}{'-' * (width - fill)}] {done}/{self.total} points, "
                f"{failed} failed, elapsed {_clock(time.perf_counter() - self.t0)}, "
                f"ETA {'-' if eta is None else _clock(eta)}")

    def _draw(self, done: int, failed: int, force: bool = False) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r" + self.line(done, failed) + "\x1b[K")  # clear the rest
        else:
            tenth = 10 * done // max(self.total, 1)
            if not force and tenth == self.last_tenth:
                return
            self.last_tenth = tenth
            self.stream.write(self.line(done, failed) + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def summary_lines(outcome: SweepOutcome, keys: tuple[str, ...]) -> list[str]:
    """Where the results are, and the best setting per main metric."""
    results = outcome.out_dir / RESULTS_DIR
    lines = [f"{outcome.done} of {outcome.points} points done ({outcome.failed} failed): "
             f"{results}/ (pyarrow.parquet.read_table({str(results)!r}))"]
    rows = [r for r in outcome.table.to_pylist() if r[ERROR_COLUMN] is None]
    metrics = [(m, better) for m, better in MAIN_METRICS if m in outcome.table.column_names]
    if not rows or not metrics:
        return lines
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    table = [["metric", "best", "point", *keys]]
    for metric, better in metrics:
        means = {g: sum(r[metric] for r in rs) / len(rs) for g, rs in groups.items()}
        sign = 1.0 if better == "min" else -1.0
        # Ties go to the lowest point id, so the table is deterministic.
        best = min(means, key=lambda g: (sign * means[g], min(r["point"] for r in groups[g])))
        table.append([f"{metric} ({better})", f"{means[best]:.4g}",
                      str(min(r["point"] for r in groups[best])),
                      *(f"{v:.4g}" if isinstance(v, float) else str(v) for v in best)])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    title = "best per metric" + (" (mean over replicates)" if len(rows) > len(groups) else "")
    lines.append(title + ":")
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in table]
    return lines
