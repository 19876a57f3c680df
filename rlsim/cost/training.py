"""Cost of one trainer (DP x TP x PP x CP over a GPU pool): step, forward pass, state moves.

Owns `TrainStepCost` and `TrainCost`. The step time is FLOPs over an achieved MFU, plus the
pipeline bubble, the data-parallel gradient traffic that compute does not hide, a
memory-bound Adam update over the optimizer shard and a fixed per-step overhead; a
forward-only pass is its FLOPs over the forward MFU plus a fixed overhead. Formulas and
constants: docs/cost-model.md. Called once per train phase, not per event, so clarity beats speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rlsim.config.hardware import GpuSpec, ModelSpec
from rlsim.cost.network import nvlink_one_way_bytes_per_s, ring_reduce_scatter_s
from rlsim.cost.profile import Profile

# Full activation recomputation re-runs the forward pass (2 of the 6 FLOPs per parameter).
_RECOMPUTE_FACTOR = 4.0 / 3.0


@dataclass(frozen=True, slots=True)
class TrainStepCost:
    """Seconds of one optimizer step, by kind of work."""

    compute_s: float
    bubble_s: float
    comm_s: float
    optimizer_s: float
    overhead_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.compute_s + self.bubble_s + self.comm_s + self.optimizer_s + self.overhead_s

    def as_dict(self) -> dict[str, float]:
        return {
            "compute_s": self.compute_s,
            "bubble_s": self.bubble_s,
            "comm_s": self.comm_s,
            "optimizer_s": self.optimizer_s,
            "overhead_s": self.overhead_s,
            "total_s": self.total_s,
        }


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
    ) -> None:
        for name, value in (("gpus", gpus), ("tp", tp), ("pp", pp), ("cp", cp),
                            ("micro_batch_tokens", micro_batch_tokens),
                            ("seq_tokens", seq_tokens)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if gpus % (tp * pp * cp):
            raise ValueError(
                f"gpus={gpus} is not divisible by tp*pp*cp = {tp}*{pp}*{cp} = {tp * pp * cp}"
            )
        if tp > gpu.gpus_per_node:
            raise ValueError(f"tp={tp} exceeds {gpu.name}'s {gpu.gpus_per_node} GPUs per node")
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
        self._flops_per_s = profile.train_mfu * gpu.bf16_tflops * 1e12 * gpus
        self._fwd_flops_per_s = profile.forward_pass_mfu * gpu.bf16_tflops * 1e12 * gpus

    # ----- FLOPs -----

    def _attention_fwd_flops_per_token(self, seq_tokens: float) -> float:
        # Causal attention: a token attends to seq/2 earlier tokens on average; QK^T and PV
        # are 2 FLOPs per multiply-add each.
        return 4.0 * self.model.layers * self.model.q_dim * seq_tokens / 2.0

    def _fwd_flops(self, tokens: int, seq_tokens: float) -> float:
        return tokens * (
            2.0 * self.model.matmul_params + self._attention_fwd_flops_per_token(seq_tokens)
        )

    # ----- public costs -----

    def train_step(self, tokens: int, seq_tokens: float | None = None) -> TrainStepCost:
        """One optimizer step over `tokens` tokens (sequences of `seq_tokens` on average);
        `train_step_overhead_s` is paid once per step, like the Adam update."""
        if tokens < 0:
            raise ValueError(f"tokens must be >= 0, got {tokens}")
        seq = self.seq_tokens if seq_tokens is None else seq_tokens
        flops = 3.0 * self._fwd_flops(tokens, seq)  # forward + backward (2x forward)
        if self.recompute_activations:
            flops *= _RECOMPUTE_FACTOR
        compute_s = flops / self._flops_per_s

        # Micro-batches each pipeline processes; the bubble adds (p-1) micro-batch slots,
        # i.e. the (p-1)/(m+p-1) share of the pipelined time.
        m = max(1, math.ceil(tokens / (self.dp * self.micro_batch_tokens)))
        bubble_s = compute_s * (self.pp - 1) / m

        comm_total_s = self.dp_comm_s()
        hidden_s = min(self.profile.train_comm_overlap_fraction * comm_total_s, compute_s)
        comm_s = comm_total_s - hidden_s

        optimizer_s = (
            self.model.params / self.gpus * self.profile.train_optimizer_bytes_per_param
        ) / (self.gpu.hbm_bandwidth * self.profile.hbm_efficiency)
        return TrainStepCost(compute_s, bubble_s, comm_s, optimizer_s,
                             self.profile.train_step_overhead_s)

    def with_gpus(self, gpus: int) -> TrainCost:
        """The same layout (TP, PP, CP) on `gpus` GPUs, i.e. another data-parallel degree;
        raises ValueError when `gpus` does not hold whole model replicas."""
        return TrainCost(self.model, self.gpu, gpus, self.tp, self.pp, self.cp, self.profile,
                         self.recompute_activations, self.micro_batch_tokens, self.seq_tokens,
                         self.dtype_bytes)

    def grad_s(self, tokens: int, seq_tokens: float | None = None) -> float:
        """Forward and backward over `tokens` tokens with the gradients kept (accumulated):
        a train step without its optimizer update and gradient synchronization."""
        step = self.train_step(tokens, seq_tokens)
        return step.compute_s + step.bubble_s

    def forward_s(self, tokens: int, seq_tokens: float | None = None) -> float:
        """Forward-only pass (reference / old log-probs) over `tokens` tokens: FLOPs at
        `forward_mfu` (None: `train_mfu`) plus `forward_overhead_s`; 0 for no tokens."""
        if tokens < 0:
            raise ValueError(f"tokens must be >= 0, got {tokens}")
        if tokens == 0:
            return 0.0
        seq = self.seq_tokens if seq_tokens is None else seq_tokens
        return self._fwd_flops(tokens, seq) / self._fwd_flops_per_s + (
            self.profile.forward_overhead_s
        )

    def dp_comm_s(self) -> float:
        """Per-step gradient reduce-scatter + parameter all-gather over the DP x CP group."""
        group = self.dp * self.cp
        if group <= 1:
            return 0.0
        shard_params = self.model.params / (self.tp * self.pp)
        size_bytes = shard_params * self.profile.train_dp_comm_bytes_per_param
        # Ranks of one DP group are tp*cp apart; the group leaves the node when its span does.
        if self.tp * self.cp * self.dp > self.gpu.gpus_per_node:
            bw = self.gpu.network_bandwidth * self.profile.network_efficiency
        else:
            bw = nvlink_one_way_bytes_per_s(self.gpu.nvlink_bandwidth) * (
                self.profile.allreduce_bus_efficiency
            )
        return ring_reduce_scatter_s(size_bytes, group, bw, self.profile.allreduce_latency_s)

    def weight_bytes(self) -> float:
        """All parameters in the compute dtype (what a full weight sync moves)."""
        return self.model.weight_bytes(self.dtype_bytes)

    def state_bytes_per_gpu(self) -> float:
        """Params + grads + Adam state (mixed precision), sharded over all GPUs (ZeRO-3)."""
        return self.model.params * self.profile.train_state_bytes_per_param / self.gpus

    def offload_s(self) -> float:
        """Move this GPU's trainer state to host memory over PCIe."""
        return self.state_bytes_per_gpu() / (
            self.gpu.pcie_bandwidth * self.profile.pcie_efficiency
        )

    def reload_s(self) -> float:
        """Move this GPU's trainer state back from host memory over PCIe."""
        return self.offload_s()
