"""Environment worker processes for the rollout process, without helper threads.

Each worker is a spawned process holding a `SandboxEnv` and one pipe. `submit()` hands a
step to a free worker (FIFO backlog otherwise, like rlsim's env pool); `poll()` collects
finished steps and refills freed workers. Everything happens in the caller's thread between
engine iterations: a thread-based pool would wake helper threads that take the engine's
interpreter lock in the middle of its iterations.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
from collections import deque
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from calibration.live.sandbox import SandboxEnv


def _serve(conn: Connection, root: str) -> None:
    env = SandboxEnv(root=Path(root))
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            return
        traj_id, files, command = msg
        conn.send(env.step(traj_id, files, command))


class EnvWorkers:
    def __init__(self, workers: int, root: Path) -> None:
        ctx = mp.get_context("spawn")
        self._conns: list[Connection] = []
        self._procs = []
        for _ in range(workers):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(theirs, str(root)), daemon=True)
            proc.start()
            self._conns.append(mine)
            self._procs.append(proc)
        for conn in self._conns:  # started and imported before anything is timed
            if not conn.poll(120) or conn.recv() != "ready":
                raise RuntimeError("an environment worker did not start within 120 s")
        self._free = deque(range(workers))
        self._busy: dict[int, Any] = {}  # worker -> key of its step
        self._backlog: deque[tuple[Any, tuple[int, dict[str, str], str]]] = deque()

    def submit(self, key: Any, traj_id: int, files: dict[str, str], command: str) -> None:
        self._backlog.append((key, (traj_id, files, command)))
        self._dispatch()

    def _dispatch(self) -> None:
        while self._free and self._backlog:
            w = self._free.popleft()
            key, job = self._backlog.popleft()
            self._conns[w].send(job)
            self._busy[w] = key

    @property
    def pending(self) -> int:
        return len(self._busy) + len(self._backlog)

    def poll(self, timeout: float = 0.0) -> list[tuple[Any, str, float]]:
        """Finished steps as (key, observation, seconds); waits up to `timeout` for one."""
        if not self._busy:
            return []
        ready = wait([self._conns[w] for w in self._busy], timeout)
        out = []
        for conn in ready:
            assert isinstance(conn, Connection)
            w = self._conns.index(conn)
            obs, secs = conn.recv()
            out.append((self._busy.pop(w), obs, secs))
            self._free.append(w)
        self._dispatch()
        return out

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.send(None)
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
