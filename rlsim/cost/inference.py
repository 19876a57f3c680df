"""Cost of one rollout engine (a vLLM-like server on `tp` x `pp` GPUs, spanning nodes when
larger than one: TP all-reduces and EP all-to-alls then cross the network).

Owns `StepCost` and `InferenceCost`: the time of one engine iteration (decodes plus an
optional chunked prefill), split into linear layers, attention, other kernels, TP
all-reduces and the fixed per-iteration overhead; plus the engine's KV capacity and its
weight reload / cold start times. Formulas and constants: docs/cost-model.md.

Hot path: `step()` and `decode_affine()` run once per simulator event, so they use plain
Python floats, constants bound in `__init__` and per-batch caches; no numpy.
For a fixed decode batch the step time is exactly affine in the KV tokens read, which lets
the engine sum thousands of decode iterations in closed form.
`layer_step_s`, `decode_attention_s` and `prefill_attention_s` expose one layer's share,
which is what the calibration's layer and attention microbenchmarks measure; `step()` is
`layers x layer_step_s` plus the embedding, final norm, LM head and per-iteration overhead.

`EngineOptions` carries the engine's own switches from the scenario (vLLM's names): CUDA
graphs or eager execution (eager pays a CPU dispatch per kernel), FP8 weights (1-byte
weights at the GPU's FP8 peak) and an FP8 KV cache, and expert parallelism for MoE models
(routed experts split over the engine's GPUs, tokens dispatched and combined by
all-to-alls). MoE layers price the router, the routed experts' grouped GEMMs over the
experts a batch touches (`expected_distinct_experts`) and the shared experts; MLA models
cache a latent per token and price attention over the latent dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mypy_extensions import i64

from rlsim.config.hardware import GpuSpec, ModelSpec
from rlsim.cost.errors import KnobError
from rlsim.cost.kernels import ElementwiseModel, GemmModel, stream_factor
from rlsim.cost.network import nvlink_one_way_bytes_per_s, ring_allreduce_s, transfer_s
from rlsim.cost.profile import Profile

# A cache per engine bounds memory if a caller sweeps every token count.
_CACHE_LIMIT = 1 << 16


@dataclass(slots=True, unsafe_hash=True)
class StepCost:
    """Seconds spent in one engine iteration, by kind of work. Treat it as immutable (it
    hashes by value); not frozen because, compiled, a frozen dataclass's __init__ runs
    interpreted through object.__setattr__ (5% of the async agentic benchmark, one per
    prefill iteration)."""

    linear_s: float
    attention_s: float
    other_s: float
    comm_s: float
    overhead_s: float

    def __init__(self, linear_s: float, attention_s: float, other_s: float, comm_s: float,
                 overhead_s: float) -> None:
        self.linear_s = linear_s
        self.attention_s = attention_s
        self.other_s = other_s
        self.comm_s = comm_s
        self.overhead_s = overhead_s

    @property
    def total_s(self) -> float:
        return self.linear_s + self.attention_s + self.other_s + self.comm_s + self.overhead_s

    def as_dict(self) -> dict[str, float]:
        return {
            "linear_s": self.linear_s,
            "attention_s": self.attention_s,
            "other_s": self.other_s,
            "comm_s": self.comm_s,
            "overhead_s": self.overhead_s,
            "total_s": self.total_s,
        }


_ZERO = StepCost(0.0, 0.0, 0.0, 0.0, 0.0)

WeightDtype = Literal["bf16", "fp8"]
KvCacheDtype = Literal["auto", "fp8"]


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """The engine's own switches (a scenario's `rollout` section, in vLLM's words).

    `cuda_graphs`: decode iterations replay captured CUDA graphs (vLLM's default); False is
    vLLM's `enforce_eager: true`, where the CPU dispatches every kernel of every layer.
    `dtype`: "fp8" serves FP8 weights (vLLM `quantization: fp8`): 1 byte per weight of the
    layers' GEMMs, run at the GPU's FP8 peak. `kv_cache_dtype`: "fp8" stores the KV cache in
    1 byte per element (vLLM `kv_cache_dtype: fp8`); "auto" keeps the compute dtype.
    `ep`: expert-parallel degree of a MoE model inside one engine (vLLM
    `enable_expert_parallel`): the routed experts split `ep` ways over the engine's GPUs.
    `pp`: pipeline-parallel stages (vLLM `pipeline_parallel_size`): the layers split `pp`
    ways, each stage on `tp` GPUs, `pp` micro-batches of the running batch in flight.
    `vllm_v0`: vLLM's V0 engine loop run synchronously (before vLLM 0.6, or run eager, which
    turns its async output processing off), whose host work between steps grows with the
    batch: `v0_decode_overhead_per_seq_s` more per sequence of every iteration.
    """

    cuda_graphs: bool = True
    dtype: WeightDtype = "bf16"
    kv_cache_dtype: KvCacheDtype = "auto"
    ep: int = 1
    pp: int = 1
    vllm_v0: bool = False


DEFAULT_OPTIONS = EngineOptions()


def check_options(model: ModelSpec, gpu: GpuSpec, tp: int, options: EngineOptions) -> None:
    """Raise KnobError (one line, naming the knob) unless `options` can run."""
    if options.dtype not in ("bf16", "fp8"):
        raise KnobError("dtype", f"dtype must be bf16 or fp8, got {options.dtype!r}")
    if options.kv_cache_dtype not in ("auto", "fp8"):
        raise KnobError("kv_cache_dtype", "kv_cache_dtype must be auto or fp8, got "
                        f"{options.kv_cache_dtype!r}")
    if options.dtype == "fp8" and gpu.fp8_tflops is None:
        raise KnobError("dtype", f"dtype fp8 needs FP8 tensor cores and {gpu.name} has none "
                        "(no fp8_tflops); use dtype bf16, or a GPU with FP8 (Hopper or newer)")
    pp = options.pp
    if isinstance(pp, bool) or not isinstance(pp, int) or pp < 1:
        raise KnobError("pp", f"pp must be a positive integer, got {pp!r}")
    if pp > model.layers:
        raise KnobError("pp", f"pp={pp} exceeds {model.name}'s {model.layers} layers (each "
                        "pipeline stage holds at least one layer)")
    node = gpu.gpus_per_node
    if pp > 1 and tp * pp > node and (tp * pp) % node:
        raise KnobError("pp", f"pp={pp}: an engine of tp x pp = {tp * pp} GPUs spans nodes of "
                        f"{node} {gpu.name}s and must fill whole nodes; use a tp x pp that "
                        f"is a multiple of {node}")
    ep = options.ep
    if isinstance(ep, bool) or not isinstance(ep, int) or ep < 1:
        raise KnobError("ep", f"ep must be a positive integer, got {ep!r}")
    if ep == 1:
        return
    if model.moe is None:
        raise KnobError("ep", f"ep={ep} needs a mixture-of-experts model; {model.name} is "
                        "dense (use ep 1)")
    if tp % ep:
        raise KnobError("ep", f"ep={ep} must divide the engine's {tp} GPUs (tp={tp}): the "
                        "experts split over the engine's GPUs")
    if model.moe.experts % ep:
        raise KnobError("ep", f"ep={ep} must divide {model.name}'s {model.moe.experts} routed "
                        "experts")


def expected_distinct_experts(tokens: int, experts: int, top_k: int) -> float:
    """Expected number of distinct experts that `tokens` tokens touch when each picks `top_k`
    of `experts` uniformly: E (1 - (1 - k/E)^B). Each expert is missed by one token with
    probability 1 - k/E, by all B tokens independently with (1 - k/E)^B."""
    if tokens <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


def all_to_all_s(size_bytes: float, ranks: int, bandwidth_bytes_per_s: float,
                 latency_s: float) -> float:
    """All-to-all in which every rank holds `size_bytes` and keeps 1/n of it: each sends
    (n-1)/n of its buffer over its own link, all in parallel; 0 for one rank."""
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    return latency_s + (ranks - 1) / ranks * size_bytes / bandwidth_bytes_per_s


# One network hop of a small NCCL collective between nodes: NCCL's own tuning model prices
# the inter-node step of its tree all-reduce (LL protocol, the one small decode messages
# use) at 5.0 us (NVIDIA/nccl src/graph/tuning.cc, hwLat[NET][Tree][LL]; docs/cost-model.md
# section 2, "Engines that span nodes").
NET_HOP_LATENCY_S = 5.0e-6


def hierarchical_allreduce_s(size_bytes: float, ranks: int, node_gpus: int,
                             nvlink_bytes_per_s: float, network_bytes_per_s: float,
                             latency_s: float, hop_latency_s: float = NET_HOP_LATENCY_S,
                             ) -> float:
    """All-reduce of `size_bytes` per rank over `ranks` GPUs, `node_gpus` of them per node:
    reduce-scatter inside each node over NVLink, all-reduce of each GPU's 1/g shard across
    the N nodes over its own NIC (every GPU has one), all-gather inside the node:

        latency_s + 2 log2(N) hop_latency_s
        + 2 (g-1)/g S / nvlink + 2 (N-1)/N (S/g) / network,   g = min(ranks, node_gpus)

    With one node it is the ring all-reduce (`ring_allreduce_s`); 0 for one rank."""
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    g = min(ranks, node_gpus)
    nodes = ranks // g
    if nodes <= 1:
        return ring_allreduce_s(size_bytes, ranks, nvlink_bytes_per_s, latency_s)
    return (latency_s + 2.0 * math.log2(nodes) * hop_latency_s
            + 2.0 * (g - 1) / g * size_bytes / nvlink_bytes_per_s
            + 2.0 * (nodes - 1) / nodes * (size_bytes / g) / network_bytes_per_s)


def hierarchical_all_to_all_s(size_bytes: float, ranks: int, node_gpus: int,
                              nvlink_bytes_per_s: float, network_bytes_per_s: float,
                              latency_s: float, hop_latency_s: float = NET_HOP_LATENCY_S,
                              ) -> float:
    """All-to-all in which every rank holds `size_bytes` and keeps 1/n of it, the n ranks
    `node_gpus` to a node: (g-1)/n of the buffer goes to the node's other GPUs over NVLink
    and (n-g)/n to other nodes over the GPU's NIC, both at once (DeepEP's dispatch and
    combine), so the slower part sets the time:

        latency_s + [n > g] hop_latency_s + max((g-1)/n S / nvlink, (n-g)/n S / network)

    Inside one node it is `all_to_all_s`; 0 for one rank."""
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    g = min(ranks, node_gpus)
    if g == ranks:
        return all_to_all_s(size_bytes, ranks, nvlink_bytes_per_s, latency_s)
    return (latency_s + hop_latency_s
            + max((g - 1) / ranks * size_bytes / nvlink_bytes_per_s,
                  (ranks - g) / ranks * size_bytes / network_bytes_per_s))


def check_tp(model: ModelSpec, gpu: GpuSpec, tp: int) -> None:
    """Raise ValueError (one line, naming `tp`) unless `tp` is a valid TP degree: a power of
    two, inside one node or a whole number of nodes (an engine spanning nodes runs its TP
    all-reduces over the network), dividing the model's heads."""
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ValueError(f"tp must be a positive integer, got {tp!r}")
    if tp & (tp - 1):
        raise ValueError(f"tp must be a power of two, got {tp}")
    if tp > gpu.gpus_per_node and tp % gpu.gpus_per_node:
        raise ValueError(
            f"tp={tp} spans nodes of {gpu.gpus_per_node} {gpu.name}s but is not a whole "
            "number of nodes; a TP group larger than a node must fill whole nodes"
        )
    if model.heads % tp:
        raise ValueError(f"tp={tp} must divide {model.name}'s {model.heads} attention heads")
    if model.kv_heads >= tp and model.kv_heads % tp:
        raise ValueError(f"tp={tp} must divide {model.name}'s {model.kv_heads} KV heads")
    if model.kv_heads < tp and tp % model.kv_heads:
        raise ValueError(
            f"tp={tp} must be a multiple of {model.name}'s {model.kv_heads} KV heads "
            "(KV heads replicate when there are fewer than TP ranks)"
        )


