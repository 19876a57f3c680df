"""GPU and model architecture specs, and the built-in catalogues of both.

Owns `GpuSpec` and `ModelSpec` (frozen pydantic models that scenarios may also write
inline) and the derived quantities every cost model needs: parameter count, weight bytes,
KV bytes per token. Figures come from public spec sheets and model configs
(../shared/REFERENCES.md, Hugging Face config.json of each model).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rlsim.config.units import Bytes, BytesPerSecond


class GpuSpec(BaseModel):
    """One GPU type: peak compute, memory, and the links a node of them has."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(description="GPU type name, e.g. H800.")
    bf16_tflops: float = Field(gt=0, description="Dense BF16 peak, TFLOP/s.")
    hbm: Bytes = Field(gt=0, description="HBM capacity per GPU, e.g. '80 GB'.")
    hbm_bandwidth: BytesPerSecond = Field(gt=0, description="HBM bandwidth, e.g. '3.35 TB/s'.")
    nvlink_bandwidth: BytesPerSecond = Field(
        gt=0, description="NVLink bandwidth per GPU, both directions summed, e.g. '900 GB/s'."
    )
    pcie_bandwidth: BytesPerSecond = Field(
        gt=0, description="Host<->device PCIe bandwidth per GPU, one direction, e.g. '64 GB/s'."
    )
    network_bandwidth: BytesPerSecond = Field(
        default=50e9, gt=0, description="Inter-node network per GPU, e.g. '400 Gb/s' InfiniBand."
    )
    sm_count: int = Field(gt=0, description="Streaming multiprocessors (GEMM wave quantization).")
    gpus_per_node: int = Field(default=8, gt=0, description="GPUs per node.")
    usd_per_gpu_hour: float = Field(
        ge=0, description="Default list price per GPU-hour in USD (a pool may override it)."
    )


