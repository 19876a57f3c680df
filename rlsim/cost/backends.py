"""Training framework backends: one constant set per backend, and how each batches samples.

Owns `TrainBackend` (the constants a training framework adds between the kernels and a step:
what its state costs in memory, which collectives it runs per micro-batch or per optimizer
step and how much of them it overlaps, its fixed cost per micro-batch, the MoE router
imbalance it trains with), `HostOps` (what the host dispatches and launches per layer in
eager PyTorch, and what that costs it), the built-in `BACKENDS` (Megatron-LM, FSDP, FSDP2,
as veRL runs them), and the packing of samples into micro-batches (dynamic batching up to a
token cap, or fixed micro-batches padded to their longest sample) and onto data-parallel
ranks.

Every constant is cited in docs/cost-model.md, section 3; those without a public measurement
are marked there as order-of-magnitude defaults. Nothing here is per scenario or model size.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Literal

SequenceParallel = Literal["ring", "ulysses"]


@dataclass(frozen=True, slots=True)
class HostOps:
    """The host (CPU) side of eager PyTorch training: the ATen ops it dispatches per pass of
    one micro-batch, the device kernels among them, and what each costs the host.

    Counts are per decoder layer, and once per micro-batch for the head (embedding, rotary
    angles, final norm, LM head, log-probs, loss). A pass takes the host
    `ops * op_s + kernels * launch_s` (`autograd_op_s` for ops autograd records,
    `backward_op_s` for those its backward engine runs); measured by
    calibration/benchmarks/host_overhead.py, the launch cited (docs/cost-model.md section 3,
    "Host-bound micro-batches")."""

    # forward under no_grad (log-prob, reference and critic-value passes)
    forward_ops: float
    forward_kernels: float
    # forward with autograd recording (a train micro-batch, and full recompute's re-run)
    grad_forward_ops: float
    grad_forward_kernels: float
    # loss.backward() through the layer
    backward_ops: float
    backward_kernels: float
    # the head under no_grad, and what a train micro-batch adds to it (autograd recording,
    # the loss, its backward; train_s prices all of the added ops at backward_op_s, though
    # the CUDA run counts 2 of the 45 as recorded)
    head_forward_ops: float
    head_forward_kernels: float
    head_backward_ops: float
    head_backward_kernels: float
    # host seconds per dispatched op: Python module call + ATen dispatcher (no_grad), with
    # autograd's recording, and in autograd's backward engine
    op_s: float
    autograd_op_s: float
    backward_op_s: float
    # host seconds of one cudaLaunchKernel (per kernel, on top of its op's dispatch)
    launch_s: float

    def __post_init__(self) -> None:
        for name in (f.name for f in fields(self)):  # not __slots__: mypyc's classes lack it
            if getattr(self, name) < 0:
                raise ValueError(f"HostOps.{name} must be >= 0")

    def forward_s(self, layers: int) -> float:
        """Host seconds of a no_grad forward of `layers` layers and the head."""
        ops = layers * self.forward_ops + self.head_forward_ops
        kernels = layers * self.forward_kernels + self.head_forward_kernels
        return ops * self.op_s + kernels * self.launch_s

    def train_s(self, layers: int, recompute_forward: bool) -> float:
        """Host seconds of a train micro-batch (forward with autograd + backward) over
        `layers` layers and the head; `recompute_forward`: the layers' forward runs again
        in the backward (full activation recomputation)."""
        forwards = 2 if recompute_forward else 1
        recorded = layers * forwards * self.grad_forward_ops + self.head_forward_ops
        backward = layers * self.backward_ops + self.head_backward_ops
        kernels = (layers * (forwards * self.grad_forward_kernels + self.backward_kernels)
                   + self.head_forward_kernels + self.head_backward_kernels)
        return (recorded * self.autograd_op_s + backward * self.backward_op_s
                + kernels * self.launch_s)


# Counts: calibration/benchmarks/host_overhead.py on torch 2.13, a bf16 Llama decoder layer
# as Hugging Face writes it (grouped-query attention, SDPA), slopes over 1-16 layers; exact,
# the same on any machine. Launch: ~4 us per cudaLaunchKernel (docs/cost-model.md section
# 3). Seconds per op: the same bench on an H200 machine with real CUDA launches
# (calibration/profiles/h200-host-overhead.json, torch 2.11.0+cu130): per layer 440 us
# no_grad forward, 569 us recording, 1825 us backward, less 4 us per kernel, over the ops.
HF_LLAMA_HOST_OPS = HostOps(
    forward_ops=79, forward_kernels=49,
    grad_forward_ops=82, grad_forward_kernels=49,
    backward_ops=148, backward_kernels=86,
    head_forward_ops=26, head_forward_kernels=21,
    head_backward_ops=45, head_backward_kernels=31,
    op_s=3.09e-6, autograd_op_s=4.55e-6, backward_op_s=1.00e-5,
    launch_s=4e-6,
)


@dataclass(frozen=True, slots=True)
class ElementwiseTraffic:
    """HBM bytes per token that the memory-bound kernels of an unfused (eager) model move:
    per decoder layer `hidden * h + kv_dim * kv + ffn * f` bytes (q_dim taken as hidden, as
    in Llama), per micro-batch head `head_vocab * vocab + head_hidden * hidden`; one set for
    the forward pass, one for its backward. `kernels` per layer pay the elementwise launch
    each. Counted by calibration/eager_traffic.py (docs/cost-model.md section 3, "Eager
    elementwise traffic")."""

    hidden: float
    kv_dim: float
    ffn: float
    head_vocab: float
    head_hidden: float
    kernels: float
    bwd_hidden: float
    bwd_kv_dim: float
    bwd_ffn: float
    bwd_head_vocab: float
    bwd_head_hidden: float
    bwd_kernels: float

    def __post_init__(self) -> None:
        for name in (f.name for f in fields(self)):  # not __slots__: mypyc's classes lack it
            if getattr(self, name) < 0:
                raise ValueError(f"ElementwiseTraffic.{name} must be >= 0")

    def layer_bytes_per_token(self, hidden: float, kv_dim: float, ffn: float,
                              backward: bool) -> float:
        """Bytes one token moves through one layer's memory-bound kernels."""
        if backward:
            return self.bwd_hidden * hidden + self.bwd_kv_dim * kv_dim + self.bwd_ffn * ffn
        return self.hidden * hidden + self.kv_dim * kv_dim + self.ffn * ffn

    def head_bytes_per_token(self, vocab: float, hidden: float, backward: bool) -> float:
        """Bytes one token moves through the head (final norm, log-softmax, gather)."""
        if backward:
            return self.bwd_head_vocab * vocab + self.bwd_head_hidden * hidden
        return self.head_vocab * vocab + self.head_hidden * hidden


# calibration/eager_traffic.py on torch 2.13: the Hugging Face Llama layer of
# calibration/benchmarks/host_overhead.py in bf16 (RMSNorm through fp32, rotate_half rotary,
# repeat_kv copies, silu * up, each op and its autograd backward a kernel), bytes of every
# kernel that is not a GEMM or the attention kernel; exact linear fit over four shapes
# (residual < 0.5%). Fused kernels (Megatron-Core + Transformer Engine) move ~20 hidden +
# 4 kv + 6 ffn bytes per token and layer forward; this moves 108 + 25.5 + 10.5.
HF_LLAMA_EAGER_TRAFFIC = ElementwiseTraffic(
    hidden=108.3, kv_dim=25.5, ffn=10.5, head_vocab=20.4, head_hidden=47.6, kernels=32,
    bwd_hidden=250.4, bwd_kv_dim=41.8, bwd_ffn=18.6, bwd_head_vocab=31.7,
    bwd_head_hidden=100.7, bwd_kernels=59,
)


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
    # Fixed time of one micro-batch beyond its kernels and beyond the host's op dispatch
    # that `host_ops` prices (the batch to the GPU, the framework's per-micro-batch Python:
    # unpadding, entropy and metrics, FSDP's per-unit hooks), seconds; always added.
    micro_batch_overhead_s: float
    # Busiest expert's tokens over the mean (MoE): the expert GEMMs and the all-to-all of
    # an MoE layer wait for the most loaded expert-parallel rank.
    router_imbalance: float
    # Whether the backend has tensor and pipeline parallelism.
    supports_tp_pp: bool
    # Whether fixed micro-batches (micro_batch_size_per_gpu) pad every sample to the
    # micro-batch's longest (FSDP without use_remove_padding) or pack them unpadded, each
    # sequence aligned to `tp * 2 cp` tokens (cp > 1) or `tp` (veRL's Megatron actor:
    # gptmodel_forward(pack_seqs=True) -> preprocess_packed_seqs, THD format).
    pad_fixed_micro_batches: bool = True
    # What the host dispatches per layer and per micro-batch in eager PyTorch and what that
    # costs it; a micro-batch takes max(GPU time, host time). None: the host always keeps
    # ahead of the GPU (not modelled).
    host_ops: HostOps | None = HF_LLAMA_HOST_OPS
    # The memory-bound kernels' traffic when the model runs unfused (eager Hugging Face
    # code: veRL FSDP's default, use_fused_kernels: false, use_liger: false); None: fused
    # kernels as Megatron-Core with Transformer Engine runs them (TrainCost._elementwise).
    elementwise_traffic: ElementwiseTraffic | None = None
    # Achieved share of the BF16 peak of the attention backward kernel the backend runs
    # (FLOPs counted as 2.5x the forward's); None: the profile's attention_flops_efficiency.
    attention_bwd_flops_efficiency: float | None = None
    # Tensor parallelism through DTensor under FSDP2 (NeMo-RL dtensor_cfg.
    # tensor_parallel_size, torchtitan): each GPU holds 1/tp of every weight and FSDP shards
    # that over the data-parallel ranks; no pipeline or expert parallelism.
    dtensor_tp: bool = False

    def __post_init__(self) -> None:
        for name in ("param_bytes", "grad_bytes", "optimizer_bytes", "gather_bytes_per_param",
                     "reduce_bytes_per_param", "micro_batch_overhead_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"TrainBackend.{name} must be >= 0")
        if not 0.0 <= self.dp_overlap_fraction <= 1.0:
            raise ValueError("TrainBackend.dp_overlap_fraction must be in [0, 1]")
        eff = self.attention_bwd_flops_efficiency
        if eff is not None and not 0.0 < eff <= 1.0:
            raise ValueError("TrainBackend.attention_bwd_flops_efficiency must be in (0, 1]")
        if self.router_imbalance < 1.0:
            raise ValueError("TrainBackend.router_imbalance is the max over the mean: >= 1")

    @property
    def state_bytes_per_param(self) -> float:
        return self.param_bytes + self.grad_bytes + self.optimizer_bytes


# MoE router imbalance (busiest EP rank over the mean, only with ep > 1): the low end of the
# 1.30-4.01 UltraEP measured without balancing, as for the engine; the same for every
# backend (it belongs to the model's routing); docs/cost-model.md section 3.
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
    # veRL verl/models/mcore/model_forward.py gptmodel_forward(pack_seqs=True): a
    # micro-batch's samples are packed (THD), each padded only to the TP/CP alignment; the
    # RollPacker artifact (ROLL) sets use_remove_padding: true likewise.
    pad_fixed_micro_batches=False,
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
    # veRL's FSDP workers load the Hugging Face model and run it eager (model.use_fused_kernels
    # and model.use_liger default false).
    elementwise_traffic=HF_LLAMA_EAGER_TRAFFIC,
    # Hugging Face attn_implementation flash_attention_2 (veRL's default): FlashAttention-2's
    # backward reaches 318 TFLOP/s of 989 on an H100 SXM5 at head dim 128, 8k tokens
    # (Shah et al., FlashAttention-3, arXiv:2407.08608, Fig. 6; cuDNN's, which Megatron-Core
    # runs through Transformer Engine, 518: the profile's 0.5).
    attention_bwd_flops_efficiency=0.32,
)

# FSDP2 (per-parameter sharding, DTensor) runs the same collectives in the same dtypes
# under veRL's defaults (reshard_after_forward: true); no public measurement separates its
# constants from FSDP's, so they are FSDP's. Its DTensor meshes also take tensor
# parallelism (NeMo-RL's DTensor path, nemo_rl/models/dtensor/parallelize.py).
FSDP2 = replace(FSDP, name="fsdp2", dtensor_tp=True)

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
    # Each heap entry is one int, load * ranks + rank: ordered by load, then by rank, as
    # (load, rank) pairs would be, without a tuple per sample (a 1,024-GPU step deals
    # 8,192 samples to 256 ranks). heapreplace pops the least key and pushes the new one in
    # one sift; keys are unique, so the ranks come out as pop then push gives them.
    heap = list(range(ranks))
    # Longest first, ties in batch order: a stable sort, reversed, keeps equal keys in
    # their original order.
    for i in sorted(range(len(lengths)), key=lengths.__getitem__, reverse=True):
        key = heap[0]
        r = key % ranks
        picked[r].append(i)
        heapq.heapreplace(heap, key + lengths[i] * ranks)
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


def pack_fixed(lengths: Sequence[int], micro_batch_size: int,
               pad: bool = True, multiple: int = 1) -> list[list[int]]:
    """Fixed micro-batches of `micro_batch_size` samples (veRL ppo_micro_batch_size_per_gpu),
    every sample padded to the longest of its micro-batch (`pad`), or kept at its own length
    (packed: remove-padding / THD). `multiple` > 1 pads every sample to the micro-batch's
    longest rounded up to a multiple of it (ROLL's Megatron `use_remove_padding`: the padded
    batch cut to its longest, rounded up; implies `pad`)."""
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
    if multiple < 1:
        raise ValueError(f"multiple must be >= 1, got {multiple}")
    out = []
    for i in range(0, len(lengths), micro_batch_size):
        chunk = list(lengths[i:i + micro_batch_size])
        if multiple > 1:
            out.append([pad_to_multiple(max(chunk), multiple)] * len(chunk))
        else:
            out.append([max(chunk)] * len(chunk) if pad else chunk)
    return out


def packed_rows(lengths: Sequence[int]) -> tuple[int, int]:
    """(rows, width) of `lengths` packed first-fit-decreasing into rows as wide as the
    longest: each sample goes whole into the first row with room, else opens a row. A
    trainer that packs this way without variable-length attention computes rows x width
    positions, pads included (the live system's trainer, `calibration.live.grpo.pack`).
    (0, 0) for no samples."""
    if not lengths:
        return 0, 0
    width = max(lengths)
    room: list[int] = []
    for n in sorted(lengths, reverse=True):
        for r, free in enumerate(room):
            if free >= n:
                room[r] = free - n
                break
        else:
            room.append(width - n)
    return len(room), width


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
