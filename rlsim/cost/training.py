"""Cost of one trainer (DP x TP x PP x CP, EP for MoE, over a GPU pool): step, forward pass,
state moves.

Owns `TrainStepCost`, `TrainBatching` and `TrainCost`. Two ways to price a step:

- per kernel (a `TrainBackend` given: the default for scenarios): the step's samples, at
  their real lengths, are split into mini-batches (one optimizer step each), dealt to the
  data-parallel ranks, packed into micro-batches the way the backend does (dynamic batching
  up to a token cap, or fixed micro-batches padded to their longest sample), and each
  micro-batch is priced at its real shape from the calibrated GEMM model (forward: one GEMM
  per weight; backward: the two transposed GEMMs), attention FLOPs at the profile's
  attention efficiency, memory-bound elementwise kernels, and the collectives the layout
  runs (TP all-reduces, CP ring or Ulysses exchange, EP all-to-all, FSDP gathers), plus a
  fixed cost per micro-batch (the backend's, or `framework.micro_batch_overhead`); then
  the 1F1B bubble, the DP traffic the backend does not hide, the memory-bound Adam update
  and the PCIe offload round trips.
- whole-step MFU (no backend: `train.mfu` set, or a profile calibrated on whole steps):
  FLOPs over an achieved MFU plus the bubble, exposed DP traffic, Adam and fixed overheads.

Either way the kernels' time is divided by `speed` (a fitted `framework.train_speed`, 1 by
default); collectives, host waits, the optimizer update and offloads are not.

Formulas and constants: docs/cost-model.md section 3. Called once per train phase, not per
event, so clarity beats speed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from rlsim.config.hardware import GpuSpec, ModelSpec
from rlsim.cost.backends import (
    TrainBackend,
    balance_over_ranks,
    lookup_backend,
    mini_batches,
    pack_dynamic,
    pack_fixed,
    packed_rows,
    split_even,
)
from rlsim.cost.errors import KnobError
from rlsim.cost.inference import NET_HOP_LATENCY_S, hierarchical_all_to_all_s
from rlsim.cost.kernels import ElementwiseModel, GemmModel
from rlsim.cost.network import (
    nvlink_one_way_bytes_per_s,
    ring_allreduce_s,
    ring_reduce_scatter_s,
)
from rlsim.cost.profile import Profile

if TYPE_CHECKING:
    from rlsim.config.scenario import FrameworkConfig, TrainConfig

# Full activation recomputation re-runs the forward pass (2 of the 6 FLOPs per parameter).
_RECOMPUTE_FACTOR = 4.0 / 3.0
# FlashAttention's backward runs 5 matmuls of the forward's size where the forward runs 2
# (dQ, dK, dV, dP and the recomputed S = QK^T): 2.5x the forward FLOPs (Dao, FlashAttention-2,
# arXiv:2307.08691, section 3.1.2).
_ATTENTION_BWD_FACTOR = 2.5

Recompute = Literal["none", "selective", "full"]


@dataclass(frozen=True, slots=True)
class TrainStepCost:
    """Seconds of one train phase (all its optimizer steps), by kind of work."""

    compute_s: float
    bubble_s: float
    comm_s: float
    optimizer_s: float
    overhead_s: float = 0.0
    offload_s: float = 0.0
    micro_batches: int = 0
    optimizer_steps: int = 1
    # The part of overhead_s the GPU spent waiting for the host to issue a micro-batch's
    # kernels (host-bound micro-batches); informational, already in overhead_s.
    host_wait_s: float = 0.0

    @property
    def total_s(self) -> float:
        return (self.compute_s + self.bubble_s + self.comm_s + self.optimizer_s
                + self.overhead_s + self.offload_s)

    def as_dict(self) -> dict[str, float]:
        return {
            "compute_s": self.compute_s,
            "bubble_s": self.bubble_s,
            "comm_s": self.comm_s,
            "optimizer_s": self.optimizer_s,
            "overhead_s": self.overhead_s,
            "offload_s": self.offload_s,
            "total_s": self.total_s,
        }


@dataclass(frozen=True, slots=True)
class TrainBatching:
    """How a step's samples are batched, and what is recomputed or offloaded (veRL's names
    in docs/scenario.md). Token caps are per micro-batch of one model replica."""

    recompute: Recompute = "full"
    ppo_mini_batch_size: int | None = None  # prompts per optimizer step; None: all
    ppo_epochs: int = 1
    micro_batch_size: int | None = None  # samples per padded micro-batch; None: dynamic
    max_tokens: int | None = None  # dynamic batching's cap; None: TrainCost.micro_batch_tokens
    log_prob_micro_batch_size: int | None = None  # None: as training
    log_prob_max_tokens: int | None = None  # None: as training
    pad_to: int | None = None  # every sample of every pass padded to this; None: no
    log_prob_pad_to: int | None = None  # every log-prob sample padded to this; None: pad_to
    ref_pad_to: int | None = None  # the reference pass's samples padded to this; None: as
    # log_prob_pad_to
    pad_to_multiple_of: int | None = None  # fixed micro-batches padded to their longest,
    # rounded up to this (with the TP/CP alignment); None: packed or padded per backend
    param_offload: bool = False
    grad_offload: bool = False
    optimizer_offload: bool = False
    ep: int = 1  # expert-parallel degree (MoE)
    moe_dispatcher: str = "alltoall"  # "alltoall": k copies per token; "deepep": deduplicated
    fsdp_size: int | None = None  # FSDP shard group (HSDP, veRL fsdp_size); None: all GPUs
    # Megatron's hybrid CPU optimizer: the share of this GPU's optimizer state kept in host
    # memory and stepped by the CPU (optimizer_cpu_offload with optimizer_offload_fraction),
    # and whether its gradient and parameter copies overlap that step
    # (overlap_cpu_optimizer_d2h_h2d).
    optimizer_offload_fraction: float = 0.0
    overlap_cpu_optimizer_d2h_h2d: bool = False
    # Whole-step MFU path: each rank packs its samples first-fit-decreasing into rows as
    # wide as its longest and computes every position of them, pads included (`packed_rows`).
    pack_rows: bool = False

    def __post_init__(self) -> None:
        for name in ("ppo_mini_batch_size", "micro_batch_size", "max_tokens",
                     "log_prob_micro_batch_size", "log_prob_max_tokens", "pad_to",
                     "log_prob_pad_to",
                     "ref_pad_to", "pad_to_multiple_of", "fsdp_size"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"{name} must be >= 1, got {v}")
        for name in ("ppo_epochs", "ep"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.recompute not in ("none", "selective", "full"):
            raise ValueError(f"recompute must be none, selective or full, got {self.recompute!r}")
        if not 0.0 <= self.optimizer_offload_fraction <= 1.0:
            raise ValueError("optimizer_offload_fraction must be in [0, 1], got "
                             f"{self.optimizer_offload_fraction}")
        if self.moe_dispatcher not in ("alltoall", "deepep"):
            raise ValueError("moe_dispatcher must be alltoall or deepep, got "
                             f"{self.moe_dispatcher!r}")


@dataclass(slots=True)
class _Pass:
    """Seconds of one pass (forward, or forward + backward) over one rank's micro-batches."""

    compute_s: float = 0.0
    comm_s: float = 0.0
    overhead_s: float = 0.0
    bubble_s: float = 0.0
    micro_batches: int = 0
    last_bwd_s: float = 0.0  # the last micro-batch's backward (Megatron hides DP traffic there)
    host_wait_s: float = 0.0  # GPU idle behind the host, per stage (in overhead_s)
    parts: list[float] = field(default_factory=list)

    def __init__(self) -> None:  # compiled, where dataclasses' generated one is not
        self.compute_s = 0.0
        self.comm_s = 0.0
        self.overhead_s = 0.0
        self.bubble_s = 0.0
        self.micro_batches = 0
        self.last_bwd_s = 0.0
        self.host_wait_s = 0.0
        self.parts = []

    @property
    def total_s(self) -> float:
        return self.compute_s + self.comm_s + self.overhead_s + self.bubble_s


