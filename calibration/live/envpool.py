"""Worker processes fed through pipes by one caller, without helper threads.

`PipeWorkers` spawns processes that each serve one job at a time on their own pipe;
`submit()` hands a job to a free worker (FIFO backlog otherwise, like rlsim's worker pools);
`poll()` collects finished jobs and refills freed workers. Everything happens in the
caller's thread between engine iterations: a thread-based pool would wake helper threads
that take the engine's interpreter lock in the middle of its iterations.
`EnvWorkers` are the environment's (each worker holds a `SandboxEnv`); the reward workers of
the async mode (`reward.RewardWorkers`) are the same machinery with a scoring function.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from calibration.live.cores import become_helper
from calibration.live.sandbox import SandboxEnv


def _serve_env(conn: Connection, root: str) -> None:
    env = SandboxEnv(root=Path(root))
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            return
        traj_id, files, command = msg
        obs, secs = env.step(traj_id, files, command)
        conn.send((obs, secs, time.perf_counter()))  # the answer's time: the job's latency


def _serve(target: Callable[..., None], idle: bool, conn: Connection, *args: Any) -> None:
    become_helper(idle)
    target(conn, *args)


class PipeWorkers:
    """`workers` processes running `target(conn, *args)`: it sends "ready", then answers
    every job it receives with one result, in order, until it receives None.

    `depth` jobs at most are in flight per worker. With 1 (the environment's), a job waits
    in a FIFO backlog for a free worker, as in rlsim's pools, but a worker that finishes is
    refilled only when the caller next polls (between engine iterations). Jobs of
    microseconds (the async mode's rewards) would then run at one per worker per engine
    iteration, a limit of this single-threaded caller that no reward service has: they use
    a larger depth, so each goes at once to the worker with the fewest jobs and waits in
    that worker's pipe."""

    def __init__(self, workers: int, target: Callable[..., None], args: tuple[Any, ...] = (),
                 what: str = "worker", depth: int = 1, idle: bool = False) -> None:
        """`idle`: the workers run at idle priority (`cores.become_helper`)."""
        if workers < 1:
            raise ValueError(f"need at least one {what}")
        if depth < 1:
            raise ValueError("depth must be >= 1")
        ctx = mp.get_context("spawn")
        self._conns: list[Connection] = []
        self._procs = []
        for _ in range(workers):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(target, idle, theirs, *args), daemon=True)
            proc.start()
            self._conns.append(mine)
            self._procs.append(proc)
        for conn in self._conns:  # started and imported before anything is timed
            if not conn.poll(120) or conn.recv() != "ready":
                raise RuntimeError(f"a {what} did not start within 120 s")
        self.depth = depth
        # (key, time sent to the worker) per worker, in order
        self._sent: list[deque[tuple[Any, float]]] = [deque() for _ in range(workers)]
        self._backlog: deque[tuple[Any, Any]] = deque()

    def submit_job(self, key: Any, job: Any) -> None:
        self._backlog.append((key, job))
        self._dispatch()

    def _dispatch(self) -> None:
        while self._backlog:
            w = min(range(len(self._sent)), key=lambda i: len(self._sent[i]))
            if len(self._sent[w]) >= self.depth:
                return
            key, job = self._backlog.popleft()
            self._conns[w].send(job)
            self._sent[w].append((key, time.perf_counter()))

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs if p.pid is not None]

    @property
    def pending(self) -> int:
        return sum(len(q) for q in self._sent) + len(self._backlog)

    def busy_connections(self) -> list[Connection]:
        """The pipes of busy workers: what a caller with nothing else to do waits on."""
        return [c for c, q in zip(self._conns, self._sent, strict=True) if q]

    def poll_results(self, timeout: float = 0.0) -> list[tuple[Any, Any]]:
        """Finished jobs as (key, result); waits up to `timeout` for one."""
        return [(key, result) for key, result, _, _ in self._poll(timeout)]

    def _poll(self, timeout: float) -> list[tuple[Any, Any, float, int]]:
        """Finished jobs as (key, result, time the job was sent to its worker, worker)."""
        busy = self.busy_connections()
        if not busy:
            return []
        out = []
        for conn in wait(busy, timeout):
            assert isinstance(conn, Connection)
            w = self._conns.index(conn)
            sent = self._sent[w]
            while sent and conn.poll():
                key, at = sent.popleft()
                out.append((key, conn.recv(), at, w))
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


class EnvWorkers(PipeWorkers):
    """Environment steps. A step's seconds are what the job waited for it on its worker:
    from the request sent to the worker to the worker's answer (the pipe, a wait for CPU,
    the sandbox and its command), not the sandbox's own time alone (`worker_s`). A wait
    for a free worker before that is left out: the simulator queues steps on its own
    environment workers."""

    def __init__(self, workers: int, root: Path, idle: bool = False) -> None:
        super().__init__(workers, _serve_env, (str(root),), "environment worker", idle=idle)
        self.worker_s = 0.0  # the sandboxes' own seconds, over every step

    def submit(self, key: Any, traj_id: int, files: dict[str, str], command: str) -> None:
        self.submit_job(key, (traj_id, files, command))

    def poll(self, timeout: float = 0.0) -> list[tuple[Any, str, float]]:
        """Finished steps as (key, observation, seconds); waits up to `timeout` for one."""
        out = []
        for key, (obs, secs, answered), sent, _ in self._poll(timeout):
            self.worker_s += secs
            out.append((key, obs, max(answered - sent, secs)))
        return out
