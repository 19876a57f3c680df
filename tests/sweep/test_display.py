"""The progress bar's ETA and the closing table's best points."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa

from rlsim.sweep.display import ProgressBar, summary_lines
from rlsim.sweep.runner import SweepOutcome


def test_eta_from_mean_point_time_and_parallelism():
    out = io.StringIO()
    bar = ProgressBar(stream=out)
    bar.start(total=10, done=1, parallelism=2)
    assert bar.eta_s(1) is None  # nothing measured yet
    bar.update(2, 0, 1.0)
    bar.update(3, 1, 3.0)
    assert bar.eta_s(3) == 2.0 * 4  # mean 2 s, 7 points left in rounds of 2
    assert "3/10 points, 1 failed" in out.getvalue() and "ETA 0:08" in out.getvalue()


def test_best_setting_per_metric_averages_replicates():
    rows = [  # k=1 is best on average although k=2 has the single best replicate
        {"point": 0, "k": 1, "error": None, "step_time_s.mean": 2.0},
        {"point": 1, "k": 1, "error": None, "step_time_s.mean": 2.0},
        {"point": 2, "k": 2, "error": None, "step_time_s.mean": 1.0},
        {"point": 3, "k": 2, "error": None, "step_time_s.mean": 5.0},
        {"point": 4, "k": 3, "error": "k: bad", "step_time_s.mean": None},
    ]
    outcome = SweepOutcome(Path("d"), 5, 5, 1, False, pa.Table.from_pylist(rows))
    lines = summary_lines(outcome, ("k",))
    assert lines[0].startswith("5 of 5 points done (1 failed)")
    assert "mean over replicates" in lines[1]
    best = next(line for line in lines if "step_time_s.mean (min)" in line).split()
    assert best[2:] == ["2", "0", "1"]  # value, first point, k