def _check_counts(
    decode_seqs: i64, kv_tokens: i64, prefill_tokens: i64, prefill_context_tokens: i64
) -> None:
    if decode_seqs < 0 or kv_tokens < 0 or prefill_tokens < 0 or prefill_context_tokens < 0:
        raise ValueError(
            "step() arguments must be >= 0, got "
            f"decode_seqs={decode_seqs}, kv_tokens={kv_tokens}, "
            f"prefill_tokens={prefill_tokens}, prefill_context_tokens={prefill_context_tokens}"
        )


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def kv_heads_per_gpu(model: ModelSpec, tp: int) -> int:
    """KV heads each TP rank holds; they replicate when there are fewer than TP ranks."""
    return model.kv_heads // tp if model.kv_heads >= tp else 1


def linear_shapes(model: ModelSpec, tp: int) -> dict[str, tuple[int, int]]:
    """Per-GPU (N, K) of each layer's GEMMs after TP sharding, keyed by Vidur's op names."""
    q_heads = model.heads // tp
    kv_heads = kv_heads_per_gpu(model, tp)
    ffn = _ceil_div(model.ffn, tp)
    h = model.hidden
    return {
        "attn_pre_proj": ((q_heads + 2 * kv_heads) * model.dim_head, h),  # fused QKV
        "attn_post_proj": (h, q_heads * model.dim_head),  # row-parallel output projection
        "mlp_up_proj": ((2 if model.gated_mlp else 1) * ffn, h),  # fused gate + up
        "mlp_down_proj": (h, ffn),  # row-parallel down projection
    }


