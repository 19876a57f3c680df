"""Collectives through torch.distributed: all-reduce, all-gather and broadcast by message size.

params {size_bytes, ranks, backend}. `size_bytes` follows nccl-tests: the all-reduce and
broadcast buffer, and the all-gather OUTPUT (each rank contributes size_bytes / ranks).
Two processes are started with torch.multiprocessing (spawn) and rendezvous on a free
127.0.0.1 port; gloo with CPU tensors, or NCCL on two GPUs when the machine has them. Start-up
and process-group creation stay outside the timed region. Each timed repetition starts after
a barrier, so all ranks enter the collective together; rank 0 reports the median.
"""

from __future__ import annotations

import math
import os
import queue
import socket
import time
from collections.abc import Callable, Collection
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from calibration.benchmarks import common
from calibration.measurements import Measurement
from calibration.timing import sync

BENCHES = ("allreduce", "allgather", "broadcast")
RANKS = 2

SIZES_QUICK = [4 * common.KB, 64 * common.KB, 1 * common.MB, 16 * common.MB]
SIZES_FULL = common.pow2_range(4 * common.KB, 64 * common.MB, 4)

START_TIMEOUT_S = 120.0


def default_grid(device: str, quick: bool) -> list[common.Point]:
    return [{"size_bytes": s} for s in (SIZES_QUICK if quick else SIZES_FULL)]


def backend_for(device: str) -> tuple[str, str]:
    """(backend, tensor device): NCCL needs one GPU per rank; otherwise gloo on host memory."""
    if device.startswith("cuda") and torch.cuda.device_count() >= RANKS:
        return "nccl", "cuda"
    return "gloo", "cpu"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _collective(bench: str, size_bytes: int, ranks: int,
                device: str) -> Callable[[], object]:
    elements = max(ranks, size_bytes // 4)  # float32, like gradients reduced in fp32
    if bench == "allreduce":
        buf = torch.ones(elements, device=device)
        return lambda: dist.all_reduce(buf)
    if bench == "broadcast":
        buf = torch.ones(elements, device=device)
        return lambda: dist.broadcast(buf, src=0)
    if bench == "allgather":
        out = torch.empty(elements - elements % ranks, device=device)
        inp = torch.ones(out.numel() // ranks, device=device)
        # all_gather_single is the newer name of all_gather_into_tensor (deprecated in 2.13).
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return lambda: gather(out, inp)
    raise ValueError(f"unknown collective {bench!r}")


def _timed_reps(op: Callable[[], object], device: str, budget: common.Budget) -> list[float]:
    """Per-call times; every rank runs the same count (rank 0 decides and broadcasts it).

    One call per repetition, right after a barrier. (Timing batches of back-to-back calls
    was tried: on a 2-core box the ranks' reduction and transport threads then fight for
    the cores and small-message times get worse and noisier, not better.)
    """
    warm_s = 0.0
    for _ in range(max(1, budget.warmup)):
        dist.barrier()
        start = time.perf_counter()
        op()
        sync(device)
        warm_s = time.perf_counter() - start
    count = torch.tensor([0], dtype=torch.int64, device=device)
    if dist.get_rank() == 0:
        want = math.ceil(budget.min_time_s / max(warm_s, 1e-6))
        count[0] = min(budget.max_reps, max(budget.min_reps, want))
    dist.broadcast(count, src=0)
    times = []
    for _ in range(int(count.item())):
        dist.barrier()
        sync(device)
        start = time.perf_counter()
        op()
        sync(device)
        times.append(time.perf_counter() - start)
    return times


def _worker(rank: int, ranks: int, port: int, backend: str, device: str,
            jobs: list[tuple[str, int]], budget: common.Budget, results: Any) -> None:
    """One rank: join the group, time every job, rank 0 sends progress and results back."""
    if device == "cpu":
        torch.set_num_threads(1)  # one core per rank; gloo brings its own threads
    if "GLOO_SOCKET_IFNAME" not in os.environ and any(n == "lo" for _, n in socket.if_nameindex()):
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # keep traffic on loopback
    if device == "cuda":
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=ranks, timeout=timedelta(seconds=START_TIMEOUT_S))
    try:
        for bench, size in jobs:
            times = _timed_reps(_collective(bench, size, ranks, device), device, budget)
            if rank == 0:
                results.put((bench, size, times))
    finally:
        dist.destroy_process_group()


def run(device: str, quick: bool, progress: common.Progress | None = None,
        benches: Collection[str] = BENCHES) -> list[Measurement]:
    backend, tensor_device = backend_for(device)
    jobs: list[tuple[str, int]] = []
    totals: dict[str, int] = {}
    for bench in BENCHES:
        if bench in benches:
            sizes = [int(p["size_bytes"]) for p in common.grid(bench, default_grid(device, quick))]
            jobs += [(bench, s) for s in sizes]
            totals[bench] = len(sizes)
    if not jobs:
        return []
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    args = (RANKS, free_port(), backend, tensor_device, jobs, common.budget(quick, device),
            results)
    procs = mp.start_processes(_worker, args=args, nprocs=RANKS, join=False,
                               start_method="spawn")
    out: list[Measurement] = []
    done: dict[str, int] = dict.fromkeys(totals, 0)

    def drain() -> None:
        while True:
            try:
                bench, size, times = results.get_nowait()
            except queue.Empty:
                return
            params = {"size_bytes": size, "ranks": RANKS, "backend": backend}
            out.append(common.sample_measurement(bench, params, times))
            done[bench] += 1
            common.notify(progress, bench, done[bench], totals[bench])

    # Results are read while the ranks run: a rank cannot exit with unread data in its queue.
    while not procs.join(timeout=0.1):
        drain()
    drain()
    if len(out) != len(jobs):
        raise RuntimeError(f"collectives: got {len(out)} of {len(jobs)} points from the ranks")
    return out

