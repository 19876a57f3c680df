"""benchmarks/run_all.py: repeated runs of a benchmark combine into one honest row."""

from __future__ import annotations

from pathlib import Path

from tests.scenarios import load_script

RUN_ALL = Path(__file__).resolve().parents[1] / "benchmarks" / "run_all.py"


def test_times_keep_their_minimum_rates_their_maximum_and_counts_their_value() -> None:
    run_all = load_script(RUN_ALL, "bench_run_all")
    runs = [
        {"benchmark": "b", "cpu_s": 12.0, "wall_s": 20.0, "peak_rss_mb": 400.0,
         "events_per_cpu_s": 100, "events": 5, "load_1m": 1.5},
        {"benchmark": "b", "cpu_s": 10.0, "wall_s": 25.0, "peak_rss_mb": 390.0,
         "events_per_cpu_s": 120, "events": 5, "load_1m": 0.5},
    ]
    row = run_all.combine(runs, [1.52, 0.49])
    assert row["cpu_s"] == 10.0 and row["wall_s"] == 20.0 and row["peak_rss_mb"] == 390.0
    assert row["events_per_cpu_s"] == 120 and row["events"] == 5
    assert row["runs"] == 2 and row["load_1m_runs"] == "1.52/0.49"
    assert "load_1m" not in row


def test_a_target_on_cpu_seconds_is_met_or_missed_as_stated() -> None:
    run_all = load_script(RUN_ALL, "bench_run_all")
    target = run_all.TARGETS["async_agentic_1024"]["cpu_s"]
    assert run_all.verdict(target, target) == f"<= {target:g} (met)"
    assert run_all.verdict(target * 1.01, target).endswith("(MISSED)")