def act_bytes_per_token(model: ModelSpec, tp: int, dtype_bytes: int = 2) -> int:
    """SiLU(gate)*up reads two ffn-wide rows and writes one; a plain activation reads one."""
    return (3 if model.gated_mlp else 2) * _ceil_div(model.ffn, tp) * dtype_bytes


class InferenceCost:
    """Iteration costs, KV capacity and start-up times of one rollout engine."""

    def __init__(
        self, model: ModelSpec, gpu: GpuSpec, tp: int, profile: Profile,
        dtype_bytes: int | None = None, options: EngineOptions | None = None,
    ) -> None:
        check_tp(model, gpu, tp)
        opts = DEFAULT_OPTIONS if options is None else options
        check_options(model, gpu, tp, opts)
        if dtype_bytes is None:
            dtype_bytes = profile.dtype_bytes
        if dtype_bytes <= 0:
            raise ValueError(f"dtype_bytes must be > 0, got {dtype_bytes}")
        self.model = model
        self.gpu = gpu
        self.tp = tp
        self.profile = profile
        self.dtype_bytes = dtype_bytes
        self.options = opts
        self._gemm = GemmModel(gpu, profile, dtype_bytes)
        self._fp8 = opts.dtype == "fp8"
        if self._fp8:
            # The layers' GEMMs read 1-byte weights and 1-byte (per-token quantized)
            # activations at the FP8 peak; the LM head and the router stay in BF16 (vLLM
            # quantizes neither), so they keep self._gemm.
            assert gpu.fp8_tflops is not None  # check_options
            gpu8 = gpu.model_copy(update={"bf16_tflops": gpu.fp8_tflops})
            self._wgemm = GemmModel(gpu8, profile, 1)
        else:
            self._wgemm = self._gemm
        self._ew = ElementwiseModel(gpu, profile)
        self._act = ElementwiseModel(gpu, profile, profile.activation_hbm_efficiency,
                                     profile.activation_launch_s)
        self._norm = ElementwiseModel(gpu, profile, profile.norm_hbm_efficiency,
                                      profile.norm_launch_s)
        self._rope = ElementwiseModel(gpu, profile, profile.rotary_hbm_efficiency)
        self._layers = model.layers
        self._overhead = profile.decode_overhead_s
        self._overhead_per_seq = profile.decode_overhead_per_seq_s + (
            profile.v0_decode_overhead_per_seq_s if opts.vllm_v0 else 0.0)
        self._prefill_overhead = profile.prefill_overhead_s
        self._layer_overhead = profile.layer_overhead_s

        # Per-GPU shapes after TP sharding.
        dh = model.dim_head
        q_heads = model.heads // tp
        kv_heads = kv_heads_per_gpu(model, tp)
        shapes = linear_shapes(model, tp)
        self._hidden = model.hidden
        self._qkv_n = shapes["attn_pre_proj"][0]
        self._o_k = shapes["attn_post_proj"][1]
        self._up_n = shapes["mlp_up_proj"][0]
        self._down_k = shapes["mlp_down_proj"][1]
        self._vocab_n = _ceil_div(model.vocab, tp)
        d = dtype_bytes
        self._act_bytes_per_token = act_bytes_per_token(model, tp, d)
        # vLLM fuses the residual add into RMSNorm: read x and residual, write both.
        self._norm_bytes_per_token = 4 * model.hidden * d
        self._rope_bytes_per_token = 2 * (q_heads + kv_heads) * dh * d
        self._embed_bytes_per_token = 2 * model.hidden * d
        # Logits are upcast to fp32 for sampling: read the compute dtype, write fp32.
        self._logit_bytes_per_row = self._vocab_n * (d + 4)
        # Attention projections other than GQA's fused QKV and output (MLA's low-rank ones).
        self._mla_gemms: tuple[tuple[int, int], ...] = ()
        self._mla_norm_bytes_per_token = 0
        if model.mla is not None:
            self._init_mla(model, tp, d)

        kv_d = 1 if opts.kv_cache_dtype == "fp8" else d
        self._kv_dtype_bytes = kv_d
        peak_flops = gpu.bf16_tflops * 1e12
        if model.mla is None:
            kv_bytes_per_token_layer = 2 * kv_heads * dh * kv_d
            # QK^T and PV: 2 FLOPs per multiply-add, 2 matmuls, per query head.
            attn_flops_per_pair = 4.0 * q_heads * dh
            prefill_flops_per_pair = attn_flops_per_pair
        else:
            mla = model.mla
            # One latent + one RoPE key per token and layer, the same on every TP rank
            # (the latent has no heads to shard).
            kv_bytes_per_token_layer = model.kv_elements_per_token_layer * kv_d
            # Decode absorbs the up-projections into the query and output: every head scores
            # the (latent + rope)-wide key and sums the latent-wide value (MQA-like).
            attn_flops_per_pair = 2.0 * q_heads * (
                mla.kv_lora_rank + mla.qk_rope_head_dim + mla.kv_lora_rank)
            # Prefill expands the latent to per-head K (nope + rope) and V (v_head_dim).
            prefill_flops_per_pair = 2.0 * q_heads * (mla.qk_head_dim + mla.v_head_dim)
        self._kv_bytes_per_token_layer = kv_bytes_per_token_layer
        self.kv_bytes_per_token_per_gpu = float(kv_bytes_per_token_layer * model.layers)
        # Prefill attention streams K and V as GEMM operands; decode attention reads every
        # running sequence's KV with its own (paged) access pattern and few query rows.
        self._kv_layer_s_per_token = kv_bytes_per_token_layer / (
            gpu.hbm_bandwidth * profile.hbm_efficiency
        )
        self._kv_decode_layer_s_per_token = kv_bytes_per_token_layer / (
            gpu.hbm_bandwidth * profile.decode_attention_hbm_efficiency
        )
        self._attn_flops_per_pair = prefill_flops_per_pair
        self._attn_layer_s_per_flop = 1.0 / (peak_flops * profile.attention_flops_efficiency)
        self._attn_decode_flops_s_per_token = attn_flops_per_pair / (
            peak_flops * profile.decode_attention_flops_efficiency
        )
        # Decode attention reads every running sequence's KV once: a line through the origin
        # in kv_tokens (max of the memory and FLOP lines is still a line).
        self._attn_decode_layer_s_per_token = max(
            self._kv_decode_layer_s_per_token, self._attn_decode_flops_s_per_token
        )
        self._attn_decode_s_per_token = model.layers * self._attn_decode_layer_s_per_token
        self._attn_layer_fixed_s = profile.attention_fixed_s
        self._attn_decode_layer_fixed_s = profile.decode_attention_fixed_s
        self._exact_causal = (
            profile.attention_kv_block_tokens == 1
            and all(rows == 1 for _, rows in profile.attention_q_block_tiers)
        )

        self._tp_bw = nvlink_one_way_bytes_per_s(gpu.nvlink_bandwidth) * (
            profile.allreduce_bus_efficiency
        )
        # An engine larger than a node: its collectives cross the network, each GPU through
        # its own NIC (`hierarchical_allreduce_s`, `hierarchical_all_to_all_s`).
        self._node_gpus = gpu.gpus_per_node
        self._net_bw = gpu.network_bandwidth * profile.network_efficiency
        self._init_pp(model, opts.pp)
        self._moe_layers = model.moe_layers
        if model.moe is not None:
            self._init_moe(model, tp, opts.ep)
        self._eager_launch_s = 0.0 if opts.cuda_graphs else profile.eager_launch_s
        self._kernels_per_iteration = self._count_kernels()
        self._layer_cache: dict[int, tuple[float, float, float]] = {}
        self._dense_cache: dict[int, tuple[float, float, float]] = {}
        self._lm_cache: dict[int, float] = {}
        # decode_affine by batch size; the engines that share this cost read it directly
        # (one small dict for all of them stays in cache, where one each did not).
        self.decode_affine_memo: dict[int, tuple[float, float]] = {}

    def _init_pp(self, model: ModelSpec, pp: int) -> None:
        """Pipeline stages: each GPU holds ceil(L/pp) layers at most (vLLM splits the layers
        as evenly as it can); the KV cache of the fullest stage bounds the engine's, and a
        decode iteration reads each micro-batch's share (1/pp) of the KV."""
        self.pp = pp
        self.gpus = self.tp * pp
        if pp == 1:
            return
        self.kv_bytes_per_token_per_gpu = float(
            self._kv_bytes_per_token_layer * _ceil_div(model.layers, pp))
        self._attn_decode_s_per_token /= pp
        # Stage boundaries that cross nodes: none when the engine fits a node, all when a
        # stage fills whole nodes, else one per node boundary.
        boundaries = pp - 1
        if self.gpus <= self._node_gpus:
            self._pp_net_sends = 0
        elif self.tp >= self._node_gpus:
            self._pp_net_sends = boundaries
        else:
            self._pp_net_sends = self.gpus // self._node_gpus - 1

    def _pp_sends_s(self, m: int) -> float:
        """The pp - 1 sends of one micro-batch's activations between stages: each stage rank
        sends the hidden state and the residual (vLLM's IntermediateTensors, 2 m h d bytes)
        to its peer of the next stage, all ranks at once over their own links."""
        size = 2 * m * self._hidden * self.dtype_bytes
        lat = self.profile.allreduce_latency_s
        net = self._pp_net_sends
        local = self.pp - 1 - net
        return (local * transfer_s(size, self._tp_bw, lat)
                + net * transfer_s(size, self._net_bw, lat + NET_HOP_LATENCY_S))

    def _init_mla(self, model: ModelSpec, tp: int, d: int) -> None:
        """MLA's projections per GPU, as (N, K) GEMMs: q_a and kv_a are replicated (vLLM
        shards neither), q_b, kv_b and the output projection are split over the heads."""
        mla = model.mla
        assert mla is not None
        h, hq = model.hidden, model.heads // tp
        q_in = h if mla.q_lora_rank is None else mla.q_lora_rank
        gemms = [] if mla.q_lora_rank is None else [(mla.q_lora_rank, h)]
        gemms += [
            (hq * mla.qk_head_dim, q_in),  # q_b (or the full q projection)
            (mla.kv_lora_rank + mla.qk_rope_head_dim, h),  # kv_a
            (hq * (mla.qk_nope_head_dim + mla.v_head_dim), mla.kv_lora_rank),  # kv_b
            (h, hq * mla.v_head_dim),  # o_proj
        ]
        self._mla_gemms = tuple(gemms)
        # The q_a and kv_a RMSNorms: read and write their latent.
        self._mla_norm_bytes_per_token = 2 * (
            (mla.q_lora_rank or 0) + mla.kv_lora_rank) * d
        self._rope_bytes_per_token = 2 * (hq + 1) * mla.qk_rope_head_dim * d

    def _init_moe(self, model: ModelSpec, tp: int, ep: int) -> None:
        """Per-GPU shapes of a MoE layer: each routed expert's MLP split tp/ep ways over the
        GPUs of its expert-parallel group, the shared experts split tp ways."""
        moe = model.moe
        assert moe is not None
        gate = 2 if model.gated_mlp else 1
        self._ep = ep
        self._n_experts = moe.experts
        self._top_k = moe.experts_per_token
        self._expert_ffn = _ceil_div(moe.expert_ffn, tp // ep)
        self._expert_up_n = gate * self._expert_ffn
        self._act_factor = gate + 1
        shared = moe.shared_experts * moe.shared_ffn
        self._shared_ffn = _ceil_div(shared, tp) if shared else 0
        # The busiest EP rank gates the layer; with one rank every expert is on every GPU.
        self._imbalance = self.profile.router_imbalance if ep > 1 else 1.0

    def _count_kernels(self) -> int:
        """Kernels of one iteration outside attention: per layer the ones priced in
        `_layer_dense` plus the KV-cache write, and per iteration the embedding, final norm,
        LM head and logits cast. What eager execution dispatches one by one."""
        quant = 1 if self._fp8 else 0
        allreduce = 1 if self.tp > 1 else 0
        # MLA: its projections and the q_a / kv_a norms; GQA: fused QKV and the output.
        projections = len(self._mla_gemms) if self._mla_gemms else 2
        attn = projections * (1 + quant) + (2 if self._mla_gemms else 0)
        attn += 2 + 1 + 1 + allreduce  # two norms, rotary, KV-cache write, all-reduce
        dense_mlp = 3 + 2 * quant + allreduce  # gate/up, activation, down
        moe_mlp = 0
        if self._moe_layers:
            # router, top-k, token sort, grouped up, activation, grouped down, weighted sum
            moe_mlp = 7 + 2 * quant + allreduce + (2 if self._ep > 1 else 0)
            if self._shared_ffn:
                moe_mlp += 3 + 2 * quant
        dense_layers = self._layers - self._moe_layers
        return (self._layers * attn + dense_layers * dense_mlp + self._moe_layers * moe_mlp
                + 4)

    def eager_overhead_s(self, decode: bool, prefill: bool) -> float:
        """CPU dispatch time of an iteration without CUDA graphs: `eager_launch_s` per kernel
        (the layers' kernels, plus one attention kernel per layer for decodes and one for
        prefills); 0 with CUDA graphs, whose replay launches the step at once."""
        if not self._eager_launch_s:
            return 0.0
        kernels = self._kernels_per_iteration + self._layers * (int(decode) + int(prefill))
        return self._eager_launch_s * kernels

    # ----- per-token-count parts (cached) -----

    def linear_s(self, num_tokens: int) -> float:
        """All layers' QKV, output, gate/up, activation and down projections at n tokens."""
        return self._dense(num_tokens)[0]

    def _layer_dense(self, m: int) -> tuple[float, float, float]:
        """(linear, other, comm) seconds of ONE layer's token-wise work at m tokens (for a
        MoE model, the mean over its dense and MoE layers)."""
        hit = self._layer_cache.get(m)
        if hit is not None:
            return hit
        if m <= 0:
            return (0.0, 0.0, 0.0)
        if self._mla_gemms or self._fp8 or self._moe_layers:
            out = self._layer_general(m)
        else:
            out = self._layer_gqa_dense(m)
        if len(self._layer_cache) < _CACHE_LIMIT:
            self._layer_cache[m] = out
        return out

    def _layer_gqa_dense(self, m: int) -> tuple[float, float, float]:
        """A BF16 GQA layer with a dense MLP: the engine's original formula, term for term."""
        g = self._gemm.time_s
        h = self._hidden
        linear = (
            g(m, self._qkv_n, h)
            + g(m, h, self._o_k)
            + g(m, self._up_n, h)
            + self._act.time_s(m * self._act_bytes_per_token)
            + g(m, h, self._down_k)
        )
        other = (
            2 * self._norm.time_s(m * self._norm_bytes_per_token)
            + self._rope.time_s(m * self._rope_bytes_per_token)
            + self._layer_overhead
        )
        comm = 0.0
        if self.tp > 1:
            # Row-parallel output and down projections each end in an all-reduce.
            comm = 2 * self._allreduce_s(m)
        return (linear, other, comm)

    def _allreduce_s(self, m: int) -> float:
        size = m * self._hidden * self.dtype_bytes
        if self.tp > self._node_gpus:  # TP across nodes: NVLink inside, network across
            return hierarchical_allreduce_s(size, self.tp, self._node_gpus, self._tp_bw,
                                            self._net_bw, self.profile.allreduce_latency_s)
        return ring_allreduce_s(size, self.tp, self._tp_bw, self.profile.allreduce_latency_s)

    def _wgemm_s(self, m: int, n: int, k: int) -> float:
        """A layer GEMM; with FP8 weights, plus the per-token quantization of its input
        (read the BF16 activation, write 1 byte per element)."""
        t = self._wgemm.time_s(m, n, k)
        if self._fp8:
            t += self._ew.time_s(m * k * (self.dtype_bytes + 1))
        return t

    def _attention_block(self, m: int) -> tuple[float, float, float]:
        """(linear, other, comm) of a layer's attention side: projections, norms, rotary,
        the output all-reduce (attention's own kernels are priced separately)."""
        h = self._hidden
        if self._mla_gemms:
            linear = sum(self._wgemm_s(m, n, k) for n, k in self._mla_gemms)
            other = self._norm.time_s(m * self._mla_norm_bytes_per_token)
        else:
            linear = self._wgemm_s(m, self._qkv_n, h) + self._wgemm_s(m, h, self._o_k)
            other = 0.0
        other += (2 * self._norm.time_s(m * self._norm_bytes_per_token)
                  + self._rope.time_s(m * self._rope_bytes_per_token) + self._layer_overhead)
        comm = self._allreduce_s(m) if self.tp > 1 else 0.0
        return (linear, other, comm)

    def _dense_mlp(self, m: int) -> tuple[float, float]:
        """(linear, comm) of a dense MLP: gate/up, activation, down, its all-reduce."""
        h = self._hidden
        linear = (self._wgemm_s(m, self._up_n, h)
                  + self._act.time_s(m * self._act_bytes_per_token)
                  + self._wgemm_s(m, h, self._down_k))
        return (linear, self._allreduce_s(m) if self.tp > 1 else 0.0)

    def _grouped_s(self, experts: float, rows: int, n: int, k: int) -> float:
        """One fused-MoE GEMM over `experts` experts of `rows` tokens each: their tiles run
        in one kernel (one launch), each expert streaming its own weights."""
        launch = self.profile.kernel_launch_s
        t = experts * (self._wgemm.time_s(rows, n, k) - launch) + launch
        if self._fp8:
            t += self._ew.time_s(experts * rows * k * (self.dtype_bytes + 1))
        return t

    def _moe_mlp(self, m: int) -> tuple[float, float, float]:
        """(linear, other, comm) of one MoE layer's MLP on one GPU at m tokens.

        Router GEMM (BF16, replicated) and top-k; the routed experts' grouped GEMMs over the
        experts this GPU's share of the m x k (token, expert) pairs touches, at the busiest
        rank's load; the shared experts as a dense MLP; the weighted sum of the k outputs;
        with ep > 1 the dispatch and combine all-to-alls; the output all-reduce."""
        h, d, k = self._hidden, self.dtype_bytes, self._top_k
        ep = self._ep
        distinct = expected_distinct_experts(m, self._n_experts, k) / ep
        pairs = m * k / ep * self._imbalance
        rows = max(1, math.ceil(pairs / distinct))
        f = self._expert_ffn
        linear = (self._gemm.time_s(m, self._n_experts, h)
                  + self._grouped_s(distinct, rows, self._expert_up_n, h)
                  + self._act.time_s(pairs * self._act_factor * f * d)
                  + self._grouped_s(distinct, rows, h, f))
        if self._shared_ffn:
            gate = self._act_factor - 1
            linear += (self._wgemm_s(m, gate * self._shared_ffn, h)
                       + self._act.time_s(m * self._act_factor * self._shared_ffn * d)
                       + self._wgemm_s(m, h, self._shared_ffn))
        # Softmax/top-k over the router logits (fp32 in, ids and weights out), then the sum
        # of each token's k expert outputs.
        other = (self._ew.time_s(m * (self._n_experts * 4 + k * 8))
                 + self._ew.time_s(pairs * h * d + m * h * d))
        comm = self._allreduce_s(m) if self.tp > 1 else 0.0
        if ep > 1:
            # Dispatch each token's hidden state to its k experts' ranks and combine the k
            # outputs back: every rank owns m/ep tokens, k copies of each.
            a2a = m / ep * k * h * d
            comm += 2 * hierarchical_all_to_all_s(a2a, ep, self._node_gpus, self._tp_bw,
                                                  self._net_bw,
                                                  self.profile.allreduce_latency_s)
        return (linear, other, comm)

    def _layer_general(self, m: int) -> tuple[float, float, float]:
        """Mean layer of a model with MLA, FP8 weights or MoE layers."""
        linear, other, comm = self._attention_block(m)
        moe_layers = self._moe_layers
        dense_layers = self._layers - moe_layers
        if dense_layers:
            lin, com = self._dense_mlp(m)
            linear += lin * dense_layers / self._layers
            comm += com * dense_layers / self._layers
        if moe_layers:
            lin, oth, com = self._moe_mlp(m)
            share = moe_layers / self._layers
            linear += lin * share
            other += oth * share
            comm += com * share
        return (linear, other, comm)

    def _dense(self, m: int) -> tuple[float, float, float]:
        hit = self._dense_cache.get(m)
        if hit is not None:
            return hit
        if m <= 0:
            return (0.0, 0.0, 0.0)
        linear, other, comm = self._layer_dense(m)
        ew = self._ew.time_s
        layers = self._layers
        # Embedding gather and the final norm happen once per iteration.
        out = (
            layers * linear,
            layers * other
            + ew(m * self._embed_bytes_per_token)
            + self._norm.time_s(m * self._norm_bytes_per_token),
            layers * comm,
        )
        if len(self._dense_cache) < _CACHE_LIMIT:
            self._dense_cache[m] = out
        return out

    def _lm_head_s(self, rows: int) -> float:
        hit = self._lm_cache.get(rows)
        if hit is not None:
            return hit
        t = self._gemm.time_s(rows, self._vocab_n, self._hidden) + self._ew.time_s(
            rows * self._logit_bytes_per_row
        )
        if len(self._lm_cache) < _CACHE_LIMIT:
            self._lm_cache[rows] = t
        return t

    def _prefill_pairs(self, tokens: int, context_tokens: int) -> float:
        """(query, key) pairs a causal prefill kernel computes for one query head."""
        if self._exact_causal:
            # Each new token attends to the context plus, causally, half the chunk on
            # average (the chunk is treated as one sequence).
            return tokens * (context_tokens + (tokens + 1) / 2.0)
        # Block kernel: each query block computes whole key blocks up to its last row.
        qb = min(self.profile.attention_q_block(tokens), tokens)
        kvb = self.profile.attention_kv_block_tokens
        total = context_tokens + tokens
        pairs = 0
        for start in range(0, tokens, qb):
            end = min(tokens, start + qb)
            keys = min(total, -(-(context_tokens + end) // kvb) * kvb)
            pairs += (end - start) * keys
        return float(pairs)

    def _layer_prefill_attention_s(
        self, tokens: int, context_tokens: int, warm_cache: bool = False
    ) -> float:
        t_flops = (
            self._prefill_pairs(tokens, context_tokens)
            * self._attn_flops_per_pair
            * self._attn_layer_s_per_flop
        )
        t_mem = (context_tokens + tokens) * self._kv_layer_s_per_token
        if warm_cache:
            t_mem *= stream_factor(
                (context_tokens + tokens) * self._kv_bytes_per_token_layer, self.profile
            )
        return self._attn_layer_fixed_s + max(t_flops, t_mem)

    def _layer_attention_s(
        self, decode_seqs: i64, kv_tokens: i64, prefill_tokens: i64, prefill_context_tokens: i64,
        prefill_chunks: Sequence[tuple[int, int]] | None = None,
    ) -> float:
        attention = 0.0
        if decode_seqs:
            attention = (
                self._attn_decode_layer_fixed_s
                + float(kv_tokens) * self._attn_decode_layer_s_per_token
            )
        if prefill_chunks:
            # Each sequence's chunk attends causally within itself and to its own context:
            # pricing the chunks as one long sequence would count cross-sequence pairs.
            # One varlen kernel serves them all, so its fixed cost is paid once.
            fixed = self._attn_layer_fixed_s
            if self._exact_causal:
                # `_layer_prefill_attention_s` inlined, the same arithmetic in the same order
                # (a mixed iteration prices one chunk per sequence it prefills: the hot path
                # of rollout).
                per_pair = self._attn_flops_per_pair
                per_flop = self._attn_layer_s_per_flop
                per_token = self._kv_layer_s_per_token
                # The chunks' parts added left to right from 0.0: the value Python 3.11's
                # `sum` of floats gives, without a list and a call of the builtin per
                # iteration (issue 40); 3.12's `sum` compensates, this loop does not, so
                # every version gets 3.11's value.
                parts = 0.0
                for tokens, context in prefill_chunks:
                    t_flops = tokens * (context + (tokens + 1) / 2.0) * per_pair * per_flop
                    t_mem = (context + tokens) * per_token
                    parts += fixed + (t_mem if t_mem > t_flops else t_flops) - fixed
                attention += fixed + parts
            else:
                parts = 0.0
                for tokens, context in prefill_chunks:
                    parts += self._layer_prefill_attention_s(tokens, context) - fixed
                attention += fixed + parts
        elif prefill_tokens:
            attention += self._layer_prefill_attention_s(prefill_tokens, prefill_context_tokens)
        return attention

    def decode_attention_s(
        self, decode_seqs: int, kv_tokens: int, warm_cache: bool = False
    ) -> float:
        """One layer's decode attention: `decode_seqs` queries reading `kv_tokens` KV tokens.
        `warm_cache`: a microbenchmark repeat, the part of the KV that fits in cache streams
        faster (`kernels.stream_factor`)."""
        if not warm_cache or not decode_seqs:
            return self._layer_attention_s(decode_seqs, kv_tokens, 0, 0)
        mem = self._kv_decode_layer_s_per_token * stream_factor(
            kv_tokens * self._kv_bytes_per_token_layer, self.profile
        )
        per_token = max(mem, self._attn_decode_flops_s_per_token)
        return self._attn_decode_layer_fixed_s + kv_tokens * per_token

    def prefill_attention_s(
        self, tokens: int, context_tokens: int = 0, warm_cache: bool = False
    ) -> float:
        """One layer's causal attention of a `tokens`-token chunk after `context_tokens`."""
        if tokens <= 0:
            return 0.0
        return self._layer_prefill_attention_s(tokens, context_tokens, warm_cache)

    def layer_step_s(
        self,
        decode_seqs: int,
        kv_tokens: int,
        prefill_tokens: int = 0,
        prefill_context_tokens: int = 0,
    ) -> float:
        """One transformer layer of an iteration (a MoE model: the mean over its dense and
        MoE layers): linear layers, attention, norms, rotary, the layer's fixed overhead and
        its TP all-reduces; no embedding, LM head or per-iteration engine overhead.
        `step(...).total_s` equals `layers *` this plus those once-per-iteration parts."""
        _check_counts(decode_seqs, kv_tokens, prefill_tokens, prefill_context_tokens)
        m = decode_seqs + prefill_tokens
        if m == 0:
            return 0.0
        linear, other, comm = self._layer_dense(m)
        attention = self._layer_attention_s(
            decode_seqs, kv_tokens, prefill_tokens, prefill_context_tokens
        )
        return linear + attention + other + comm

    # ----- public costs -----

    def step(
        self,
        decode_seqs: int,
        kv_tokens: int,
        prefill_tokens: int = 0,
        prefill_context_tokens: int = 0,
        prefill_chunks: Sequence[tuple[int, int]] | None = None,
    ) -> StepCost:
        """One iteration: `decode_seqs` decodes reading `kv_tokens` KV tokens in total, plus
        `prefill_tokens` prompt tokens attending to `prefill_context_tokens` each. When the
        prompt tokens belong to several sequences, `prefill_chunks` lists each one's
        (tokens, context tokens) and prices their attention separately.

        The overhead is `decode_overhead_s` plus `decode_overhead_per_seq_s` per sequence in
        the iteration: the decodes and the prefilling sequences (the chunks with tokens, or
        one when `prefill_tokens` come without `prefill_chunks`), plus `prefill_overhead_s`
        when the iteration prefills, plus `eager_overhead_s` without CUDA graphs."""
        seqs, m = self._seqs(decode_seqs, kv_tokens, prefill_tokens, prefill_context_tokens,
                             prefill_chunks)
        if m == 0:
            return _ZERO
        if self.pp > 1:
            return self._pp_step(m, seqs, decode_seqs, kv_tokens, prefill_tokens,
                                 prefill_context_tokens, prefill_chunks)
        linear, attention, other, comm, overhead = self._parts(
            seqs, m, decode_seqs, kv_tokens, prefill_tokens, prefill_context_tokens,
            prefill_chunks)
        return StepCost(linear, attention, other, comm, overhead)

    def step_total_s(
        self,
        decode_seqs: i64,
        kv_tokens: i64,
        prefill_tokens: i64 = 0,
        prefill_context_tokens: i64 = 0,
        prefill_chunks: Sequence[tuple[int, int]] | None = None,
    ) -> float:
        """`step(...).total_s`, the same value, without building the `StepCost`: an engine's
        mixed iterations, one a turn (issue 40). Compiled, the parts come back unboxed."""
        seqs, m = self._seqs(decode_seqs, kv_tokens, prefill_tokens, prefill_context_tokens,
                             prefill_chunks)
        if m == 0 or self.pp > 1:
            return self.step(decode_seqs, kv_tokens, prefill_tokens, prefill_context_tokens,
                             prefill_chunks).total_s
        linear, attention, other, comm, overhead = self._parts(
            seqs, m, decode_seqs, kv_tokens, prefill_tokens, prefill_context_tokens,
            prefill_chunks)
        return linear + attention + other + comm + overhead  # as `StepCost.total_s` adds

    def _seqs(self, decode_seqs: i64, kv_tokens: i64, prefill_tokens: i64,
              prefill_context_tokens: i64,
              prefill_chunks: Sequence[tuple[int, int]] | None) -> tuple[i64, i64]:
        """The arguments checked; (sequences in the iteration, tokens it computes)."""
        _check_counts(decode_seqs, kv_tokens, prefill_tokens, prefill_context_tokens)
        seqs = decode_seqs
        if prefill_chunks is not None:
            # The chunks' tokens and the sequences with tokens, in one pass.
            chunked: i64 = 0
            for tokens, _ in prefill_chunks:
                chunked += tokens
                if tokens:
                    seqs += 1
            if chunked != prefill_tokens:
                raise ValueError("prefill_chunks must add up to prefill_tokens")
        elif prefill_tokens:
            seqs += 1
        return seqs, decode_seqs + prefill_tokens

    def _parts(self, seqs: i64, m: i64, decode_seqs: i64, kv_tokens: i64, prefill_tokens: i64,
               prefill_context_tokens: i64, prefill_chunks: Sequence[tuple[int, int]] | None,
               ) -> tuple[float, float, float, float, float]:
        """(linear, attention, other, comm, overhead) of a single-stage iteration of `m`
        tokens over `seqs` sequences."""
        linear, other, comm = self._dense(m)
        attention = self._layers * self._layer_attention_s(
            decode_seqs, kv_tokens, prefill_tokens, prefill_context_tokens, prefill_chunks
        )
        # Every sequence in the iteration samples a token from its last row's logits: the
        # decodes and the prefills (whose last chunk yields the first response token).
        other += self._lm_head_s(seqs)
        overhead = self._overhead + self._overhead_per_seq * float(seqs)
        if prefill_tokens:
            overhead += self._prefill_overhead
        if self._eager_launch_s:
            overhead += self.eager_overhead_s(decode_seqs > 0, prefill_tokens > 0)
        return linear, attention, other, comm, overhead

    def _pp_step(
        self, m: int, seqs: int, decode_seqs: int, kv_tokens: int, prefill_tokens: int,
        prefill_context_tokens: int, prefill_chunks: Sequence[tuple[int, int]] | None,
    ) -> StepCost:
        """One iteration of a pipeline-parallel engine: every running sequence advances once.

        vLLM keeps `pp` micro-batches of the running batch in flight, `mb = ceil(m/pp)`
        tokens each. In steady state one micro-batch's pass crosses every stage (all `L`
        layers at `mb` tokens, the embedding on the first stage, the final norm and LM head
        on the last), the `pp - 1` sends between stages and the engine loop (`overhead_s`),
        while each stage serves all `pp` micro-batches, its `L/pp` layers each, in that time.
        The iteration is the longer of the two; their layer parts are equal, so

            t = pass(mb) + max(0, pp * max(first_end, last_end)
                                  - (first_end + last_end + sends + overhead))

        (the second term, a busiest-stage stall, goes into `other_s`; the sends into
        `comm_s`). Attention: each micro-batch reads its 1/pp share of the KV, paying each
        kernel's fixed part in full. Exactly affine in `kv_tokens` for a fixed batch, like
        the single-stage engine; layers split unevenly (L not a multiple of pp) are priced
        at the mean stage."""
        pp = self.pp
        mb = _ceil_div(m, pp)
        mb_seqs = _ceil_div(seqs, pp)
        layers = self._layers
        linear, other, comm = self._dense(mb)  # L layers, embedding and final norm
        full = layers * self._layer_attention_s(
            decode_seqs, kv_tokens, prefill_tokens, prefill_context_tokens, prefill_chunks)
        fixed = layers * ((self._attn_decode_layer_fixed_s if decode_seqs else 0.0)
                          + (self._attn_layer_fixed_s
                             if prefill_chunks or prefill_tokens else 0.0))
        attention = fixed + (full - fixed) / pp
        lm = self._lm_head_s(mb_seqs)
        other += lm
        first_end = self._ew.time_s(mb * self._embed_bytes_per_token)
        last_end = self._norm.time_s(mb * self._norm_bytes_per_token) + lm
        sends = self._pp_sends_s(mb)
        overhead = self._overhead + self._overhead_per_seq * seqs
        if prefill_tokens:
            overhead += self._prefill_overhead
        if self._eager_launch_s:
            overhead += self.eager_overhead_s(decode_seqs > 0, prefill_tokens > 0)
        stall = max(0.0, pp * max(first_end, last_end)
                    - (first_end + last_end + sends + overhead))
        return StepCost(linear, attention, other + stall, comm + sends, overhead)

    def decode_affine(self, batch: int) -> tuple[float, float]:
        """(a_s, b_s_per_token) with step(batch, K).total_s == a_s + b_s_per_token * K
        (a_s includes the iteration overhead of `batch` sequences)."""
        hit = self.decode_affine_memo.get(batch)
        if hit is not None:
            return hit
        if batch <= 0:
            return (0.0, 0.0)
        out = (self.step(batch, 0).total_s, self._attn_decode_s_per_token)
        if len(self.decode_affine_memo) < _CACHE_LIMIT:
            self.decode_affine_memo[batch] = out
        return out

    def prefill(self, tokens: int, context_tokens: int = 0) -> StepCost:
        """One iteration that only prefills `tokens` new tokens."""
        return self.step(0, 0, tokens, context_tokens)

    def kv_capacity_tokens(self, gpu_memory_utilization: float) -> int:
        """KV-cache tokens the engine holds; <= 0 when the weights do not fit."""
        if not 0.0 < gpu_memory_utilization <= 1.0:
            raise ValueError(
                f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}"
            )
        free_bytes = (
            self.gpu.hbm * gpu_memory_utilization
            - self.weight_bytes_per_gpu()
            - self.profile.engine_memory_reserve_bytes
        )
        return int(free_bytes // self.kv_bytes_per_token_per_gpu)

    def weight_bytes(self) -> float:
        """Bytes of the whole model as this engine stores it: every weight in the compute
        dtype, or with FP8 weights 1 byte per layer weight and the embedding and LM head
        (left unquantized) in the compute dtype."""
        d = self.dtype_bytes
        if not self._fp8:
            return self.model.weight_bytes(d)
        model = self.model
        embed = model.vocab * model.hidden * (1 if model.tied_embeddings else 2)
        return float((model.params - embed) * 1 + embed * d)

    def weight_bytes_per_gpu(self) -> float:
        """This GPU's shard: dense and attention weights split tp ways, experts split ep
        ways and each expert tp/ep ways, i.e. tp ways either way; and the layers split
        over the pp pipeline stages (tp x pp ways in all)."""
        return self.weight_bytes() / (self.tp * self.pp)

    def weight_reload_s(self) -> float:
        """Copy this GPU's weight shard from host memory over PCIe (all GPUs in parallel)."""
        pcie_bytes_per_s = self.gpu.pcie_bandwidth * self.profile.pcie_efficiency
        return self.weight_bytes_per_gpu() / pcie_bytes_per_s

    def warm_start_s(self) -> float:
        """Resume a sleeping engine whose weights sit in host memory."""
        return self.profile.engine_warm_start_base_s + self.weight_reload_s()

    def cold_start_s(self) -> float:
        """Fixed runtime start-up plus reading the whole checkpoint from storage."""
        return self.profile.engine_cold_start_s + self.weight_bytes() / (
            self.profile.checkpoint_load_bandwidth_bytes_per_s
        )
