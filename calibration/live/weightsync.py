"""The live job's weight sync, timed on its own as a microbenchmark before the live runs.

The job's `weight_sync` (`runner._Job.weight_sync`) copies every parameter into the shared
buffer, messages the rollout process, which wakes from its blocking receive, copies every
parameter out and answers. The simulator prices a sync as the link's one-way latency plus
the weight bytes at the link's bandwidth (the measured copy rate / 4,
`scenario.scenario_dict`); that bandwidth term alone came to 0.03-0.1 ms where the job paid
1.0-1.5 ms: per-tensor copies, the pipe and the wake-up of an idle process, none of which
scale with bytes. This benchmark runs the same mechanism (the same model, buffer views and
copy loops, a rollout-side process spawned on the rollout core) with the job's idle time
before each sync, and `link_latency_s` turns its median into the link's latency: what the
sync costs beyond its bandwidth term. Nothing here reads a live run.
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import time
from dataclasses import replace
from multiprocessing.connection import Connection

import torch

from calibration.live.cores import Placement, pinned
from calibration.live.model import TinyLM, flat_params
from calibration.live.rollout import now
from calibration.live.runner import LiveConfig, _rollout_model, _views

IDLE_S = 0.1  # the rollout process waits this long (reward, ref, train) before a sync
REPEATS = 9


def _serve(cfg: LiveConfig, conn: Connection, flat: torch.Tensor) -> None:
    """The rollout side: as `runner._rollout_main` answers "sync"."""
    _, load = _rollout_model(cfg, flat)
    conn.send(("ready", now()))
    while conn.recv() is not None:
        load()
        conn.send(("synced", now()))


def measure_weight_sync_s(cfg: LiveConfig, place: Placement | None,
                          repeats: int | None = None, idle_s: float | None = None
                          ) -> list[float]:
    """Seconds of each timed sync (`repeats`, default REPEATS, each after `idle_s`, default
    IDLE_S), from the trainer starting to copy to the rollout side done loading (the live
    `weight_sync` span). Call on the trainer's core."""
    repeats = REPEATS if repeats is None else repeats
    idle_s = IDLE_S if idle_s is None else idle_s
    cfg = replace(cfg, mode="sync")
    torch.set_num_threads(cfg.threads)
    model = TinyLM(cfg.lm)
    params = [p.data for p in flat_params(model)]
    flat = torch.zeros(sum(p.numel() for p in params)).share_memory_()
    views = _views(flat, params)
    ctx = mp.get_context("spawn")
    conn, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(cfg, child, flat), daemon=True)
    with pinned(place.rollout if place else None):  # inherited at spawn
        proc.start()
    try:
        if not conn.poll(120) or conn.recv()[0] != "ready":
            raise RuntimeError("the weight-sync benchmark's rollout side did not start")
        out = []
        for k in range(repeats + 1):  # the first one warms the copies up, untimed
            time.sleep(idle_s)
            t0 = now()
            for v, p in zip(views, params, strict=True):
                v.copy_(p)
            conn.send(("sync",))
            _, t1 = conn.recv()
            if k:
                out.append(t1 - t0)
        conn.send(None)
        proc.join(timeout=10)
    finally:
        if proc.is_alive():
            proc.kill()
    return out


def link_latency_s(sync_s: list[float], weight_bytes: float, bandwidth: float) -> float:
    """The link's one-way latency that makes the simulator's sync (latency + bytes /
    bandwidth) cost the measured median; never below 10 us (the schema's default)."""
    return max(statistics.median(sync_s) - weight_bytes / bandwidth, 1e-5)
