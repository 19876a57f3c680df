"""GPU and model architecture specs, the built-in catalogues of both, and model files.

Owns `GpuSpec` and `ModelSpec` (frozen pydantic models that scenarios may also write
inline), the derived quantities every cost model needs (parameter count, weight bytes,
KV bytes per token), and the one loader of a model architecture file (YAML/JSON) that
scenarios and `rlsim estimate` share. Figures come from public spec sheets, the memory the
cards report (nvidia-smi), and each model's Hugging Face config.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rlsim.config.units import Bytes, BytesPerSecond


class GpuSpec(BaseModel):
    """One GPU type: peak compute, memory, and the links a node of them has."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(description="GPU type name, e.g. H800.")
    bf16_tflops: float = Field(gt=0, description="Dense BF16 peak, TFLOP/s.")
    fp8_tflops: float | None = Field(
        default=None, gt=0,
        description="Dense FP8 peak, TFLOP/s (the datasheet's figure without structured "
        "sparsity, which is half the 'with sparsity' one). None: no FP8 tensor cores (A100).")
    hbm: Bytes = Field(
        gt=0, description="GPU memory as the card reports it (nvidia-smi's total), e.g. "
        "'81559 MiB' for an H100 80GB: an '80 GB' part is neither 80e9 bytes nor 80 GiB.")
    hbm_bandwidth: BytesPerSecond = Field(gt=0, description="HBM bandwidth, e.g. '3.35 TB/s'.")
    nvlink_bandwidth: BytesPerSecond = Field(
        gt=0, description="NVLink (AMD: xGMI/Infinity Fabric) bandwidth per GPU, all links and "
        "both directions summed, e.g. '900 GB/s'.")
    pcie_bandwidth: BytesPerSecond = Field(
        gt=0, description="Host<->device PCIe bandwidth per GPU, one direction, e.g. '64 GB/s'."
    )
    network_bandwidth: BytesPerSecond = Field(
        default=50e9, gt=0, description="Inter-node network per GPU, e.g. '400 Gb/s' InfiniBand."
    )
    host_link: Literal["pcie", "nvlink-c2c"] = Field(
        default="pcie",
        description="How the GPU reaches host memory: 'pcie' (a discrete GPU; a copy into "
        "pageable host memory is staged by the driver through pinned buffers) or "
        "'nvlink-c2c' (a Grace superchip such as GB200: coherent, host memory addressable by "
        "the GPU). Decides whether a framework's slow pageable state copies apply "
        "(docs/cost-model.md, 'Weight movement and switches').")
    sm_count: int = Field(
        gt=0, description="Streaming multiprocessors (AMD: compute units); GEMM wave quantization.")
    gpus_per_node: int = Field(default=8, gt=0, description="GPUs per node.")
    nvlink_domain_gpus: int | None = Field(
        default=None, gt=0,
        description="GPUs one NVLink domain joins when it spans several nodes (hosts): a GB200 "
        "NVL72 rack joins its 18 compute trays of 4 GPUs, 72. A pool's collectives, TP and "
        "engines stay on NVLink inside it. None: the node is the NVLink domain (HGX/DGX).")
    usd_per_gpu_hour: float = Field(
        ge=0, description="Default list price per GPU-hour in USD (a pool may override it)."
    )


