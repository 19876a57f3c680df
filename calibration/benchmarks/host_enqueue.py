"""Host time of eager passes at a real model's widths: how long the host takes to enqueue
one pass, timed around a call that returns before the GPU finishes (the GPU is idle when it
starts: synchronized before, not after; median and minimum of 15 after 3 warm-ups).

`host_overhead` measures the host's per-op cost at hidden 32, where every op is host-bound
and the time is the host's by construction; this bench checks that cost at the widths a
trainer runs (Qwen2.5-7B's, 4 and 8 of its layers, one sequence of 4,096 tokens), where the
GPU runs behind and a call's wall time is the host's only while nothing in it waits for the
GPU. Passes: `train L{n} rc{0,1}` (forward, log-softmax, backward; rc1 checkpoints every
layer), `forward L{n}` (no-grad log-probs), `decode L{n} b{1,64}` (one eager decode
iteration at context 2,048). The slope over the layer count is the per-layer host time;
calibration/rl_shapes_check.py compares it with HostOps. Checkpointed training (rc1) waits
for the GPU inside the backward, so its time is not the host's alone.

Run: `python -m calibration.benchmarks.host_enqueue --device cuda --out FILE` (about 40 s
on an H200; `--device cpu` runs tiny widths for the tests).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import replace

import torch
import torch.nn.functional as F

from calibration.benchmarks import rl_shapes as r

WARMUP = 3
REPS = 15


def host_time(fn: Callable[[], object], device: str, reps: int = REPS) -> tuple[float, float]:
    """(median, min) seconds of `fn()` from an idle GPU to its return."""
    cuda = device.startswith("cuda")
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(reps):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    if cuda:
        torch.cuda.synchronize()
    return statistics.median(times), min(times)


def _forward_fn(model: torch.nn.Module, ids: torch.Tensor) -> Callable[[], None]:
    """A no-grad log-prob pass over `ids`."""
    def forward() -> None:
        with torch.no_grad():
            logp = F.log_softmax(r._logits(model, ids), dim=-1)  # type: ignore[arg-type]
            torch.gather(logp, -1, ids[..., None])
    return forward


def run(device: str, reps: int = REPS) -> dict[str, tuple[float, float]]:
    cuda = device.startswith("cuda")
    base = r.QWEN25_7B if cuda else r.TINY
    dtype = torch.bfloat16 if cuda else torch.float32
    tokens, context = (4096, 2048) if cuda else (64, 64)
    out: dict[str, tuple[float, float]] = {}
    for layers in (4, 8):
        dims = replace(base, layers=layers)
        model = r._model(dims, device, dtype)
        ids = torch.randint(0, dims.vocab, (1, tokens), device=device)

        for rc in (0, 1):
            fn = r._seq_train_fn(model.train(), tokens, device, bool(rc), False)
            out[f"train L{layers} rc{rc}"] = host_time(fn, device, reps)
        model.eval()
        out[f"forward L{layers}"] = host_time(_forward_fn(model, ids), device, reps)
        for batch in (1, 64):
            step = r._decode_fn(model, batch, context, device, dtype, False)
            with torch.no_grad():
                out[f"decode L{layers} b{batch}"] = host_time(step, device, reps)
        del model
        if cuda:
            torch.cuda.empty_cache()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibration.benchmarks.host_enqueue",
                                 description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out = run(args.device)
    for key, (med, low) in out.items():
        print(f"{key:20s} median {med * 1e3:8.3f} ms  min {low * 1e3:8.3f} ms")
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
