"""Training framework backends: one constant set per backend, and how each batches samples.

Owns `TrainBackend` (the constants a training framework adds between the kernels and a step:
what its state costs in memory, which collectives it runs per micro-batch or per optimizer
step and how much of them it overlaps, its fixed cost per micro-batch, the MoE router
imbalance it trains with), the built-in `BACKENDS` (Megatron-LM, FSDP, FSDP2, as veRL runs
them), and the packing of samples into micro-batches (dynamic batching up to a token cap,
or fixed micro-batches padded to their longest sample) and onto data-parallel ranks.

Every constant is cited in docs/cost-model.md, section 3; those without a public measurement
are marked there as order-of-magnitude defaults. Nothing here is per scenario or model size.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

SequenceParallel = Literal["ring", "ulysses"]


@dataclass(frozen=True, slots=True)
class TrainBackend:
    """The constants of one training framework backend (all per GPU unless named)."""

    name: str
    # Memory per parameter, bytes (Megatron distributed optimizer: bf16 params and fp32 main
    # grads replicated over DP, fp32 master + Adam m, v sharded over DP; FSDP: an fp32
    # model sharded over every GPU with its fp32 grads and Adam m, v).
    param_bytes: float
    grad_bytes: float
    optimizer_bytes: float
    # True: params and grads are sharded over the data-parallel GPUs too (ZeRO-3 / FSDP);
    # False: only the optimizer state is (Megatron's distributed optimizer, ZeRO-1).
    shard_params_over_dp: bool
    # True: parameters are all-gathered for every micro-batch's forward and again for its
    # backward, and gradients reduce-scattered after every backward (FSDP FULL_SHARD with
    # reshard_after_forward); False: one gradient reduce-scatter and one parameter
    # all-gather per optimizer step (Megatron's distributed optimizer).
    gather_per_micro_batch: bool
    # Bytes per parameter of one parameter all-gather and of one gradient reduce-scatter.
    gather_bytes_per_param: float
    reduce_bytes_per_param: float
    # Share of the data-parallel traffic the backend hides behind compute it can overlap
    # (the same micro-batch for FSDP; the last micro-batch's backward for Megatron).
    dp_overlap_fraction: float
    # How the context-parallel degree splits a sequence: Megatron's ring attention (K/V
    # passed cp-1 times per layer), or DeepSpeed-Ulysses all-to-alls (veRL FSDP's
    # ulysses_sequence_parallel_size).
    sequence_parallel: SequenceParallel
    # Fixed time of one micro-batch beyond its kernels (Python dispatch, hooks, data to
    # GPU, loss and log-prob bookkeeping), seconds.
    micro_batch_overhead_s: float
    # Busiest expert's tokens over the mean (MoE): the expert GEMMs and the all-to-all of
    # an MoE layer wait for the most loaded expert-parallel rank.
    router_imbalance: float
    # Whether the backend has tensor and pipeline parallelism.
    supports_tp_pp: bool

    def __post_init__(self) -> None:
        for name in ("param_bytes", "grad_bytes", "optimizer_bytes", "gather_bytes_per_param",
                     "reduce_bytes_per_param", "micro_batch_overhead_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"TrainBackend.{name} must be >= 0")
        if not 0.0 <= self.dp_overlap_fraction <= 1.0:
            raise ValueError("TrainBackend.dp_overlap_fraction must be in [0, 1]")
        if self.router_imbalance < 1.0:
            raise ValueError("TrainBackend.router_imbalance is the max over the mean: >= 1")

    @property
    def state_bytes_per_param(self) -> float:
        return self.param_bytes + self.grad_bytes + self.optimizer_bytes


# MoE router imbalance: order-of-magnitude default, the same for every backend (it belongs
# to the model's routing, not the framework); docs/cost-model.md section 3 gives the sources.
_ROUTER_IMBALANCE = 1.3

MEGATRON = TrainBackend(
    name="megatron",
    param_bytes=2.0, grad_bytes=4.0, optimizer_bytes=12.0,  # "bf16 param, fp32 grads: 6 + 12/d"
    shard_params_over_dp=False,
    gather_per_micro_batch=False,
    # megatron-core DistributedDataParallelConfig: grad_reduce_in_fp32=False (bf16 reduce),
    # parameters all-gathered in bf16 after the distributed optimizer's step.
    gather_bytes_per_param=2.0, reduce_bytes_per_param=2.0,
    # megatron-core defaults overlap_grad_reduce = overlap_param_gather = False, and veRL's
    # override_ddp_config is empty: nothing is overlapped.
    dp_overlap_fraction=0.0,
    sequence_parallel="ring",
    micro_batch_overhead_s=0.01,
    router_imbalance=_ROUTER_IMBALANCE,
    supports_tp_pp=True,
)

FSDP = TrainBackend(
    name="fsdp",
    # veRL engine/fsdp.yaml model_dtype: fp32 (fp32 params, grads, Adam m and v: 16 B).
    param_bytes=4.0, grad_bytes=4.0, optimizer_bytes=8.0,
    shard_params_over_dp=True,
    gather_per_micro_batch=True,
    # MixedPrecision(param_dtype=bf16, reduce_dtype=fp32): bf16 all-gathers, fp32 reduce.
    gather_bytes_per_param=2.0, reduce_bytes_per_param=4.0,
    dp_overlap_fraction=0.8,
    sequence_parallel="ulysses",
    micro_batch_overhead_s=0.02,
    router_imbalance=_ROUTER_IMBALANCE,
    supports_tp_pp=False,
)

# FSDP2 (per-parameter sharding, DTensor) runs the same collectives in the same dtypes
# under veRL's defaults (reshard_after_forward: true); no public measurement separates its
# constants from FSDP's, so they are FSDP's.
FSDP2 = replace(FSDP, name="fsdp2")

BACKENDS: dict[str, TrainBackend] = {b.name: b for b in (MEGATRON, FSDP, FSDP2)}


def lookup_backend(name: str) -> TrainBackend:
    """The built-in backend `name`; ValueError naming the choices otherwise."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(
            f"unknown training backend {name!r}; choose one of {', '.join(BACKENDS)}") from None


