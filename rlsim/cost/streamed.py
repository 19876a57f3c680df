"""Cost of an engine that keeps only part of its weights on the GPU (layer-wise streaming).

Owns `StreamedWeightsCost`. RollPacker co-locates its judge LLM with the actor and keeps
most of the judge's layers in host memory, streaming each layer's weights over PCIe while
the previous layer computes [P 4.3, 6.5]. With that pipeline an iteration takes the longer
of its compute (the wrapped `InferenceCost`) and the transfer of the offloaded weights:

    t_iteration = max(t_compute, (1 - resident_fraction) * weight_bytes_per_gpu / PCIe)

A decode iteration's compute is affine in the KV it reads (`a + b * kv`); the streamed
version keeps the slope and raises the intercept to the transfer time, `max(a, t_stream)`,
which over-estimates only iterations whose compute already exceeds the transfer (a
decode-heavy judge reading much KV; a judge's verdict is a few tokens). Interference with
the engines it shares the GPU with is not modelled (MPS; the paper finds neither model
saturates the SMs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rlsim.cost.inference import InferenceCost


@dataclass(frozen=True, slots=True)
class _Streamed:
    total_s: float


class StreamedWeightsCost:
    """An `InferenceCost` whose offloaded weights cross PCIe on every iteration."""

    def __init__(self, base: InferenceCost, resident_fraction: float) -> None:
        if not 0.0 < resident_fraction <= 1.0:
            raise ValueError(f"resident_fraction must be in (0, 1], got {resident_fraction}")
        self.base = base
        self.resident_fraction = resident_fraction
        pcie = base.gpu.pcie_bandwidth * base.profile.pcie_efficiency
        self.stream_s = (1.0 - resident_fraction) * base.weight_bytes_per_gpu() / pcie

    def resident_bytes_per_gpu(self) -> float:
        """GPU memory the resident weights take."""
        return self.resident_fraction * self.base.weight_bytes_per_gpu()

    def step(self, decode_seqs: int, kv_tokens: int, prefill_tokens: int = 0,
             prefill_context_tokens: int = 0,
             prefill_chunks: Sequence[tuple[int, int]] | None = None) -> _Streamed:
        compute = self.base.step(decode_seqs, kv_tokens, prefill_tokens,
                                 prefill_context_tokens, prefill_chunks).total_s
        if compute == 0.0:
            return _Streamed(0.0)
        return _Streamed(max(compute, self.stream_s))

    def decode_affine(self, batch: int) -> tuple[float, float]:
        a, b = self.base.decode_affine(batch)
        if batch <= 0:
            return (a, b)
        return (max(a, self.stream_s), b)
