"""Calibrated hardware profile: every efficiency and overhead constant the cost models use.

Owns the `Profile` schema (frozen pydantic, with provenance, fit error and a content hash),
the built-in per-GPU profiles shipped as package data in `rlsim/cost/profiles/*.json`
(written offline by `calibration/fit_vidur.py`; nothing is fitted at simulation start), and
loading of user profiles. Peaks and bandwidths are not constants here: they come from
`GpuSpec`; a profile only says which fraction of them real kernels achieve, so one fitted
profile transfers to GPUs of the same architecture with other spec numbers. A profile
calibrated on a local device (`calibration/fit.py`) also carries that device's measured spec
(`device`), its compute dtype, the raw measurements and the held-back error of the fit.

`content_hash()` covers everything that changes a prediction (the constants, `gpu`,
`device`, `dtype_bytes`) and excludes provenance, `meta`, `measurements`, `fit_error` and
`held_back_error`, so re-running a calibration that lands on the same constants keeps the hash.
Sources of every default are in docs/cost-model.md and docs/calibration.md.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlsim.config.hardware import GpuSpec

PROFILE_DIR = Path(__file__).with_name("profiles")
GENERIC_PROFILE = "generic"

# Output-tile shapes (tokens x weight columns) of BF16 GEMM kernels on Ampere/Hopper. The
# 8-32-token tiles are the small-M ("swap-AB") kernels libraries use for decode GEMMs, where
# the token dimension becomes the MMA's narrow N side (mma n8 / wgmma N>=8). The model picks
# the fastest tile, as the library heuristics try to.
DEFAULT_GEMM_TILES: tuple[tuple[int, int], ...] = (
    (8, 128), (16, 128), (32, 128), (64, 64), (64, 128), (128, 128), (128, 256), (256, 128),
)


# Fields that record where a profile came from but never change a prediction.
PROVENANCE_FIELDS = frozenset(
    {"provenance", "fit_error", "held_back_error", "meta", "measurements"}
)


class Profile(BaseModel):
    """Efficiencies and fixed overheads for one GPU type (see docs/cost-model.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu: str = Field(description="GPU type the constants were fitted or chosen for.")
    provenance: str = Field(description="Where the constants come from (data, script, date).")
    fit_error: dict[str, float] = Field(
        default_factory=dict,
        description="Fit quality, e.g. linear-layer MAPE per TP degree (fractions, not %).",
    )
    held_back_error: dict[str, float] = Field(
        default_factory=dict,
        description=(
            "MAPE per benchmark on grid points held back from the fit (fractions, not %); "
            "empty for profiles not calibrated by calibration/fit.py."
        ),
    )
    meta: dict[str, str] = Field(
        default_factory=dict,
        description="Calibration facts: device name, torch version, host, date, quick/full.",
    )
    device: GpuSpec | None = Field(
        default=None,
        description=(
            "Spec of the calibrated device (peak FLOP/s, memory, achieved bandwidths, cores "
            "or SMs); a pool may use it as its GPU. None for the built-in GPU profiles, "
            "whose specs come from the catalogue."
        ),
    )
    dtype_bytes: int = Field(
        default=2, gt=0,
        description=(
            "Bytes per element of the compute dtype the constants hold for (2 for BF16, "
            "4 for a float32 CPU profile); the cost models use it unless told otherwise."
        ),
    )

    # --- GEMM (linear layers): tile/wave quantization + weight streaming + launch ---
    hbm_efficiency: float = Field(
        gt=0, le=1,
        description="Achieved fraction of HBM bandwidth when streaming weights or KV cache.",
    )
    kernel_launch_s: float = Field(
        ge=0, description="Fixed per-kernel latency of a GEMM or attention kernel, seconds."
    )
    gemm_peak_efficiency: float = Field(
        gt=0, le=1, description="Tensor-core efficiency of an infinitely large output tile."
    )
    gemm_tile_overhead_elems: float = Field(
        ge=0,
        description=(
            "Per-k-step operand cost of a tile in elements: tile efficiency = "
            "gemm_peak_efficiency / (1 + this * (tm + tn) / (tm * tn))."
        ),
    )
    gemm_overlap_exponent: float = Field(
        ge=1,
        description=(
            "p of the smooth max (t_compute^p + t_memory^p)^(1/p): imperfect overlap of the "
            "tile compute and weight streaming pipelines (p -> inf is a plain roofline)."
        ),
    )
    gemm_tiles: tuple[tuple[int, int], ...] = Field(
        default=DEFAULT_GEMM_TILES, min_length=1,
        description="Candidate output tiles (tokens x weight columns) of the GEMM kernels.",
    )
    gemm_splitk_min_k: int = Field(
        default=256, gt=0,
        description="Smallest K slice of a split-K GEMM (skinny GEMMs split K to fill SMs).",
    )
    gemm_gemv_max_rows: int = Field(
        default=0, ge=0,
        description=(
            "GEMMs of at most this many token rows run as one matrix-vector product per row, "
            "each streaming the whole weight matrix (a CPU BLAS's small-M path); 0: none "
            "(GPU kernels run any M as one GEMM)."
        ),
    )
    gemm_weight_passes: float = Field(
        default=1.0, gt=0,
        description=(
            "Times a (non-GEMV) GEMM streams its weight matrix from memory: 1 on GPUs; a CPU "
            "BLAS first packs the weights into a blocked copy (read, write, read again)."
        ),
    )
    gemm_pack_row_elems: float = Field(
        default=0.0, ge=0,
        description=(
            "Fixed cost of packing one weight row (one output column) in a non-GEMV GEMM, in "
            "elements streamed at the weight bandwidth, independent of K: a CPU BLAS gathers "
            "each weight row into its blocked copy separately, so short rows (small K) cost "
            "more per element; 0 on GPUs (no packing)."
        ),
    )

    # --- caches (microbenchmarks only) ---
    cache_bytes: float = Field(
        default=0.0, ge=0,
        description=(
            "Effective last-level cache, bytes: a microbenchmark repeating one kernel on "
            "operands that fit finds them in cache (engines never do: weights and KV caches "
            "are far larger). 0: not modelled."
        ),
    )
    cache_speedup: float = Field(
        default=1.0, ge=1,
        description="How many times faster memory streams run from that cache than from HBM.",
    )

    # --- elementwise kernels: activation, norms, rotary, residual adds, embedding ---
    elementwise_hbm_efficiency: float = Field(
        gt=0, le=1, description="Achieved fraction of HBM bandwidth of elementwise kernels."
    )
    elementwise_launch_s: float = Field(
        ge=0, description="Fixed per-kernel latency of an elementwise kernel, seconds."
    )
    activation_hbm_efficiency: float | None = Field(
        default=None, gt=0, le=1,
        description=(
            "Achieved fraction of HBM bandwidth of the MLP activation (SiLU(gate) * up); "
            "None: elementwise_hbm_efficiency."
        ),
    )
    activation_launch_s: float | None = Field(
        default=None, ge=0,
        description=(
            "Fixed latency of the MLP activation, seconds (several ops when run eagerly); "
            "None: elementwise_launch_s."
        ),
    )
    norm_launch_s: float | None = Field(
        default=None, ge=0,
        description=(
            "Fixed latency of one RMSNorm, seconds (several ops when run eagerly); None: "
            "elementwise_launch_s."
        ),
    )
    norm_hbm_efficiency: float | None = Field(
        default=None, gt=0, le=1,
        description=(
            "Achieved fraction of HBM bandwidth of RMSNorm kernels (a reduction over the "
            "hidden size before the scaled write); None: elementwise_hbm_efficiency."
        ),
    )
    rotary_hbm_efficiency: float | None = Field(
        default=None, gt=0, le=1,
        description=(
            "Achieved fraction of HBM bandwidth of the rotary-embedding kernel; None: "
            "elementwise_hbm_efficiency."
        ),
    )

    # --- attention ---
    attention_flops_efficiency: float = Field(
        default=0.5, gt=0, le=1,
        description="Achieved fraction of BF16 peak of prefill attention (FlashAttention).",
    )
    attention_decode_flops_efficiency: float | None = Field(
        default=None, gt=0, le=1,
        description=(
            "Achieved fraction of peak FLOP/s of decode attention (a few query rows per KV "
            "head); None: attention_flops_efficiency."
        ),
    )
    attention_q_block_tiers: tuple[tuple[int, int], ...] = Field(
        default=((0, 1),), min_length=1,
        description=(
            "(from chunk tokens, query rows per block) of the prefill attention kernel: for "
            "each query block a causal kernel computes every key block up to the block's last "
            "row, masked or not. ((0, 1),) with attention_kv_block_tokens 1: the exact causal "
            "half."
        ),
    )
    attention_kv_block_tokens: int = Field(
        default=1, gt=0,
        description="Keys per block of the prefill attention kernel (see attention_q_block_tiers).",
    )
    attention_decode_hbm_efficiency: float | None = Field(
        default=None, gt=0, le=1,
        description=(
            "Achieved fraction of HBM bandwidth when decode attention reads the KV cache; "
            "None: the same as hbm_efficiency (the built-in profiles: no attention data)."
        ),
    )
    attention_launch_s: float | None = Field(
        default=None, ge=0,
        description=(
            "Fixed latency of one prefill attention call, seconds; None: the same as "
            "kernel_launch_s."
        ),
    )
    attention_decode_launch_s: float | None = Field(
        default=None, ge=0,
        description=(
            "Fixed latency of one decode attention call, seconds; None: the same as "
            "attention_launch_s."
        ),
    )
    layer_overhead_s: float = Field(
        default=0.0, ge=0,
        description=(
            "Fixed time per transformer layer beyond the modelled kernels (dispatch of the "
            "small unfused ops of eager execution: views, KV append, residual adds), seconds; "
            "0 on GPUs (fused kernels under CUDA graphs)."
        ),
    )

    # --- communication ---
    allreduce_latency_s: float = Field(
        ge=0, description="Fixed latency of one NCCL all-reduce inside a node, seconds."
    )
    allreduce_bus_efficiency: float = Field(
        gt=0, le=1,
        description="Achieved fraction of one-direction NVLink bandwidth by ring all-reduce.",
    )
    pcie_efficiency: float = Field(
        default=0.8, gt=0, le=1, description="Achieved fraction of PCIe host<->device bandwidth."
    )
    network_efficiency: float = Field(
        default=0.8, gt=0, le=1, description="Achieved fraction of inter-node network bandwidth."
    )

    # --- rollout engine ---
    decode_overhead_s: float = Field(
        default=2e-3, ge=0,
        description="Fixed CPU/scheduler time per engine iteration (vLLM-like), seconds.",
    )
    decode_overhead_per_seq_s: float = Field(
        default=0.0, ge=0,
        description=(
            "Extra CPU time per engine iteration for each sequence in it (decoding, or "
            "prefilling a chunk): scheduler, block-table and sampler bookkeeping that grows "
            "with the batch, seconds."
        ),
    )
    v0_decode_overhead_per_seq_s: float = Field(
        default=90e-6, ge=0,
        description=(
            "What vLLM's V0 engine loop run synchronously adds per sequence of every "
            "iteration (rollout.vllm_v0): its sampling, input preparation, output "
            "processing and scheduling between GPU steps, ~20 ms at 200 running sequences "
            "in vLLM v0.5 (vLLM RFC #6801), seconds. V0's async output processing (0.6+, "
            "with CUDA graphs) and the V1 engine overlap most of it with the GPU step."
        ),
    )
    prefill_overhead_s: float = Field(
        default=0.0, ge=0,
        description=(
            "Extra fixed CPU time of an engine iteration that prefills (varlen attention "
            "metadata, packing the new prompts, the second attention path of a mixed "
            "batch), seconds."
        ),
    )
    eager_launch_s: float = Field(
        default=1.0e-5, ge=0,
        description=(
            "CPU time to dispatch one kernel from eager PyTorch (Python module call, ATen "
            "dispatch, cudaLaunchKernel), seconds: paid per kernel of an iteration when the "
            "engine runs without CUDA graphs (rollout.cuda_graphs false, vLLM "
            "enforce_eager); graph replay launches the whole decode step at once."
        ),
    )
    router_imbalance: float = Field(
        default=1.3, ge=1,
        description=(
            "Tokens routed to the busiest expert-parallel rank of a MoE layer over the mean "
            "(max / mean load) in inference; with rollout.ep > 1 that rank's expert GEMMs "
            "gate the layer. 1: perfectly balanced."
        ),
    )
    engine_memory_reserve_bytes: float = Field(
        default=3.0 * 2**30, ge=0,
        description=(
            "Per-GPU memory an engine keeps out of the KV cache: peak activations of the "
            "profile run, CUDA-graph pool, NCCL/cuBLAS workspaces, bytes."
        ),
    )
    engine_cold_start_s: float = Field(
        default=80.0, ge=0,
        description=(
            "Fixed part of an engine cold start (process, CUDA/NCCL init, profiling, graph "
            "capture), seconds; checkpoint loading is added on top."
        ),
    )
    checkpoint_load_bandwidth_bytes_per_s: float = Field(
        default=2e9, gt=0,
        description="Rate an engine reads its checkpoint from storage on a cold start, B/s.",
    )
    engine_warm_start_base_s: float = Field(
        default=1.5, ge=0,
        description="Fixed part of a warm start from host memory (wake, re-map), seconds.",
    )

    # --- environment sandboxes ---
    sandbox_checkpoint_base_s: float = Field(
        default=0.2, ge=0,
        description=(
            "Fixed part of checkpointing a sandbox (process state dump, snapshot set-up), "
            "seconds."
        ),
    )
    sandbox_checkpoint_bandwidth_bytes_per_s: float = Field(
        default=5e8, gt=0,
        description="Rate a sandbox's directory tree is snapshotted to local disk, B/s.",
    )
    sandbox_checkpoint_per_file_s: float = Field(
        default=2e-5, ge=0,
        description="Extra checkpoint time per file of the tree (create, open, close), seconds.",
    )
    sandbox_restore_base_s: float = Field(
        default=0.1, ge=0,
        description="Fixed part of restoring a sandbox from its checkpoint, seconds.",
    )
    sandbox_restore_bandwidth_bytes_per_s: float = Field(
        default=1e9, gt=0,
        description="Rate a sandbox's directory tree is restored from its snapshot, B/s.",
    )
    sandbox_restore_per_file_s: float = Field(
        default=2e-5, ge=0,
        description="Extra restore time per file of the tree (create, open, close), seconds.",
    )

    # --- trainer ---
    train_mfu: float = Field(
        default=0.40, gt=0, le=1,
        description="Achieved fraction of BF16 peak on executed training FLOPs.",
    )
    forward_mfu: float | None = Field(
        default=None, gt=0, le=1,
        description=(
            "Achieved fraction of BF16 peak of a forward-only pass (reference / old "
            "log-probs, no autograd); None: train_mfu."
        ),
    )
    train_step_overhead_s: float = Field(
        default=0.0, ge=0,
        description=(
            "Fixed time per optimizer step beyond its FLOPs and Adam traffic (kernel launch "
            "and Python dispatch, loss, zero_grad), seconds."
        ),
    )
    forward_overhead_s: float = Field(
        default=0.0, ge=0,
        description="Fixed time per forward-only pass beyond its FLOPs, seconds.",
    )
    train_comm_overlap_fraction: float = Field(
        default=0.8, ge=0, le=1,
        description="Fraction of the DP gradient/parameter traffic overlapped with compute.",
    )
    train_dp_comm_bytes_per_param: float = Field(
        default=6.0, gt=0,
        description="DP traffic per parameter: fp32 gradient reduce-scatter + bf16 all-gather.",
    )
    train_state_bytes_per_param: float = Field(
        default=16.0, gt=0,
        description="Trainer state per parameter: bf16 params+grads, fp32 master + Adam m, v.",
    )
    train_optimizer_bytes_per_param: float = Field(
        default=30.0, gt=0,
        description="HBM traffic of one Adam update per parameter (reads + writes), bytes.",
    )
    cpu_adam_params_per_s: float = Field(
        default=0.64e9, gt=0,
        description=(
            "Parameters per second one training process updates with the CPU AdamW of "
            "Megatron's hybrid CPU optimizer (train.optimizer_offload_fraction) when it has "
            "the host to itself (its gradient and parameter copies are priced apart): "
            "NVIDIA-NeMo/RL PR 3628, one H100, Qwen3-0.6B (0.596 B parameters), step "
            "0.752 s -> 1.678 s at 100% offload with the copies overlapped "
            "(docs/cost-model.md section 3, 'Hybrid CPU optimizer')."
        ),
    )
    cpu_adam_node_params_per_s: float = Field(
        default=1.14e9, gt=0,
        description=(
            "Parameters per second one host's CPUs update in all when every training "
            "process on the node runs its CPU AdamW step at once (they share the host's "
            "cores and memory bandwidth): ISEEKYAN/Megatron-LM issue 188, veRL on 2 nodes x 8 "
            "GPUs, Qwen3.5-35B-A3B, Megatron distributed optimizer fully offloaded, 15.5 s "
            "per step for about 2.2 B parameters per process."
        ),
    )

    # --- provenance (last: long) ---
    measurements: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Every raw measurement the constants were fitted to, verbatim.",
    )

    @property
    def decode_attention_hbm_efficiency(self) -> float:
        """attention_decode_hbm_efficiency, or hbm_efficiency when unset."""
        e = self.attention_decode_hbm_efficiency
        return self.hbm_efficiency if e is None else e

    @property
    def decode_attention_flops_efficiency(self) -> float:
        """attention_decode_flops_efficiency, or attention_flops_efficiency when unset."""
        e = self.attention_decode_flops_efficiency
        return self.attention_flops_efficiency if e is None else e

    @property
    def forward_pass_mfu(self) -> float:
        """forward_mfu, or train_mfu when unset."""
        e = self.forward_mfu
        return self.train_mfu if e is None else e

    def attention_q_block(self, tokens: int) -> int:
        """Query rows per block of a prefill chunk of `tokens` tokens."""
        rows = self.attention_q_block_tiers[0][1]
        for start, block in self.attention_q_block_tiers:
            if tokens >= start:
                rows = block
        return rows

    @property
    def attention_fixed_s(self) -> float:
        """attention_launch_s, or kernel_launch_s when unset."""
        t = self.attention_launch_s
        return self.kernel_launch_s if t is None else t

    @property
    def decode_attention_fixed_s(self) -> float:
        """attention_decode_launch_s, or attention_fixed_s when unset."""
        t = self.attention_decode_launch_s
        return self.attention_fixed_s if t is None else t

    def sandbox_checkpoint_s(self, tree_bytes: float, files: int) -> float:
        """Checkpoint a sandbox: fixed part + its tree's bytes and files."""
        return (self.sandbox_checkpoint_base_s
                + tree_bytes / self.sandbox_checkpoint_bandwidth_bytes_per_s
                + files * self.sandbox_checkpoint_per_file_s)

    def sandbox_restore_s(self, tree_bytes: float, files: int) -> float:
        """Restore a sandbox from its checkpoint: fixed part + its tree's bytes and files."""
        return (self.sandbox_restore_base_s
                + tree_bytes / self.sandbox_restore_bandwidth_bytes_per_s
                + files * self.sandbox_restore_per_file_s)

    def content_hash(self) -> str:
        """sha256 of the canonical JSON of everything that changes a prediction.

        Covers the constants, `gpu`, `device` and `dtype_bytes`; excludes the provenance
        fields (`PROVENANCE_FIELDS`: provenance, fit and held-back error, meta, raw
        measurements), which describe where the constants came from.
        """
        data = self.model_dump(mode="json", exclude=set(PROVENANCE_FIELDS))
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=False) + "\n"