class MoeSpec(BaseModel):
    """A mixture-of-experts MLP: top-k routed experts, shared experts, leading dense layers.

    Routed experts (top-k of them per token), always-active shared experts, and how many
    leading layers keep a dense MLP instead. Every expert is a gated (SwiGLU) MLP when the
    model's `gated_mlp` is true, as in Qwen3-MoE and DeepSeek-V3. The router is one
    hidden x experts matrix per MoE layer."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    experts: int = Field(
        gt=0, description="Routed experts per MoE layer. config.json: num_experts (Qwen3-MoE), "
        "n_routed_experts (DeepSeek-V3).")
    experts_per_token: int = Field(
        gt=0, description="Routed experts each token uses (top-k). config.json: "
        "num_experts_per_tok. Megatron: --moe-router-topk.")
    expert_ffn: int = Field(
        gt=0, description="Intermediate size of one routed expert. config.json: "
        "moe_intermediate_size. Megatron: --moe-ffn-hidden-size.")
    shared_experts: int = Field(
        default=0, ge=0, description="Always-active shared experts per MoE layer. config.json: "
        "n_shared_experts (DeepSeek-V3: 1); Qwen3-MoE has none.")
    shared_expert_ffn: int | None = Field(
        default=None, gt=0, description="Intermediate size of one shared expert; default "
        "expert_ffn (DeepSeek-V3's shared expert is moe_intermediate_size wide).")
    dense_layers: int = Field(
        default=0, ge=0, description="The first N layers use a dense MLP of the model's `ffn` "
        "instead of experts. config.json: first_k_dense_replace (DeepSeek-V3: 3).")

    @model_validator(mode="after")
    def _check_top_k(self) -> MoeSpec:
        if self.experts_per_token > self.experts:
            raise ValueError(
                f"moe.experts_per_token ({self.experts_per_token}) must be at most "
                f"moe.experts ({self.experts}): a token picks its top-k of the routed experts")
        return self

    @property
    def shared_ffn(self) -> int:
        return self.shared_expert_ffn if self.shared_expert_ffn is not None else self.expert_ffn


class MlaSpec(BaseModel):
    """Multi-head latent attention (DeepSeek-V2/V3): a compressed KV latent per token.

    Queries and keys/values go through low-rank projections, and the KV cache holds one
    compressed latent (kv_lora_rank) plus one shared RoPE key (qk_rope_head_dim) per token
    per layer, not per-head K and V."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    q_lora_rank: int | None = Field(
        gt=0, description="Query low-rank width (config.json: q_lora_rank; DeepSeek-V3: 1536). "
        "null: queries use a full hidden x heads*(qk_nope+qk_rope) projection (DeepSeek-V2-Lite).")
    kv_lora_rank: int = Field(
        gt=0, description="Compressed KV latent width, cached per token per layer (config.json: "
        "kv_lora_rank; DeepSeek-V3: 512).")
    qk_nope_head_dim: int = Field(
        gt=0, description="Per-head query/key width without RoPE (config.json: qk_nope_head_dim).")
    qk_rope_head_dim: int = Field(
        gt=0, description="Per-head query/key RoPE width; the RoPE key is shared by all heads "
        "and cached (config.json: qk_rope_head_dim).")
    v_head_dim: int = Field(gt=0, description="Per-head value width (config.json: v_head_dim).")

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


