"""Shared test helpers: a toy affine cost model for the engine."""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class ToyStep:
    total_s: float


@dataclass(frozen=True)
class ToyCost:
    """decode = a0 + a1*B + b*K; prefill adds p per prompt token: closed forms are easy."""

    a0: float = 0.005
    a1: float = 1e-5
    b: float = 1e-8
    p: float = 2e-5

    def step(self, decode_seqs: int, kv_tokens: int, prefill_tokens: int = 0,
             prefill_context_tokens: int = 0, prefill_chunks=None) -> ToyStep:
        return ToyStep(self.a0 + self.a1 * decode_seqs + self.b * kv_tokens
                       + self.p * prefill_tokens)

    def decode_affine(self, batch: int) -> tuple[float, float]:
        return self.a0 + self.a1 * batch, self.b


@pytest.fixture
def toy_cost() -> ToyCost:
    return ToyCost()
