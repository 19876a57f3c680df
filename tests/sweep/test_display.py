"""The progress's ETA and time-based redraws, and the closing table's best points."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa

from rlsim.sweep.display import LOG_EVERY_S, SHOW_AFTER_S, ProgressBar, summary_lines
from rlsim.sweep.runner import SweepOutcome


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_eta_from_mean_point_time_and_parallelism():
    out, clock = io.StringIO(), FakeClock()
    bar = ProgressBar(stream=out, clock=clock)
    bar.start(total=10, done=1, parallelism=2)
    assert "resuming, 1/10 points already done" in out.getvalue()
    assert bar.eta_s(1) is None  # nothing measured yet
    clock.now += SHOW_AFTER_S + 1
    bar.update(2, 0, 1.0)
    bar.update(3, 1, 3.0)
    assert bar.eta_s(3) == 2.0 * 4  # mean 2 s, 7 points left in rounds of 2
    bar.close()  # the final state is drawn whatever the interval
    assert "3/10 points, 1 failed" in out.getvalue() and "ETA 0:08" in out.getvalue()


def test_progress_redraws_by_time_not_per_point():
    """A short sweep prints nothing; a long one a line per LOG_EVERY_S in a log, however
    many points finish (the old bar printed at every tenth of the points)."""
    out, clock = io.StringIO(), FakeClock()
    bar = ProgressBar(stream=out, clock=clock)
    bar.start(total=1000, done=0, parallelism=2)
    for i in range(100):  # 100 points in the first second: too short to show
        clock.now += 0.01
        bar.update(i + 1, 0, 0.01)
    assert out.getvalue() == ""
    clock.now += SHOW_AFTER_S
    for i in range(100, 900):  # 800 points (80% of the sweep) within one log interval
        clock.now += (LOG_EVERY_S - 1) / 800
        bar.update(i + 1, 0, 0.01)
    assert len(out.getvalue().splitlines()) == 1
    clock.now += LOG_EVERY_S
    bar.tick()  # no point finished, yet the time-based line comes
    assert len(out.getvalue().splitlines()) == 2
    bar.close()
    assert out.getvalue().splitlines()[-1].startswith("sweep [") and "900/1000" in \
        out.getvalue().splitlines()[-1]


def test_short_sweep_prints_no_progress():
    out, clock = io.StringIO(), FakeClock()
    bar = ProgressBar(stream=out, clock=clock)
    bar.start(total=4, done=0, parallelism=2)
    bar.update(4, 0, 0.1)
    bar.close()
    assert out.getvalue() == ""


def _outcome(rows: list[dict]) -> SweepOutcome:
    table = pa.Table.from_pylist(rows)
    failed = sum(r["error"] is not None for r in rows)
    return SweepOutcome(Path("d"), len(rows), len(rows), failed, False, table)


def _best(lines: list[str], metric: str) -> list[str]:
    return next(line for line in lines if line.strip().startswith(metric)).split()


def test_best_setting_per_metric_averages_replicates():
    rows = [  # k=1 is best on average although k=2 has the single best replicate
        {"point": 0, "k": 1, "error": None, "step_time_s.mean": 2.0},
        {"point": 1, "k": 1, "error": None, "step_time_s.mean": 2.0},
        {"point": 2, "k": 2, "error": None, "step_time_s.mean": 1.0},
        {"point": 3, "k": 2, "error": None, "step_time_s.mean": 5.0},
        {"point": 4, "k": 3, "error": "k: bad", "step_time_s.mean": None},
    ]
    lines = summary_lines(_outcome(rows), ("k",))
    assert lines[0].startswith("5 of 5 points done (1 failed)")
    assert "mean over replicates" in lines[1]
    assert _best(lines, "step_time_s.mean")[2:] == ["2", "0", "1"]  # value, first point, k


def test_ties_are_reported_as_ties():
    """Regression: equal step times named the last setting (the highest failure rate) as
    the best; now every tied setting is named and none is singled out."""
    rows = [{"point": i, "faults.scale": s, "error": None, "step_time_s.mean": 10.0,
             "throughput.tokens_per_s": 500.0}
            for i, s in enumerate([0.0, 1.0, 2.0, 4.0])]
    rows[0]["throughput.tokens_per_s"] = 400.0  # three of four tie for best tokens/s
    lines = summary_lines(_outcome(rows), ("faults.scale",))
    tokens = " ".join(_best(lines, "throughput.tokens_per_s"))
    assert "tie of 3" in tokens and "1/2/4" in tokens
    rows = [{**r, "throughput.tokens_per_s": 500.0} for r in rows]
    lines = summary_lines(_outcome(rows), ("faults.scale",))
    assert "all 4 tie" in " ".join(_best(lines, "throughput.tokens_per_s"))


def test_fault_sweep_ranks_by_goodput_not_step_time():
    """Regression: step time leaves restarts out, so the most faults looked best."""
    rows = [{"point": i, "faults.scale": s, "error": None,
             "step_time_s.mean": 10.0 - s,  # fewer steps' worth of work between faults
             "goodput_samples_per_s": 8.0 / (1 + s), "throughput.tokens_per_s": 900.0 / (1 + s),
             "faults.injected": int(3 * s)} for i, s in enumerate([0.0, 1.0, 4.0])]
    lines = summary_lines(_outcome(rows), ("faults.scale",))
    ranked = [line.split()[0] for line in lines[2:]]
    assert ranked[0] == "metric" and ranked[1] == "goodput_samples_per_s"
    assert "step_time_s.mean" not in ranked and "fault sweep" in lines[1]
    assert _best(lines, "goodput_samples_per_s")[-1] == "0"  # no faults is best
    # Also when the faults come from the scenario rather than a swept key.
    rows = [{**r, "k": r["point"]} for r in rows]
    assert "fault sweep" in summary_lines(_outcome(rows), ("k",))[1]


def test_tokens_per_s_is_the_first_metric():
    rows = [{"point": i, "k": i, "error": None, "step_time_s.mean": 1.0 + i,
             "throughput.samples_per_s": 2.0 + i, "throughput.tokens_per_s": 9.0 - i}
            for i in range(2)]
    lines = summary_lines(_outcome(rows), ("k",))
    assert lines[2].split()[0] == "metric"
    assert [line.split()[0] for line in lines[3:]] == [
        "throughput.tokens_per_s", "throughput.samples_per_s", "step_time_s.mean"]
