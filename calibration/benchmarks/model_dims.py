"""The calibration model: one transformer layer's dimensions and the compute dtype, by device.

GEMM shapes, attention heads and the whole-layer benchmarks all derive from these dims, so
the measurements describe one coherent model. The CPU model is small enough that its full
grid fits this 2-core box's time budget; on CUDA it is a Llama-2-7B layer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch


@dataclass(frozen=True)
class ModelDims:
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int

    @property
    def qkv_out(self) -> int:
        """Fused QKV projection width: all query heads plus one K and one V per KV head."""
        return (self.heads + 2 * self.kv_heads) * self.head_dim

    @property
    def attn_width(self) -> int:
        return self.heads * self.head_dim

    def params(self) -> dict[str, int]:
        return asdict(self)


CPU_DIMS = ModelDims(hidden=1024, heads=16, kv_heads=4, head_dim=64, ffn=2816)
CUDA_DIMS = ModelDims(hidden=4096, heads=32, kv_heads=32, head_dim=128, ffn=11008)


# Set by `use_dims` (rlsim validate measures the operators at its live model's shapes).
_override: ModelDims | None = None


def dims_for(device: str) -> ModelDims:
    if _override is not None:
        return _override
    return CUDA_DIMS if device.startswith("cuda") else CPU_DIMS


@contextmanager
def use_dims(dims: ModelDims | None) -> Iterator[None]:
    """Measure at `dims` instead of the device's calibration model inside the block."""
    global _override
    saved = _override
    _override = dims
    try:
        yield
    finally:
        _override = saved


def dtype_for(device: str) -> torch.dtype:
    # bf16 matmul has no fast path on many CPUs; fp32 is what a CPU engine would run.
    return torch.bfloat16 if device.startswith("cuda") else torch.float32


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def linear_shapes(dims: ModelDims) -> dict[str, tuple[int, int]]:
    """The layer's linear layers as (n, k): output features, input features."""
    return {
        "qkv": (dims.qkv_out, dims.hidden),
        "o_proj": (dims.hidden, dims.attn_width),
        "gate_up": (2 * dims.ffn, dims.hidden),
        "down": (dims.hidden, dims.ffn),
    }