class ModelSpec(BaseModel):
    """A decoder-only transformer's architecture (GQA or MLA; dense MLP or MoE).

    Attention is grouped-query or multi-head latent (`mla`); the MLP is dense (gated) or a
    mixture of experts (`moe`).

    Parameter counts: `params` is every weight (all experts: memory, weight bytes, optimizer
    state); `active_params` is what one token uses (top-k routed + shared experts);
    `matmul_params` is the active matmul weights that set FLOPs (2 per parameter per token).
    For a dense model `active_params == params`."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(description="Model name, e.g. qwen2.5-7b.")
    layers: int = Field(gt=0, description="Transformer layers.")
    hidden: int = Field(gt=0, description="Hidden size (d_model).")
    heads: int = Field(gt=0, description="Attention (query) heads.")
    kv_heads: int = Field(
        gt=0, description="Key/value heads (GQA); equal to heads for MHA and for MLA.")
    head_dim: int | None = Field(
        default=None, gt=0, description="Per-head dimension; default hidden / heads (with "
        "`mla`: qk_nope_head_dim + qk_rope_head_dim).")
    ffn: int = Field(
        gt=0, description="Dense MLP intermediate size (config.json: intermediate_size); with "
        "`moe`, the width of the first moe.dense_layers layers' dense MLP.")
    vocab: int = Field(gt=0, description="Vocabulary size.")
    tied_embeddings: bool = Field(
        default=False, description="Whether the LM head shares the embedding matrix."
    )
    gated_mlp: bool = Field(
        default=True, description="SwiGLU-style gate+up projection (dense MLP and experts).")
    max_context: int | None = Field(
        default=None, gt=0,
        description="Longest sequence (prompt + response) the model supports, tokens: "
        "config.json's max_position_embeddings. None: not checked.")
    moe: MoeSpec | None = Field(
        default=None, description="Mixture-of-experts MLP (Qwen3-MoE, DeepSeek-V3); None: a "
        "dense MLP in every layer.")
    mla: MlaSpec | None = Field(
        default=None, description="Multi-head latent attention (DeepSeek-V3); None: grouped-"
        "query attention with heads/kv_heads/head_dim.")

    @model_validator(mode="after")
    def _check_heads(self) -> ModelSpec:
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.mla is not None:
            # MLA has no KV-head grouping: the latent is up-projected to K and V for every head.
            if self.kv_heads != self.heads:
                raise ValueError(
                    f"with mla, kv_heads ({self.kv_heads}) must equal heads ({self.heads}): "
                    "MLA expands its latent to K/V for every head")
            if self.head_dim is not None and self.head_dim != self.mla.qk_head_dim:
                raise ValueError(
                    f"with mla, head_dim ({self.head_dim}) must be mla.qk_nope_head_dim + "
                    f"mla.qk_rope_head_dim ({self.mla.qk_head_dim}), or be omitted")
        elif self.head_dim is None and self.hidden % self.heads:
            raise ValueError("hidden must be a multiple of heads, or give head_dim")
        if self.moe is not None and self.moe.dense_layers > self.layers:
            raise ValueError(
                f"moe.dense_layers ({self.moe.dense_layers}) must be at most layers "
                f"({self.layers})")
        return self

    @property
    def dim_head(self) -> int:
        """Per-head query/key width (MLA: nope + rope part)."""
        if self.head_dim is not None:
            return self.head_dim
        if self.mla is not None:
            return self.mla.qk_head_dim
        return self.hidden // self.heads

    @property
    def q_dim(self) -> int:
        return self.heads * self.dim_head

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V) over all KV heads; for MLA, after the latent's up-projection."""
        return self.kv_heads * self.dim_head

    @property
    def kv_elements_per_token_layer(self) -> int:
        """KV-cache elements one token keeps in one layer: K and V of every KV head (GQA), or
        the compressed latent plus the shared RoPE key (MLA)."""
        if self.mla is not None:
            return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        return 2 * self.kv_dim

    @property
    def attn_params(self) -> int:
        """Attention projection weights of one layer (MLA: its low-rank projections and their
        two RMSNorms)."""
        if self.mla is None:
            return self.hidden * (self.q_dim + 2 * self.kv_dim) + self.q_dim * self.hidden
        m = self.mla
        if m.q_lora_rank is None:
            q = self.hidden * self.heads * m.qk_head_dim
        else:  # q_a_proj, q_a_layernorm, q_b_proj
            q = self.hidden * m.q_lora_rank + m.q_lora_rank \
                + m.q_lora_rank * self.heads * m.qk_head_dim
        kv_a = self.hidden * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
        kv_b = m.kv_lora_rank * self.heads * (m.qk_nope_head_dim + m.v_head_dim)
        out = self.heads * m.v_head_dim * self.hidden
        return q + kv_a + kv_b + out

    def _mlp_params(self, ffn: int) -> int:
        return (3 if self.gated_mlp else 2) * self.hidden * ffn

    @property
    def layer_params(self) -> int:
        """One layer with a dense MLP of `ffn`: attention, MLP and its two norms."""
        return self.attn_params + self._mlp_params(self.ffn) + 2 * self.hidden

    @property
    def moe_layers(self) -> int:
        """Layers with a mixture-of-experts MLP (0 for a dense model)."""
        return 0 if self.moe is None else self.layers - self.moe.dense_layers

    @property
    def dense_layers(self) -> int:
        """Layers with a dense MLP (all of them for a dense model)."""
        return self.layers - self.moe_layers

    @property
    def expert_params(self) -> int:
        """Parameters of one routed expert (gate + up + down); 0 for a dense model."""
        return 0 if self.moe is None else self._mlp_params(self.moe.expert_ffn)

    def expert_bytes(self, dtype_bytes: int = 2) -> float:
        """Weight bytes of one routed expert."""
        return float(self.expert_params * dtype_bytes)

    def _moe_layer_params(self, routed: int) -> int:
        """One MoE layer with `routed` routed experts counted: attention, router, routed and
        shared experts, norms."""
        assert self.moe is not None
        router = self.hidden * self.moe.experts
        shared = self.moe.shared_experts * self._mlp_params(self.moe.shared_ffn)
        return (self.attn_params + router + routed * self.expert_params + shared
                + 2 * self.hidden)

    def _layers_params(self, active: bool) -> int:
        if self.moe is None:
            return self.layers * self.layer_params
        routed = self.moe.experts_per_token if active else self.moe.experts
        return (self.dense_layers * self.layer_params
                + self.moe_layers * self._moe_layer_params(routed))

    @property
    def params(self) -> int:
        """Total parameter count, every expert and the embeddings included."""
        embed = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return self._layers_params(active=False) + embed + self.hidden

    @property
    def active_params(self) -> int:
        """Parameters one token uses: as `params`, but only top-k routed experts per layer."""
        embed = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return self._layers_params(active=True) + embed + self.hidden

    @property
    def matmul_params(self) -> int:
        """Active parameters that take part in per-token matmuls (all but the input embedding;
        top-k routed + shared experts): forward FLOPs are 2 x this per token."""
        return self._layers_params(active=True) + self.vocab * self.hidden

    def weight_bytes(self, dtype_bytes: int = 2) -> float:
        return float(self.params * dtype_bytes)

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> float:
        """KV cache bytes per token over all layers: 2 x layers x kv_heads x head_dim x dtype
        (GQA), layers x (kv_lora_rank + qk_rope_head_dim) x dtype (MLA)."""
        return float(self.layers * self.kv_elements_per_token_layer * dtype_bytes)