class ModelSpec(BaseModel):
    """A decoder-only transformer's architecture (dense, gated MLP)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(description="Model name, e.g. qwen2.5-7b.")
    layers: int = Field(gt=0, description="Transformer layers.")
    hidden: int = Field(gt=0, description="Hidden size (d_model).")
    heads: int = Field(gt=0, description="Attention (query) heads.")
    kv_heads: int = Field(gt=0, description="Key/value heads (GQA); equal to heads for MHA.")
    head_dim: int | None = Field(
        default=None, gt=0, description="Per-head dimension; default hidden / heads."
    )
    ffn: int = Field(gt=0, description="MLP intermediate size.")
    vocab: int = Field(gt=0, description="Vocabulary size.")
    tied_embeddings: bool = Field(
        default=False, description="Whether the LM head shares the embedding matrix."
    )
    gated_mlp: bool = Field(default=True, description="SwiGLU-style gate+up projection.")

    @model_validator(mode="after")
    def _check_heads(self) -> ModelSpec:
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.head_dim is None and self.hidden % self.heads:
            raise ValueError("hidden must be a multiple of heads, or give head_dim")
        return self

    @property
    def dim_head(self) -> int:
        return self.head_dim if self.head_dim is not None else self.hidden // self.heads

    @property
    def q_dim(self) -> int:
        return self.heads * self.dim_head

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.dim_head

    @property
    def layer_params(self) -> int:
        attn = self.hidden * (self.q_dim + 2 * self.kv_dim) + self.q_dim * self.hidden
        mlp = (3 if self.gated_mlp else 2) * self.hidden * self.ffn
        return attn + mlp + 2 * self.hidden

    @property
    def params(self) -> int:
        """Total parameter count, embeddings included."""
        embed = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return self.layers * self.layer_params + embed + self.hidden

    @property
    def matmul_params(self) -> int:
        """Parameters that take part in per-token matmuls (all but the input embedding)."""
        return self.layers * self.layer_params + self.vocab * self.hidden

    def weight_bytes(self, dtype_bytes: int = 2) -> float:
        return float(self.params * dtype_bytes)

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> float:
        """KV cache bytes per token over all layers: 2 x layers x kv_heads x head_dim x dtype."""
        return float(2 * self.layers * self.kv_dim * dtype_bytes)


# Dense BF16 peaks, HBM and NVLink from ../shared/REFERENCES.md (public spec sheets).
# PCIe: Gen5 x16 = 64 GB/s per direction (Hopper), Gen4 x16 = 32 GB/s (A100).
# Prices: H800 : H20 = 2.85 : 1 [P RollMux]; the others are typical 2025 cloud list prices
# [S], documented defaults that a pool's `usd_per_gpu_hour` overrides.
GPUS: dict[str, GpuSpec] = {
    g.name: g
    for g in (
        GpuSpec(name="H100", bf16_tflops=989, hbm="80 GB", hbm_bandwidth="3.35 TB/s",
                nvlink_bandwidth="900 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=132, usd_per_gpu_hour=3.0),
        GpuSpec(name="H800", bf16_tflops=989, hbm="80 GB", hbm_bandwidth="3.35 TB/s",
                nvlink_bandwidth="400 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=132, usd_per_gpu_hour=2.85),
        GpuSpec(name="H20", bf16_tflops=148, hbm="96 GB", hbm_bandwidth="4.0 TB/s",
                nvlink_bandwidth="900 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=78, usd_per_gpu_hour=1.0),
        GpuSpec(name="H200", bf16_tflops=989, hbm="141 GB", hbm_bandwidth="4.8 TB/s",
                nvlink_bandwidth="900 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=132, usd_per_gpu_hour=3.8),
        GpuSpec(name="A100", bf16_tflops=312, hbm="80 GB", hbm_bandwidth="2.039 TB/s",
                nvlink_bandwidth="600 GB/s", pcie_bandwidth="32 GB/s",
                network_bandwidth="200 Gb/s", sm_count=108, usd_per_gpu_hour=1.8),
    )
}

# Architectures from each model's public config.json.
MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        ModelSpec(name="qwen2.5-0.5b", layers=24, hidden=896, heads=14, kv_heads=2, ffn=4864,
                  vocab=151936, tied_embeddings=True),
        ModelSpec(name="qwen2.5-1.5b", layers=28, hidden=1536, heads=12, kv_heads=2, ffn=8960,
                  vocab=151936, tied_embeddings=True),
        ModelSpec(name="qwen2.5-3b", layers=36, hidden=2048, heads=16, kv_heads=2, ffn=11008,
                  vocab=151936, tied_embeddings=True),
        ModelSpec(name="qwen2.5-7b", layers=28, hidden=3584, heads=28, kv_heads=4, ffn=18944,
                  vocab=152064),
        ModelSpec(name="qwen2.5-14b", layers=48, hidden=5120, heads=40, kv_heads=8, ffn=13824,
                  vocab=152064),
        ModelSpec(name="qwen2.5-32b", layers=64, hidden=5120, heads=40, kv_heads=8, ffn=27648,
                  vocab=152064),
        ModelSpec(name="qwen2.5-72b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=29568,
                  vocab=152064),
        ModelSpec(name="qwen3-8b", layers=36, hidden=4096, heads=32, kv_heads=8, head_dim=128,
                  ffn=12288, vocab=151936),
        ModelSpec(name="qwen3-14b", layers=40, hidden=5120, heads=40, kv_heads=8, head_dim=128,
                  ffn=17408, vocab=151936),
        ModelSpec(name="qwen3-32b", layers=64, hidden=5120, heads=64, kv_heads=8, head_dim=128,
                  ffn=25600, vocab=151936),
        ModelSpec(name="llama-2-7b", layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008,
                  vocab=32000),
        ModelSpec(name="llama-2-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672,
                  vocab=32000),
        ModelSpec(name="llama-3-8b", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336,
                  vocab=128256),
        ModelSpec(name="llama-3-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672,
                  vocab=128256),
    )
}


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
