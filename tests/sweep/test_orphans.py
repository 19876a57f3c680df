"""`kill -9` of a sweep's main process leaves no worker behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.scenarios import tiny, write

ROOT = Path(__file__).resolve().parents[2]


def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group `pgid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)"
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_kill_9_of_the_parent_leaves_no_worker(tmp_path):
    """Regression: the pool's workers outlived a killed parent, blocked on its queue or
    finishing points for no one."""
    path = write(tmp_path, tiny(steps=200), "long.yaml")  # seconds a point: workers are busy
    out = tmp_path / "s"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlsim.cli", "sweep", str(path), "--out", str(out),
         "--grid", "reward.workers=4,5,6,7,8,9,10,11", "--jobs", "2"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)  # its own process group, to find its workers by
    try:
        deadline = time.monotonic() + 60
        while len(_group(proc.pid)) < 3:  # the parent and its two workers
            assert proc.poll() is None, "the sweep ended before its workers were seen"
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.05)
        time.sleep(0.3)  # the workers are inside a point
        assert proc.poll() is None and len(_group(proc.pid)) >= 3, "nothing left to orphan"
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, as `kill -9 PID` does
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15  # generous on a loaded 2-core machine
        left = _group(proc.pid)
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = _group(proc.pid)
        assert left == [], f"workers still alive after the parent died: {left}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # never leave a stray process behind
