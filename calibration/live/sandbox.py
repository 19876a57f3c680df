"""Environment steps of the agentic task: real commands in per-trajectory sandbox directories.

`SandboxEnv.step(traj_id, files, command)` creates the trajectory's directory on its first
step (the environment reset), runs the command as a subprocess there with a timeout, and
returns the observation text and the step's wall time. Only `$cat NAME` (NAME one letter)
is executed; anything else gets the observation "=?" without running, because the policy's
output must never reach a shell.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from calibration.live.tasks import observation

_COMMAND = re.compile(r"\$cat ([a-z])")
TIMEOUT_S = 2.0


class SandboxEnv:
    """Sandbox directories under one temporary root, removed by `close()`."""

    def __init__(self, timeout_s: float = TIMEOUT_S, root: Path | None = None) -> None:
        """Sandboxes under `root` (shared by several worker processes; the owner removes
        it), or under a new temporary directory that `close()` removes."""
        self.timeout_s = timeout_s
        self._owned = root is None
        self._root = Path(tempfile.mkdtemp(prefix="rlsim-live-")) if root is None else root

    def step(self, traj_id: int, files: dict[str, str], command: str) -> tuple[str, float]:
        """Run `command` in trajectory `traj_id`'s sandbox; (observation, seconds)."""
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
                done = subprocess.run(["cat", m.group(1)], cwd=home, capture_output=True,
                                      text=True, timeout=self.timeout_s, check=False)
                obs = observation(done.stdout if done.returncode == 0 else "!")
            except subprocess.TimeoutExpired:
                obs = observation("!")
        return obs, time.perf_counter() - t0

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self._root, ignore_errors=True)
