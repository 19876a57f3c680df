"""Cost of moving the policy's weights: the trainer -> rollout sync and the colocated switch.

Owns the mechanism of a weight sync, per scheme (docs/cost-model.md, "Weight movement and
switches"), and the terms of a colocated sleep/wake switch. SimPy-free and torch-free: the
policies' phases (`rlsim/policies/phases.py`) call it once per sync or switch and send only
the bandwidth-bound bytes through the `Link` entity, so link faults and fair sharing still
apply to them; every other term is a fixed time.

A sync has four parts, whatever the scheme:

- gather: the training layout holds each tensor in `tp * pp` shards (Megatron TP + PP; the
  distributed optimizer keeps whole bf16 parameters per DP rank), so a sending rank first
  all-gathers the full tensor: `(s - 1) / s * W` bytes at NVLink (or network) speed, plus
  one collective launch per tensor, plus a fixed conversion cost per tensor;
- fixed: per tensor (`broadcast`: one collective / IPC handle and one RPC per tensor) or
  per bucket (`bucketed`, `delta`, `host_store`: tensors packed into buckets);
- transfer: the bytes each engine rank receives, through the link: the full tensors for a
  broadcast (vLLM's weight loader slices its TP shard on arrival), only its shard
  (`W / rollout_tp`) when the sender reshards (`host_store`);
- load: the engine's `load_weights`, a fixed cost per tensor.

`host_store` pipelines three stages per bucket (trainer GPU -> host over PCIe, host -> the
engine's host over the network, the engine's pull from host memory into its GPU):
`n * max(stage) + fill`, with `fill = sum(stage) - max(stage)`, the classic pipeline closed
form. Over RDMA the network stage carries each engine rank's shard at the network rate; over
TCP it carries the whole bucket at one stream's rate (Mooncake's TCP transport); the pull
runs at a measured host-staged rate, far below PCIe's line rate.

The fixed costs differ by framework (`FRAMEWORK_CONSTANTS`): veRL / slime drive a bucket with
one CUDA IPC handle or NCCL collective; ROLL's Megatron `model_update` makes one Ray call to
every engine per bucket and waits for all of them before the next. NeMo-RL (`nemo_rl`)
exports every full tensor on every training rank through Megatron-Bridge (PP broadcast, TP
and EP all-gathers: `full_export_gather_bytes_s`), overlaps that export with the engine's
handle and load by bucket (two buffers), and, colocated, hands each bucket to the engine on
the rank's own GPU by CUDA IPC, so no bytes cross a link.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from rlsim.config.hardware import ModelSpec

if TYPE_CHECKING:
    from rlsim.cost.inference import InferenceCost
    from rlsim.cost.training import TrainCost

Scheme = Literal["link", "broadcast", "bucketed", "delta", "host_store"]
SCHEMES: tuple[str, ...] = ("link", "broadcast", "bucketed", "delta", "host_store")
STORE_TRANSPORTS: tuple[str, ...] = ("rdma", "tcp")


@dataclass(frozen=True, slots=True)
class SyncConstants:
    """Fixed costs of the framework layer around a weight sync (one set, the vLLM backend).

    Sources (docs/cost-model.md, "Weight movement and switches"): all three are
    *calibrated* on one measurement, Qwen3-30B-A3B colocated on 8 H200 (vllm-project/vime
    issue #175 and PR #176); no other sync record was used to pick them.
    """

    per_tensor_s: float = 5.0e-4
    """One tensor sent on its own: a CUDA IPC handle built and opened (or one collective and
    one RPC) per tensor. vime #175: 10.9-11.8 s for ~19,550 tensors, less their load."""
    per_bucket_s: float = 1.2e-2
    """One bucket: flatten, one handle / collective, one RPC and its barrier. slime's
    flattened-bucket loop: ~3.0 s for 115 buckets (vime #175), less the 14 ms load."""
    load_per_tensor_s: float = 8.2e-5
    """The engine's `load_weights` per tensor (name mapping, weight loader, copy). vime #176:
    14 ms per bucket of ~170 tensors."""
    gather_per_tensor_s: float = 8.7e-4
    """The trainer's work to produce one full, Hugging Face-named tensor from the Megatron
    layout (the all-gather calls, concatenation, QKV / gate-up splitting, renaming), beyond
    the bytes and launches priced separately. slime and vime (vime #175/#176): the whole
    update takes 20-21.6 s while the send/load loop takes 3.0-5.3 s; the ~17 s outside the
    loop over ~19,550 tensors is 0.87 ms per tensor (taken as all per-tensor: one MoE
    model cannot separate a per-tensor from a per-sync cost)."""
    store_per_bucket_s: float = 1.2e-2
    """host_store: the engine's handle and RPC per bucket pulled from the store; the same
    vime #175 figure as `per_bucket_s` (the store, not the framework's sender loop, drives
    the transfer, so a framework's own `per_bucket_s` does not apply)."""
    store_pull_bytes_per_s: float = 3.5e9
    """host_store: one engine rank's pull of its shard from host memory into its GPU
    (Mooncake transfer engine into a host buffer, then the copy up and `load_weights`).
    Calibrated on RollArt Table 3, Qwen3-8B over RDMA (5.466 s, rollout TP 1)."""
    store_tcp_bytes_per_s: float = 2.74e9
    """host_store over TCP: one stream's rate, each bucket whole. Calibrated on RollArt
    Table 3, Qwen3-8B over TCP (6.911 s): ~1/9 of the 200 Gb/s line rate."""
    full_export: bool = False
    """Every training rank materialises every full Hugging Face tensor before sending
    (Megatron-Bridge `export_hf_weights`: a broadcast across PP, an all-gather across TP and,
    for routed experts, across EP; "All ranks receive the full tensors"), and the sender's
    export overlaps the receiver's load (NeMo-RL's ping-pong IPC buffers). False: only the
    `tp * pp` shards of each tensor are gathered (veRL / slime / ROLL as modelled)."""
    colocated_ipc: bool = False
    """Colocated, each training rank hands its buffer to the engine worker on its *own* GPU
    by a CUDA IPC handle (NeMo-RL `stream_weights_via_ipc_zmq`): no bytes cross a link."""
    optimizer_copy_bytes_per_s: float | None = None
    """The rate of the framework's own copies of the optimizer state to host memory and
    back around a colocated switch, where they run below the host link (part of
    `TrainCost.offload_s`); None: the link at the profile's `pcie_efficiency`."""
    buffer_copy_bytes_per_s: float | None = None
    """The same for the parameters and gradients, which Megatron keeps in contiguous
    buffers and moves one buffer at a time."""


DEFAULT_CONSTANTS = SyncConstants()
NEMO_RL_GATHER_PER_TENSOR_S = 3.5e-5
"""Megatron-Bridge's per-tensor export work beyond the bytes and launches priced apart.
Calibrated on NeMo-RL's DeepSeek-V3 refit benchmark (docs/guides/checkpoint-engine-refit.md
at NVIDIA-NeMo/RL@7ea279ab: trainer TP1/PP16/EP16 on 32 H100 nodes, every rank running the
same Bridge export as the colocated refit; matched synchronous verifier, NIXL, 4 GiB
buckets: 10.92 s for 45,395 tensors). This model's export bytes, launches, handles and
vLLM load take 9.33 s of it (the NIXL transfer overlapped); the 1.59 s left over 45,395
tensors is 0.035 ms each, an upper bound. slime's conversion (`gather_per_tensor_s`,
0.87 ms) would add 39 s there."""


NEMO_RL_OPTIMIZER_COPY_BYTES_PER_S = 1.8e9
"""NeMo-RL's colocated step moves the trainer's state to host memory and back once a step
(megatron_policy_worker.py: `move_optimizer`, a per-tensor `v.to("cpu")` of every optimizer
state; `move_model`, the DDP parameter and gradient buffers). The optimizer's per-tensor
copies into pageable memory: calibrated on NVIDIA-NeMo/RL issue 3976 (Nsight, one H100):
"510 D2H copies ~4.94 GB transferred ~2.75s of D2H GPU-copy time ~1.8 GB/s effective D2H
throughput ... Device -> Pageable transfers". Taken for both directions; interval 1.8-16
GB/s (docs/validation.md, "NeMo-RL's colocated trainer-state copies")."""
NEMO_RL_BUFFER_COPY_BYTES_PER_S = 16.1e9
"""The parameter and gradient buffers, one large pageable copy each: the same issue's "simple
1 GiB D2H benchmark measured ~16.1 GB/s with pageable memory" on that host (pinned: 55)."""

FRAMEWORK_CONSTANTS: dict[str, SyncConstants] = {
    "verl": DEFAULT_CONSTANTS,
    # ROLL (mcore_adapter + its Megatron strategy's model_update): per bucket one Ray
    # call to every engine worker (broadcast_bucket -> vLLM collective_rpc), the NCCL
    # broadcast, and ray.get on all of them before the next bucket. Calibrated on
    # RollPacker Fig 11c "Sync", Qwen2.5-7B on 16 H800 (5.0 s, 57 buckets of 256 MiB).
    "roll": replace(DEFAULT_CONSTANTS, per_bucket_s=8.1e-2),
    # NeMo-RL (Megatron policy + vLLM, read at NVIDIA-NeMo/RL@7ea279ab): colocated refit by
    # CUDA IPC / ZMQ from every training rank to the engine worker on its own GPU
    # (nemo_rl/algorithms/grpo.py:2354-2385, nemo_rl/models/policy/utils.py
    # stream_weights_via_ipc_zmq_impl), each rank exporting the whole model through
    # Megatron-Bridge (megatron_policy_worker.py _iter_params_with_optional_kv_scales).
    # Bridge's own per-tensor work, calibrated on NeMo-RL's DeepSeek-V3 refit benchmark
    # (docs/guides/checkpoint-engine-refit.md, docs/cost-model.md "Weight movement").
    # Its colocated switch moves the trainer state into pageable host memory
    # (megatron_policy_worker.py offload_before_refit / offload_after_refit,
    # prepare_for_lp_inference, prepare_for_training).
    "nemo_rl": replace(DEFAULT_CONSTANTS, gather_per_tensor_s=NEMO_RL_GATHER_PER_TENSOR_S,
                       full_export=True, colocated_ipc=True,
                       optimizer_copy_bytes_per_s=NEMO_RL_OPTIMIZER_COPY_BYTES_PER_S,
                       buffer_copy_bytes_per_s=NEMO_RL_BUFFER_COPY_BYTES_PER_S),
}
FRAMEWORKS: tuple[str, ...] = tuple(FRAMEWORK_CONSTANTS)
INDEX_BYTES = 4  # a sparse (delta) update sends an int32 index with each changed value


def tensor_count(model: ModelSpec) -> int:
    """Named weight tensors of a Hugging Face checkpoint of `model` (what a per-tensor sync
    sends one by one): per layer the attention projections (q, k, v, o; MLA: q_a, q_a_norm,
    q_b, kv_a, kv_a_norm, kv_b, o) and the two norms, then the dense MLP (gate, up, down) or
    the router plus every routed and shared expert's MLP; then the embedding, the final
    norm and an untied LM head. Biases and per-head q/k norms are not in `ModelSpec`, so a
    Qwen2 / Qwen3 checkpoint has a few percent more."""
    mlp = 3 if model.gated_mlp else 2
    # q, k, v, o; MLA: q_a, q_a_norm, q_b (or one q), kv_a, kv_a_norm, kv_b, o
    attn = 4 if model.mla is None else 7 if model.mla.q_lora_rank is not None else 5
    per_layer = attn + 2
    dense = model.dense_layers * (per_layer + mlp)
    moe = 0
    if model.moe is not None:
        moe = model.moe_layers * (per_layer + 1 + (model.moe.experts
                                                   + model.moe.shared_experts) * mlp)
    return dense + moe + (2 if model.tied_embeddings else 3)


def bucket_count(size_bytes: float, bucket_bytes: float) -> int:
    """Buckets of at most `bucket_bytes` that `size_bytes` fills (at least one)."""
    if bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes must be > 0, got {bucket_bytes}")
    if size_bytes < 0:
        raise ValueError(f"size_bytes must be >= 0, got {size_bytes}")
    return max(1, math.ceil(size_bytes / bucket_bytes))


def bytes_per_engine_rank(weight_bytes: float, rollout_tp: int, resharded: bool) -> float:
    """Bytes one engine rank receives: the full tensors (a broadcast: vLLM's weight loader
    keeps its TP slice of each), or only its `1 / rollout_tp` shard when the sender
    reshards from the training layout to the rollout TP."""
    if rollout_tp < 1:
        raise ValueError(f"rollout_tp must be >= 1, got {rollout_tp}")
    return weight_bytes / rollout_tp if resharded else weight_bytes


def gather_bytes_per_rank(weight_bytes: float, shards: float) -> float:
    """Bytes a sending rank receives to rebuild every full tensor from `shards` shards
    (all-gather: (s - 1) / s of the whole)."""
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    return weight_bytes * (shards - 1) / shards


def pipeline_s(stage_s: Sequence[float], items: int) -> float:
    """`items` buckets through a pipeline whose stage k takes `stage_s[k]` per bucket:
    `items * max(stage) + fill`, `fill = sum(stage) - max(stage)` (the first bucket
    crosses every stage; after it the slowest stage sets the pace)."""
    if items < 0:
        raise ValueError(f"items must be >= 0, got {items}")
    if not stage_s or items == 0:
        return 0.0
    if min(stage_s) < 0:
        raise ValueError(f"stage times must be >= 0, got {list(stage_s)}")
    slowest = max(stage_s)
    return items * slowest + (sum(stage_s) - slowest)


def expert_fraction(model: ModelSpec) -> float:
    """Share of the model's parameters in routed experts (0 for a dense model)."""
    if model.moe is None:
        return 0.0
    return model.moe_layers * model.moe.experts * model.expert_params / model.params


def hierarchical_all_gather_s(size_bytes: float, ranks: int, node_gpus: int,
                              nvlink_bytes_per_s: float, network_bytes_per_s: float) -> float:
    """All-gather that leaves every one of `ranks` GPUs (consecutive, `node_gpus` to a
    node) with all `size_bytes`: what the other N - 1 nodes hold enters each node once,
    spread over its g GPUs' NICs, and is shared inside the node over NVLink:

        (g-1)/g S / nvlink + (N-1)/N (S/g) / network,   g = min(ranks, node_gpus)

    With one node it is the ring all-gather's (n-1)/n S / nvlink; 0 for one rank."""
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    if nvlink_bytes_per_s <= 0 or network_bytes_per_s <= 0:
        raise ValueError("all-gather bandwidths must be > 0")
    g = min(ranks, node_gpus)
    nodes = math.ceil(ranks / g)
    return ((g - 1) / g * size_bytes / nvlink_bytes_per_s
            + (nodes - 1) / nodes * (size_bytes / g) / network_bytes_per_s)


def full_export_gather_bytes_s(model: ModelSpec, weight_bytes: float, tp: int, pp: int,
                               ep: int, node_gpus: int, multi_node: bool,
                               nvlink_bytes_per_s: float,
                               network_bytes_per_s: float) -> float:
    """Seconds of one training rank's collectives to hold every full tensor (Megatron-Bridge
    `export_hf_weights`, expert TP 1 as NeMo-RL sets it): the broadcast from the owning PP
    stage of the other stages' local shards, `(pp-1)/pp * (W_dense/tp + W_expert/ep)`, over
    the network when the trainer spans nodes (PP peers sit a node or more apart); the TP
    all-gather of the dense tensors, `(tp-1)/tp * W_dense`, over NVLink; the EP all-gather
    of the routed experts, `hierarchical_all_gather_s(W_expert, ep, ...)`."""
    if min(tp, pp, ep) < 1:
        raise ValueError(f"tp, pp and ep must be >= 1, got {tp}, {pp}, {ep}")
    w_e = weight_bytes * expert_fraction(model)
    w_d = weight_bytes - w_e
    pp_bw = network_bytes_per_s if multi_node else nvlink_bytes_per_s
    seconds = (pp - 1) / pp * (w_d / tp + w_e / ep) / pp_bw
    seconds += (tp - 1) / tp * w_d / nvlink_bytes_per_s
    return seconds + hierarchical_all_gather_s(w_e, ep, node_gpus, nvlink_bytes_per_s,
                                               network_bytes_per_s)


@dataclass(frozen=True, slots=True)
class SyncCost:
    """One weight sync, by part. `link_bytes` go through the link entity (per engine rank,
    all engine ranks in parallel); the other parts are fixed seconds."""

    scheme: str
    tensors: int
    buckets: int
    link_bytes: float
    gather_s: float
    fixed_s: float
    load_s: float
    pipeline_s: float = 0.0
    """host_store: the pipelined PCIe / network / PCIe stages (no link transfer). A
    full-export sync (`SyncConstants.full_export`): the export (gather) and the engine's
    handle + load, pipelined by bucket; the parts above are then its stages' totals."""
    overlapped: bool = False
    """True: `pipeline_s` already holds gather, fixed and load (they overlap)."""

    @property
    def fixed_total_s(self) -> float:
        """Everything but the link transfer."""
        if self.overlapped:
            return self.pipeline_s
        return self.gather_s + self.fixed_s + self.load_s + self.pipeline_s

    def total_s(self, link_bandwidth_bytes_per_s: float, link_latency_s: float = 0.0) -> float:
        """The whole sync with the link at this bandwidth (no other transfer sharing it)."""
        if self.link_bytes <= 0:
            return self.fixed_total_s
        return self.fixed_total_s + link_latency_s + self.link_bytes / link_bandwidth_bytes_per_s

    def attrs(self) -> dict[str, float | int | str]:
        """The parts as span attributes (reports show the split)."""
        return {"scheme": self.scheme, "tensors": self.tensors, "buckets": self.buckets,
                "link_bytes": self.link_bytes, "gather_s": self.gather_s,
                "fixed_s": self.fixed_s, "load_s": self.load_s, "pipeline_s": self.pipeline_s}


def sync_cost(model: ModelSpec, weight_bytes: float, scheme: str, rollout_tp: int,
              train_shards: float, gather_bandwidth_bytes_per_s: float,
              collective_latency_s: float, bucket_bytes: float = 512 * 2**20,
              delta_fraction: float | None = None, pcie_bytes_per_s: float | None = None,
              network_bytes_per_s: float | None = None,
              constants: SyncConstants = DEFAULT_CONSTANTS,
              store_transport: str = "rdma", colocated: bool = False,
              export_bytes_s: float | None = None,
              train_pcie_bytes_per_s: float | None = None) -> SyncCost:
    """The parts of one sync of `weight_bytes` (the model's weights in the sync dtype).

    `train_shards`: shards of each tensor in the training layout (tp * pp);
    `gather_bandwidth_bytes_per_s`: one rank's all-gather bandwidth in that group;
    `collective_latency_s`: fixed cost of one collective (one per tensor gathered);
    `pcie_bytes_per_s`, `network_bytes_per_s`: host_store's stage rates (effective; the
    engines' PCIe); `train_pcie_bytes_per_s`: the trainer GPUs' PCIe rate for host_store's
    first stage (None: `pcie_bytes_per_s`, the same GPU type);
    `store_transport`: host_store's protocol, "rdma" or "tcp";
    `colocated`: trainer and engines share the GPUs (with `constants.colocated_ipc` no
    bytes cross a link); `export_bytes_s`: with `constants.full_export`, the seconds of the
    collectives that give every rank every full tensor (`full_export_gather_bytes_s`),
    replacing the `tp * pp` shard gather."""
    if scheme not in SCHEMES:
        raise ValueError(f"weight_sync.scheme must be one of {', '.join(SCHEMES)}, "
                         f"got {scheme!r}")
    if store_transport not in STORE_TRANSPORTS:
        raise ValueError("weight_sync.store_transport must be one of "
                         f"{', '.join(STORE_TRANSPORTS)}, got {store_transport!r}")
    if weight_bytes < 0:
        raise ValueError(f"weight_bytes must be >= 0, got {weight_bytes}")
    if gather_bandwidth_bytes_per_s <= 0:
        raise ValueError("gather_bandwidth_bytes_per_s must be > 0, got "
                         f"{gather_bandwidth_bytes_per_s}")
    n_t = tensor_count(model)
    c = constants
    if scheme == "link":  # the bytes at the link's rate, nothing else (a measured link)
        return SyncCost(scheme, n_t, 0, weight_bytes, 0.0, 0.0, 0.0)
    gather_s = n_t * c.gather_per_tensor_s
    if c.full_export:
        if export_bytes_s is None or export_bytes_s < 0:
            raise ValueError("a full-export framework needs export_bytes_s >= 0, got "
                             f"{export_bytes_s}")
        # one collective launch per tensor, as for the shard gather
        gather_s += export_bytes_s + n_t * collective_latency_s
    elif train_shards > 1:
        gather_s += (gather_bytes_per_rank(weight_bytes, train_shards)
                     / gather_bandwidth_bytes_per_s + n_t * collective_latency_s)
    load_s = n_t * c.load_per_tensor_s
    same_gpu = colocated and c.colocated_ipc  # a CUDA IPC handle to the engine on this GPU
    if scheme == "broadcast":
        sent = 0.0 if same_gpu else bytes_per_engine_rank(weight_bytes, rollout_tp, False)
        return SyncCost(scheme, n_t, 0, sent, gather_s, n_t * c.per_tensor_s, load_s)
    if scheme in ("bucketed", "delta"):
        sent = weight_bytes
        if scheme == "delta":
            if delta_fraction is None or not 0.0 < delta_fraction <= 1.0:
                raise ValueError("weight_sync.delta_fraction must be in (0, 1] for scheme "
                                 f"'delta', got {delta_fraction}")
            # only the changed values travel, each with its index
            sent = delta_fraction * (weight_bytes + INDEX_BYTES * model.params)
        n_b = bucket_count(sent, bucket_bytes)
        link = 0.0 if same_gpu else bytes_per_engine_rank(sent, rollout_tp, False)
        fixed_s = n_b * c.per_bucket_s
        if c.full_export:
            # Two buffers (ping-pong): the rank exports and packs bucket k + 1 while the
            # engine opens bucket k's handle and loads it; a two-stage pipeline by bucket.
            both = pipeline_s((gather_s / n_b, (fixed_s + load_s) / n_b), n_b)
            return SyncCost(scheme, n_t, n_b, link, gather_s, fixed_s, load_s, both,
                            overlapped=True)
        return SyncCost(scheme, n_t, n_b, link, gather_s, fixed_s, load_s)
    # host_store: trainer -> host (PCIe), host -> engine host (network), the engine's pull
    # into its GPU, pipelined by bucket; each engine rank pulls only its shard (the store
    # reshards). Over TCP the network stage moves each bucket whole through one stream:
    # RollArt's TCP syncs grow with the whole model (6.9 / 14.4 / 29.6 s for 15 / 28 /
    # 61 GB), not with the shard (15 / 14 / 15 GB at rollout TP 1 / 2 / 4).
    if pcie_bytes_per_s is None or network_bytes_per_s is None or \
            pcie_bytes_per_s <= 0 or network_bytes_per_s <= 0:
        raise ValueError("host_store needs pcie_bytes_per_s and network_bytes_per_s > 0")
    n_b = bucket_count(weight_bytes, bucket_bytes)
    per_bucket = weight_bytes / n_b
    shard = per_bucket / rollout_tp
    network_s = (per_bucket / c.store_tcp_bytes_per_s if store_transport == "tcp"
                 else shard / network_bytes_per_s)
    train_pcie = pcie_bytes_per_s if train_pcie_bytes_per_s is None else train_pcie_bytes_per_s
    if train_pcie <= 0:
        raise ValueError(f"train_pcie_bytes_per_s must be > 0, got {train_pcie}")
    stages = (per_bucket / train_shards / train_pcie, network_s,
              shard / min(pcie_bytes_per_s, c.store_pull_bytes_per_s))
    return SyncCost(scheme, n_t, n_b, 0.0, gather_s, n_b * c.store_per_bucket_s, load_s,
                    pipeline_s(stages, n_b))


@dataclass(frozen=True, slots=True)
class SwitchCost:
    """One colocated switch (veRL's engine sleep / wake around training), by term, seconds.

    to="train": the engines free their KV cache and (sleep level 1) copy their weights to
    host memory; the trainer's state comes back from host memory.
    to="rollout": the trainer's state goes to host memory; the engines (level 1) copy their
    weights back and re-map their KV cache (the fixed wake-up)."""

    to: str
    engine_weights_s: float
    trainer_state_s: float
    engine_wake_s: float

    @property
    def total_s(self) -> float:
        return self.engine_weights_s + self.trainer_state_s + self.engine_wake_s

    def attrs(self) -> dict[str, float]:
        return {"engine_weights_s": self.engine_weights_s,
                "trainer_state_s": self.trainer_state_s, "engine_wake_s": self.engine_wake_s}


def switch_cost(to: str, engine_weight_bytes_per_gpu: float, pcie_bytes_per_s: float,
                trainer_state_s: float, wake_s: float, sleep_level: int = 1) -> SwitchCost:
    """The terms of one switch. `engine_weight_bytes_per_gpu`: an engine GPU's weight shard
    (W / rollout_tp); `pcie_bytes_per_s`: effective host<->device rate; `trainer_state_s`:
    the trainer's offload (to rollout) or reload (to train); `wake_s`: the fixed part of an
    engine wake-up (KV cache re-mapped; with sleep mode CUDA graphs stay valid, so none is
    recaptured). `sleep_level` is vLLM's: 1 keeps the weights in host memory (copied out at
    sleep, back at wake), 2 discards them (the sync that follows brings them)."""
    if to not in ("train", "rollout"):
        raise ValueError(f"switch target must be 'train' or 'rollout', got {to!r}")
    if sleep_level not in (1, 2):
        raise ValueError(f"weight_sync.engine_sleep_level must be 1 or 2, got {sleep_level}")
    if pcie_bytes_per_s <= 0:
        raise ValueError(f"pcie_bytes_per_s must be > 0, got {pcie_bytes_per_s}")
    weights_s = engine_weight_bytes_per_gpu / pcie_bytes_per_s if sleep_level == 1 else 0.0
    if to == "train":
        return SwitchCost(to, weights_s, trainer_state_s, 0.0)
    return SwitchCost(to, weights_s, trainer_state_s, wake_s)


def framework_constants(framework: str) -> SyncConstants:
    """The fixed costs of one framework's sync loop (`FRAMEWORK_CONSTANTS`)."""
    if framework not in FRAMEWORK_CONSTANTS:
        raise ValueError(f"weight_sync.framework must be one of {', '.join(FRAMEWORKS)}, "
                         f"got {framework!r}")
    return FRAMEWORK_CONSTANTS[framework]


def _gather_layout(train: TrainCost, weight_bytes: float) -> tuple[float, int]:
    """(shards, span): the training layout's shards of the weights as one effective count
    for `gather_bytes_per_rank` ((s-1)/s of the weights gathered by one rank), and how many
    consecutive GPUs the gather spans. FSDP / FSDP2 shard every tensor over all the trainer's
    GPUs; Megatron shards dense weights over tp * pp and, with MoE parallel folding (expert
    TP 1), routed experts over pp * ep."""
    backend = train.backend
    if backend is not None and backend.shard_params_over_dp:
        return float(train.gpus), train.gpus
    dense_shards = train.tp * train.pp
    moe = train.model.moe
    if moe is None or train.ep <= 1 or weight_bytes <= 0:
        return float(dense_shards), dense_shards
    expert_share = (train.model.moe_layers * moe.experts * train.model.expert_params
                    / train.model.params)
    expert_shards = train.pp * train.ep
    gathered = weight_bytes * ((1 - expert_share) * (dense_shards - 1) / dense_shards
                               + expert_share * (expert_shards - 1) / expert_shards)
    return weight_bytes / max(weight_bytes - gathered, 1e-9), max(dense_shards, expert_shards)


def layout_sync_cost(train: TrainCost, engine: InferenceCost, weight_bytes: float,
                     scheme: str, bucket_bytes: float = 512 * 2**20,
                     delta_fraction: float | None = None,
                     constants: SyncConstants | None = None, framework: str = "verl",
                     store_transport: str = "rdma", colocated: bool = False) -> SyncCost:
    """`sync_cost` for a trainer layout and an engine layout: the training shards are
    `tp * pp`, gathered over NVLink when that group fits in a node (else the network), one
    collective launch each (the profile's all-reduce latency); host_store's stages run at
    the engines' PCIe and the network rate, each times the profile's efficiency. The fixed
    costs are `framework`'s unless `constants` are given. A full-export framework
    (`nemo_rl`) gathers every full tensor on every rank (`full_export_gather_bytes_s`, PP
    over the network when the trainer spans nodes; an FSDP trainer all-gathers the whole
    stored model over all its GPUs)."""
    if constants is None:
        constants = framework_constants(framework)
    tprof, tgpu = train.profile, train.gpu
    shards, span = _gather_layout(train, weight_bytes)
    gather_bw = train.group_bw(span)
    export_s = None
    backend = train.backend
    if constants.full_export and backend is not None and backend.shard_params_over_dp:
        # NeMo-RL's DTensor worker streams `tensor.full_tensor()` of every parameter
        # (nemo_rl/models/policy/dtensor_policy_worker.py:1746 at v0.4.0): an all-gather
        # of the whole model on every rank, in the parameters' stored dtype (fp32 under
        # FSDP: param_bytes / 2 times the bf16 weight bytes), before the cast.
        export_s = hierarchical_all_gather_s(
            weight_bytes * backend.param_bytes / 2.0, train.gpus, tgpu.gpus_per_node,
            train.nvlink_bw(), train.network_bw())
    elif constants.full_export:
        export_s = full_export_gather_bytes_s(
            train.model, weight_bytes, train.tp, train.pp, train.ep, tgpu.gpus_per_node,
            train.gpus > tgpu.gpus_per_node, train.nvlink_bw(), train.network_bw())
    eprof, egpu = engine.profile, engine.gpu
    return sync_cost(
        # An engine rank holds 1/(tp*pp) of the weights (a pipeline stage's TP slice).
        engine.model, weight_bytes, scheme, engine.tp * engine.pp, shards, gather_bw,
        tprof.allreduce_latency_s, bucket_bytes, delta_fraction,
        egpu.pcie_bandwidth * eprof.pcie_efficiency,
        min(egpu.network_bandwidth, tgpu.network_bandwidth) * eprof.network_efficiency,
        constants, store_transport, colocated, export_s,
        tgpu.pcie_bandwidth * tprof.pcie_efficiency)
