"""Engine start: a cold start from disk in a fresh process vs a warm reload from host memory.

`cold_start` params {weights_bytes}: the parent spawns a fresh Python process that imports
torch, reads `weights_bytes` of weights from a file, moves them to the device and runs one
warm-up matmul, then says "ready"; the time is measured in the parent from spawn to that
line, so interpreter start, imports and device initialization count as they do for a real
engine. The file's pages are dropped from the page cache before each start (posix_fadvise),
so the weights really come from disk. `warm_reload` params {weights_bytes}: weights already
resident in host memory (pinned on CUDA) are copied into freshly allocated device tensors
(a new host tensor on CPU) - a generator reloading weights it kept in host DRAM.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path

import torch

from calibration.benchmarks import common
from calibration.measurements import Measurement

BENCHES = ("cold_start", "warm_reload")

SIZES_QUICK = [16 * common.MB, 64 * common.MB, 256 * common.MB]
SIZES_FULL = [64 * common.MB, 256 * common.MB, 1024 * common.MB]
COLD_REPS_QUICK = 2
COLD_REPS_FULL = 3
READY_TIMEOUT_S = 300.0

# Run by `python -c` in the fresh process: argv = weights path, bytes, device.
_CHILD = """
import sys
import torch
path, size, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
host = torch.from_file(path, shared=False, size=size, dtype=torch.uint8)
weights = torch.empty(size, dtype=torch.uint8, device=device)
weights.copy_(host)  # reads every page of the file
x = torch.randn(256, 256, device=device)
(x @ x).sum().item()  # warm-up matmul; .item() waits for the device
print("ready", flush=True)
"""


def default_grid(device: str, quick: bool) -> list[common.Point]:
    return [{"weights_bytes": s} for s in (SIZES_QUICK if quick else SIZES_FULL)]


def write_weights(path: Path, size: int) -> None:
    """`size` bytes of incompressible data, flushed to disk."""
    block = torch.randint(0, 256, (min(size, 4 * common.MB),), dtype=torch.uint8).numpy()
    with open(path, "wb") as f:
        left = size
        while left > 0:
            chunk = block[: min(left, block.size)]
            f.write(chunk.tobytes())
            left -= chunk.size
        f.flush()
        os.fsync(f.fileno())


def drop_from_page_cache(path: Path) -> None:
    """Evict this file's pages so the next read goes to disk (no root needed, this file only)."""
    if hasattr(os, "posix_fadvise"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def cold_start_once(path: Path, size: int, device: str) -> float:
    """Seconds from spawning the fresh process to its "ready" line."""
    drop_from_page_cache(path)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(path), str(size), device],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - start
        if line.strip() != "ready":
            raise RuntimeError(f"cold_start child did not get ready (exit {proc.wait()})")
    finally:
        proc.wait(timeout=READY_TIMEOUT_S)
    return elapsed


def run(device: str, quick: bool, progress: common.Progress | None = None,
        benches: Collection[str] = BENCHES) -> list[Measurement]:
    out: list[Measurement] = []
    if "cold_start" in benches:
        out += _run_cold(device, quick, progress)
    if "warm_reload" in benches:
        out += _run_warm(device, quick, progress)
    return out


def _run_cold(device: str, quick: bool, progress: common.Progress | None) -> list[Measurement]:
    points = common.grid("cold_start", default_grid(device, quick))
    reps = COLD_REPS_QUICK if quick else COLD_REPS_FULL
    out: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="rlsim-cold-") as tmp:
        for i, p in enumerate(points):
            size = int(p["weights_bytes"])
            path = Path(tmp) / "weights.bin"
            write_weights(path, size)
            times = [cold_start_once(path, size, device) for _ in range(reps)]
            path.unlink()
            out.append(common.sample_measurement("cold_start", {"weights_bytes": size}, times))
            common.notify(progress, "cold_start", i + 1, len(points))
    return out


def _run_warm(device: str, quick: bool, progress: common.Progress | None) -> list[Measurement]:
    points = common.grid("warm_reload", default_grid(device, quick))
    cuda = device.startswith("cuda")
    out: list[Measurement] = []
    for i, p in enumerate(points):
        size = int(p["weights_bytes"])
        host = torch.ones(size, dtype=torch.uint8, pin_memory=cuda)

        def reload(host: torch.Tensor = host, size: int = size) -> torch.Tensor:
            fresh = torch.empty(size, dtype=torch.uint8, device=device)
            return fresh.copy_(host, non_blocking=cuda)

        out.append(common.timed_point("warm_reload", {"weights_bytes": size}, reload, device,
                                      quick))
        del host
        common.notify(progress, "warm_reload", i + 1, len(points))
    return out
