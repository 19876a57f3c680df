"""Environment steps of the agentic task: a `cat` tool over per-trajectory sandbox directories.

`SandboxEnv.step(traj_id, files, command)` creates the trajectory's directory and its files
on the trajectory's first step (the environment reset), carries out the command there, and
returns the observation text and the step's wall time. Only `$cat NAME` (NAME one letter) is
carried out: the file NAME of the trajectory's own directory is read, "!" if there is none;
anything else gets the observation "=?", because the policy's output is never executed.

The tool reads the file in the worker process instead of forking a `cat` subprocess. On the
two-core testbed the environment workers have no host of their own (`cores`): a forked `cat`
costs about 1 ms of CPU, which at normal priority is taken from the trainer or the engine
and at idle priority waits until one of them idles. Both are artefacts of sharing cores
(a cluster's environments run on other hosts), and the second made the replayed latencies
depend on when the step happened, up to 0.13 s (docs/validation.md, "The environment's
tool"). Reading the file in the worker costs tens of microseconds.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path

from calibration.live.tasks import observation

_COMMAND = re.compile(r"\$cat ([a-z])")


class SandboxEnv:
    """Sandbox directories under one temporary root, removed by `close()`."""

    def __init__(self, root: Path | None = None) -> None:
        """Sandboxes under `root` (shared by several worker processes; the owner removes
        it), or under a new temporary directory that `close()` removes."""
        self._owned = root is None
        self._root = Path(tempfile.mkdtemp(prefix="rlsim-live-")) if root is None else root

    def step(self, traj_id: int, files: dict[str, str], command: str) -> tuple[str, float]:
        """Carry out `command` in trajectory `traj_id`'s sandbox; (observation, seconds)."""
        t0 = time.perf_counter()
        home = self._root / str(traj_id)
        if not home.exists():
            home.mkdir(exist_ok=True)
            for name, text in files.items():
                (home / name).write_text(text)
        m = _COMMAND.fullmatch(command)
        if m is None:
            obs = observation("?")
        else:
            try:
                obs = observation((home / m.group(1)).read_text())
            except OSError:  # no such file (or unreadable): what a failed `cat` reports
                obs = observation("!")
        return obs, time.perf_counter() - t0

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self._root, ignore_errors=True)
