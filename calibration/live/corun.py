"""How much the live job's two "devices" slow each other: `python -m calibration.live.corun`.

The live job stands for a cluster whose trainer and engine have memories of their own
(cores.py), but on this machine the trainer's core and the engine's share the L3 cache and
the memory bus. The simulator prices each device alone, so whatever one costs the other
while both compute is outside the model (docs/validation.md, "What is left: the neighbour
core"). This measures it, in interleaved rounds on the job's placement (`cores.placement`):

- `train`: one quick `train_step` (2048 tokens of 16-token sequences, the live job's
  length) on the trainer's core, alone and while the engine's synthetic trace
  (`live_engine._trace`) loops on the engine's core;
- `engine`: that trace on the engine's core (its iterations summed), alone and while train
  steps loop on the trainer's core.

Prints each side's median alone and beside the other, and their ratio (`--json`: one
object). A diagnostic: nothing reads it into a profile. Its medians on this machine
(x1.01-1.05 for the train step most of the time) ruled the neighbour out as the cause of
the quick check's async misses (docs/validation.md, "the neighbour core ruled out").
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time
from collections.abc import Callable
from multiprocessing.synchronize import Event
from typing import Any

import torch

from calibration.benchmarks import live_engine, live_trainer
from calibration.live.cores import pinned, placement
from calibration.live.grpo import Trainer
from calibration.live.model import LMConfig, TinyLM

TRAIN_TOKENS = 2048
TRAIN_SEQ = 16


def _train_step(cfg: LMConfig) -> Callable[[], float]:
    """A callable that runs one train step and returns its seconds."""
    torch.manual_seed(0)
    trainer = Trainer(TinyLM(cfg), lr=1e-6)
    trajs = live_trainer._batch(TRAIN_TOKENS, TRAIN_SEQ, cfg, torch.Generator().manual_seed(0))
    trainer.old_logprobs(trajs)

    def once() -> float:
        t0 = time.perf_counter()
        live_trainer._train(trainer, trajs)
        return time.perf_counter() - t0

    return once


def _engine_trace(cfg: LMConfig) -> Callable[[], float]:
    """A callable that runs the quick engine trace and returns its iterations' seconds."""
    model = TinyLM(cfg)
    model.requires_grad_(False)

    def once() -> float:
        points = live_engine._trace(model, cfg, torch.Generator().manual_seed(0), True)
        return sum(m.median_s for m in points)

    return once


def _work(side: str, cfg: LMConfig) -> Callable[[], float]:
    """The timed callable of `side` ("train" or "engine")."""
    return _train_step(cfg) if side == "train" else _engine_trace(cfg)


def _loop(side: str, cfg: LMConfig, cores: frozenset[int], ready: Event, stop: Event) -> None:
    """The neighbour: `side` ("train" or "engine") over and over on `cores` until `stop`."""
    with pinned(cores):
        torch.set_num_threads(1)
        work = _work(side, cfg)
        work()
        ready.set()
        while not stop.is_set():
            work()


def measure(cfg: LMConfig, rounds: int = 4, reps: int = 5) -> dict[str, Any]:
    """Per side, the median seconds alone and beside the other side, and their ratio."""
    place = placement()
    if place is None:
        raise ValueError("needs two cores this process may pin to (os.sched_setaffinity)")
    ctx = mp.get_context("spawn")
    torch.set_num_threads(1)
    out: dict[str, Any] = {"rounds": rounds, "reps": reps}
    for side, own, other, neighbour in (("train", place.trainer, place.rollout, "engine"),
                                        ("engine", place.rollout, place.trainer, "train")):
        with pinned(own):
            work = _work(side, cfg)
            work()  # warm-up
            alone: list[float] = []
            beside: list[float] = []
            for _ in range(rounds):
                alone += [work() for _ in range(reps)]
                ready, stop = ctx.Event(), ctx.Event()
                proc = ctx.Process(target=_loop, args=(neighbour, cfg, other, ready, stop))
                proc.start()
                try:
                    if not ready.wait(120):
                        raise RuntimeError(f"the {neighbour} neighbour did not start")
                    beside += [work() for _ in range(reps)]
                finally:
                    stop.set()
                    proc.join(60)
                    if proc.is_alive():
                        proc.kill()
        a, b = statistics.median(alone), statistics.median(beside)
        out[side] = {"alone_s": a, "beside_s": b, "ratio": b / a}
    return out


def main(argv: list[str] | None = None) -> int:
    from calibration.live.validate import plan

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        result = measure(plan(("sync",), True).live.lm, args.rounds, args.reps)
    except ValueError as err:
        print(f"corun: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
        return 0
    for side, what in (("train", f"train_step ({TRAIN_TOKENS} tokens)"),
                       ("engine", "engine trace (quick)")):
        r = result[side]
        print(f"{what}: alone {r['alone_s'] * 1e3:.1f} ms, beside the other side "
              f"{r['beside_s'] * 1e3:.1f} ms (x{r['ratio']:.3f}; medians of "
              f"{args.rounds * args.reps})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
