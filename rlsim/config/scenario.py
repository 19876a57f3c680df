"""The scenario schema: one frozen pydantic model describing a whole RL job.

Owns the shape of a scenario file (pools, rollout engines, trainer, rewards, environment
workers, workload, policy, links) with help text on every field, and the cross-field checks
that need no cost model (pool names, TP against node size, placement). Checks that need a
cost model (does the model fit in GPU memory) or the trace are the prepare step's
(rlsim/prepare.py). A policy's own settings (policy.schedule, policy.tail_batching,
policy.asynchronous) are declared with the policy, in `config/policies/<name>.py`;
`PolicyConfig` composes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from rlsim.config import policy_caps
from rlsim.config.base import Frozen
from rlsim.config.faults import FaultsConfig, HorizonConfig, RecoveryConfig
from rlsim.config.frameworks import FrameworkName, profiles
from rlsim.config.hardware import (
    GpuSpec,
    ModelSpec,
    is_model_file,
    load_model_file,
    lookup_gpu,
    lookup_model,
)
from rlsim.config.policies.asynchronous import AsyncConfig
from rlsim.config.policies.sync import ScheduleConfig
from rlsim.config.policies.tail_batching import TailBatchingConfig
from rlsim.config.units import Bytes, BytesPerSecond, Seconds
from rlsim.config.unknowns import Unknown
from rlsim.config.workload import WorkloadConfig


class PoolConfig(Frozen):
    """A named set of GPUs of one type."""

    name: str = Field(description="Pool name that rollout/train/reward placements refer to.")
    gpu: str | GpuSpec | None = Field(
        default=None,
        description="GPU type: a catalogue name (rlsim list gpus) or an inline GPU spec. "
        "May be omitted when `profile` is a calibrated profile that carries its device spec.",
    )
    profile: str | None = Field(
        default=None,
        description="Calibrated profile JSON for this pool (`rlsim calibrate`), relative to "
        "the scenario file or the working directory. Its constants replace the GPU type's "
        "built-in profile; a measured `device` spec in it becomes the pool's GPU.",
    )
    nodes: int = Field(gt=0, description="Number of nodes in the pool.")
    gpus_per_node: int | None = Field(
        default=None, gt=0, description="GPUs per node; default the GPU type's (8)."
    )
    usd_per_gpu_hour: float | None = Field(
        default=None, ge=0, description="Price per GPU-hour in USD; default the GPU's list price."
    )
    host_memory: Bytes = Field(
        default=2 * 2**40, gt=0, description="Host DRAM per node, e.g. '2 TiB'.")

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, value: str | GpuSpec | None) -> str | GpuSpec | None:
        if isinstance(value, str):
            try:
                lookup_gpu(value)
            except KeyError as err:
                raise ValueError(str(err.args[0])) from None
        return value

    @model_validator(mode="after")
    def _gpu_or_profile(self) -> PoolConfig:
        if self.gpu is None and self.profile is None:
            raise ValueError("give `gpu` (a catalogue name or inline spec) or a calibrated "
                             "`profile`")
        return self

    @property
    def gpu_spec(self) -> GpuSpec:
        if isinstance(self.gpu, GpuSpec):
            return self.gpu
        if self.gpu is None:
            raise RuntimeError(f"pool {self.name}: profile device not resolved; load the "
                               "scenario with rlsim.config.loading")
        return lookup_gpu(self.gpu)

    @property
    def node_size(self) -> int:
        return self.gpus_per_node or self.gpu_spec.gpus_per_node

    @property
    def gpus(self) -> int:
        return self.nodes * self.node_size

    @property
    def nvlink_domain(self) -> int:
        """GPUs that reach each other over NVLink: the node, or the GPU type's NVLink domain
        where it joins several nodes (a GB200 NVL72 rack of 4-GPU trays). Host memory and
        NICs stay per node (`node_size`). Within a wider domain rlsim takes a power-of-two
        count of whole nodes (trays of 4 in a rack of 72 -> 64), so power-of-two TP, EP and
        engine groups, laid out on consecutive GPUs, never straddle two racks."""
        node, domain = self.node_size, self.gpu_spec.nvlink_domain_gpus
        if domain is None or domain <= node:
            return node
        nodes = 1
        while node * nodes * 2 <= domain:
            nodes *= 2
        return node * nodes

    @property
    def price(self) -> float:
        p = self.usd_per_gpu_hour
        return self.gpu_spec.usd_per_gpu_hour if p is None else p


def known_model(value: str | ModelSpec, base_dir: Path | None = None) -> str | ModelSpec:
    """`value`, the architecture in a YAML/JSON model file it names (relative to `base_dir`,
    the scenario's folder), or a ValueError naming an unknown catalogue name or a bad file
    (inline specs pass)."""
    if isinstance(value, str):
        if is_model_file(value, base_dir):
            return load_model_file(value, base_dir)  # ModelFileError is a ValueError
        try:
            lookup_model(value)
        except KeyError as err:
            raise ValueError(f"{err.args[0]} (or a YAML/JSON model file, docs/models.md)"
                             ) from None
    return value


def unique_pools(pools: list[PoolConfig]) -> list[PoolConfig]:
    """`pools`, or a ValueError naming the repeated pool names."""
    names = [p.name for p in pools]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"pool names must be unique; repeated: {', '.join(dupes)}")
    return pools


class RolloutConfig(Frozen):
    """Rollout engines: vLLM/SGLang-like servers, one per `tp` x `pp` GPUs."""

    pool: str = Field(description="Pool the engines run on.")
    gpus: int | None = Field(
        default=None, gt=0,
        description="GPUs of the pool used for rollout; default all of it (colocated or a "
        "pool of its own) or half of it (disaggregated sharing one pool).",
    )
    tp: int = Field(
        default=1, gt=0,
        description="Tensor-parallel degree of each engine (vLLM `tensor_parallel_size`; "
        "NeMo-RL: policy.generation.vllm_cfg.tensor_parallel_size). Up to a node, or a "
        "whole number of nodes: an engine spanning nodes runs its TP all-reduces over the "
        "network (NVLink inside each node).")
    max_running_seqs: int = Field(
        default=256, gt=0, description="Cap on running sequences per engine (vLLM max_num_seqs)."
    )
    max_batched_tokens: int = Field(
        default=8192, gt=0,
        description="Token budget per iteration (chunked prefill mixes prefill with decodes).",
    )
    gpu_memory_utilization: float = Field(
        default=0.9, gt=0, le=1, description="Fraction of GPU memory the engine may use."
    )
    prefix_caching: bool = Field(
        default=False,
        description="Keep finished contexts in the free KV cache (LRU) so the next turn of a "
        "multi-turn trajectory prefills only its new tokens (vLLM automatic prefix "
        "caching); evicted contexts are recomputed.",
    )
    request_overhead: Seconds = Field(
        default=0.0, ge=0, le=1,
        description="Engine-loop CPU seconds per request event (each request admitted and "
        "each finished) that stall the engine's next iteration, e.g. '50 us': the serving "
        "loop's per-request work between GPU steps (vLLM's add_request/scheduling and "
        "output processing and detokenization of finished requests; SGLang's "
        "scheduler receiving requests and processing batch results), plus a driver's own "
        "handling of each request in the same thread. 0: not modelled.",
    )
    cuda_graphs: bool = Field(
        default=True,
        description="Decode iterations replay captured CUDA graphs (vLLM's default). false = "
        "vLLM `enforce_eager: true` (veRL: actor_rollout_ref.rollout.enforce_eager): the CPU "
        "dispatches every kernel of every layer, eager_launch_s each (profile constant).",
    )
    vllm_v0: bool = Field(
        default=False,
        description="The engines run vLLM's V0 engine loop synchronously: the sampling, "
        "input preparation, output processing and scheduling between GPU steps, which "
        "grow with the batch, are not overlapped with the step, v0_decode_overhead_per_seq_s "
        "per sequence of every iteration (profile constant, vLLM RFC #6801). That is V0 "
        "before vLLM 0.6, or V0 (VLLM_USE_V1=0, or a fallback such as vLLM 0.8 with "
        "VLLM_ATTENTION_BACKEND=XFORMERS) run eager, which turns its async output "
        "processing off (vLLM logs 'async output processor cannot be used'). false: V1 "
        "(vLLM's default from 0.8), SGLang, or V0 0.6+ with CUDA graphs, whose async "
        "output processing overlaps most of that work.",
    )
    dtype: Literal["bf16", "fp8"] = Field(
        default="bf16",
        description="Rollout weights. fp8: 1 byte per layer weight (vLLM `quantization: "
        "fp8`, dynamic per-token activation scales), GEMMs at the GPU's FP8 peak, half the "
        "weight memory and weight streaming; the embedding and LM head stay BF16. Needs a GPU "
        "with FP8 (fp8_tflops).",
    )
    kv_cache_dtype: Literal["auto", "fp8"] = Field(
        default="auto",
        description="KV-cache element type (vLLM `kv_cache_dtype`): auto = the compute dtype "
        "(BF16); fp8 = 1 byte per element, twice the KV tokens and half the KV bytes read per "
        "decode step.",
    )
    ep: int = Field(
        default=1, gt=0,
        description="Expert-parallel degree of a MoE model inside one engine (vLLM "
        "`enable_expert_parallel`; SGLang `--ep-size`): routed experts split ep ways over the "
        "engine's tp GPUs (ep must divide tp and the experts), tokens sent to their experts' "
        "GPUs and back by an all-to-all per MoE layer. 1: every expert TP-sharded.",
    )
    pp: int = Field(
        default=1, gt=0,
        description="Pipeline-parallel stages of each engine (vLLM `pipeline_parallel_size`; "
        "NeMo-RL: policy.generation.vllm_cfg.pipeline_parallel_size): the layers split pp "
        "ways, each stage on tp GPUs, so an engine takes tp x pp GPUs (a whole number of "
        "nodes when more than one) and pp micro-batches of its batch are in flight. 1: no "
        "pipeline.",
    )


class TrainConfig(Frozen):
    """The trainer: DP x TP x PP x CP over a pool."""

    pool: str = Field(description="Pool the trainer runs on.")
    gpus: int | None = Field(
        default=None, gt=0, description="GPUs of the pool used for training; default as rollout."
    )
    tp: int = Field(default=1, gt=0, description="Tensor-parallel degree (megatron; fsdp2: "
                    "DTensor TP, NeMo-RL dtensor_cfg.tensor_parallel_size).")
    pp: int = Field(default=1, gt=0, description="Pipeline-parallel degree.")
    cp: int = Field(default=1, gt=0, description="Context-parallel degree.")
    recompute_activations: bool = Field(
        default=True, description="Activation recomputation (x 4/3 compute)."
    )
    micro_batch_tokens: int = Field(
        default=16384, gt=0, description="Tokens per micro-batch (sets pipeline micro-batches)."
    )
    mfu: float | None = Field(
        default=None, gt=0, le=1,
        description="Achieved fraction of BF16 peak of this trainer's software, for its "
        "training steps and forward passes alike (None: the pool profile's train_mfu and "
        "forward_mfu). For a framework measured end to end rather than per kernel.",
    )
    ref_logprob: bool = Field(
        default=True, description="Compute reference-policy log-probs (a forward pass)."
    )
    old_logprob: bool = Field(
        default=True, description="Recompute old-policy log-probs (a forward pass)."
    )
    # --- the framework layer (issue 19; docs/cost-model.md section 3) ---
    backend: Literal["megatron", "fsdp", "fsdp2", "profile"] = Field(
        default="megatron",
        description="Training framework backend whose constants price the step per kernel "
        "(veRL: actor_rollout_ref.actor.strategy): megatron (TP/PP/CP/EP, distributed "
        "optimizer), fsdp or fsdp2 (ZeRO-3, pp = 1, cp is Ulysses sequence parallelism; tp = 1 "
        "for fsdp, DTensor TP for fsdp2); "
        "profile: the pool profile's whole-step train_mfu / forward_mfu, for a trainer "
        "calibrated end to end. Setting `mfu` also prices by MFU.")
    recompute: Literal["none", "selective", "full"] | None = Field(
        default=None,
        description="Activation recomputation: none, selective (attention core again in the "
        "backward; Megatron recompute_granularity: selective) or full (the whole forward "
        "again; veRL enable_gradient_checkpointing). None: full if recompute_activations.")
    ppo_mini_batch_size: int | None = Field(
        default=None, gt=0,
        description="Prompts per optimizer step (veRL actor_rollout_ref.actor."
        "ppo_mini_batch_size, in prompts: all their samples go in); None: one optimizer step "
        "per RL step.")
    ppo_epochs: int = Field(
        default=1, gt=0, description="Passes over the step's samples (veRL "
        "actor_rollout_ref.actor.ppo_epochs).")
    micro_batch_size_per_gpu: int | None = Field(
        default=None, gt=0,
        description="Samples per micro-batch of one model replica (veRL "
        "ppo_micro_batch_size_per_gpu): fsdp pads each to the micro-batch's longest, "
        "megatron packs them unpadded (THD, aligned to tp x 2cp); None: dynamic batching "
        "(veRL use_dynamic_bsz) up to max_token_len_per_gpu.")
    max_token_len_per_gpu: int | None = Field(
        default=None, gt=0,
        description="Dynamic batching's token cap per GPU (veRL ppo_max_token_len_per_gpu); a "
        "micro-batch holds cp times this. None: micro_batch_tokens per micro-batch.")
    log_prob_micro_batch_size_per_gpu: int | None = Field(
        default=None, gt=0,
        description="Samples per micro-batch of the log-prob passes, padded or packed as "
        "in training (veRL log_prob_micro_batch_size_per_gpu); None: as training unless "
        "log_prob_max_token_len_per_gpu is set.")
    log_prob_max_token_len_per_gpu: int | None = Field(
        default=None, gt=0,
        description="Dynamic token cap per GPU of the log-prob passes (veRL "
        "log_prob_max_token_len_per_gpu); None: as training.")
    pad_to: int | None = Field(
        default=None, gt=0,
        description="Pad every sample of every pass (training and log-prob) to this many "
        "tokens, so the pad tokens cost like real ones: ROLL's Megatron workers with "
        "use_sequence_packing, dynamic batching and use_remove_padding off (their defaults) "
        "run the batch as generated, padded to sequence_length (roll/utils/functionals.py "
        "postprocess_generate; the agentic env managers' pad_to_length). None: samples keep "
        "their own lengths.")
    log_prob_pad_to: int | None = Field(
        default=None, gt=0,
        description="Pad every sample of the log-prob passes to this many tokens before the "
        "forward, so the pad tokens cost like real ones: ROLL's reference / actor_infer "
        "workers with sequence packing and dynamic batching off (their defaults) pad to "
        "sequence_length (roll/utils/functionals.py postprocess_generate, pad_to_seq_len). "
        "None: as pad_to.")
    ref_pad_to: int | None = Field(
        default=None, gt=0,
        description="Pad every sample of the reference pass alone to this many tokens "
        "(overrides log_prob_pad_to for it): ROLL's reference worker without "
        "use_remove_padding runs the batch padded to sequence_length = prompt_length + "
        "response_length, while actor_train cuts its padding. None: as log_prob_pad_to.")
    pad_to_multiple_of: int | None = Field(
        default=None, gt=0,
        description="Fixed micro-batches (micro_batch_size_per_gpu) pad every sample to the "
        "micro-batch's longest rounded up to a multiple of this and of the TP/CP alignment: "
        "ROLL's Megatron use_remove_padding cuts the padded batch to that length "
        "(megatron_strategy.py _get_unpad_seqlen: 256 with cp 1, 2048 with cp > 1). None: "
        "the backend's own batching (megatron packs, fsdp pads to the longest).")
    pack_rows: bool = Field(
        default=False,
        description="Whole-step MFU pricing (backend profile, or mfu set): each rank packs "
        "its samples first-fit-decreasing into rows as wide as its longest sample and "
        "computes every position of them, pads included, attention dense over the row (a "
        "trainer that packs without variable-length attention: rlsim's live trainer, "
        "calibration/live/grpo.py pack). False: the samples' own tokens.")
    param_offload: bool = Field(
        default=False, description="Parameters live in host memory between passes: loaded "
        "before and offloaded after each pass over PCIe (veRL fsdp_config.param_offload, "
        "megatron.param_offload).")
    grad_offload: bool = Field(
        default=False, description="Gradients offloaded around each train pass (veRL "
        "megatron.grad_offload).")
    optimizer_offload: bool = Field(
        default=False, description="Optimizer state offloaded around each train pass (veRL "
        "optimizer_offload).")
    optimizer_offload_fraction: float = Field(
        default=0.0, ge=0, le=1,
        description="Megatron's hybrid CPU optimizer (Megatron-Core optimizer_cpu_offload "
        "with optimizer_offload_fraction; veRL actor.optim.override_optimizer_config, ROLL "
        "strategy_config): this share of each GPU's optimizer state (fp32 master weights, "
        "Adam m and v) lives in host memory and is stepped by the CPU, its fp32 gradients "
        "copied down and parameters back; the GPU keeps and steps the rest. 0: Adam on the "
        "GPU. Megatron only.")
    overlap_cpu_optimizer_d2h_h2d: bool = Field(
        default=False,
        description="With optimizer_offload_fraction > 0: the gradient and parameter copies "
        "run beside the CPU step (Megatron-Core overlap_cpu_optimizer_d2h_h2d; its default is "
        "false: copies, then the step, then copies).")
    ep: int = Field(
        default=1, gt=0, description="Expert-parallel degree of an MoE model (veRL "
        "megatron.expert_model_parallel_size); megatron only.")
    moe_dispatcher: Literal["alltoall", "deepep"] = Field(
        default="alltoall",
        description="How the expert all-to-all moves tokens (Megatron "
        "moe_token_dispatcher_type; veRL megatron.override_transformer_config): alltoall "
        "(Megatron's, veRL's default) sends each token's top-k copies to their experts' "
        "GPUs; deepep (`flex` with moe_enable_deepep, DeepEP or HybridEP) sends a token once "
        "to each GPU and each remote node that holds any of its experts, the remote copies "
        "fanned out over NVLink there. Prices train.ep > 1 only.")
    fsdp_size: int | None = Field(
        default=None, ge=-1,
        description="FSDP shard group size (veRL actor_rollout_ref.actor.fsdp_config."
        "fsdp_size): parameters, gradients and optimizer state are sharded over groups of "
        "this many GPUs, the groups replicated (HSDP) with the gradients all-reduced across "
        "them every micro-batch. None, -1 or at least train.gpus: one group of all GPUs "
        "(plain FSDP). Must divide train.gpus; fsdp and fsdp2 only.")
    critic: bool = Field(
        default=False, description="PPO with a critic of the actor's size (veRL "
        "algorithm.adv_estimator: gae): a value forward before training and a critic update "
        "after the actor's.")

    @model_validator(mode="after")
    def _backend_layout(self) -> TrainConfig:
        if self.backend in ("fsdp", "fsdp2"):
            if self.pp > 1 or (self.tp > 1 and self.backend == "fsdp"):
                fix = ("pp 1" if self.backend == "fsdp2"
                       else "fsdp2 for tp (DTensor), or tp 1 and pp 1")
                raise ValueError(
                    f"train.tp / train.pp: backend {self.backend} has no "
                    f"{'pipeline' if self.backend == 'fsdp2' else 'tensor or pipeline'} "
                    "parallelism; use backend megatron, "
                    f"{fix} (cp is its Ulysses sequence parallelism)")
            if self.tp > 1 and self.fsdp_size not in (None, -1):
                raise ValueError("train.fsdp_size: with train.tp > 1 (DTensor TP) rlsim shards "
                                 "over all data-parallel ranks; drop fsdp_size")
            if self.ep > 1:
                raise ValueError(f"train.ep: backend {self.backend} has no expert "
                                 "parallelism; use backend megatron")
        if self.fsdp_size is not None and self.fsdp_size != -1:
            if self.fsdp_size < 1:
                raise ValueError("train.fsdp_size: a shard group of at least 1 GPU, or -1 "
                                 f"for all GPUs; got {self.fsdp_size}")
            if self.backend not in ("fsdp", "fsdp2"):
                raise ValueError(f"train.fsdp_size: shards an FSDP trainer; backend "
                                 f"{self.backend} has its own sharding: drop fsdp_size or use "
                                 "backend fsdp2")
        if self.optimizer_offload_fraction > 0 and self.backend != "megatron":
            raise ValueError(
                f"train.optimizer_offload_fraction: the hybrid CPU optimizer is Megatron's; "
                f"backend {self.backend} has none: use backend megatron, or 0")
        if self.optimizer_offload_fraction > 0 and self.mfu is not None:
            raise ValueError(
                "train.optimizer_offload_fraction: prices the Megatron trainer per kernel, "
                "which train.mfu replaces by a whole-step MFU; drop train.mfu, or set the "
                "fraction to 0")
        if self.overlap_cpu_optimizer_d2h_h2d and self.optimizer_offload_fraction <= 0:
            raise ValueError(
                "train.overlap_cpu_optimizer_d2h_h2d: overlaps the hybrid CPU optimizer's "
                "copies; set train.optimizer_offload_fraction above 0, or drop it")
        if self.pack_rows and self.backend != "profile" and self.mfu is None:
            raise ValueError(
                f"train.pack_rows: prices the whole-step MFU path; backend {self.backend} "
                "batches its own way: set train.backend: profile (or train.mfu), or drop "
                "pack_rows")
        if self.pad_to_multiple_of is not None and self.micro_batch_size_per_gpu is None:
            raise ValueError("train.pad_to_multiple_of: pads fixed micro-batches; set "
                             "train.micro_batch_size_per_gpu too, or drop it")
        return self


class LatencyDist(Frozen):
    """A per-sample latency: lognormal with a median and a log-space sigma."""

    median: Seconds = Field(gt=0, description="Median latency, e.g. '50 ms'.")
    sigma: float = Field(default=0.0, ge=0, description="Log-space std dev (0 = fixed).")
    hang_fraction: float = Field(
        default=0.0, ge=0, lt=1,
        description="Share of runs that never finish (an infinite loop, a deadlock) and hold "
        "their worker until the timeout, whatever their prompt; the others follow the "
        "lognormal.")


class JudgeConfig(Frozen):
    """A judge LLM served by rollout engines: on GPUs of its own, or on the rollout GPUs."""

    model: str | ModelSpec = Field(description="Judge model: catalogue name or inline spec.")
    placement: Literal["dedicated", "time_shared", "mps"] = Field(
        default="dedicated",
        description="dedicated: judge engines on `gpus` GPUs of `pool`; time_shared: on the "
        "rollout GPUs, judging after generation while the rollout engines sleep (veRL's "
        "reward model in the same resource pool; its weights are loaded from host memory "
        "first); mps: on the rollout GPUs beside the rollout engines (RollPacker [P 4.3]: "
        "MPS sharing, resident_fraction of its weights on the GPU and the rest streamed from "
        "host memory layer by layer, overlapped with compute); the rollout KV cache gives up "
        "the judge's resident weights and room for one longest judge request.",
    )
    pool: str | None = Field(
        default=None, description="Pool the judge engines run on (dedicated only).")
    gpus: int | None = Field(
        default=None, gt=0, description="GPUs used for judge engines (dedicated only).")
    tp: int = Field(default=1, gt=0, description="Judge engine TP degree.")
    prompt_overhead_tokens: int = Field(
        default=256, ge=0, description="Judge prompt tokens added to each response."
    )
    output_tokens: int = Field(default=16, gt=0, description="Judge verdict length in tokens.")
    reads: Literal["trajectory", "responses", "last_response"] = Field(
        default="trajectory",
        description="What the judge reads of a multi-turn sample (a single-turn sample is its "
        "response in all three): trajectory (every response and observation after the "
        "prompt, as veRL's agent loop hands its reward the whole response_ids, tool "
        "observations included, verl/experimental/agent_loop/tool_agent_loop.py), responses "
        "(the policy's turns only, observations masked out: veRL's response_mask), "
        "last_response (the final turn only: a judge of the final answer). ROLL's SWE env "
        "reads no tokens: it runs the tests in the sandbox at episode end (rock_tb_native_env "
        "calculate_reward), i.e. reward.kind sandbox.")
    resident_fraction: float = Field(
        default=0.5, gt=0, le=1,
        description="mps: share of the judge's weights kept on the GPU; the rest is streamed "
        "over PCIe on every forward pass. RollPacker [P 6.5]: at least half offloaded.",
    )

    @model_validator(mode="after")
    def _dedicated_needs_gpus(self) -> JudgeConfig:
        if self.placement == "dedicated" and (self.pool is None or self.gpus is None):
            raise ValueError("a dedicated judge needs `pool` and `gpus` (or placement: "
                             "time_shared or mps to run on the rollout GPUs)")
        if self.placement != "dedicated" and (self.pool is not None or self.gpus is not None):
            raise ValueError(f"a {self.placement} judge runs on the rollout GPUs: drop `pool` "
                             "and `gpus`")
        return self


class TaskRewardConfig(Frozen):
    """How the responses of one task of a mixed workload are scored."""

    kind: Literal["rule", "sandbox", "judge"] = Field(
        description="rule (CPU function), sandbox (code execution), judge (the reward.judge "
        "LLM).")
    latency: LatencyDist = Field(
        default=LatencyDist(median=0.005), description="Per-sample latency of rule/sandbox.")
    timeout: Seconds = Field(
        default=30.0, gt=0, description="Sandbox timeout; a sample never takes longer.")


class RewardConfig(Frozen):
    """How responses are scored."""

    kind: Literal["rule", "sandbox", "judge"] = Field(
        default="rule", description="rule (CPU function), sandbox (code execution), judge (LLM)."
    )
    latency: LatencyDist = Field(
        default=LatencyDist(median=0.005), description="Per-sample latency of rule/sandbox."
    )
    timeout: Seconds = Field(
        default=30.0, gt=0, description="Sandbox timeout; a sample never takes longer."
    )
    workers: int = Field(default=64, gt=0, description="Parallel reward workers (CPU/sandbox).")
    judge: JudgeConfig | None = Field(default=None, description="Judge LLM (kind: judge).")
    by_task: dict[str, TaskRewardConfig] = Field(
        default_factory=dict,
        description="Per task of workload.tasks: its own reward kind, latency and timeout "
        "(tasks not listed use kind, latency and timeout above). Scored on the same workers "
        "and judge engines.",
    )

    @model_validator(mode="after")
    def _judge_present(self) -> RewardConfig:
        judged = self.kind == "judge" or any(t.kind == "judge" for t in self.by_task.values())
        if judged and self.judge is None:
            raise ValueError("judge rewards need a `judge:` section (model, pool, gpus)")
        return self


class EnvConfig(Frozen):
    """Environment workers that run the steps between the turns of multi-turn rollouts:
    one pool of `workers` containers, or `nodes` x `containers_per_node` of them."""

    workers: int = Field(
        default=64, gt=0,
        description="Parallel environment workers (sandbox containers); an environment step "
        "or reset waits for a free one (FCFS). Set by nodes x containers_per_node when "
        "those are given.",
    )
    nodes: int | None = Field(
        default=None, gt=0,
        description="Environment nodes (CPU machines that host the containers); with "
        "containers_per_node, the pool's capacity is their product.")
    containers_per_node: int | None = Field(
        default=None, gt=0,
        description="Containers each environment node runs at once (its capacity).")
    instances: int | None = Field(
        default=None, gt=0,
        description="Environment instances (the `async` policy): at most this many "
        "multi-turn trajectories are live at once. A trajectory holds one instance from its "
        "reset to its end, whatever its outcome (scored, cancelled, stale, replaced, voided), "
        "and a waiting one starts as soon as one is freed, in launch order. ROLL runs one env "
        "manager per instance, each playing one episode to its end before taking the next "
        "(roll/pipeline/agentic/env_manager/traj_env_manager.py:94-143); there are "
        "num_env_groups x group_size of them, redundancy included (agentic_config.py:149-160, "
        "395-427; no single ROLL name, so no alias). `workers` caps concurrent environment "
        "calls only. None: no cap.")

    @model_validator(mode="before")
    @classmethod
    def _capacity_from_nodes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        nodes, per = data.get("nodes"), data.get("containers_per_node")
        if (nodes is None) != (per is None):
            raise ValueError("give nodes and containers_per_node together (the capacity is "
                             "their product), or neither and set workers")
        if isinstance(nodes, int) and isinstance(per, int) and nodes > 0 and per > 0:
            # a resolved scenario (scenario.resolved.yaml) repeats the product: accept it
            if data.get("workers", nodes * per) != nodes * per:
                raise ValueError(f"workers ({data['workers']}) is not nodes x "
                                 f"containers_per_node ({nodes * per}); drop workers")
            return {**data, "workers": nodes * per}
        return data


class LinkConfig(Frozen):
    """The network between the train and rollout pools (weight sync path)."""

    bandwidth: BytesPerSecond | None = Field(
        default=None, gt=0,
        description="Bandwidth of the train->rollout path; default the pools' per-GPU network "
        "bandwidth times the sending GPUs (sharded broadcast), e.g. '400 Gb/s'.",
    )
    latency: Seconds = Field(default=0.00001, ge=0, description="One-way latency, e.g. '10 us'.")


class WeightSyncConfig(Frozen):
    """How weights move from the trainer to the engines, and how a colocated switch runs
    (docs/cost-model.md, "Weight movement and switches")."""

    scheme: Literal["link", "broadcast", "bucketed", "delta", "host_store"] = Field(
        default="bucketed",
        description="bucketed: tensors packed into buckets, one collective per bucket "
        "(veRL/slime default); broadcast: one NCCL broadcast per tensor; delta: only "
        "changed values (with their indices), bucketed; host_store: through host memory, "
        "resharded, pipelined by bucket (Mooncake / checkpoint-engine style); link: the "
        "weight bytes at the link's rate and nothing else (a link measured end to end).",
    )
    bucket_size: Bytes = Field(
        default=512 * 2**20, gt=0,
        description="Bytes per bucket. veRL: actor_rollout_ref.rollout."
        "update_weights_bucket_megabytes (512); slime: --update-weight-buffer-size.",
    )
    delta_fraction: float | None = Field(
        default=None, gt=0, le=1,
        description="Fraction of the weights that changed since the last sync (scheme "
        "delta only; required there).",
    )
    engine_sleep_level: Literal[1, 2] = Field(
        default=1,
        description="vLLM sleep mode level of colocated engines (LLM.sleep(level=...)): 1 "
        "copies the weights to host memory and back, 2 discards them (the sync brings them).",
    )
    framework: Literal["verl", "roll", "nemo_rl"] = Field(
        default="verl",
        description="Whose sender loop drives a broadcast / bucketed / delta sync (its fixed "
        "costs, docs/cost-model.md): verl (also slime: one CUDA IPC handle or NCCL collective "
        "per bucket), roll (ROLL's Megatron model_update: a Ray call to every engine and a "
        "barrier per bucket; ROLL's bucket is 256 MiB, so set bucket_size: 256 MiB) or "
        "nemo_rl (NeMo-RL's refit: every training rank exports every full tensor through "
        "Megatron-Bridge, PP / TP / EP gathers, and, colocated, hands it by CUDA IPC to the "
        "engine on its own GPU, export and load overlapped; NeMo-RL: "
        "policy.refit_buffer_size_gb, NRL_REFIT_BUFFER_MEMORY_RATIO).",
    )
    store_transport: Literal["rdma", "tcp"] = Field(
        default="rdma",
        description="scheme host_store only: the store's transport (Mooncake transfer engine "
        "protocol 'rdma' or 'tcp'; RollArt measures both).",
    )

    @model_validator(mode="after")
    def _delta_needs_fraction(self) -> WeightSyncConfig:
        if self.scheme == "delta" and self.delta_fraction is None:
            raise ValueError("weight_sync.delta_fraction is required with scheme 'delta': "
                             "set the fraction of weights that change per step, e.g. 0.1")
        return self


# The driver's copies, measured by calibration/benchmarks/dataproto_serde.py on one host
# (calibration/profiles/cpu-dataproto-serde.json: AMD EPYC VM, 2 cores, torch 2.13 CPU; a
# 0.65 GB padded batch in 8 chunks; the best of three runs, each the minimum of 3
# repeats; the runs spread 0.60-1.13 and 1.43-1.73 GB/s on this shared VM).
# Calibration from a microbenchmark, not fitted to any RL run (docs/validation.md).
DISPATCH_BYTES_PER_S = 1.1e9
"""Consolidate + `torch.save` of every chunk in a 2-thread pool, as veRL's `parallel_put`
runs it (veRL's pool is min(chunks, cores) threads; on 2 cores it ran no faster than one
thread, and veRL PR 3495 measured 1.45x from threads on a larger host)."""
COLLECT_BYTES_PER_S = 1.7e9
"""`torch.load` of every output + `torch.cat`, on the driver's one thread."""
OBJECT_STORE_BYTES_PER_S = 19.86 * 1.048576e9
"""One copy into (or out of) Ray's object store: Ray microbenchmark
`single_client_put_gigabytes` 19.86 in Ray's unit of 1.048576e9 B
(release/perf_metrics/microbenchmark.json @08444c4)."""


def rates_in_series(*rates: float) -> float:
    """The rate of steps each byte passes one after another (bytes per second)."""
    return 1.0 / sum(1.0 / r for r in rates)


SEND_BYTES_PER_S = rates_in_series(DISPATCH_BYTES_PER_S, OBJECT_STORE_BYTES_PER_S)
"""Default `ControllerConfig.bandwidth`: serialize, then copy into the object store."""
RECEIVE_BYTES_PER_S = rates_in_series(OBJECT_STORE_BYTES_PER_S, COLLECT_BYTES_PER_S)
"""Default `ControllerConfig.receive_bandwidth`: copy out of the object store, then load and
concatenate."""


class ControllerConfig(Frozen):
    """The single controller's own work per step (veRL's driver: Ray calls to the worker
    groups, the padded batch sent and gathered, advantages computed on the driver;
    docs/cost-model.md, "Controller"). Defaults are public measurements."""

    enabled: bool = Field(
        default=True,
        description="Price the driver's work as phase `controller`; false: an idealised, "
        "free controller.")
    call_latency: Seconds = Field(
        default=1 / 2011.916, ge=0,
        description="Round trip of one worker-group call. Ray microbenchmark "
        "1_1_actor_calls_sync: 2,012 calls/s (0.50 ms).")
    per_worker_call: Seconds = Field(
        default=1 / 8038.166, ge=0,
        description="Driver time per worker in a call (one actor call each; veRL: one "
        "worker per GPU). Ray microbenchmark 1_n_actor_calls_async: 8,038 calls/s (0.12 ms).")
    bandwidth: BytesPerSecond = Field(
        default=SEND_BYTES_PER_S, gt=0,
        description="Rate at which the driver sends a call's batch: each chunk "
        "consolidated and torch.save'd (veRL's DataProto.__getstate__), then copied into "
        "Ray's object store. Default 1.04 GB/s: the serialization measured by "
        "calibration/benchmarks/dataproto_serde.py in series with Ray's "
        "single_client_put_gigabytes; set the driver node's NIC rate when it is lower, "
        "e.g. '10 Gb/s'.")
    receive_bandwidth: BytesPerSecond = Field(
        default=RECEIVE_BYTES_PER_S, gt=0,
        description="Rate at which the driver gets a call's outputs back: copied out of "
        "Ray's object store, torch.load'ed and concatenated. Default 1.57 GB/s, measured "
        "like `bandwidth`.")
    advantage_per_element: Seconds = Field(
        default=1.0e-8, ge=0,
        description="Driver time per element of the padded response tensor [responses, "
        "max_response_len] to compute the advantages (veRL timing_s/adv). Calibrated on "
        "verl issue 7412 (0.037 s for 1,190 x 3,072).")


def _policy_names_schema(schema: dict[str, Any]) -> None:
    """JSON Schema of policy.name: the policies declared when the schema is generated."""
    schema["enum"] = [c.name for c in policy_caps.declared()]


class PolicyConfig(Frozen):
    """The single controller that orders the phases of each step."""

    name: str = Field(
        default="sync",
        description="The policy (rlsim list policies). "
        + " ".join(f"{c.name}: {c.doc}." for c in policy_caps.BUILTIN)
        + " A plug-in policy registered with rlsim.policies.registry.register is accepted "
        "too (docs/design.md, 'Adding a policy'); what each supports is checked when the "
        "scenario is loaded.",
        json_schema_extra=_policy_names_schema,
    )
    tail_batching: TailBatchingConfig = Field(
        default=TailBatchingConfig(), description="Settings of policy tail_batching.")
    asynchronous: AsyncConfig = Field(
        default=AsyncConfig(), description="Settings of policy async.")
    placement: Literal["colocated", "disaggregated"] = Field(
        default="colocated",
        description="colocated: rollout and train time-share the same GPUs (offload/reload "
        "between phases); disaggregated: separate GPUs ('Solo-D').",
    )
    env_interaction: Literal["per_trajectory", "batched"] = Field(
        default="per_trajectory",
        description="Multi-turn samples under sync and one_off: per_trajectory: each "
        "trajectory moves on as soon as its own turn or environment step ends "
        "(environment-level async); batched: lock-step, every trajectory's turn t ends "
        "before any environment step, and every step before any turn t+1 (the batched "
        "env interaction that ROLL Flash compares against).",
    )
    schedule: ScheduleConfig = Field(
        default=ScheduleConfig(),
        description="Policy sync: ROLL's rollout scheduling (queue scheduling, prompt "
        "replication, additional prompts, zero-variance filtering); the defaults are batch "
        "rollout.")

    @field_validator("name")
    @classmethod
    def _declared(cls, name: str) -> str:
        if policy_caps.lookup(name) is None:
            names = [c.name for c in policy_caps.declared()]
            raise ValueError(f"no policy {name!r}; choose {', '.join(names[:-1])} or "
                             f"{names[-1]} (rlsim list policies)")
        return name


class OutputConfig(Frozen):
    """What the run records."""

    detail: Literal["phase", "request"] = Field(
        default="phase",
        description="phase: phase and engine spans; request: also one span per response "
        "(large for big runs).",
    )
    warmup_steps: int = Field(
        default=1, ge=0,
        description="Steps left out of the headline figures (step time, phase times, "
        "throughput, GPU utilization, cost, staleness, effective training time ratio), which "
        "cover the steady state from the end of the last warm-up step to the end of the last "
        "step; "
        "summary.whole_run has the same figures over the whole run (docs/metrics.md). 1 "
        "leaves out the first step's pipeline fill (one_off, async).",
    )


class FittedRegime(Frozen):
    """What a fit holds for (`rlsim.config.regime`): the run's policy, placement, GPUs,
    GPU type and model; `rlsim fit` records it as `framework.fitted_on`."""

    policy: str = Field(description="The fitted run's policy.name.")
    placement: str = Field(description="Its policy.placement.")
    gpus: int = Field(description="Its distinct GPUs (rollout + training; colocated: "
                      "rollout).")
    rollout_gpus: int = Field(description="Its rollout GPUs.")
    train_gpus: int = Field(description="Its training GPUs.")
    gpu: str = Field(description="Its GPU type(s), joined by '+'.")
    model: str = Field(description="Its model's name.")

    def describe(self) -> str:
        split = ("colocated" if self.placement == "colocated"
                 else f"{self.rollout_gpus} rollout + {self.train_gpus} train")
        return (f"policy {self.policy}, {self.placement}, {self.gpus} x {self.gpu} "
                f"({split}), model {self.model}")


class FrameworkConfig(Frozen):
    """Framework costs fitted to a measured run (`rlsim fit`); the defaults change nothing.

    A scenario without this section runs exactly as rlsim's own cost model prices it
    (docs/cost-model.md, "Fitted framework knobs")."""

    name: FrameworkName | None = Field(
        default=None,
        description="The RL framework that runs the job (`rlsim import` sets it). Its "
        "profile (`rlsim list frameworks`: knobs calibrated on public runs) gives every "
        "knob of this section that the scenario does not set; `rlsim fit` refuses a log of "
        "another framework (--force fits it anyway). None: not stated, rlsim's own "
        "constants.")
    profile: bool = Field(
        default=True,
        description="Take the knobs this section does not set from `name`'s framework "
        "profile; false: rlsim's own constants (the knobs' defaults).")
    fitted_on: FittedRegime | None = Field(
        default=None,
        description="Written by `rlsim fit`: the regime (policy, placement, GPUs, GPU type, "
        "model) the knobs were fitted on. A run outside it warns, with the allowance its "
        "uncertainty widens by.")
    train_speed: float = Field(
        default=1.0, ge=0.05, le=4.0,
        description="The trainer's kernel throughput relative to rlsim's calibrated kernels: "
        "the GPU compute time of every train, log-prob and critic pass is divided by it "
        "(not its communication, host waits, optimizer update or offload). 2: kernels twice "
        "as fast.")
    rollout_speed: float = Field(
        default=1.0, ge=0.05, le=4.0,
        description="The rollout engines' speed relative to rlsim's engine model: every "
        "engine iteration's time (prefill and decode) is divided by it (not the per-request "
        "overhead). Judges are not affected.")
    micro_batch_overhead: Seconds | None = Field(
        default=None, ge=0, le=10.0,
        description="Fixed cost per trainer micro-batch, replacing the backend's "
        "micro_batch_overhead_s (megatron 0.01 s, fsdp 0.02 s); none: the backend's. No "
        "effect on a trainer priced by whole-step MFU (train.mfu or backend profile).")
    weight_sync_overhead: Seconds = Field(
        default=0.0, ge=0, le=3600.0,
        description="Seconds added to every weight sync (framework work rlsim does not "
        "price: resharding, cache resets, Ray round trips).")
    step_overhead: Seconds = Field(
        default=0.0, ge=0, le=3600.0,
        description="Seconds added to every step's controller phase (driver work rlsim does "
        "not price: logging, metrics, data loading, checkpoint bookkeeping).")
    update_overhead: Seconds = Field(
        default=0.0, ge=0, le=3600.0,
        description="Seconds added to every actor update pass, on the trainer's GPUs (the "
        "trainer's fixed work per update that rlsim does not price: loading offloaded "
        "optimizer state, gradient-norm and metrics gathering, the update call's "
        "dispatch). Paid in every placement and policy.")
    switch_overhead: Seconds = Field(
        default=0.0, ge=0, le=3600.0,
        description="Seconds added to every colocated switch back to rollout (framework work "
        "around waking the engines that rlsim does not price: resharding the trainer's "
        "weights into them, loading offloaded parameters for it, cache resets); only "
        "colocated placements pay it. `rlsim fit` fits it from veRL's gen less its "
        "generate_sequences.")

    @model_validator(mode="before")
    @classmethod
    def _profile_knobs(cls, data: Any) -> Any:
        """The framework profile's knobs for those the scenario does not set."""
        if not isinstance(data, dict) or not data.get("name") or data.get("profile") is False:
            return data
        prof = profiles().get(str(data["name"]))
        if prof is None:
            return data
        return {**prof.knobs(), **data}


class Scenario(Frozen):
    """A whole RL post-training job: hardware, model, workload and policy."""

    name: str = Field(default="scenario", description="Scenario name shown in reports.")
    description: str = Field(default="", description="Free text: what the scenario models.")
    seed: int = Field(default=0, ge=0, description="Root seed of every random stream.")
    steps: int = Field(default=10, gt=0, description="Training steps to simulate.")
    model: str | ModelSpec = Field(
        description="Policy model: catalogue name (rlsim list models), a YAML/JSON model "
        "file (path relative to the scenario file; docs/models.md) or inline architecture."
    )
    pools: list[PoolConfig] = Field(min_length=1, description="GPU pools.")
    rollout: RolloutConfig = Field(description="Rollout engines.")
    train: TrainConfig = Field(description="Trainer.")
    reward: RewardConfig = Field(default=RewardConfig(), description="Reward computation.")
    env: EnvConfig = Field(
        default=EnvConfig(),
        description="Environment workers for the environment steps of multi-turn rollouts.",
    )
    workload: WorkloadConfig = Field(description="Prompts and lengths.")
    policy: PolicyConfig = Field(default=PolicyConfig(), description="Scheduling policy.")
    link: LinkConfig = Field(default=LinkConfig(), description="Train->rollout network.")
    weight_sync: WeightSyncConfig = Field(default=WeightSyncConfig(),
                                          description="Weight sync and colocated switch.")
    controller: ControllerConfig = Field(
        default=ControllerConfig(),
        description="The single controller's per-step work (Ray calls, batch bytes, "
        "advantages).")
    engine_mode: Literal["skip", "iteration"] = Field(
        default="skip",
        description="skip: one event per batch change (fast); iteration: one event per "
        "decode iteration (reference mode for tests).",
    )
    output: OutputConfig = Field(default=OutputConfig(),
                                 description="Recording detail and the warm-up.")
    faults: FaultsConfig = Field(
        default=FaultsConfig(),
        description="Faults to inject (docs/faults.md); none by default.")
    recovery: RecoveryConfig = Field(
        default=RecoveryConfig(),
        description="How each component kind recovers from its faults.")
    unknowns: dict[str, Unknown] = Field(
        default_factory=dict,
        description="Fields whose values are not known, by dotted path (as --set takes), "
        "each with a range or a distribution in the field's own units, e.g. "
        "`workload.response_len.median: {low: 2000, high: 8000}`. `rlsim run --draws N` "
        "draws them (docs/uncertainty.md); a plain run uses the fields' own values.")
    horizon: HorizonConfig | None = Field(
        default=None,
        description="Simulate the job's whole span (e.g. `horizon: 30 d`) at the fault "
        "rates, on the detailed run's steady step (docs/faults.md, 'Horizon'): ETTR, "
        "goodput, lost GPU-hours and the cost of failures, with intervals. None: the "
        "steps alone.")
    framework: FrameworkConfig = Field(
        default=FrameworkConfig(),
        description="Framework costs fitted to a measured run (rlsim fit); the defaults "
        "change nothing.")

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str | ModelSpec, info: ValidationInfo) -> str | ModelSpec:
        base = (info.context or {}).get("base_dir")
        return known_model(value, Path(base) if base is not None else None)

    @field_validator("pools")
    @classmethod
    def _unique_pools(cls, pools: list[PoolConfig]) -> list[PoolConfig]:
        return unique_pools(pools)

    @model_validator(mode="after")
    def _rewards_name_tasks(self) -> Scenario:
        tasks = {t.name for t in self.workload.tasks or []}
        unknown = sorted(set(self.reward.by_task) - tasks)
        if unknown:
            raise ValueError(f"reward.by_task names {', '.join(unknown)}, not a task of "
                             f"workload.tasks ({', '.join(sorted(tasks)) or 'none'})")
        return self

    @model_validator(mode="after")
    def _env_faults_supported(self) -> Scenario:
        # Which faults the policy runs is its capability (config/policy_checks.py).
        f = self.faults
        if f.env:
            if self.workload.agentic is None:
                raise ValueError("faults.env: environment faults need multi-turn "
                                 "trajectories (workload.agentic)")
            if self.policy.env_interaction != "per_trajectory":
                raise ValueError("faults.env: environment faults need "
                                 "policy.env_interaction: per_trajectory")
        return self

    @property
    def uses_judge(self) -> bool:
        """Whether any response is scored by the judge LLM."""
        r = self.reward
        return r.kind == "judge" or any(t.kind == "judge" for t in r.by_task.values())

    @property
    def model_spec(self) -> ModelSpec:
        return self.model if isinstance(self.model, ModelSpec) else lookup_model(self.model)

    def pool(self, name: str) -> PoolConfig:
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
