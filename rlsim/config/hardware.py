"""GPU and model architecture specs, the built-in catalogues of both, and model files.

Owns `GpuSpec` and `ModelSpec` (frozen pydantic models that scenarios may also write
inline), the derived quantities every cost model needs (parameter count, weight bytes,
KV bytes per token), and the one loader of a model architecture file (YAML/JSON) that
scenarios and `rlsim estimate` share. Figures come from public spec sheets, the memory the
cards report (nvidia-smi), and each model's Hugging Face config.json.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rlsim.config.units import Bytes, BytesPerSecond


class GpuSpec(BaseModel):
    """One GPU type: peak compute, memory, and the links a node of them has."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(description="GPU type name, e.g. H800.")
    bf16_tflops: float = Field(gt=0, description="Dense BF16 peak, TFLOP/s.")
    hbm: Bytes = Field(
        gt=0, description="GPU memory as the card reports it (nvidia-smi's total), e.g. "
        "'81559 MiB' for an H100 80GB: an '80 GB' part is neither 80e9 bytes nor 80 GiB.")
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
    max_context: int | None = Field(
        default=None, gt=0,
        description="Longest sequence (prompt + response) the model supports, tokens: "
        "config.json's max_position_embeddings. None: not checked.")

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
# PCIe: Gen5 x16 = 64 GB/s per direction (Hopper), Gen4 x16 = 32 GB/s (A100).
# Prices: H800 : H20 = 2.85 : 1 [P RollMux]; the others are typical 2025 cloud list prices
# [S], documented defaults that a pool's `usd_per_gpu_hour` overrides.
GPUS: dict[str, GpuSpec] = {
    g.name: g
    for g in (
        GpuSpec(name="H100", bf16_tflops=989, hbm="81559 MiB", hbm_bandwidth="3.35 TB/s",
                nvlink_bandwidth="900 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=132, usd_per_gpu_hour=3.0),
        GpuSpec(name="H800", bf16_tflops=989, hbm="81559 MiB", hbm_bandwidth="3.35 TB/s",
                nvlink_bandwidth="400 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=132, usd_per_gpu_hour=2.85),
        GpuSpec(name="H20", bf16_tflops=148, hbm="97871 MiB", hbm_bandwidth="4.0 TB/s",
                nvlink_bandwidth="900 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=78, usd_per_gpu_hour=1.0),
        GpuSpec(name="H200", bf16_tflops=989, hbm="143771 MiB", hbm_bandwidth="4.8 TB/s",
                nvlink_bandwidth="900 GB/s", pcie_bandwidth="64 GB/s",
                network_bandwidth="400 Gb/s", sm_count=132, usd_per_gpu_hour=3.8),
        GpuSpec(name="A100", bf16_tflops=312, hbm="81920 MiB", hbm_bandwidth="2.039 TB/s",
                nvlink_bandwidth="600 GB/s", pcie_bandwidth="32 GB/s",
                network_bandwidth="200 Gb/s", sm_count=108, usd_per_gpu_hour=1.8),
    )
}

# Architectures from each model's public config.json; max_context is its
# max_position_embeddings. Qwen2.5 names are the base models (7B-72B: 131,072; 0.5B-3B:
# 32,768; the 7B-72B Instruct configs say 32,768 and reach 131,072 with YaRN). Llama 3.1
# has Llama 3's architecture with a 131,072-token context (Llama 3: 8,192).
MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
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
        ModelSpec(name="qwen3-8b", layers=36, hidden=4096, heads=32, kv_heads=8, head_dim=128,
                  ffn=12288, vocab=151936, max_context=40960),
        ModelSpec(name="qwen3-14b", layers=40, hidden=5120, heads=40, kv_heads=8, head_dim=128,
                  ffn=17408, vocab=151936, max_context=40960),
        ModelSpec(name="qwen3-32b", layers=64, hidden=5120, heads=64, kv_heads=8, head_dim=128,
                  ffn=25600, vocab=151936, max_context=40960),
        ModelSpec(name="llama-2-7b", layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008,
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
    from rlsim.config.loading import parse_yaml

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