# ----------------------------------------------------------------------------- packing

def balance_over_ranks(lengths: Sequence[int], ranks: int) -> list[list[int]]:
    """Deal samples to `ranks` data-parallel ranks so their token counts are even: longest
    first, each to the rank with the fewest tokens so far (ties: the lowest rank), what
    veRL's balance_batch aims at. Each rank keeps its samples in their original order (so
    fixed micro-batches pad what the batch order puts together)."""
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    picked: list[list[int]] = [[] for _ in range(ranks)]
    heap = [(0, r) for r in range(ranks)]
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        load, r = heapq.heappop(heap)
        picked[r].append(i)
        heapq.heappush(heap, (load + lengths[i], r))
    return [[lengths[i] for i in sorted(idx)] for idx in picked]


def pack_dynamic(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Dynamic batching (veRL use_dynamic_bsz): greedy next-fit, each micro-batch taking
    samples in order while its tokens stay within `max_tokens`; a sample longer than the cap
    goes alone. No padding: a micro-batch costs its samples' own tokens."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    batches: list[list[int]] = []
    cur: list[int] = []
    used = 0
    for length in lengths:
        if cur and used + length > max_tokens:
            batches.append(cur)
            cur, used = [], 0
        cur.append(length)
        used += length
    if cur:
        batches.append(cur)
    return batches


def pack_fixed(lengths: Sequence[int], micro_batch_size: int) -> list[list[int]]:
    """Fixed micro-batches of `micro_batch_size` samples (veRL ppo_micro_batch_size_per_gpu),
    every sample padded to the longest of its micro-batch."""
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
    out = []
    for i in range(0, len(lengths), micro_batch_size):
        chunk = list(lengths[i:i + micro_batch_size])
        out.append([max(chunk)] * len(chunk))
    return out


def pad_to_multiple(length: int, multiple: int) -> int:
    """`length` rounded up to a multiple of `multiple` (Megatron's context parallelism
    needs each sequence split into 2*cp equal chunks)."""
    return -(-length // multiple) * multiple if multiple > 1 else length


def split_even(items: Sequence[int], parts: int) -> list[list[int]]:
    """`items` in order, cut into `parts` contiguous runs whose sizes differ by at most one
    (veRL splits a step's batch into its mini-batches in order)."""
    parts = max(1, min(parts, len(items))) if items else 1
    base, extra = divmod(len(items), parts)
    out, i = [], 0
    for p in range(parts):
        n = base + (1 if p < extra else 0)
        out.append(list(items[i:i + n]))
        i += n
    return out


def mini_batches(prompts: int | None, ppo_mini_batch_size: int | None) -> int:
    """Optimizer steps per epoch: ceil(prompts / ppo_mini_batch_size); 1 when either is
    unset (the whole step is one mini-batch)."""
    if prompts is None or ppo_mini_batch_size is None or prompts <= 0:
        return 1
    return math.ceil(prompts / ppo_mini_batch_size)