# Dense BF16 peaks, HBM bandwidth and NVLink from ../shared/REFERENCES.md (public spec sheets).
# Memory is the total nvidia-smi reports (what the driver exposes, in MiB), not the marketing
# "80 GB": an H100 80GB shows 81559 MiB = 85.5e9 bytes = 79.6 GiB. CUDA (cudaMemGetInfo,
# torch.cuda.mem_get_info, the "total_gpu_memory" vLLM multiplies by gpu_memory_utilization)
# sees a few hundred MiB less again (81106 MiB on an H100: thamada/nvidia-smi,
# nvsim/H100SXMx8_deviceQuery.py); the engine reserve of the profile covers that. Sources:
# - H100 SXM 80GB: 81559 MiB. nvidia-smi tables in github.com/NVIDIA/nccl/issues/1264 and
#   github.com/wilicc/gpu-burn/issues/114; list in github.com/modal-labs/modal-client/pull/2797.
# - H800 SXM: 81559 MiB (the same 80 GB HBM3 board as the H100). Public nvidia-smi tables,
#   e.g. "NVIDIA H800 ... 68323MiB / 81559MiB"; found by exact search of GitHub files.
# - H20: 97871 MiB. Public nvidia-smi table "NVIDIA H20 ... 4MiB / 97871MiB" (a README that
#   lists it beside an A100 80GB PCIe at 81920MiB); found by exact search of GitHub files.
# - H200 SXM 141GB: 143771 MiB. Public nvidia-smi tables, e.g. 8 x "NVIDIA H200 ... 0MiB /
#   143771MiB" (driver 570.158.01); found by exact search of GitHub files.
# - A100 SXM4 80GB: 81920 MiB. github.com/modal-labs/modal-client/pull/2797 ("A100 80GB:
#   81920MiB"); the A800-SXM4-80GB (same board) in github.com/dexmal/dexbotic/issues/41.
# - B200 (HGX B200, 1000 W): 183359 MiB. Public nvidia-smi tables, e.g. 8 x "NVIDIA B200 ...
#   0MiB / 183359MiB" (driver 570.172.08); 148 SMs in the same device listings.
# - GB200 (one GPU of a GB200 NVL72, 1200 W): 189471 MiB. Public nvidia-smi tables, e.g.
#   "NVIDIA GB200 ... 0MiB / 189471MiB ... 1200W"; 152 SMs as public GB200 kernel reports
#   measure it (the HGX B200 enables 148). All found by exact search of GitHub files.
# - MI300X: 205822885888 bytes, rocm-smi's "VRAM Total Memory (B)" (196288 MiB); 304 CUs.
# FP8: the dense (no 2:4 sparsity) Tensor Core peak, half the datasheets' "with sparsity"
# figure, and twice dense BF16 on every part here except H20 (296 vs 148, also 2x). H100/H800/
# H200 SXM: 3,958 sparse -> 1,979 dense (BF16 1,979 sparse -> 989 dense). B200 (HGX B200
# datasheet, per GPU): FP8 9 PF sparse -> 4.5 PF dense, BF16 4.5 PF sparse -> 2.25 PF dense.
# GB200 (GB200 NVL72 datasheet / 72): FP8 10 PF sparse -> 5 PF dense, BF16 5 -> 2.5 PF
# dense. MI300X (AMD datasheet): BF16 1,307.4 and FP8 2,614.9 TFLOP/s dense. A100: no FP8.
# Links: NVLink 5 is 1.8 TB/s per GPU both directions summed (B200, GB200; the NVL72 domain is
# the whole rack, so gpus_per_node is 72 for GB200 by default; a pool may set gpus_per_node 4,
# a compute tray with its own host memory and NICs, and its GPUs still reach the rack's
# other 68 over NVLink: nvlink_domain_gpus 72). MI300X: 7 xGMI links x 128 GB/s = 896 GB/s
# summed over its 7 peers in the 8-GPU mesh (one peer gets 1/7 of it, unlike an NVSwitch).
# PCIe: Gen5 x16 = 64 GB/s per direction (Hopper, HGX B200 and MI300X hosts), Gen4 x16 =
# 32 GB/s (A100). GB200's host link is NVLink-C2C to Grace, 900 GB/s both directions per
# superchip shared by its two GPUs: 225 GB/s per GPU per direction. Network: one 400 Gb/s
# NIC per GPU (ConnectX-7 in HGX B200, GB200 NVL72 compute trays, MI300X platforms).
# Prices: H20 $1.85 and H800 $5.28 per GPU-hour [P Weave Table 1] (H800 : H20 = 2.85 : 1,
# [P Weave 6.1]); the others are typical cloud list prices [S],
# documented defaults that a pool's `usd_per_gpu_hour` overrides: H100/H200/A100 2025;
# B200 $6.03 and GB200 $9.08 per superchip (two GPUs: $4.54 per GPU), Spheron on-demand,
# 17 March 2026 (spheron.network/blog/nvidia-h200-vs-b200-vs-gb200); MI300X $1.85, Vultr
# on-demand (gpu.blog/gpus/instinct-mi300x-mi300x). Sources in docs/models.md.
GPUS: dict[str, GpuSpec] = {
    g.name: g
    for g in (
        GpuSpec(name="H100", bf16_tflops=989, fp8_tflops=1979, hbm="81559 MiB",
                hbm_bandwidth="3.35 TB/s", nvlink_bandwidth="900 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=132, usd_per_gpu_hour=3.0),
        GpuSpec(name="H800", bf16_tflops=989, fp8_tflops=1979, hbm="81559 MiB",
                hbm_bandwidth="3.35 TB/s", nvlink_bandwidth="400 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=132, usd_per_gpu_hour=5.28),
        GpuSpec(name="H20", bf16_tflops=148, fp8_tflops=296, hbm="97871 MiB",
                hbm_bandwidth="4.0 TB/s", nvlink_bandwidth="900 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=78, usd_per_gpu_hour=1.85),
        GpuSpec(name="H200", bf16_tflops=989, fp8_tflops=1979, hbm="143771 MiB",
                hbm_bandwidth="4.8 TB/s", nvlink_bandwidth="900 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=132, usd_per_gpu_hour=3.8),
        GpuSpec(name="A100", bf16_tflops=312, hbm="81920 MiB", hbm_bandwidth="2.039 TB/s",
                nvlink_bandwidth="600 GB/s", pcie_bandwidth="32 GB/s",
                network_bandwidth="200 Gb/s", sm_count=108, usd_per_gpu_hour=1.8),
        GpuSpec(name="B200", bf16_tflops=2250, fp8_tflops=4500, hbm="183359 MiB",
                hbm_bandwidth="8 TB/s", nvlink_bandwidth="1.8 TB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=148, usd_per_gpu_hour=6.03),
        GpuSpec(name="GB200", bf16_tflops=2500, fp8_tflops=5000, hbm="189471 MiB",
                hbm_bandwidth="8 TB/s", nvlink_bandwidth="1.8 TB/s", pcie_bandwidth="225 GB/s",
                network_bandwidth="400 Gb/s", sm_count=152, gpus_per_node=72,
                nvlink_domain_gpus=72, host_link="nvlink-c2c",
                usd_per_gpu_hour=4.54),
        GpuSpec(name="MI300X", bf16_tflops=1307.4, fp8_tflops=2614.9, hbm=205822885888,
                hbm_bandwidth="5.3 TB/s", nvlink_bandwidth="896 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=304, usd_per_gpu_hour=1.85),
    )
}

# Architectures from each model's public config.json; max_context is its
# max_position_embeddings. Qwen2.5 names are the base models (7B-72B: 131,072; 0.5B-3B:
# 32,768; the 7B-72B Instruct configs say 32,768 and reach 131,072 with YaRN). Llama 3.1
# has Llama 3's architecture with a 131,072-token context (Llama 3: 8,192).
MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        # Qwen2-7B (base): huggingface.co/Qwen/Qwen2-7B config.json; its model card says 7.6B
        # (6.5B non-embedding). The Qwen2 blog's table (7.07B / 5.98B) is one 152064 x 3584
        # embedding (0.55B) below both, though it also lists the embeddings as untied.
        ModelSpec(name="qwen2-7b", layers=28, hidden=3584, heads=28, kv_heads=4, ffn=18944,
                  vocab=152064, max_context=131072),
        ModelSpec(name="qwen2.5-0.5b", layers=24, hidden=896, heads=14, kv_heads=2, ffn=4864,
                  vocab=151936, tied_embeddings=True, max_context=32768),
        ModelSpec(name="qwen2.5-1.5b", layers=28, hidden=1536, heads=12, kv_heads=2, ffn=8960,
                  vocab=151936, tied_embeddings=True, max_context=32768),
        ModelSpec(name="qwen2.5-3b", layers=36, hidden=2048, heads=16, kv_heads=2, ffn=11008,
                  vocab=151936, tied_embeddings=True, max_context=32768),
        ModelSpec(name="qwen2.5-7b", layers=28, hidden=3584, heads=28, kv_heads=4, ffn=18944,
                  vocab=152064, max_context=131072),
        ModelSpec(name="qwen2.5-14b", layers=48, hidden=5120, heads=40, kv_heads=8, ffn=13824,
                  vocab=152064, max_context=131072),
        ModelSpec(name="qwen2.5-32b", layers=64, hidden=5120, heads=40, kv_heads=8, ffn=27648,
                  vocab=152064, max_context=131072),
        ModelSpec(name="qwen2.5-72b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=29568,
                  vocab=152064, max_context=131072),
        # Qwen2.5-Math base models: Qwen2.5-1.5B/7B's tensors (their cards' base_model), with
        # max_position_embeddings 4096 and rope_theta 10000 (rope is not modelled). No verbatim
        # config.json was found; each value's public evidence is in docs/models.md. veRL's DAPO
        # scripts raise the context to 32768 (override_config.max_position_embeddings).
        ModelSpec(name="qwen2.5-math-1.5b", layers=28, hidden=1536, heads=12, kv_heads=2,
                  ffn=8960, vocab=151936, tied_embeddings=True, max_context=4096),
        ModelSpec(name="qwen2.5-math-7b", layers=28, hidden=3584, heads=28, kv_heads=4,
                  ffn=18944, vocab=152064, max_context=4096),
        # DeepSeek-R1 distills of Qwen2.5-Math-1.5B/7B: huggingface.co/deepseek-ai/DeepSeek-R1-
        # Distill-Qwen-{1.5B,7B} config.json. Unlike Qwen2.5-Math-1.5B, the 1.5B distill has
        # untied embeddings (tie_word_embeddings false): 1.78B parameters, not 1.54B.
        ModelSpec(name="deepseek-r1-distill-qwen-1.5b", layers=28, hidden=1536, heads=12,
                  kv_heads=2, ffn=8960, vocab=151936, max_context=131072),
        ModelSpec(name="deepseek-r1-distill-qwen-7b", layers=28, hidden=3584, heads=28,
                  kv_heads=4, ffn=18944, vocab=152064, max_context=131072),
        # Small Qwen3 (huggingface.co/Qwen/Qwen3-{0.6B,1.7B,4B} config.json): tied embeddings.
        ModelSpec(name="qwen3-0.6b", layers=28, hidden=1024, heads=16, kv_heads=8, head_dim=128,
                  ffn=3072, vocab=151936, tied_embeddings=True, max_context=40960),
        ModelSpec(name="qwen3-1.7b", layers=28, hidden=2048, heads=16, kv_heads=8, head_dim=128,
                  ffn=6144, vocab=151936, tied_embeddings=True, max_context=40960),
        ModelSpec(name="qwen3-4b", layers=36, hidden=2560, heads=32, kv_heads=8, head_dim=128,
                  ffn=9728, vocab=151936, tied_embeddings=True, max_context=40960),
        ModelSpec(name="qwen3-8b", layers=36, hidden=4096, heads=32, kv_heads=8, head_dim=128,
                  ffn=12288, vocab=151936, max_context=40960),
        ModelSpec(name="qwen3-14b", layers=40, hidden=5120, heads=40, kv_heads=8, head_dim=128,
                  ffn=17408, vocab=151936, max_context=40960),
        ModelSpec(name="qwen3-32b", layers=64, hidden=5120, heads=64, kv_heads=8, head_dim=128,
                  ffn=25600, vocab=151936, max_context=40960),
        # Mixture-of-experts (docs/models.md). Qwen3-MoE: every layer MoE (decoder_sparse_step
        # 1, mlp_only_layers []), no shared expert; `ffn` is config.json's intermediate_size,
        # unused by those layers.
        ModelSpec(name="qwen3-30b-a3b", layers=48, hidden=2048, heads=32, kv_heads=4,
                  head_dim=128, ffn=6144, vocab=151936, max_context=40960,
                  moe=MoeSpec(experts=128, experts_per_token=8, expert_ffn=768)),
        ModelSpec(name="qwen3-235b-a22b", layers=94, hidden=4096, heads=64, kv_heads=4,
                  head_dim=128, ffn=12288, vocab=151936, max_context=40960,
                  moe=MoeSpec(experts=128, experts_per_token=8, expert_ffn=1536)),
        # DeepSeek-V3: MLA, first 3 layers dense (intermediate_size 18432), then 256 routed
        # experts (top-8) + 1 shared, each moe_intermediate_size 2048. The multi-token-
        # prediction module (num_nextn_predict_layers 1, 11.5B more parameters, used only as
        # a speculative-decoding draft) is left out: the 671B published total excludes it.
        ModelSpec(name="deepseek-v3", layers=61, hidden=7168, heads=128, kv_heads=128,
                  ffn=18432, vocab=129280, max_context=163840,
                  mla=MlaSpec(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                              qk_rope_head_dim=64, v_head_dim=128),
                  moe=MoeSpec(experts=256, experts_per_token=8, expert_ffn=2048,
                              shared_experts=1, dense_layers=3)),
        # Smaller MoE models that published engine measurements run (docs/models.md): IBM's
        # Granite 3.1 3B-A800M (GraniteMoe, no shared expert, tied embeddings); MiniMax-M2.5
        # (M2's architecture: full attention in every layer, partial RoPE and QK-norm not
        # modelled; its 3 multi-token-prediction modules, a speculative draft, left out as
        # for DeepSeek-V3); GLM-4.7-Flash (glm4_moe_lite: MLA, layer 0 dense, 64 experts top-4
        # + 1 shared; its MTP layer left out).
        ModelSpec(name="granite-3.1-3b-a800m", layers=32, hidden=1536, heads=24, kv_heads=8,
                  ffn=512, vocab=49155, tied_embeddings=True, max_context=131072,
                  moe=MoeSpec(experts=40, experts_per_token=8, expert_ffn=512)),
        ModelSpec(name="minimax-m2.5", layers=62, hidden=3072, heads=48, kv_heads=8,
                  head_dim=128, ffn=1536, vocab=200064, max_context=196608,
                  moe=MoeSpec(experts=256, experts_per_token=8, expert_ffn=1536)),
        ModelSpec(name="glm-4.7-flash", layers=47, hidden=2048, heads=20, kv_heads=20,
                  ffn=10240, vocab=154880, max_context=202752,
                  mla=MlaSpec(q_lora_rank=768, kv_lora_rank=512, qk_nope_head_dim=192,
                              qk_rope_head_dim=64, v_head_dim=256),
                  moe=MoeSpec(experts=64, experts_per_token=4, expert_ffn=1536,
                              shared_experts=1, dense_layers=1)),
        ModelSpec(name="llama-2-7b", layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008,
                  vocab=32000, max_context=4096),
        # Llama-2-13B: huggingface.co/meta-llama/Llama-2-13b-hf config.json (MHA, 40 heads).
        ModelSpec(name="llama-2-13b", layers=40, hidden=5120, heads=40, kv_heads=40, ffn=13824,
                  vocab=32000, max_context=4096),
        ModelSpec(name="llama-2-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672,
                  vocab=32000, max_context=4096),
        ModelSpec(name="llama-3-8b", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336,
                  vocab=128256, max_context=8192),
        ModelSpec(name="llama-3-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672,
                  vocab=128256, max_context=8192),
        ModelSpec(name="llama-3.1-8b", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336,
                  vocab=128256, max_context=131072),
        ModelSpec(name="llama-3.1-70b", layers=80, hidden=8192, heads=64, kv_heads=8,
                  ffn=28672, vocab=128256, max_context=131072),
        # Llama 3.2 text models (huggingface.co/meta-llama/Llama-3.2-{1B,3B} config.json): tied
        # embeddings; head_dim as the configs state it (64, 128; equal to hidden / heads).
        ModelSpec(name="llama-3.2-1b", layers=16, hidden=2048, heads=32, kv_heads=8, head_dim=64,
                  ffn=8192, vocab=128256, tied_embeddings=True, max_context=131072),
        ModelSpec(name="llama-3.2-3b", layers=28, hidden=3072, heads=24, kv_heads=8,
                  head_dim=128, ffn=8192, vocab=128256, tied_embeddings=True,
                  max_context=131072),
    )
}

MODEL_FILE_SUFFIXES = (".yaml", ".yml", ".json")
MAX_MODEL_FILE_BYTES = 64 * 1024


class ModelFileError(ValueError):
    """A model architecture file that cannot be used; the message is one line naming it."""


def is_model_file(value: str, base_dir: Path | None = None) -> bool:
    """Whether `value` names a model file rather than a catalogue model: a YAML/JSON suffix,
    or an existing file (relative to `base_dir` when given)."""
    path = Path(value)
    if path.suffix.lower() in MODEL_FILE_SUFFIXES:
        return True
    if value.lower() in MODELS:
        return False
    return _is_file(path if base_dir is None or path.is_absolute() else base_dir / path)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, or with a NUL byte, is no file
        return False


def load_model_file(value: str, base_dir: Path | None = None) -> ModelSpec:
    """The architecture in YAML/JSON file `value` (relative to `base_dir` if given); its name
    defaults to the file's stem. ModelFileError (one line, naming the file) if unusable."""
    path = Path(value)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    if not _is_file(path):
        raise ModelFileError(f"model file {value!r} not found")
    # An architecture is a dozen fields; the cap keeps a mistyped multi-GB path from being read.
    if path.stat().st_size > MAX_MODEL_FILE_BYTES:
        raise ModelFileError(f"model file {value!r} is larger than "
                             f"{MAX_MODEL_FILE_BYTES // 1024} KiB; give an architecture file")
    # The scenario's own parser (duplicate keys and deep nesting refused); imported here
    # because config.loading builds on this module.
    from rlsim.config.errors import ScenarioError
    from rlsim.config.yamlfile import parse_yaml

    try:
        data = parse_yaml(path.read_text(encoding="utf-8"), str(path))
    except (ScenarioError, UnicodeDecodeError, OSError) as err:
        detail = f": {err.message}" if isinstance(err, ScenarioError) else ""
        raise ModelFileError(f"model file {value!r} is not valid YAML/JSON{detail}") from None
    if not isinstance(data, dict):
        raise ModelFileError(f"model file {value!r} must hold a mapping of architecture "
                             "fields (layers, hidden, heads, kv_heads, ffn, vocab)")
    data.setdefault("name", path.stem)
    try:
        return ModelSpec.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "model"
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown field; see docs/models.md for the fields"
        elif first["type"] == "missing":
            message = "required field is missing"
        raise ModelFileError(f"model file {value!r}: {where}: {message}") from None


def lookup_model(name: str) -> ModelSpec:
    """Catalogue model by case-insensitive name; KeyError lists the known ones."""
    key = name.lower()
    if key not in MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    return MODELS[key]


def lookup_gpu(name: str) -> GpuSpec:
    """Catalogue GPU by case-insensitive name; KeyError lists the known ones."""
    for key, spec in GPUS.items():
        if key.lower() == name.lower():
            return spec
    raise KeyError(f"unknown GPU {name!r}; known: {', '.join(GPUS)}")
