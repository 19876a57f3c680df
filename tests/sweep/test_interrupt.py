"""Interrupted sweeps: kill -9 or Ctrl-C mid-way, then --resume loses and repeats nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from rlsim.sweep import build_spec, read_results, run_sweep
from tests.cli.test_bad_input import run_cli
from tests.processes import interruptible
from tests.scenarios import tiny, write

ROOT = Path(__file__).resolve().parents[2]
POINTS = 10
# About 0.25 s a point, so the sweep cannot finish in the few ms between two polls.
GRID = ["--grid", "workload.prompts_per_step=16,17", "--grid", "reward.workers=4,5,6,7,8"]


def _sweep_args(path: Path, out: Path, *extra: str) -> list[str]:
    """The command line of a real process; [3:] are the arguments for run_cli."""
    return [sys.executable, "-m", "rlsim.cli", "sweep", str(path), "--out", str(out), *GRID,
            *extra]


def _parts(out: Path) -> list[Path]:
    results = out / "results"
    return sorted(results.glob("part-*.parquet")) if results.is_dir() else []


def _start_and_wait(path: Path, out: Path, jobs: int, at_least: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(_sweep_args(path, out, "--jobs", str(jobs)), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,  # its own group: workers die with it
                            preexec_fn=interruptible)
    deadline = time.monotonic() + 60
    while len(_parts(out)) < at_least:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sweep made no progress"
        time.sleep(0.01)
    return proc


def _reference(path: Path, out: Path) -> None:
    spec, ctx = build_spec(path, [], [GRID[1], GRID[3]], None, [], 1)
    run_sweep(spec, ctx, out, jobs=2)


def _long_scenario(tmp_path: Path) -> Path:
    return write(tmp_path, tiny(steps=60), "long.yaml")


def test_kill_9_then_resume_equals_an_uninterrupted_sweep(tmp_path, monkeypatch, capsys):
    path = _long_scenario(tmp_path)
    out = tmp_path / "killed"
    proc = _start_and_wait(path, out, jobs=1, at_least=2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    done_at_kill = len(_parts(out))
    assert 2 <= done_at_kill < POINTS, "the kill did not happen mid-way"
    # A write the kill interrupted (its temporary file) is cleaned up on resume.
    leftover = out / "results" / ".part-000009.parquet.tmp"
    leftover.write_bytes(b"half a file")
    code, _, err = run_cli(_sweep_args(path, out, "--jobs", "2", "--resume")[3:],
                           monkeypatch, capsys)
    assert code == 0, err
    assert f"resuming, {done_at_kill}/{POINTS} points" in err  # it started where it stopped
    assert not leftover.exists()
    _reference(path, tmp_path / "whole")
    got = pq.read_table(out / "results").sort_by("point")
    assert got.column("point").to_pylist() == list(range(POINTS))  # none lost, none twice
    assert got.equals(read_results(tmp_path / "whole"))


def test_ctrl_c_keeps_finished_points_and_exits_130(tmp_path, monkeypatch, capsys):
    path = _long_scenario(tmp_path)
    out = tmp_path / "interrupted"
    proc = _start_and_wait(path, out, jobs=2, at_least=2)
    proc.send_signal(signal.SIGINT)  # the main process only, as a terminal's Ctrl-C is
    _, err = proc.communicate(timeout=20)  # returns quickly only if the workers stopped
    assert proc.returncode == 130, err
    done = len(_parts(out))
    assert 2 <= done < POINTS
    assert err.strip().splitlines()[-1] == (
        f"interrupted: {done} of {POINTS} points done, sweep partial; resume with --resume")
    assert "Traceback" not in err
    status = json.loads((out / "status.json").read_text())  # marked partial on disk
    assert status["state"] == "partial" and status["interrupted"] and status["done"] == done
    time.sleep(0.3)
    assert len(_parts(out)) == done  # nothing kept running in the background
    code, _, err = run_cli(_sweep_args(path, out, "--jobs", "2", "--resume")[3:],
                           monkeypatch, capsys)
    assert code == 0, err
    assert read_results(out).column("point").to_pylist() == list(range(POINTS))
    assert json.loads((out / "status.json").read_text())["state"] == "complete"
