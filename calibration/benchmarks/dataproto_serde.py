"""The single controller's own copies of a padded batch, on this host's CPU (issue 36).

veRL's driver ships every worker-group call's batch as one padded DataProto: int64
`input_ids`, `attention_mask`, `position_ids` of `[n, P + R]`, `prompts` `[n, P]`,
`responses` and `response_mask` `[n, R]`. Before Ray sees a chunk, `DataProto.__getstate__`
makes it contiguous (`consolidate`, a copy) and `torch.save`s it into a BytesIO; each
worker `torch.load`s its chunk, and the driver concatenates the outputs. This bench times
those steps on one thread (the driver's), min of `reps`, and the numpy pickling that
`VERL_DATAPROTO_SERIALIZATION_METHOD=numpy` swaps in. docs/research/controller-transfer.md
reads the rates against `controller.bandwidth`.

Run: `python -m calibration.benchmarks.dataproto_serde [--responses N]` (0.65 GB at the
default 2,048 responses of 1k + 7k tokens; a few seconds).
"""

from __future__ import annotations

import argparse
import io
import pickle
import time
from collections.abc import Callable
from typing import TypeVar

import torch

T = TypeVar("T")

STEPS = ("consolidate", "torch.save", "torch.load", "numpy pickle", "numpy unpickle",
         "torch.cat")


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


def run(n: int = 2048, prompt: int = 1024, response: int = 7168, workers: int = 8,
        reps: int = 3) -> tuple[int, dict[str, float]]:
    """(bytes of the batch, seconds of each step in STEPS over all `workers` chunks)."""
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
        return size, sec
    finally:
        torch.set_num_threads(saved)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibration.benchmarks.dataproto_serde",
                                 description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--responses", type=int, default=2048)
    args = ap.parse_args(argv)
    size, sec = run(args.responses)
    print(f"batch {size / 1e9:.2f} GB in 8 chunks, one thread, min of 3")
    for name in STEPS:
        print(f"  {name:15s} {sec[name]:6.2f} s = {size / sec[name] / 1e9:6.2f} GB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