class TrainCost:
    """Training-step, forward-pass and state-offload costs of one trainer layout."""

    def __init__(
        self,
        model: ModelSpec,
        gpu: GpuSpec,
        gpus: int,
        tp: int,
        pp: int,
        cp: int,
        profile: Profile,
        recompute_activations: bool = True,
        micro_batch_tokens: int = 16384,
        seq_tokens: int = 4096,
        dtype_bytes: int | None = None,
        backend: TrainBackend | None = None,
        batching: TrainBatching | None = None,
        speed: float = 1.0,
        micro_batch_overhead_s: float | None = None,
        host_copy_bytes_per_s: tuple[float | None, float | None] = (None, None),
        host_gpus: int | None = None,
    ) -> None:
        if host_gpus is not None and host_gpus < 1:
            raise ValueError(f"host_gpus must be >= 1, got {host_gpus}")
        for rate in host_copy_bytes_per_s:
            if rate is not None and not rate > 0:
                raise ValueError(f"host_copy_bytes_per_s must be > 0, got {rate}")
        if not speed > 0:
            raise ValueError(f"speed must be > 0, got {speed}")
        if micro_batch_overhead_s is not None and micro_batch_overhead_s < 0:
            raise ValueError(f"micro_batch_overhead_s must be >= 0, got {micro_batch_overhead_s}")
        for name, value in (("gpus", gpus), ("tp", tp), ("pp", pp), ("cp", cp),
                            ("micro_batch_tokens", micro_batch_tokens),
                            ("seq_tokens", seq_tokens)):
            if value < 1:
                message = f"{name} must be >= 1, got {value}"
                raise (KnobError(name, message) if name in ("gpus", "tp", "pp", "cp")
                       else ValueError(message))
        if gpus % (tp * pp * cp):
            raise KnobError(
                "gpus",
                f"gpus={gpus} is not divisible by tp*pp*cp = {tp}*{pp}*{cp} = {tp * pp * cp}")
        if tp > gpu.gpus_per_node:
            raise KnobError("tp", f"tp={tp} exceeds {gpu.name}'s {gpu.gpus_per_node} GPUs per "
                            "node")
        self.model = model
        self.gpu = gpu
        self.gpus = gpus
        self.tp = tp
        self.pp = pp
        self.cp = cp
        self.dp = gpus // (tp * pp * cp)
        self.profile = profile
        self.recompute_activations = recompute_activations
        self.micro_batch_tokens = micro_batch_tokens
        self.seq_tokens = seq_tokens
        # Bytes per element of the weights (the profile's compute dtype unless given): what a
        # weight sync to the engines moves per parameter.
        self.dtype_bytes = profile.dtype_bytes if dtype_bytes is None else dtype_bytes
        if self.dtype_bytes <= 0:
            raise ValueError(f"dtype_bytes must be > 0, got {self.dtype_bytes}")
        self.backend = backend
        # Fitted framework knobs (`framework.train_speed`, `framework.micro_batch_overhead`):
        # the passes' GPU compute time is divided by `speed`; a micro-batch's fixed cost
        # replaces the backend's when given.
        self.speed = speed
        # The framework's own host copies of the state around a colocated switch (optimizer,
        # then parameter and gradient buffers), when they run below the link (NeMo-RL's
        # copies into pageable memory); None: the link.
        self.host_copy_bytes_per_s = host_copy_bytes_per_s
        # GPUs that share one host's CPUs and memory (the pool's node; a GB200 tray, not
        # its NVLink domain); None: the GPU's node.
        self.host_gpus = gpu.gpus_per_node if host_gpus is None else host_gpus
        self.micro_batch_overhead_s = (
            micro_batch_overhead_s if micro_batch_overhead_s is not None
            else backend.micro_batch_overhead_s if backend is not None else 0.0)
        if batching is None:
            batching = TrainBatching(recompute="full" if recompute_activations else "none")
        self.batching = batching
        self.ep = batching.ep
        # FSDP's shard group: all GPUs (ZeRO-3), or fsdp_size of them with the groups
        # replicated (HSDP, veRL fsdp_config.fsdp_size; verl/workers/fsdp_workers.py
        # create_device_mesh: a (gpus / fsdp_size, fsdp_size) mesh, plain FSDP when
        # fsdp_size >= gpus).
        fs = batching.fsdp_size
        self.shard_gpus = gpus if fs is None or fs >= gpus else fs
        if backend is not None:
            self._check_backend(backend)
        self._flops_per_s = profile.train_mfu * gpu.bf16_tflops * 1e12 * gpus
        self._fwd_flops_per_s = profile.forward_pass_mfu * gpu.bf16_tflops * 1e12 * gpus
        self._gemm = GemmModel(gpu, profile, self.dtype_bytes)
        self._elem = ElementwiseModel(gpu, profile)
        # Keyed 2 m + backward: an int key is hashed without a tuple (thousands a step).
        self._gemm_memo: dict[int, float] = {}
        # Memos of pure functions of their arguments (the layout is fixed): the step's
        # passes share one batch (ref and old log-probs are the same pass, training deals
        # the same samples to the ranks), and micro-batches repeat token counts.
        self._elem_memo: dict[int, float] = {}
        self._head_memo: dict[int, float] = {}
        self._pass_memo: dict[tuple[object, ...], _Pass] = {}
        self._balance_memo: tuple[tuple[int, ...], list[list[int]]] | None = None
        # Constants of the per-micro-batch pricing, bound once (the model, GPU, profile and
        # backend are fixed): a 1,024-GPU step prices thousands of micro-batches. Each is
        # the same expression the pricing evaluated, so its results are unchanged.
        self._ring = backend is not None and backend.sequence_parallel == "ring"
        self._q_dim = model.q_dim  # properties of the model: computed per read
        self._kv_dim = model.kv_dim
        self._attn_flops_per_pair = self._pair_flops / tp
        self._attn_fixed_s = model.layers * profile.attention_fixed_s
        self._attn_fwd_flops_per_s = gpu.bf16_tflops * 1e12 * profile.attention_flops_efficiency
        bwd_eff = profile.attention_flops_efficiency
        if backend is not None and backend.attention_bwd_flops_efficiency is not None:
            bwd_eff = backend.attention_bwd_flops_efficiency
        self._attn_bwd_flops_per_s = gpu.bf16_tflops * 1e12 * bwd_eff

    @classmethod
    def from_config(cls, model: ModelSpec, gpu: GpuSpec, gpus: int, train: TrainConfig,
                    profile: Profile, framework: FrameworkConfig | None = None,
                    host_copy_bytes_per_s: tuple[float | None, float | None] = (None, None),
                    host_gpus: int | None = None) -> TrainCost:
        """The trainer a scenario's `train` section describes: per kernel with its backend's
        constants, or by whole-step MFU when `train.mfu` is set (it replaces the profile's
        train_mfu and forward_mfu) or `train.backend` is `profile`; `framework` carries the
        fitted knobs (train_speed, micro_batch_overhead), None: rlsim's own;
        `host_copy_bytes_per_s` the training framework's host-copy rates of its optimizer
        state and of its parameter and gradient buffers (`SyncConstants`); `host_gpus` the
        GPUs sharing one host (None: the GPU's node)."""
        t = train
        if t.mfu is not None:
            profile = profile.model_copy(update={"train_mfu": t.mfu, "forward_mfu": t.mfu})
        backend = None if t.mfu is not None or t.backend == "profile" else lookup_backend(
            t.backend)
        recompute: Recompute = t.recompute if t.recompute is not None else (
            "full" if t.recompute_activations else "none")
        cp = t.cp

        def per_replica(per_gpu: int | None) -> int | None:
            return None if per_gpu is None else per_gpu * cp

        batching = TrainBatching(
            recompute=recompute,
            ppo_mini_batch_size=t.ppo_mini_batch_size,
            ppo_epochs=t.ppo_epochs,
            micro_batch_size=t.micro_batch_size_per_gpu,
            max_tokens=per_replica(t.max_token_len_per_gpu),
            log_prob_micro_batch_size=t.log_prob_micro_batch_size_per_gpu,
            log_prob_max_tokens=per_replica(t.log_prob_max_token_len_per_gpu),
            pad_to=t.pad_to,
            log_prob_pad_to=t.log_prob_pad_to,
            ref_pad_to=t.ref_pad_to,
            pad_to_multiple_of=t.pad_to_multiple_of,
            param_offload=t.param_offload,
            grad_offload=t.grad_offload,
            optimizer_offload=t.optimizer_offload,
            ep=t.ep,
            moe_dispatcher=t.moe_dispatcher,
            fsdp_size=None if t.fsdp_size in (None, -1) else t.fsdp_size,
            optimizer_offload_fraction=t.optimizer_offload_fraction,
            overlap_cpu_optimizer_d2h_h2d=t.overlap_cpu_optimizer_d2h_h2d,
            pack_rows=t.pack_rows,
        )
        speed = 1.0 if framework is None else framework.train_speed
        mb_s = None if framework is None else framework.micro_batch_overhead
        return cls(model, gpu, gpus, t.tp, t.pp, t.cp, profile,
                   recompute != "none", t.micro_batch_tokens, backend=backend,
                   batching=batching, speed=speed, micro_batch_overhead_s=mb_s,
                   host_copy_bytes_per_s=host_copy_bytes_per_s, host_gpus=host_gpus)

    def _check_backend(self, b: TrainBackend) -> None:
        if self.shard_gpus != self.gpus:
            if not b.shard_params_over_dp:
                raise KnobError("fsdp_size", f"fsdp_size={self.batching.fsdp_size} shards an "
                                f"FSDP trainer; backend {b.name} shards its optimizer over "
                                "all data-parallel ranks: drop fsdp_size or use fsdp/fsdp2")
            if self.gpus % self.shard_gpus:
                raise KnobError("fsdp_size", f"fsdp_size={self.shard_gpus} must divide the "
                                f"{self.gpus} training GPUs (veRL builds a (gpus / fsdp_size, "
                                "fsdp_size) device mesh)")
        if not b.supports_tp_pp and (self.pp > 1 or (self.tp > 1 and not b.dtensor_tp)):
            raise KnobError(
                "backend", f"backend {b.name} has no tensor or pipeline parallelism (tp={self.tp}, "
                f"pp={self.pp}): use backend megatron (or fsdp2 for tp), or tp 1 and pp 1 (cp "
                "is its Ulysses sequence parallelism)")
        if self.tp > 1 and b.dtensor_tp and self.shard_gpus != self.gpus:
            raise KnobError("fsdp_size", f"fsdp_size={self.shard_gpus} with tp={self.tp}: "
                            "rlsim shards a DTensor TP trainer over all its data-parallel "
                            "ranks; drop fsdp_size")
        moe = self.model.moe
        if self.ep > 1:
            if moe is None:
                raise KnobError("ep", f"ep={self.ep} needs an MoE model; {self.model.name} is "
                                "dense")
            if not b.supports_tp_pp:
                raise KnobError("backend", f"backend {b.name} has no expert parallelism: use "
                                "megatron")
            # Megatron-Core's MoE parallel folding: the expert layers lay out EP (x expert
            # TP 1) over the same tp*cp*dp ranks as the attention layers.
            if (self.tp * self.cp * self.dp) % self.ep:
                raise KnobError("ep", f"ep={self.ep} must divide tp*cp*dp = "
                                f"{self.tp * self.cp * self.dp}")
            if moe.experts % self.ep:
                raise KnobError("ep", f"ep={self.ep} must divide the {moe.experts} experts")
        if self.pp > self.model.layers:
            raise KnobError("pp", f"pp={self.pp} exceeds the model's {self.model.layers} "
                            "layers")

    # ----- FLOPs (whole-step MFU path) -----

    def _attention_fwd_flops_per_token(self, seq_tokens: float) -> float:
        # Causal attention: a token attends to seq/2 earlier tokens on average; QK^T and PV
        # are 2 FLOPs per multiply-add each.
        return self._pair_flops * self.model.layers * seq_tokens / 2.0

    def _fwd_flops(self, tokens: int, seq_tokens: float) -> float:
        return tokens * (
            2.0 * self.model.matmul_params + self._attention_fwd_flops_per_token(seq_tokens)
        )

    def _mfu_shape(self, tokens: int, seq: float,
                   lengths: Sequence[int] | None) -> tuple[int, float, int]:
        """(tokens, seq_tokens, micro-batches per rank) the whole-step MFU path prices: the
        samples' own tokens, or with `pack_rows` (and the lengths known) the positions of the
        busiest rank's packed rows, `dp` times (the step waits for that rank), each row's
        attention as long as the row is wide (a dense mask over the row)."""
        if not (self.batching.pack_rows and lengths and max(lengths) > 0):
            return tokens, seq, max(1, math.ceil(tokens / (self.dp * self.micro_batch_tokens)))
        best_flops, best = -1.0, (0, 1)
        # the ranks as the per-kernel path deals them (veRL's balance_batch)
        for share in self._per_rank(tuple(lengths)):
            rows, width = packed_rows(share)
            flops = self._fwd_flops(rows * width, float(width))
            if flops > best_flops:
                best_flops, best = flops, (rows, width)
        rows, width = best
        per = max(1, self.micro_batch_tokens // width)  # rows per micro-batch
        return self.dp * rows * width, float(width), max(1, -(-rows // per))

    def _mfu_step(self, tokens: int, seq: float,
                  lengths: Sequence[int] | None = None) -> TrainStepCost:
        # m: micro-batches each pipeline processes
        tokens, seq, m = self._mfu_shape(tokens, seq, lengths)
        flops = 3.0 * self._fwd_flops(tokens, seq)  # forward + backward (2x forward)
        if self.recompute_activations:
            flops *= _RECOMPUTE_FACTOR
        compute_s = flops / self._flops_per_s / self.speed

        # The bubble adds (p-1) micro-batch slots, i.e. the (p-1)/(m+p-1) share of the
        # pipelined time.
        bubble_s = compute_s * (self.pp - 1) / m

        comm_total_s = self.dp_comm_s()
        hidden_s = min(self.profile.train_comm_overlap_fraction * comm_total_s, compute_s)
        comm_s = comm_total_s - hidden_s
        return TrainStepCost(compute_s, bubble_s, comm_s, self._optimizer_s(),
                             self.profile.train_step_overhead_s, micro_batches=m)

    # ----- public costs -----

    def train_step(self, tokens: int, seq_tokens: float | None = None,
                   lengths: Sequence[int] | None = None,
                   prompts: int | None = None) -> TrainStepCost:
        """The train phase over `tokens` tokens: sequences of `lengths` tokens each (None:
        sequences of `seq_tokens`, or the default length), from `prompts` prompts (sets the
        mini-batches: one optimizer step each, `ppo_epochs` times). Without a backend: one
        optimizer step priced by FLOPs over `train_mfu`."""
        if tokens < 0:
            raise ValueError(f"tokens must be >= 0, got {tokens}")
        seq = self.seq_tokens if seq_tokens is None else seq_tokens
        if self.backend is None:
            return self._mfu_step(tokens, seq, lengths)
        return self._kernel_step(self._lengths(tokens, seq, lengths), prompts, optimizer=True)

    def with_gpus(self, gpus: int) -> TrainCost:
        """The same layout (TP, PP, CP) on `gpus` GPUs, i.e. another data-parallel degree;
        raises ValueError when `gpus` does not hold whole model replicas."""
        return TrainCost(self.model, self.gpu, gpus, self.tp, self.pp, self.cp, self.profile,
                         self.recompute_activations, self.micro_batch_tokens, self.seq_tokens,
                         self.dtype_bytes, self.backend, self.batching, self.speed,
                         self.micro_batch_overhead_s if self.backend is not None else None,
                         self.host_copy_bytes_per_s, self.host_gpus)

    def grad_s(self, tokens: int, seq_tokens: float | None = None,
               lengths: Sequence[int] | None = None) -> float:
        """Forward and backward over `tokens` tokens with the gradients kept (accumulated):
        a train step without its optimizer update and gradient synchronization."""
        seq = self.seq_tokens if seq_tokens is None else seq_tokens
        if self.backend is None:
            step = self.train_step(tokens, seq, lengths)
            return step.compute_s + step.bubble_s
        step = self._kernel_step(self._lengths(tokens, seq, lengths), None, optimizer=False)
        return step.compute_s + step.bubble_s + step.comm_s + step.overhead_s

    def forward_s(self, tokens: int, seq_tokens: float | None = None,
                  lengths: Sequence[int] | None = None, reference: bool = False) -> float:
        """Forward-only pass (reference / old log-probs, critic values) over `tokens`
        tokens; 0 for no tokens. Without a backend: FLOPs at `forward_mfu` plus
        `forward_overhead_s`; with one: the log-prob micro-batches priced per kernel
        (`reference`: the reference model's pass, padded to `ref_pad_to` when set)."""
        if tokens < 0:
            raise ValueError(f"tokens must be >= 0, got {tokens}")
        if tokens == 0:
            return 0.0
        seq = self.seq_tokens if seq_tokens is None else seq_tokens
        if self.backend is None:
            tokens, seq, _ = self._mfu_shape(tokens, seq, lengths)
            return self._fwd_flops(tokens, seq) / self._fwd_flops_per_s / self.speed + (
                self.profile.forward_overhead_s
            )
        return self._kernel_forward(self._lengths(tokens, seq, lengths), reference)

    def dp_comm_s(self) -> float:
        """Per-step gradient reduce-scatter + parameter all-gather over the DP x CP group
        (whole-step MFU path: profile's bytes per parameter)."""
        group = self.dp * self.cp
        if group <= 1:
            return 0.0
        shard_params = self.model.params / (self.tp * self.pp)
        size_bytes = shard_params * self.profile.train_dp_comm_bytes_per_param
        return ring_reduce_scatter_s(size_bytes, group, self._dp_bw(),
                                     self.profile.allreduce_latency_s)

    def weight_bytes(self) -> float:
        """All parameters in the compute dtype (what a full weight sync moves)."""
        return self.model.weight_bytes(self.dtype_bytes)

    def state_bytes_per_gpu(self) -> float:
        """Params + grads + optimizer state on one GPU: the backend's bytes per parameter
        and sharding (Megatron: params and grads over TP x PP (x EP for experts), the
        optimizer over all GPUs; FSDP: everything over its shard group, all GPUs unless
        fsdp_size sets fewer); without a backend, the
        profile's bytes per parameter sharded over all GPUs (ZeRO-3 style)."""
        b = self.backend
        if b is None:
            return self.model.params * self.profile.train_state_bytes_per_param / self.gpus
        return (self._params_per_gpu() * (b.param_bytes + b.grad_bytes)
                + self._optimizer_bytes_per_gpu(b))

    def resident_state_bytes_per_gpu(self) -> float:
        """The part of this GPU's trainer state that stays on the GPU between passes: all of
        it, less the parts the offload flags (param_offload / grad_offload /
        optimizer_offload) already keep in host memory and move around each pass
        (`pass_offload_s`), so a colocated switch does not move them a second time."""
        b, bt = self.backend, self.batching
        state = self.state_bytes_per_gpu()
        if b is None:
            return state
        if bt.param_offload:
            state -= self._params_per_gpu() * b.param_bytes
        if bt.grad_offload:
            state -= self._params_per_gpu() * b.grad_bytes
        if bt.optimizer_offload:
            state -= self._optimizer_bytes_per_gpu(b)
        else:
            # The hybrid CPU optimizer's share never comes to the GPU.
            state -= bt.optimizer_offload_fraction * self._optimizer_bytes_per_gpu(b)
        return max(state, 0.0)

    def offload_s(self) -> float:
        """Move this GPU's resident trainer state to host memory (a colocated switch to
        rollout): over the host link at the profile's efficiency, or, on a PCIe host, at the
        framework's own copy rates where those are slower (`host_copy_bytes_per_s`: the
        optimizer state's, then the parameter and gradient buffers'; copies into pageable
        memory, which the driver stages; a coherent NVLink-C2C host addresses host memory
        directly, so the measured PCIe-host rates do not carry over)."""
        link = self.gpu.pcie_bandwidth * self.profile.pcie_efficiency
        resident = self.resident_state_bytes_per_gpu()
        opt_rate, buf_rate = self.host_copy_bytes_per_s
        if self.gpu.host_link != "pcie" or (opt_rate is None and buf_rate is None):
            return resident / link
        optimizer = min(self._resident_optimizer_bytes_per_gpu(), resident)
        return (optimizer / min(link, opt_rate or link)
                + (resident - optimizer) / min(link, buf_rate or link))

    def _resident_optimizer_bytes_per_gpu(self) -> float:
        """The optimizer state a colocated switch moves: this GPU's share (sharded over the
        shard group), none when optimizer_offload keeps it in host memory; without a
        backend, none is told apart (the whole state moves at the buffer rate)."""
        b = self.backend
        if b is None or self.batching.optimizer_offload:
            return 0.0
        return (1.0 - self.batching.optimizer_offload_fraction) * self._optimizer_bytes_per_gpu(b)

    def _optimizer_bytes_per_gpu(self, b: TrainBackend) -> float:
        """This GPU's share of the optimizer state: sharded over the shard group (FSDP) or
        all data-parallel ranks (Megatron's distributed optimizer)."""
        return self.model.params / self.shard_gpus * b.optimizer_bytes

    def reload_s(self) -> float:
        """Move this GPU's trainer state back from host memory, as `offload_s`."""
        return self.offload_s()

    def pass_offload_s(self, train: bool) -> float:
        """PCIe round trips of one pass (veRL param_offload / grad_offload /
        optimizer_offload): each offloaded part of this GPU's state is loaded before the
        pass and offloaded after it, 2 * bytes / (pcie_bandwidth * pcie_efficiency); grads
        and optimizer state only around a train pass."""
        b = self.backend
        bt = self.batching
        if b is None:
            return 0.0
        size = 0.0
        if bt.param_offload:
            size += self._params_per_gpu() * b.param_bytes
        if train and bt.grad_offload:
            size += self._params_per_gpu() * b.grad_bytes
        if train and bt.optimizer_offload:
            # What the hybrid CPU optimizer keeps on the host does not move.
            size += (1.0 - bt.optimizer_offload_fraction) * self._optimizer_bytes_per_gpu(b)
        return 2.0 * size / (self.gpu.pcie_bandwidth * self.profile.pcie_efficiency)

    # ----- per-kernel path -----

    def _lengths(self, tokens: int, seq: float, lengths: Sequence[int] | None) -> list[int]:
        if lengths is not None:
            if lengths and min(lengths) < 0:
                raise ValueError("lengths must be >= 0")
            return [int(n) for n in lengths if n > 0]
        if tokens == 0:
            return []
        n = max(1, round(tokens / max(seq, 1.0)))
        base, extra = divmod(tokens, n)
        return [base + (1 if i < extra else 0) for i in range(n)]

    @property
    def _pair_flops(self) -> float:
        """Forward FLOPs of one (query, key) pair in one layer: QK^T over the query/key head
        width and PV over the value width, 2 FLOPs per multiply-add: 4 q_dim; MLA (expanded
        for training): 2 heads (qk_head_dim + v_head_dim)."""
        mo = self.model
        if mo.mla is not None:
            return 2.0 * mo.heads * (mo.mla.qk_head_dim + mo.mla.v_head_dim)
        return 4.0 * mo.q_dim

    @property
    def _kv_width(self) -> int:
        """Elements of one token's K and V in one layer (what ring attention passes):
        2 kv_dim; MLA expanded: heads (qk_head_dim + v_head_dim)."""
        mo = self.model
        if mo.mla is not None:
            return mo.heads * (mo.mla.qk_head_dim + mo.mla.v_head_dim)
        return 2 * mo.kv_dim

    @property
    def stage_fraction(self) -> float:
        """Share of the layers on the busiest pipeline stage: ceil(L/pp) / L (1/pp when pp
        divides L)."""
        return math.ceil(self.model.layers / self.pp) / self.model.layers

    def _params_per_gpu(self) -> float:
        """Parameters resident on one GPU (FSDP: a 1/shard_gpus shard; Megatron: dense over TP x
        PP, routed experts over TP x PP x EP)."""
        b = self.backend
        if b is not None and b.shard_params_over_dp:
            return self.model.params / self.shard_gpus
        experts = self._routed_expert_params()
        # The busiest pipeline stage (ceil(L/pp) layers) sets the memory a GPU must hold;
        # routed experts are split over EP alone (parallel folding, expert TP 1).
        return ((self.model.params - experts) * self.stage_fraction / self.tp
                + experts * self.stage_fraction / self.ep)

    def _routed_expert_params(self) -> float:
        moe = self.model.moe
        if moe is None:
            return 0.0
        return float(self.model.moe_layers * moe.experts * self.model.expert_params)

    def _optimizer_s(self) -> float:
        """One optimizer step of this GPU's shard: the memory-bound Adam update on the GPU,
        and with Megatron's hybrid CPU optimizer the offloaded share on the CPU
        (`cpu_optimizer_s`)."""
        params = self.model.params / self.shard_gpus
        cpu_share = self.batching.optimizer_offload_fraction
        gpu_s = ((1.0 - cpu_share) * params * self.profile.train_optimizer_bytes_per_param
                 / (self.gpu.hbm_bandwidth * self.profile.hbm_efficiency))
        if cpu_share <= 0.0:
            return gpu_s
        # The step ends when the busiest pipeline stage's shard is stepped: Megatron's
        # distributed optimizer shards each stage's parameters (dense over tp x dp x cp,
        # experts over ep x their data-parallel ranks), so a GPU of the stage with
        # ceil(L/pp) layers holds params * stage_fraction * pp / gpus. (The GPU's own Adam,
        # milliseconds, keeps the mean shard.)
        busiest = self.model.params * self.stage_fraction * self.pp / self.gpus
        return gpu_s + self.cpu_optimizer_s(cpu_share * busiest)

    def cpu_optimizer_s(self, params: float) -> float:
        """Megatron's HybridDeviceOptimizer stepping `params` parameters of one GPU's shard
        on the CPU (torch AdamW on fp32 master weights in host memory): every process of a
        host steps at once, so each runs at min(`cpu_adam_params_per_s`,
        `cpu_adam_node_params_per_s` / processes on the host); the fp32 gradients go down
        and the fp32 parameters come back over the host link, 8 bytes a parameter, before
        and after that step, or beside it with `overlap_cpu_optimizer_d2h_h2d` (then the
        longer of the two)."""
        if params <= 0.0:
            return 0.0
        p = self.profile
        processes = min(self.gpus, self.host_gpus)
        rate = min(p.cpu_adam_params_per_s, p.cpu_adam_node_params_per_s / processes)
        step_s = params / rate
        copy_s = 8.0 * params / (self.gpu.pcie_bandwidth * p.pcie_efficiency)
        if self.batching.overlap_cpu_optimizer_d2h_h2d:
            return max(step_s, copy_s)
        return step_s + copy_s

    def nvlink_bw(self) -> float:
        """One rank's effective one-way NVLink bandwidth in a ring collective."""
        return nvlink_one_way_bytes_per_s(self.gpu.nvlink_bandwidth) * (
            self.profile.allreduce_bus_efficiency)

    def network_bw(self) -> float:
        """One rank's effective inter-node bandwidth."""
        return self.gpu.network_bandwidth * self.profile.network_efficiency

    def group_bw(self, span_gpus: int) -> float:
        """One-direction bandwidth of a group whose ranks span `span_gpus` consecutive GPUs:
        NVLink inside a node, the network once the group leaves it."""
        return self.network_bw() if span_gpus > self.gpu.gpus_per_node else self.nvlink_bw()

    def _dp_bw(self) -> float:
        # Ranks of one DP group are tp*cp apart; the group leaves the node when its span does.
        return self.group_bw(self.tp * self.cp * self.dp)

    def _gemms(self, m: int, backward: bool) -> float:
        """All GEMMs of the model on one GPU for `m` tokens: forward, or backward (dgrad
        (m x n) @ (n x k) and wgrad (k x m) @ (m x n) per forward GEMM (m x k) @ (k x n))."""
        key = 2 * m + (1 if backward else 0)
        hit = self._gemm_memo.get(key)
        if hit is not None:
            return hit
        g = self._gemm.time_s

        def one(rows: int, n: int, k: int, count: float = 1.0) -> float:
            if rows <= 0 or n <= 0 or k <= 0:
                return 0.0
            if backward:
                return count * (g(rows, k, n) + g(k, n, rows))
            return count * g(rows, n, k)

        mo, tp = self.model, self.tp
        h = mo.hidden
        if mo.mla is None:
            q, kv = self._q_dim, self._kv_dim
            attn = one(m, (q + 2 * kv) // tp, h) + one(m, h, q // tp)
        else:  # MLA's low-rank projections, priced as one GEMM of the same weights
            attn = one(m, mo.attn_params // (h * tp), h)
        up = 2 if mo.gated_mlp else 1
        dense_mlp = one(m, up * mo.ffn // tp, h) + one(m, h, mo.ffn // tp)
        moe = mo.moe
        total = mo.layers * attn + one(m, mo.vocab // tp, h)
        if moe is None:
            total += mo.layers * dense_mlp
        else:
            moe_layers = mo.moe_layers
            # One EP rank holds every expert: its expert work is exactly m*k, no busiest rank.
            imb = (self.backend.router_imbalance
                   if self.backend is not None and self.ep > 1 else 1.0)
            local_experts = moe.experts // self.ep
            # Megatron-Core MoE with parallel folding and expert TP 1 (NeMo-RL's
            # expert_tensor_parallel_size: 1, grpo_math_1B.yaml:217): with TP, sequence
            # parallelism leaves m/tp tokens per GPU at the router; one local expert gets
            # those tokens x top-k spread over the experts, the busiest rank's share (router
            # imbalance) of what its EP group sends, and runs whole (not split over TP).
            m_router = -(-m // tp)
            t_e = math.ceil(m_router * moe.experts_per_token * imb * self.ep / moe.experts)
            fe = moe.expert_ffn
            experts = one(t_e, up * fe, h, local_experts) + one(t_e, h, fe, local_experts)
            fs = moe.shared_ffn
            shared = moe.shared_experts * (one(m, up * fs // tp, h) + one(m, h, fs // tp))
            router = one(m_router, moe.experts, h)  # after sequence parallelism: m/tp rows
            total += (mo.layers - moe_layers) * dense_mlp + moe_layers * (
                experts + shared + router)
        self._gemm_memo[key] = total
        return total

    def _elementwise(self, m: int, backward: bool = False) -> float:
        """Memory-bound kernels of the model on one GPU for `m` tokens, forward or backward.
        Fused (Megatron-Core + Transformer Engine; no `elementwise_traffic`): per layer two
        fused add+RMSNorms, rotary, the MLP activation, and the LM head's fp32 log-softmax;
        the backward moves twice the forward's bytes. Eager (the backend's
        `elementwise_traffic`): the counted bytes per token of every unfused kernel, each
        kernel paying its launch."""
        key = 2 * m + (1 if backward else 0)
        hit = self._elem_memo.get(key)
        if hit is not None:
            return hit
        mo, tp, d = self.model, self.tp, self.dtype_bytes
        e = self._elem.time_s
        moe = mo.moe
        if moe is None:
            act_ffn = float(mo.ffn)
        else:
            fs = moe.shared_ffn
            # float() as in the dense branch: mypyc needs one type here (values unchanged).
            act_ffn = float(moe.experts_per_token * moe.expert_ffn + moe.shared_experts * fs)
        traffic = self.backend.elementwise_traffic if self.backend is not None else None
        if traffic is not None:
            # Eager backends hold whole layers for their m tokens, except under DTensor TP
            # (fsdp2), where the KV-sized and MLP-sized activations split over TP. The
            # hidden-sized term stays whole (norms and residual, no sequence parallelism);
            # it also counts the query-sized traffic, which TP would split: an upper bound.
            kv_dim = self._kv_dim if tp == 1 else self._kv_dim / tp
            ffn = act_ffn if tp == 1 else act_ffn / tp
            per_token = traffic.layer_bytes_per_token(mo.hidden, kv_dim, ffn, backward)
            kernels = traffic.bwd_kernels if backward else traffic.kernels
            launch_s = self.profile.elementwise_launch_s
            per_layer = e(m * per_token) + (kernels - 1) * launch_s
            head = self._head_elementwise_s(m, backward)
            total = mo.layers * per_layer + head
        else:
            # Sequence parallelism (Megatron with TP: veRL's megatron.sequence_parallel and
            # the RollPacker artifact set it) shards the two add+RMSNorms over TP.
            per_layer = (2 * e(4.0 * m * mo.hidden * d / tp)
                         + e(2.0 * m * (self._q_dim + self._kv_dim) / tp * d)
                         + e(3.0 * m * act_ffn / tp * d))
            total = mo.layers * per_layer + self._head_elementwise_s(m, False)
            if backward:
                total *= 2.0
        self._elem_memo[key] = total
        return total

    def _head_fwd_s(self, m: int) -> float:
        """The forward of the LM head on one GPU for `m` tokens: its GEMM and the
        memory-bound log-softmax after it, as `_gemms` and `_elementwise` price them."""
        hit = self._head_memo.get(m)
        if hit is not None:
            return hit
        mo, tp = self.model, self.tp
        n = mo.vocab // tp
        gemm = self._gemm.time_s(m, n, mo.hidden) if m > 0 and n > 0 else 0.0
        out = gemm + self._head_elementwise_s(m, False)
        self._head_memo[m] = out
        return out

    def _head_elementwise_s(self, m: int, backward: bool) -> float:
        """The head's memory-bound kernels for `m` tokens (final norm, log-softmax, gather):
        the eager backend's counted bytes (forward or backward), or the fused fp32
        log-softmax of the logits (forward; `_elementwise` doubles the fused total
        backward)."""
        mo = self.model
        traffic = self.backend.elementwise_traffic if self.backend is not None else None
        if traffic is not None:
            return self._elem.time_s(m * traffic.head_bytes_per_token(mo.vocab, mo.hidden,
                                                                      backward))
        return self._elem.time_s(m * mo.vocab / self.tp * (self.dtype_bytes + 4))

    def _attention_s(self, pairs_per_gpu: float, backward: bool) -> float:
        """Causal attention of one pass on one GPU: 4 * q_dim/tp FLOPs per (query, key)
        pair per layer at `attention_flops_efficiency`, 2.5x that backward at the backend's
        `attention_bwd_flops_efficiency` when it sets one."""
        flops = self._attn_flops_per_pair * pairs_per_gpu * self.model.layers
        if backward:
            flops *= _ATTENTION_BWD_FACTOR
            return flops / self._attn_bwd_flops_per_s + self._attn_fixed_s
        return flops / self._attn_fwd_flops_per_s + self._attn_fixed_s

    def tp_comm_s(self, m: int) -> float:
        """One forward's TP traffic for `m` tokens per GPU: 2 all-reduces of m * hidden *
        dtype per layer (or sequence parallelism's reduce-scatter + all-gather: the same
        bytes) over NVLink; the backward runs as many."""
        if self.tp <= 1 or m <= 0:
            return 0.0
        size = m * self.model.hidden * self.dtype_bytes
        return 2 * self.model.layers * ring_allreduce_s(
            size, self.tp, self.nvlink_bw(), self.profile.allreduce_latency_s)

    def ep_alltoall_bytes(self, m: int) -> float:
        """Bytes one GPU sends in one all-to-all (dispatch or combine) of an MoE layer for
        `m` tokens: (m/tp) * top-k * hidden * dtype * (ep-1)/ep (sequence parallelism leaves
        m/tp tokens per GPU at the router)."""
        moe = self.model.moe
        if moe is None or self.ep <= 1:
            return 0.0
        return (m / self.tp * moe.experts_per_token * self.model.hidden * self.dtype_bytes
                * (self.ep - 1) / self.ep)

    def ep_comm_s(self, m: int) -> float:
        """One forward's EP traffic for `m` tokens per GPU: dispatch + combine per MoE
        layer, each waiting for the busiest rank (x router_imbalance); the backward runs as
        many (the gradients of both)."""
        size = self.ep_alltoall_bytes(m)
        if size <= 0:
            return 0.0
        imb = self.backend.router_imbalance if self.backend is not None else 1.0
        lat = self.profile.allreduce_latency_s
        node = self.gpu.gpus_per_node
        if self.batching.moe_dispatcher == "deepep":
            return 2 * self.model.moe_layers * self._deepep_s(m, imb, lat)
        if self.ep <= node:  # folded: the EP group is ep consecutive ranks, in one node
            one = lat + size * imb / self.nvlink_bw()
        else:
            # Across nodes the node's share goes over NVLink while the rest leaves on the
            # GPU's NIC, at once: the engines' hierarchical all-to-all (rollout.ep), on the
            # whole buffer (size is the part that leaves the GPU).
            buffer = size * self.ep / (self.ep - 1)
            one = hierarchical_all_to_all_s(buffer * imb, self.ep, node, self.nvlink_bw(),
                                            self.network_bw(), lat)
        return 2 * self.model.moe_layers * one

    def _deepep_s(self, m: int, imb: float, lat: float) -> float:
        """One DeepEP / HybridEP dispatch (or combine) of `m` tokens per GPU: each token goes
        once to each other GPU of the EP group holding any of its top-k experts (over
        NVLink, directly or forwarded inside the destination node) and once to each remote
        node holding any (over the GPU's NIC); both at once, the slower sets the time.
        With the experts spread evenly, a set of x of the E experts holds none of a token's
        k with probability C(E-x, k) / C(E, k)."""
        moe = self.model.moe
        assert moe is not None
        ep, node, e, k = self.ep, self.gpu.gpus_per_node, moe.experts, moe.experts_per_token
        token = m / self.tp * self.model.hidden * self.dtype_bytes * imb

        def hit(x: int) -> float:  # P(a set of x experts holds any of the token's k)
            return 1.0 - math.comb(e - x, k) / math.comb(e, k)

        nvlink = (ep - 1) * hit(e // ep) * token / self.nvlink_bw()
        if ep <= node:
            return lat + nvlink
        nodes = -(-ep // node)
        network = (nodes - 1) * hit(e // nodes) * token / self.network_bw()
        return lat + NET_HOP_LATENCY_S + max(nvlink, network)

    def cp_comm_s(self, m: int, attention_s: float, backward: bool) -> float:
        """Exposed context-parallel traffic of one pass for `m` tokens per GPU. Ring
        (Megatron): per layer cp-1 steps each passing this rank's K and V (m * 2 * kv_dim/tp
        * dtype), twice as much backward (K, V and their gradients), overlapped with the
        layer's attention: max(0, ring - attention). Ulysses (FSDP): per layer two
        all-to-alls (q, k, v in; the output back) of (cp-1)/cp of their bytes, not
        overlapped."""
        cp = self.cp
        if cp <= 1 or m <= 0:
            return 0.0
        mo, d, lat = self.model, self.dtype_bytes, self.profile.allreduce_latency_s
        bw = self.group_bw(self.tp * cp)
        assert self.backend is not None
        if self.backend.sequence_parallel == "ulysses":
            size = m * (2 * mo.q_dim + 2 * mo.kv_dim) / self.tp * d * (cp - 1) / cp
            return mo.layers * (2 * lat + size / bw)
        kv = m * self._kv_width / self.tp * d
        ring = mo.layers * (cp - 1) * (lat + kv / bw) * (2.0 if backward else 1.0)
        return max(0.0, ring - attention_s)

    def _micro_batch(self, seqs: Sequence[int], backward: bool,
                     recompute: Recompute) -> tuple[float, float, float]:
        """(compute_s, comm_s, backward_s) of one micro-batch of sequences `seqs` (padded
        lengths) on one replica, the whole model (all pipeline stages together)."""
        cp = self.cp
        tokens = 0
        pair_sum = 0.0
        if self._ring:
            # Megatron's packed (THD) sequences: each split into 2*cp load-balanced chunks,
            # each chunk split over the TP ranks by sequence parallelism (veRL
            # preprocess_packed_seqs: align to tp * cp * 2 if cp > 1 else tp).
            mult = self.tp * 2 * cp if cp > 1 else self.tp
            for s in seqs:
                if mult > 1:  # `pad_to_multiple`, inlined
                    s = -(-s // mult) * mult
                tokens += s
                pair_sum += s * (s + 1) / 2.0
        else:
            for s in seqs:
                tokens += s
                pair_sum += s * (s + 1) / 2.0
        m = -(-tokens // cp)
        pairs = pair_sum / cp
        # `speed` (framework.train_speed) divides the kernels' time, not the collectives'.
        speed = self.speed
        attn_f = self._attention_s(pairs, False) / speed
        fwd = self._gemms(m, False) / speed + attn_f + self._elementwise(m) / speed
        tp_ep = self.tp_comm_s(m) + self.ep_comm_s(m)  # the backward moves as much
        comm_f = tp_ep + self.cp_comm_s(m, attn_f, False)
        if not backward:
            return fwd, comm_f, 0.0
        attn_b = self._attention_s(pairs, True) / speed
        bwd = (self._gemms(m, True) / speed + attn_b
               + self._elementwise(m, backward=True) / speed)
        comm_b = tp_ep + self.cp_comm_s(m, attn_b, True)
        if recompute == "full":
            # Checkpointing re-runs the decoder layers' forward, not the LM head and its
            # log-softmax (Hugging Face gradient checkpointing wraps the decoder layers;
            # Megatron's full recompute the transformer layers): on an H200 the added time
            # is the layers' forward alone (reports/rl-shapes.md, "What full
            # recomputation adds").
            bwd += fwd - self._head_fwd_s(m) / speed
            comm_b += comm_f
        elif recompute == "selective":
            bwd += attn_f
        return fwd + bwd, comm_f + comm_b, bwd + comm_b

    def micro_batch_s(self, seqs: Sequence[int], backward: bool,
                      recompute: Recompute = "none") -> float:
        """GPU time of one micro-batch of sequences `seqs` (padded lengths) on one replica:
        its kernels and collectives, without the host's dispatch (`host_s`) or the
        framework's fixed per-micro-batch cost. What a microbenchmark of one micro-batch
        times (calibration/rl_shapes_check.py)."""
        compute, comm, _ = self._micro_batch(seqs, backward, recompute)
        return compute + comm

    def host_s(self, backward: bool, recompute: Recompute = "none") -> float:
        """Host time to issue one micro-batch of the whole model (all pipeline stages) in
        eager PyTorch: the backend's ops per layer and head, each `op_s` (or
        `autograd_op_s` recorded, `backward_op_s` in the backward) plus `launch_s` per
        kernel; a train pass (`backward`) records the forward, runs the backward and, under
        full recompute, the forward again. 0 without a backend or with `host_ops` None.
        Independent of the tokens."""
        b = self.backend
        if b is None or b.host_ops is None:
            return 0.0
        if backward:
            return b.host_ops.train_s(self.model.layers, recompute == "full")
        return b.host_ops.forward_s(self.model.layers)

    def _fsdp_comm_s(self, backward: bool) -> float:
        """FSDP's per-micro-batch traffic: the parameters all-gathered for the forward (and
        again for the backward) and the gradients reduce-scattered, over the shard group
        (all GPUs, or fsdp_size of them); under HSDP the shard's gradients are then
        all-reduced over the replicas, across the GPUs the replicas span."""
        b = self.backend
        assert b is not None
        if self.gpus <= 1:
            return 0.0
        per_param = b.gather_bytes_per_param * (2 if backward else 1)
        if backward:
            per_param += b.reduce_bytes_per_param
        # One collective per FSDP unit (layer) per direction: latency per layer.
        calls = self.model.layers * (3 if backward else 1)
        # Under DTensor TP each GPU gathers its 1/tp of the weights from the g data-parallel
        # ranks that shard it, tp apart (the group spans g * tp GPUs).
        tp = self.tp
        size = self.model.params / tp * per_param
        g = self.shard_gpus // tp
        total = 0.0 if g <= 1 else calls * self.profile.allreduce_latency_s + (g - 1) / g * (
            size / self.group_bw(g * tp))
        replicas = self.gpus // self.shard_gpus
        if backward and replicas > 1:
            # A ring all-reduce of this GPU's 1/g of the gradients over the replicas, whose
            # ranks are g apart (the group spans all the trainer's GPUs): 2 (r-1)/r bytes,
            # one call per unit, every micro-batch (veRL's FSDP workers never skip the
            # gradient sync between micro-batches).
            shard = self.model.params / g * b.reduce_bytes_per_param
            total += self.model.layers * self.profile.allreduce_latency_s + 2.0 * (
                replicas - 1) / replicas * shard / self.group_bw(self.gpus)
        return total

    def _pack(self, lengths: Sequence[int], micro_batch_size: int | None,
              max_tokens: int) -> list[list[int]]:
        """One rank's samples packed into micro-batches: fixed or dynamic."""
        b = self.backend
        assert b is not None
        if micro_batch_size is not None:
            return pack_fixed(lengths, micro_batch_size, b.pad_fixed_micro_batches,
                              self._pad_multiple())
        return pack_dynamic(lengths, max_tokens)

    def _rank_pass(self, mbs: list[list[int]], backward: bool, recompute: Recompute,
                   micro_batches: int) -> _Pass:
        """One rank's pass over its micro-batches `mbs` (`_pack`): priced per micro-batch,
        pipelined."""
        b = self.backend
        assert b is not None
        out = _Pass()
        fsdp = self._fsdp_comm_s(backward) if b.gather_per_micro_batch else 0.0
        host = self.host_s(backward, recompute)
        wait = 0.0
        for seqs in mbs:
            compute, comm, bwd = self._micro_batch(seqs, backward, recompute)
            if fsdp:
                comm += fsdp - min(b.dp_overlap_fraction * fsdp, compute)
            out.compute_s += compute
            out.comm_s += comm
            out.last_bwd_s = bwd
            # The host issues the micro-batch's kernels asynchronously: when it takes longer
            # than the GPU runs them, the GPU waits the difference (max(GPU, host)).
            wait += max(0.0, host - compute - comm)
        # Ranks run as many micro-batches as the rank with the most (collectives match).
        count = max(len(mbs), micro_batches)
        if fsdp and count > len(mbs):
            out.comm_s += (count - len(mbs)) * fsdp
        out.micro_batches = count
        pp, stage = self.pp, self.stage_fraction
        # Each stage's host issues its own layers (the head counted as spread over them).
        out.host_wait_s = wait * stage
        out.overhead_s = count * self.micro_batch_overhead_s + out.host_wait_s
        if pp > 1:
            # The busiest stage holds ceil(L/pp) layers (Megatron allows uneven first and last
            # stages) and paces the pipe; 1F1B adds (p-1) micro-batch slots: the bubble is
            # (p-1)/(m+p-1) of the pipelined time.
            out.compute_s *= stage
            out.comm_s *= stage
            out.last_bwd_s *= stage
            out.bubble_s = (out.compute_s + out.comm_s + out.overhead_s) * (pp - 1) / max(
                count, 1)
        return out

    def _per_rank(self, batch: tuple[int, ...]) -> list[list[int]]:
        """`batch` dealt to the data-parallel ranks (`balance_over_ranks`), memoized: a
        step's passes share one batch."""
        if self._balance_memo is not None and self._balance_memo[0] == batch:
            return self._balance_memo[1]
        per_rank = balance_over_ranks(batch, self.dp)
        self._balance_memo = (batch, per_rank)
        return per_rank

    def _ranks_pass(self, lengths: Sequence[int], backward: bool, micro_batch_size: int | None,
                    max_tokens: int, recompute: Recompute) -> _Pass:
        """The slowest data-parallel rank's pass over `lengths` (all ranks wait for it)."""
        batch = tuple(lengths)
        key = (batch, backward, micro_batch_size, max_tokens, recompute)
        hit = self._pass_memo.get(key)
        if hit is not None:
            return hit
        per_rank = self._per_rank(batch)
        packed = [self._pack(r, micro_batch_size, max_tokens) for r in per_rank]
        most = max((len(mbs) for mbs in packed), default=0)
        passes = [self._rank_pass(mbs, backward, recompute, most) for mbs in packed]
        slowest = max(passes, key=lambda p: p.total_s)
        if len(self._pass_memo) >= 8:  # a step's few passes; older batches do not return
            self._pass_memo.clear()
        self._pass_memo[key] = slowest
        return slowest

    def _megatron_dp_s(self) -> float:
        """Megatron's per-optimizer-step DP traffic: gradients reduce-scattered and the
        updated parameters all-gathered over DP x CP (routed experts over DP x CP / EP)."""
        b = self.backend
        assert b is not None
        experts = self._routed_expert_params()
        stage = self.stage_fraction
        dense = (self.model.params - experts) * stage / self.tp
        per_param = b.gather_bytes_per_param + b.reduce_bytes_per_param
        lat = self.profile.allreduce_latency_s
        group = self.dp * self.cp
        bw = self._dp_bw()
        t = ring_reduce_scatter_s(dense * per_param, group, bw, 2 * lat)
        if experts:
            # Parallel folding: an expert's replicas are the tp*cp*dp/ep ranks holding it.
            eg = self.tp * self.cp * self.dp // self.ep
            t += ring_reduce_scatter_s(experts * stage / self.ep * per_param, eg, bw, 2 * lat)
        return t

    def _max_tokens(self, log_prob: bool) -> int:
        bt = self.batching
        if log_prob and bt.log_prob_max_tokens is not None:
            return bt.log_prob_max_tokens
        return bt.max_tokens if bt.max_tokens is not None else self.micro_batch_tokens

    def _kernel_step(self, lengths: list[int], prompts: int | None,
                     optimizer: bool) -> TrainStepCost:
        b, bt = self.backend, self.batching
        assert b is not None
        steps = mini_batches(prompts, bt.ppo_mini_batch_size) if optimizer else 1
        if bt.pad_to is not None:
            # ROLL without packing, dynamic batching or remove-padding trains the batch as
            # generated, every sample padded to sequence_length: pads cost like tokens.
            lengths = [max(n, bt.pad_to) for n in lengths]
        chunks = split_even(lengths, steps)
        compute = comm = overhead = bubble = opt = host_wait = 0.0
        mbs = 0
        for _epoch in range(bt.ppo_epochs if optimizer else 1):
            for chunk in chunks:
                p = self._ranks_pass(chunk, True, bt.micro_batch_size, self._max_tokens(False),
                                     bt.recompute)
                compute += p.compute_s
                comm += p.comm_s
                overhead += p.overhead_s
                host_wait += p.host_wait_s
                bubble += p.bubble_s
                mbs += p.micro_batches
                if optimizer:
                    if not b.gather_per_micro_batch:
                        dp = self._megatron_dp_s()
                        comm += dp - min(b.dp_overlap_fraction * dp, p.last_bwd_s)
                    opt += self._optimizer_s()
        n_steps = len(chunks) * bt.ppo_epochs if optimizer else 0
        offload = self.pass_offload_s(train=True) if optimizer else 0.0
        return TrainStepCost(compute, bubble, comm, opt, overhead, offload,
                             micro_batches=mbs, optimizer_steps=n_steps,
                             host_wait_s=host_wait)

    def _pad_multiple(self) -> int:
        """What a fixed micro-batch's longest sample is rounded up to (1: no rounding):
        `pad_to_multiple_of` with the TP/CP alignment (ROLL's Megatron use_remove_padding,
        megatron_strategy.py _get_unpad_seqlen: lcm(2 cp tp if cp > 1 else tp, 256 or
        2048))."""
        m = self.batching.pad_to_multiple_of
        if m is None:
            return 1
        align = self.tp * 2 * self.cp if self.cp > 1 else self.tp
        return math.lcm(m, align)

    def _kernel_forward(self, lengths: list[int], reference: bool = False) -> float:
        # Log-prob micro-batches: fixed when log_prob_micro_batch_size is set, dynamic when
        # log_prob_max_tokens is, else as the training pass.
        bt = self.batching
        if bt.log_prob_micro_batch_size is not None:
            fixed: int | None = bt.log_prob_micro_batch_size
        elif bt.log_prob_max_tokens is not None:
            fixed = None
        else:
            fixed = bt.micro_batch_size
        pad_to = bt.ref_pad_to if reference and bt.ref_pad_to is not None else (
            bt.log_prob_pad_to if bt.log_prob_pad_to is not None else bt.pad_to)
        if pad_to is not None:
            # Every sample padded to a fixed length before the forward (ROLL's inference
            # workers without packing: pad_to_seq_len), so pad tokens cost like real ones.
            lengths = [max(n, pad_to) for n in lengths]
        p = self._ranks_pass(lengths, False, fixed, self._max_tokens(True), "none")
        return p.total_s + self.pass_offload_s(train=False)