def _one_line(err: ValidationError) -> str:
    parts = []
    for item in err.errors():
        loc = ".".join(str(x) for x in item["loc"]) or "(root)"
        parts.append(f"{loc}: {item['msg']}")
    return "; ".join(parts)


def load_profile(path: str | Path) -> Profile:
    """Load a profile JSON; ValueError with a one-line reason on any bad content."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as exc:
        raise ValueError(f"cannot read profile {p}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"profile {p} is not valid JSON: {exc.msg} at line {exc.lineno}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"profile {p} must be a JSON object, got {type(data).__name__}")
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"bad profile {p}: {_one_line(exc)}") from exc


_BUILTIN_CACHE: dict[str, Profile] = {}


def _builtin(name: str) -> Profile:
    prof = _BUILTIN_CACHE.get(name)
    if prof is None:
        prof = load_profile(PROFILE_DIR / f"{name}.json")
        _BUILTIN_CACHE[name] = prof
    return prof


def builtin_profile(gpu: GpuSpec) -> Profile:
    """Built-in profile of a catalogue GPU type; the generic profile for any other GPU."""
    name = gpu.name.lower()
    # Compare against the shipped file names instead of building a path from user input.
    shipped = {f.stem for f in PROFILE_DIR.glob("*.json")}
    return _builtin(name if name in shipped else GENERIC_PROFILE)
