"""`rlsim run`/`compare`: an existing --out is refused unless --force, and Ctrl-C keeps what
finished, marked partial (exit 130). Issue 18."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_bad_input import run_cli
from tests.processes import interruptible
from tests.scenarios import tiny, write

ROOT = Path(__file__).resolve().parents[2]


def test_run_out_over_a_run_folder_is_refused_unless_force(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, tiny(steps=1))
    out = tmp_path / "run"
    assert run_cli(["run", str(path), "--out", str(out)], monkeypatch, capsys)[0] == 0
    before = (out / "summary.json").read_text()
    code, stdout, err = run_cli(["run", str(path), "--out", str(out), "--set", "steps=2"],
                                monkeypatch, capsys)
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and "--force" in err and "summary.json" in err
    assert (out / "summary.json").read_text() == before  # untouched
    code, _, err = run_cli(["run", str(path), "--out", str(out), "--set", "steps=2", "--force"],
                           monkeypatch, capsys)
    assert code == 0, err
    assert json.loads((out / "summary.json").read_text())["steps"] == 2


def test_out_that_is_a_non_empty_folder_is_refused(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, tiny(steps=1))
    out = tmp_path / "notes"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    code, _, err = run_cli(["run", str(path), "--out", str(out)], monkeypatch, capsys)
    assert code == 2 and "not empty" in err
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli(["run", str(path), "--out", str(empty)], monkeypatch, capsys)[0] == 0


def test_compare_out_over_a_compare_folder_is_refused_unless_force(tmp_path, monkeypatch,
                                                                    capsys):
    a = write(tmp_path, tiny(steps=1), "a.yaml")
    out = tmp_path / "cmp"
    assert run_cli(["compare", str(a), str(a), "--out", str(out)], monkeypatch, capsys)[0] == 0
    code, _, err = run_cli(["compare", str(a), "--out", str(out)], monkeypatch, capsys)
    assert code == 2 and "--force" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["compare", str(a), "--out", str(out), "--force"], monkeypatch,
                           capsys)
    assert code == 0, err
    # the old second run is no longer marked complete: only the new run folder is
    assert len(list(out.glob("*/summary.json"))) == 1


def test_force_removes_the_old_summary_before_writing(tmp_path, monkeypatch, capsys):
    """A --force rewrite that fails half-way leaves no summary.json that looks complete."""
    import rlsim.api as api

    path = write(tmp_path, tiny(steps=1))
    out = tmp_path / "run"
    assert run_cli(["run", str(path), "--out", str(out)], monkeypatch, capsys)[0] == 0

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(api, "write_parquet", broken)
    code, _, _ = run_cli(["run", str(path), "--out", str(out), "--force"], monkeypatch, capsys)
    assert code != 0
    assert not (out / "summary.json").exists()


def test_compare_checks_every_scenario_before_running_any(tmp_path, monkeypatch, capsys):
    a = write(tmp_path, tiny(steps=1), "a.yaml")
    b = write(tmp_path, tiny(steps=1_000_000_000), "b.yaml")
    code, out, err = run_cli(["compare", str(a), str(b)], monkeypatch, capsys)
    assert code == 2 and out == "" and "--allow-large" in err


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "rlsim.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=interruptible)


def _interrupt_once_running(proc: subprocess.Popen[str], marker: str) -> tuple[str, str]:
    """SIGINT after the progress line of the run named `marker` (the run is then inside
    the simulation, however loaded the machine); returns (stdout, stderr)."""
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith(f"{marker}: step"):
            proc.send_signal(signal.SIGINT)
            break
    else:
        proc.kill()
    try:
        out, err = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        proc.kill()  # not left running (a 200,000-step run grows to GBs)
        raise
    return out, "".join(seen) + err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_in_run_writes_a_partial_run_and_exits_130(tmp_path):
    path = write(tmp_path, tiny(steps=200_000), "long.yaml")
    out = tmp_path / "run"
    proc = _start(["run", str(path), "--out", str(out)], ROOT)
    _, err = _interrupt_once_running(proc, "long")
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "rlsim: interrupted: long at step " in err and "of 200000" in err
    assert "simulated time" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] is True
    assert 0 < summary["steps"] < 200_000
    assert (out / "records.parquet").is_file()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_in_compare_keeps_the_finished_runs(tmp_path):
    short = write(tmp_path, tiny(steps=1), "short.yaml")
    long = write(tmp_path, tiny(steps=200_000), "long.yaml")
    out = tmp_path / "cmp"
    proc = _start(["compare", str(short), str(long), "--out", str(out)], ROOT)
    stdout, err = _interrupt_once_running(proc, "long")
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted: long at step" in err and "1 of 2 runs finished" in err
    assert "tiny" in stdout and "step time mean" in stdout  # the finished run's table
    assert len(list(out.glob("*/summary.json"))) == 1


def test_simulate_keeps_the_finished_steps_on_ctrl_c():
    """In-process: a Ctrl-C during step 3 of 5 (at the end of its training) gives the
    records of the 2 finished steps, marked partial; still a KeyboardInterrupt, so
    `except Exception` (a sweep point) never swallows it."""
    from rlsim.api import RunInterrupted, simulate
    from rlsim.config.loading import scenario_from_dict

    scenario, base = scenario_from_dict(tiny(steps=5))

    def progress(done: int, total: int) -> None:
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as exc:
        simulate(scenario, base, progress)
    assert isinstance(exc.value, RunInterrupted)
    summary = exc.value.result.summary
    two_steps = simulate(*scenario_from_dict(tiny(steps=2))).summary
    assert summary["partial"] is True and summary["steps"] == two_steps["steps"]
    assert summary["sim_time_s"] == pytest.approx(two_steps["sim_time_s"])
    assert any("interrupted" in w for w in summary["warnings"])
    assert exc.value.sim_time_s > 0
