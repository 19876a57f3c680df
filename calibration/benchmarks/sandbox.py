"""Sandbox checkpoint and restore: a directory tree plus a running process's in-memory state.

A sandbox (an RL environment's container, reduced to what costs time) is a working tree of
`files` files totalling `tree_bytes`, and a Python process holding state in memory
(STATE_BYTES of data and a step counter). params {tree_bytes, files}.
- `sandbox_checkpoint`: ask the process through its stdin to dump its state to a file in the
  checkpoint dir (it answers when written), then copy the tree into the checkpoint dir.
- `sandbox_restore`: remove the working tree, copy the snapshot back, start a fresh process
  that loads the state file; done when it reports ready (with its state's digest).
Snapshots are plain copies in the page cache (no fsync), like a container runtime's
copy-on-write snapshot in local storage rather than an upload to remote storage.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path
from random import Random

from calibration.benchmarks import common
from calibration.measurements import Measurement

BENCHES = ("sandbox_checkpoint", "sandbox_restore")

STATE_BYTES = 1 * common.MB
FILES_PER_DIR = 64  # spread files over subdirectories, as a real project tree is

TREES_QUICK = [1 * common.MB, 16 * common.MB]
FILES_QUICK = [16, 256]
TREES_FULL = [1 * common.MB, 16 * common.MB, 64 * common.MB, 256 * common.MB]
FILES_FULL = [16, 256, 1024]
REPS_QUICK = 3
REPS_FULL = 5

# The sandboxed process: plain Python (no torch), so its start is an interpreter start.
# argv: seed and optional state file to restore from. Commands on stdin, one per line.
_PROCESS = """
import hashlib, pickle, random, sys
seed, state_bytes = int(sys.argv[1]), int(sys.argv[2])
if len(sys.argv) > 3:
    with open(sys.argv[3], "rb") as f:
        state = pickle.load(f)
else:
    state = {"steps": 0, "data": bytearray(random.Random(seed).randbytes(state_bytes))}
def digest():
    h = hashlib.sha256(state["data"])
    h.update(str(state["steps"]).encode())
    return h.hexdigest()
print("ready", digest(), flush=True)
for line in sys.stdin:
    cmd, *args = line.split()
    if cmd == "step":
        state["steps"] += 1
        i = state["steps"] % len(state["data"])
        state["data"][i] = (state["data"][i] + 1) % 256
    elif cmd == "dump":
        with open(args[0], "wb") as f:
            pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
    elif cmd == "exit":
        break
    print("ok", digest(), flush=True)
"""


def default_grid(device: str, quick: bool) -> list[common.Point]:
    trees, files = (TREES_QUICK, FILES_QUICK) if quick else (TREES_FULL, FILES_FULL)
    return [{"tree_bytes": t, "files": f} for t in trees for f in files]


def write_tree(root: Path, tree_bytes: int, files: int, seed: int = 0) -> None:
    """`files` files of random bytes summing to `tree_bytes`, FILES_PER_DIR per subdirectory."""
    rng = Random(seed)
    each, extra = divmod(tree_bytes, files)
    pool = rng.randbytes(min(each + extra, 4 * common.MB) + 4096)
    for i in range(files):
        size = each + (extra if i == 0 else 0)
        d = root / f"d{i // FILES_PER_DIR:03d}"
        d.mkdir(parents=True, exist_ok=True)
        with open(d / f"f{i:05d}.bin", "wb") as f:
            left, offset = size, rng.randrange(4096)
            while left > 0:
                chunk = pool[offset: offset + min(left, len(pool) - offset)]
                f.write(chunk)
                left -= len(chunk)
                offset = 0


def read_tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` by relative path (for checking a restore)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


class Sandbox:
    """A working tree and its process, in `root`/work; checkpoints go wherever asked."""

    def __init__(self, root: Path, tree_bytes: int, files: int, seed: int = 0):
        self.root = root
        self.work = root / "work"
        self.seed = seed
        write_tree(self.work, tree_bytes, files, seed)
        self.proc: subprocess.Popen[str] | None = None
        self.digest = self._start(None)

    def _start(self, state_file: Path | None) -> str:
        args = [sys.executable, "-c", _PROCESS, str(self.seed), str(STATE_BYTES)]
        if state_file is not None:
            args.append(str(state_file))
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, cwd=self.work)
        return self._expect("ready")

    def _expect(self, word: str) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if len(line) != 2 or line[0] != word:
            raise RuntimeError(f"sandbox process said {line!r}, expected {word!r}")
        return line[1]

    def ask(self, command: str) -> str:
        """Send one command; returns the state digest the process reports after it."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        self.digest = self._expect("ok")
        return self.digest

    def checkpoint(self, dest: Path) -> None:
        """Process state to dest/state.pkl, then the tree to dest/tree."""
        dest.mkdir(parents=True)
        self.ask(f"dump {dest / 'state.pkl'}")
        shutil.copytree(self.work, dest / "tree")

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
            self.proc = None

    def restore(self, src: Path) -> None:
        """Replace the tree with the snapshot and start a process from the saved state."""
        self.stop()  # a restore replaces a sandbox that is gone, not one still running
        shutil.rmtree(self.work)
        shutil.copytree(src / "tree", self.work)
        self.digest = self._start(src / "state.pkl")


def run(device: str, quick: bool, progress: common.Progress | None = None,
        benches: Collection[str] = BENCHES) -> list[Measurement]:
    if not any(b in benches for b in BENCHES):
        return []
    points = common.grid("sandbox_checkpoint", default_grid(device, quick))
    reps = REPS_QUICK if quick else REPS_FULL
    out: list[Measurement] = []
    for i, p in enumerate(points):
        tree_bytes, files = int(p["tree_bytes"]), int(p["files"])
        ckpt_s, restore_s = measure_point(tree_bytes, files, reps)
        params = {"tree_bytes": tree_bytes, "files": files}
        for bench, times in (("sandbox_checkpoint", ckpt_s), ("sandbox_restore", restore_s)):
            if bench in benches:
                out.append(common.sample_measurement(bench, params, times))
                common.notify(progress, bench, i + 1, len(points))
    return out


def measure_point(tree_bytes: int, files: int, reps: int) -> tuple[list[float], list[float]]:
    """Per-repetition checkpoint and restore seconds for one sandbox size."""
    ckpt_s: list[float] = []
    restore_s: list[float] = []
    with tempfile.TemporaryDirectory(prefix="rlsim-sandbox-") as tmp:
        box = Sandbox(Path(tmp), tree_bytes, files)
        try:
            for rep in range(reps):
                box.ask("step")  # new state each time, so every dump writes fresh data
                dest = Path(tmp) / f"ckpt{rep}"
                start = time.perf_counter()
                box.checkpoint(dest)
                ckpt_s.append(time.perf_counter() - start)
                start = time.perf_counter()
                box.restore(dest)
                restore_s.append(time.perf_counter() - start)
                shutil.rmtree(dest)
        finally:
            box.stop()
    return ckpt_s, restore_s
