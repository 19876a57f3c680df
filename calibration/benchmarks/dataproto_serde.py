"""The single controller's own copies of a padded batch, on this host's CPU (issue 36).

veRL's driver ships every worker-group call's batch as one padded DataProto: int64
`input_ids`, `attention_mask`, `position_ids` of `[n, P + R]`, `prompts` `[n, P]`,
`responses` and `response_mask` `[n, R]`. Before Ray sees a chunk, `DataProto.__getstate__`
makes it contiguous (`consolidate`, a copy) and `torch.save`s it into a BytesIO; each
worker `torch.load`s its chunk, and the driver concatenates the outputs. This bench times
those steps on one thread (the driver's), min of `reps`, and the numpy pickling that
`VERL_DATAPROTO_SERIALIZATION_METHOD=numpy` swaps in. It also times the driver's two
composed paths as veRL runs them: `dispatch`, every chunk consolidated and saved by a
thread pool as `verl.utils.ray_utils.parallel_put` does (`threads` workers; 1 = serial),
and `collect`, every output loaded and concatenated on the driver's one thread.
`rlsim.cost.controller` prices the driver's send and receive paths from these
(docs/cost-model.md, "Controller").

Run: `python -m calibration.benchmarks.dataproto_serde [--responses N] [--threads T]
[--json FILE]` (0.65 GB at the default 2,048 responses of 1k + 7k tokens; seconds). On a
training cluster's head node (where veRL's driver runs), with `--threads` its core count,
it prints the `controller:` values that price that host.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

from calibration.run import cpu_name
from rlsim.config.scenario import OBJECT_STORE_BYTES_PER_S, rates_in_series

T = TypeVar("T")

STEPS = ("consolidate", "torch.save", "torch.load", "numpy pickle", "numpy unpickle",
         "torch.cat", "dispatch serial", "dispatch threaded", "collect")


def batch(n: int, prompt: int, response: int) -> dict[str, torch.Tensor]:
    """veRL's padded tensors for `n` responses."""
    length = prompt + response
    gen = torch.Generator().manual_seed(0)
    return {"input_ids": torch.randint(0, 150000, (n, length), generator=gen),
            "attention_mask": torch.ones(n, length, dtype=torch.long),
            "position_ids": torch.arange(length).repeat(n, 1),
            "prompts": torch.randint(0, 150000, (n, prompt), generator=gen),
            "responses": torch.randint(0, 150000, (n, response), generator=gen),
            "response_mask": torch.ones(n, response, dtype=torch.long)}


def _best(fn: Callable[[], T], reps: int) -> tuple[float, T]:
    best = float("inf")
    out = fn()  # warm-up, and the result when reps is 0
    for _ in range(reps):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _serialize(chunk: dict[str, torch.Tensor]) -> bytes:
    """One chunk as `DataProto.__getstate__` ships it: consolidated, then torch.save."""
    buf = io.BytesIO()
    torch.save({k: v.contiguous().clone() for k, v in chunk.items()}, buf)
    return buf.getvalue()


def run(n: int = 2048, prompt: int = 1024, response: int = 7168, workers: int = 8,
        reps: int = 3, threads: int = 2) -> tuple[int, dict[str, float]]:
    """(bytes of the batch, seconds of each step in STEPS over all `workers` chunks);
    `threads` is the pool of the threaded dispatch (veRL: min(chunks, cores))."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        data = batch(n, prompt, response)
        size = sum(t.numel() * t.element_size() for t in data.values())
        views = [{k: v.chunk(workers)[i] for k, v in data.items()} for i in range(workers)]

        def save(chunks: list[dict[str, torch.Tensor]]) -> list[bytes]:
            out = []
            for c in chunks:
                buf = io.BytesIO()
                torch.save(c, buf)
                out.append(buf.getvalue())
            return out

        sec: dict[str, float] = {}
        sec["consolidate"], chunks = _best(
            lambda: [{k: v.contiguous().clone() for k, v in c.items()} for c in views], reps)
        sec["torch.save"], blobs = _best(lambda: save(chunks), reps)
        sec["torch.load"], back = _best(
            lambda: [torch.load(io.BytesIO(b), weights_only=True) for b in blobs], reps)
        sec["numpy pickle"], nblobs = _best(
            lambda: [pickle.dumps({k: v.numpy() for k, v in c.items()}, protocol=5)
                     for c in chunks], reps)
        sec["numpy unpickle"], _ = _best(
            lambda: [{k: torch.from_numpy(v) for k, v in pickle.loads(b).items()}
                     for b in nblobs], reps)
        sec["torch.cat"], _ = _best(
            lambda: {k: torch.cat([b[k] for b in back]) for k in data}, reps)
        sec["dispatch serial"], _ = _best(lambda: [_serialize(c) for c in views], reps)
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            sec["dispatch threaded"], _ = _best(lambda: list(pool.map(_serialize, views)),
                                                reps)
        sec["collect"], _ = _best(lambda: _collect(blobs, list(data)), reps)
        return size, sec
    finally:
        torch.set_num_threads(saved)


def scenario_values(size: int, sec: dict[str, float]) -> dict[str, float]:
    """`controller.bandwidth` and `receive_bandwidth` (B/s) for a host timed by `run`: its
    threaded dispatch and its collect, each in series with Ray's object-store copy, as
    rlsim's defaults are composed."""
    return {"bandwidth": rates_in_series(size / sec["dispatch threaded"],
                                         OBJECT_STORE_BYTES_PER_S),
            "receive_bandwidth": rates_in_series(OBJECT_STORE_BYTES_PER_S,
                                                 size / sec["collect"])}


def _collect(blobs: list[bytes], keys: list[str]) -> dict[str, torch.Tensor]:
    """The driver's collect: every output loaded, then one concatenation per key."""
    parts = [torch.load(io.BytesIO(b), weights_only=True) for b in blobs]
    return {k: torch.cat([p[k] for p in parts]) for k in keys}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibration.benchmarks.dataproto_serde",
                                 description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--responses", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=2,
                    help="thread pool of the threaded dispatch (default 2)")
    ap.add_argument("--json", metavar="FILE", help="also write the rates to FILE")
    args = ap.parse_args(argv)
    if args.responses < 8 or args.threads < 1:
        ap.error("--responses must be >= 8 and --threads >= 1")
    size, sec = run(args.responses, threads=args.threads)
    print(f"batch {size / 1e9:.2f} GB in 8 chunks, one thread (dispatch threaded: "
          f"{args.threads}), min of 3")
    for name in STEPS:
        print(f"  {name:17s} {sec[name]:6.2f} s = {size / sec[name] / 1e9:6.2f} GB/s")
    values = scenario_values(size, sec)
    print("this host's driver, in series with Ray's object-store copy (docs/cost-model.md, "
          f"'Controller'):\n  controller: {{bandwidth: {values['bandwidth']:.4g}, "
          f"receive_bandwidth: {values['receive_bandwidth']:.4g}}}")
    if args.json:
        out = {"bench": "dataproto_serde", "bytes": size, "chunks": 8,
               "threads": args.threads, "torch": torch.__version__,
               "cpu": cpu_name(), "cores": os.cpu_count(),
               "rate_bytes_per_s": {k: size / v for k, v in sec.items()},
               "scenario": {"controller": values}}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
