"""Whole steps of the live system's GRPO trainer (`calibration.live.grpo`), as it runs them.

A training step is more than its GEMMs: the backward pass, the loss, gradient clipping and
AdamW, with per-op overhead that matters for a small model. These points time the real
trainer on synthetic batches so the fit gets the trainer's achieved FLOP rate and fixed cost
per step (`train_mfu`, `train_step_overhead_s`) and per forward pass (`forward_mfu`,
`forward_overhead_s`).

`train_step` params {tokens, seq_tokens, lengths, + model dims, layers, vocab, dtype}: one
optimizer step over `tokens` tokens of trajectories with lengths spread around the grid's
length (`seq_tokens` = sum(L^2) / sum(L), the length their causal attention costs as;
`lengths` the trajectories' own, comma-separated: the trainer packs them into rows as wide
as the longest and computes the pads too, which the fit prices with `train.pack_rows`). `forward`
params (same): the no-grad forward that computes the old log-probs of that batch.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from functools import partial

import torch

from calibration.benchmarks import common
from calibration.benchmarks.live_engine import config, model_params
from calibration.live.grpo import Trainer, Trajectory
from calibration.live.model import LMConfig, TinyLM
from calibration.measurements import Measurement

BENCHES = ("train_step", "forward")

SEQ_QUICK = [16, 24, 64]  # 16: the live job's own sequences (seq_tokens 13-21 per step)
SEQ_FULL = [16, 32, 64, 128]
TOKENS_QUICK = [512, 2048]
TOKENS_FULL = [256, 512, 1024, 2048, 4096]


def _points(bench: str, quick: bool) -> list[common.Point]:
    seqs, tokens = (SEQ_QUICK, TOKENS_QUICK) if quick else (SEQ_FULL, TOKENS_FULL)
    return common.grid(bench, [{"tokens": t, "seq_tokens": s} for s in seqs for t in tokens
                               if t >= s])


# Log-std of the trajectory lengths: an RL batch is long-tailed, and the live job's recorded
# trajectories (prompt + turns) spread with a log-std of 0.39-0.44. The trainer packs a batch
# into rows as wide as its longest trajectory, so the tail decides how many positions a step
# computes, pads included: over batches of 600-1,600 tokens with median lengths 8-24 and
# log-stds 0.15-0.6, the packed positions ran 1.01-1.46x the tokens, and a step's time was
# linear in them (3.1% rms, against 11.9% linear in the tokens). The fit prices the packed
# rows (`lengths`), so the spread matters less than when it priced tokens alone.
LENGTH_SIGMA = 0.4

# The old-log-prob forward (`ref`) is a step's first trainer phase: it runs once, after the
# trainer idled while the rollouts were generated (sync) or waited for them (one_off, async).
# A call after 100 ms of sleep took 12-13% longer than back-to-back calls on this VM
# (41-42 ms against 36.6-37.4 ms for the live job's batch), as the job's `ref` did; the
# training step follows `ref` at once and is timed back to back.
FORWARD_IDLE_S = 0.1


def _batch(tokens: int, seq: int, cfg: LMConfig, gen: torch.Generator) -> list[Trajectory]:
    """About `tokens` tokens of trajectories with lognormal lengths (log-std LENGTH_SIGMA,
    median seq * exp(-1.5 sigma^2), so that sum(L^2) / sum(L) is about `seq`)."""
    out: list[Trajectory] = []
    total = 0
    median = seq * math.exp(-1.5 * LENGTH_SIGMA ** 2)
    while total < tokens:
        z = float(torch.randn(1, generator=gen))
        n = max(2, min(cfg.max_positions, round(median * math.exp(LENGTH_SIGMA * z))))
        ids = torch.randint(3, cfg.vocab, (n,), generator=gen).tolist()
        mask = [0] * min(8, n // 2) + [1] * (n - min(8, n // 2))
        out.append(Trajectory(ids, mask, advantage=float(torch.randn(1, generator=gen))))
        total += n
    return out


def _train(trainer: Trainer, trajs: list[Trajectory]) -> None:
    # The timing harness runs calls under inference mode; a training step needs autograd.
    with torch.inference_mode(False):
        trainer.update(trajs)


def _forward(trainer: Trainer, trajs: list[Trajectory]) -> None:
    # As the job runs it: under no_grad (old_logprobs' own), not the harness's inference
    # mode, which times a different (cheaper) dispatch path than the job pays.
    with torch.inference_mode(False):
        trainer.old_logprobs(trajs)


def run(device: str, quick: bool, progress: common.Progress | None = None,
        benches: Collection[str] = BENCHES) -> list[Measurement]:
    if device != "cpu":
        return []  # the live system runs on the CPU only (calibration/live)
    cfg = config()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = TinyLM(cfg)
    trainer = Trainer(model, lr=1e-6)
    out: list[Measurement] = []
    for bench in (b for b in BENCHES if b in benches):
        points = _points(bench, quick)
        for i, p in enumerate(points):
            tokens, seq = int(p["tokens"]), int(p["seq_tokens"])
            trajs = _batch(tokens, seq, cfg, gen)
            lens = [len(t.ids) for t in trajs]
            trainer.old_logprobs(trajs)
            fn = partial(_train, trainer, trajs) if bench == "train_step" else \
                partial(_forward, trainer, trajs)
            # seq_tokens: the length at which causal attention costs what these do; lengths:
            # the samples, which the trainer packs into rows as wide as the longest (the
            # fit prices those rows, pads included, as rlsim's `train.pack_rows` does)
            params = {"tokens": sum(lens), "seq_tokens": sum(n * n for n in lens) / sum(lens),
                      "lengths": ",".join(map(str, lens)), **model_params(cfg),
                      "dtype": "float32"}
            out.append(common.timed_point(bench, params, fn, "cpu", quick,
                                          idle_s=FORWARD_IDLE_S if bench == "forward" else 0.0))
            common.notify(progress, bench, i + 1, len(points))
    return out
