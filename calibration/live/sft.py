"""Supervised warm-up: teach the tiny policy the task formats so RL starts from a policy that
earns some reward (as RL post-training starts from an instruction-tuned model).

Trains on reference transcripts (`Problem.transcript()`), loss on the model's turns only.
Deliberately short: the policy should be right often enough for GRPO to have signal and
wrong often enough for RL to improve it.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from calibration.live.grpo import Trajectory as _T
from calibration.live.grpo import _pad, micro_batches
from calibration.live.model import TinyLM
from calibration.live.tasks import Problem, TaskMix, draw
from calibration.live.tokenizer import BOS, EOS, PAD, Tokenizer


def encode_transcript(tok: Tokenizer, problem: Problem) -> tuple[list[int], list[int]]:
    """(ids, mask) of the reference trajectory: BOS + prompt, then each turn; model turns
    end with EOS and are the loss positions."""
    ids = [BOS, *tok.encode(problem.prompt)]
    mask = [0] * len(ids)
    for role, text in problem.transcript():
        piece = tok.encode(text) + ([EOS] if role == "model" else [])
        ids += piece
        mask += [1 if role == "model" else 0] * len(piece)
    return ids, mask


def warm_up(model: TinyLM, tok: Tokenizer, steps: int, batch: int, lr: float, seed: int,
            mix: TaskMix | None = None) -> list[float]:
    """`steps` AdamW steps of teacher forcing; returns the loss per step."""
    mix = mix or TaskMix()
    rng = np.random.default_rng([seed, 7919])
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    losses = []
    for _ in range(steps):
        cap = model.cfg.max_positions + 1  # inputs are ids[:-1]
        rows = [(ids[:cap], mask[:cap])
                for ids, mask in (encode_transcript(tok, draw(rng, mix)) for _ in range(batch))]
        trajs = [_T(ids, mask) for ids, mask in rows]
        opt.zero_grad(set_to_none=True)
        total = sum(sum(m[1:]) for _, m in rows)
        loss_sum = 0.0
        for idx in micro_batches(trajs, 8192):
            ids = _pad([trajs[i].ids for i in idx], PAD)
            mask = _pad([trajs[i].mask[1:] for i in idx], 0).float()
            logits = model(ids[:, :-1])
            nll = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
            loss = (nll * mask).sum()
            (loss / total).backward()
            loss_sum += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss_sum / total)
    return losses
