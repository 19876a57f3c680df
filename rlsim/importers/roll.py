"""ROLL pipeline configs (RLVR and agentic YAML) as rlsim scenarios: `import_roll`.

Owns three things. Reading a ROLL config as ROLL's launcher composes it: Hydra `defaults:`
lists that pull files beside it (`../config/traj_envs@_here_`), the user's `--set`
overrides (ROLL's own launcher takes none: they apply as Hydra's `compose(config_name,
overrides=[...])` would, after the defaults and before interpolation; `rlsim.importers.
overrides`), and `${...}` interpolations of its keys. Reading `device_mapping`
expressions (`list(range(0,8))`) without running them: only `list(range(a, b[, s]))`,
list literals (`[0, 1]`, `list([0, 1])`) and `+` of them are accepted. And the mapping of
ROLL's keys to scenario fields, as tables where a key maps one to one.

Every field set names its ROLL key (with the template variable it came from, as in
`custom_envs.X.max_steps (= ${max_actions_per_traj})`), a `--flag`, or `default:
alibaba/ROLL@8eb27cc2 <file>` for a default of ROLL's code at that commit (`DEFAULTS_OF`,
which the scenario file's header names), and the `--set` that gave or changed it; every
other key of the config is listed as ignored with the reason. A key that is not ROLL's but
close to one the importer reads (a typo that ROLL's loader, dacite's `from_dict`, would
drop without a word) is an error. Errors are `ScenarioError`s naming the config key or the
flag to fix (and the `--set` behind the key, if one was).

Facts a ROLL config does not hold come from flags (--gpu, --response-len-median) or are
stated defaults: the response lengths' log-sigma of the DAPO math trace, every trajectory
running its env's max_steps turns, ROLL Flash's Normal(10 s, 5 s) environment step.

What ROLL does that the mapping follows (files at alibaba/ROLL@8eb27cc2):
- RLVR: `rollout_batch_size` prompts x `num_return_sequences_in_group` responses; the
  engines generate `sequence_length - prompt_length` tokens at most (rlvr_config.py
  rewrites max_new_tokens so; sequence_length defaults to prompt + response length).
- Agentic: `rollout_batch_size` trajectories in groups of `train_env_manager.group_size`;
  a turn generates at most min(the env's max_tokens_per_step, max_new_tokens), a
  trajectory ends at the env's max_steps turns or at sequence_length tokens
  (traj_env_manager.py make_decision / step); `num_env_groups` x (`group_size` +
  `group_size_redundancy`) environments run, the first complete groups are used.
- The reference pass runs when use_kl_loss or init_kl_coef > 0 (default 0.2) or
  enable_reference; old log-probs are recomputed only when set_old_logprobs_status says so
  (several optimizer steps per rank, init_kl_coef > 0, step_reinforce / gigpo): both in
  base_config.py.
- Without sequence packing or dynamic batching every sample is padded to sequence_length
  and the Megatron / HF passes run at that length (functionals.py postprocess_generate,
  the agentic env managers' pad_to_length): `train.pad_to` and friends.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlsim.config.errors import ScenarioError
from rlsim.importers.base import (
    CPU_OPTIMIZER_OFF,
    FILTERED_SHARE_UNKNOWN,
    FLEX_DEFAULT,
    Facts,
    Imported,
    cpu_optimizer_fraction,
    moe_dispatcher,
    need,
    resolve_gpu,
    resolve_model,
)
from rlsim.importers.overrides import SetOverride, apply_to_tree, cite_sets

ROLL = "alibaba/ROLL@8eb27cc2"
DEFAULTS_OF = f"ROLL at {ROLL}"  # what the scenario file and the CLI say
BASE = "roll/configs/base_config.py"
WORKER = "roll/configs/worker_config.py"
TRAINING = "roll/configs/training_args.py"
MODEL_ARGS = "roll/configs/model_args.py"
GENERATING = "roll/configs/generating_args.py"
RLVR_CFG = "roll/pipeline/rlvr/rlvr_config.py"
AGENTIC_CFG = "roll/pipeline/agentic/agentic_config.py"
VLLM_STRATEGY = "roll/distributed/strategy/vllm_strategy.py"
SGLANG_STRATEGY = "roll/distributed/strategy/sglang_strategy.py"
MCORE_ARGS = "mcore_adapter/src/mcore_adapter/training_args.py"
ROUTER = "roll/distributed/scheduler/router.py"
TRAJ_ENV = "roll/pipeline/agentic/env_manager/traj_env_manager.py"
FUNCTIONALS = "roll/utils/functionals.py"

# Log-space sigma of the response lengths of the DAPO math trace shipped with rlsim
# (traces/polytrace/dapo-qwen2.5-32b; docs/validation.md: "sigma 0.928 of log length").
DAPO_LOG_SIGMA = 0.928
DAPO_SIGMA_SOURCE = ("log-sigma 0.928 of the DAPO math trace traces/polytrace/"
                     "dapo-qwen2.5-32b (docs/validation.md; --response-len-sigma sets it)")
# rlsim's default prompt shape (docs/scenario.md workload.prompt_len: sigma 0.5).
PROMPT_LOG_SIGMA = 0.5
# ROLL Flash's synthetic environment latency, Normal(10 s, 5 s) per step (arXiv 2510.11345
# Fig. 9; scenarios/rollflash/alfworld-sync.yaml): ROLL configs hold no environment latency.
ENV_STEP_DEFAULT = {"dist": "normal", "mean": 10, "std": 5}
ENV_STEP_SOURCE = ("default: ROLL Flash's synthetic environment step Normal(10 s, 5 s) "
                   "(arXiv 2510.11345 Fig. 9): ROLL configs hold no environment latency")
RLSIM_MAX_PROMPT_LEN = 2048  # workload.max_prompt_len's default (docs/scenario.md)
MAX_DEVICES = 1 << 16  # a device_mapping longer than this is a mistake, not a cluster


def _default(file: str, what: str) -> str:
    return f"default: {ROLL} {file} ({what})"


# --- ROLL's key names (dataclass fields at alibaba/ROLL@8eb27cc2), for the typo check ---

def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# BaseConfig, ScheduleConfig, PPOConfig (base_config.py), RLVRConfig, AgenticConfig.
TOP_KEYS = _names("""
    exp_name seed rpc_timeout output_dir base_dir logging_dir rollout_dump_dir track_with
    tracker_kwargs max_steps save_steps max_ckpt_to_keep logging_steps eval_steps
    rollout_batch_size max_running_requests val_batch_size local_rank resume_from_checkpoint
    checkpoint_config prompt_length response_length sequence_length val_prompt_length
    val_sequence_length profiler_timeline profiler_memory report_length_and_rewards
    is_offload_states is_offload_optimizer_states_in_train_step length_profiler_dir
    profiler_output_dir otlp_output_dir system_envs model_update_buffer_size_mb num_nodes
    num_gpus_per_node model_download_type rollout_mock transfer_backend
    generate_opt_level is_num_return_sequences_expand is_use_additional_prompts
    max_additional_running_prompts user_defined_rollout_loop_cls router_args
    pretrain reward_pretrain actor_train actor_infer critic reference reward
    async_generation_ratio ppo_epochs max_grad_norm l2 lambd gamma pg_clip use_pg_clip_range
    pg_clip_low pg_clip_high value_clip kl_penalty target_kl init_kl_coef kl_horizon
    use_reward_scaling add_len_reward reward_clip use_reward_norm whiten_rewards
    whiten_advantages advantage_clip adv_estimator norm_mean_type norm_std_type
    add_token_level_kl critic_warmup use_kl_loss kl_loss_coef entropy_loss_coef loss_agg_mode
    dual_clip_loss enable_reference enable_old_logprobs_recompute
    force_disable_old_logprobs_recompute train_infer_correction pure_opd_pipeline_type
    teacher student_train student_infer is_pure_opd use_opd
    global_template tag_to_template dataset_filter num_return_sequences_in_group
    save_logging_board_dir validation rewards reward_model difficulty_loss_weight
    length_loss_weight postive_loss_coef use_topr_neg_loss_coef use_policy_loss_type
    use_topr_loss rl_loss_coef importance_sampling val_greedy val_n_sample max_len_mask
    mask_type difficulty_mask balance_length minibatch_data_iter_num
    difficulty_low_threshold difficulty_high_threshold error_max_len_clip
    error_max_len_threshold
    custom_envs train_env_manager val_env_manager render_save_dir reward_normalization
    env_monitor dirty_data_mask open_feedback_turn use_token_reward batch_adjust_mode
    episode_reward_weight step_reward_weight step_reward_gamma ratio_type exp_mode
    partial_gpu_mode parse_tool_call_parameter_to_dict skip_mock_system_prompt
    hydra defaults
""")
# WorkerConfig (worker_config.py) with the extra fields of RLVR's RewardConfig and of the
# agentic EnvManagerConfig / RewardConfig.
WORKER_KEYS = _names("""
    name worker_cls pg_variant model_args training_args data_args generating_args
    strategy_args world_size device_mapping num_gpus_per_worker model_update_frequency
    infer_batch_size backend_timeout system_envs topr_positive_weight topr_negative_weight
    max_concurrency use_dynamic_batching_in_train max_tokens_per_microbatch_in_train
    sequence_length_round_in_train use_dynamic_batching_in_infer
    max_tokens_per_microbatch_in_infer sequence_length_round_in_infer offload_nccl
    use_sequence_packing sequence_packing_args logits_in_fp32 router_replay apply_loss_scale
    mtp_training_mode opd_kl_coef tag_included
    code_url use_local judge_prompt judge_model_type judge_model_name judge_api_url
    judge_api_key format_pattern reward_type response_length_penalty_coef
    query_filter_config response_filter_config reward_manager_config
    llm_proxy num_env_groups group_size group_size_redundancy tags num_groups_partition
    max_traj_per_env format_penalty max_env_num_per_worker group_filter_cls
""")
TRAINING_KEYS = _names("""
    output_dir max_steps num_train_epochs learning_rate lr_scheduler_type weight_decay
    adam_beta1 adam_beta2 per_device_train_batch_size gradient_accumulation_steps seed
    data_seed dataloader_num_workers fp16 bf16 tf32 warmup_ratio warmup_steps save_hf_model
""")
MODEL_KEYS = _names("""
    additional_target autocast_adapter_dtype lora_alpha lora_dropout lora_rank lora_target
    model_name_or_path adapter_name_or_path attn_implementation moe_aux_loss_coef
    disable_gradient_checkpointing gradient_checkpointing_use_reentrant device_map dtype
    model_type num_labels model_config_kwargs freeze_module_prefix ulysses_size
""")
GENERATING_KEYS = _names("""
    do_sample temperature top_p top_k num_beams max_length max_new_tokens repetition_penalty
    length_penalty num_return_sequences stop_strings include_stop_str_in_output logprobs
""")
# Worker sections: the top-level keys that hold a WorkerConfig.
WORKER_SECTIONS = ("actor_train", "actor_infer", "reference", "critic", "reward",
                   "train_env_manager", "val_env_manager", "validation", "reward_model",
                   "teacher", "student_train", "student_infer")
KNOWN_BELOW = {"training_args": TRAINING_KEYS, "model_args": MODEL_KEYS,
               "generating_args": GENERATING_KEYS,
               "strategy_args": _names("strategy_name strategy_config")}

# --- mapping tables ---

# actor_train.strategy_args.strategy_name -> train.backend. DeepSpeed's ZeRO shards like
# FSDP, so it is priced with rlsim's fsdp constants.
TRAIN_BACKENDS = {"megatron_train": "megatron", "fsdp2_train": "fsdp2",
                  "deepspeed_train": "fsdp"}
# Megatron strategy_config key -> train field (ROLL reads them with .get(key, 1):
# base_config.py set_old_logprobs_status, roll/utils/config_utils.py).
MEGATRON_LAYOUT = {"tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp",
                   "context_parallel_size": "cp", "expert_model_parallel_size": "ep"}
RECOMPUTE = {"full": "full", "selective": "selective"}
ROLLOUT_STRATEGIES = ("vllm", "sglang")


@dataclass(frozen=True)
class _EngineKey:
    """One inference strategy_config key: the rollout field it sets, how its value converts,
    and ROLL's default when the key is absent (None: leave rlsim's default)."""

    field: str
    convert: Callable[[Any, str], Any]
    default: Any = None
    default_source: str = ""


def _to_int(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ScenarioError(key, f"{value!r} is not a whole number; write e.g. "
                            f"{key.split('.')[-1]}: 8")
    return int(value)


def _to_pos_int(value: Any, key: str) -> int:
    number = _to_int(value, key)
    if number <= 0:
        raise ScenarioError(key, f"{number} must be at least 1")
    return number


def _to_float(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(key, f"{value!r} is not a number; write e.g. "
                            f"{key.split('.')[-1]}: 0.8")
    return float(value)


def _to_bool(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(key, f"{value!r} is not true or false")
    return value


def _to_str(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ScenarioError(key, f"{value!r} is not a string")
    return value


def _not(value: Any, key: str) -> bool:
    return not _to_bool(value, key)


def _kv_dtype(value: Any, key: str) -> str:
    text = _to_str(value, key)
    if text == "auto":
        return "auto"
    if text.startswith("fp8"):
        return "fp8"
    raise ScenarioError(key, f"{text!r}: rlsim models a KV cache of 'auto' (16-bit) or fp8")


def _weights_dtype(value: Any, key: str) -> str:
    text = _to_str(value, key)
    if text.startswith("fp8"):
        return "fp8"
    raise ScenarioError(key, f"quantization {text!r}: rlsim models bf16 weights (no "
                        "quantization) or fp8")


VLLM_KEYS = {
    "tensor_parallel_size": _EngineKey("rollout.tp", _to_pos_int, 1,
                                       _default(WORKER, "tensor_parallel_size 1")),
    "pipeline_parallel_size": _EngineKey("rollout.pp", _to_pos_int),
    "gpu_memory_utilization": _EngineKey("rollout.gpu_memory_utilization", _to_float),
    "max_num_batched_tokens": _EngineKey("rollout.max_batched_tokens", _to_pos_int, 8192,
                                         _default(VLLM_STRATEGY, "max_num_batched_tokens 8192")),
    "enforce_eager": _EngineKey("rollout.cuda_graphs", _not, True,
                                _default(VLLM_STRATEGY, "enforce_eager false: CUDA graphs")),
    "enable_prefix_caching": _EngineKey("rollout.prefix_caching", _to_bool, True,
                                        _default(VLLM_STRATEGY, "enable_prefix_caching true")),
    "kv_cache_dtype": _EngineKey("rollout.kv_cache_dtype", _kv_dtype),
    "quantization": _EngineKey("rollout.dtype", _weights_dtype),
    "sleep_level": _EngineKey("weight_sync.engine_sleep_level", _to_pos_int, 1,
                              _default(VLLM_STRATEGY, "sleep_level 1")),
}
SGLANG_KEYS = {
    "tensor_parallel_size": _EngineKey("rollout.tp", _to_pos_int),
    "pipeline_parallel_size": _EngineKey("rollout.pp", _to_pos_int),
    "mem_fraction_static": _EngineKey("rollout.gpu_memory_utilization", _to_float),
    "chunked_prefill_size": _EngineKey("rollout.max_batched_tokens", _to_pos_int),
    "disable_cuda_graph": _EngineKey("rollout.cuda_graphs", _not),
    "disable_radix_cache": _EngineKey("rollout.prefix_caching", _not, True,
                                      "default: SGLang's radix (prefix) cache is on"),
    "kv_cache_dtype": _EngineKey("rollout.kv_cache_dtype", _kv_dtype),
    "quantization": _EngineKey("rollout.dtype", _weights_dtype),
}
ENGINE_KEYS = {"vllm": VLLM_KEYS, "sglang": SGLANG_KEYS}
# The engine's own cap on running sequences.
ENGINE_SEQ_CAP = {"vllm": "max_num_seqs", "sglang": "max_running_requests"}

# Reward worker class (last dotted part, lower case) -> reward.kind.
REWARD_KINDS = {"code_sandbox": "sandbox", "llm_judge": "judge"}

# --- why keys are read past (by the key's last name; a section covers its subtree) ---

_BOOKKEEPING = "bookkeeping (names, paths, logging, checkpoints): no effect on a step's time"
_OPTIMIZER = "an optimizer hyper-parameter: no effect on a step's time"
_LOSS = ("a loss, reward or advantage setting: arithmetic on the batch that rlsim's phase "
         "times do not depend on")
_VALIDATION = "validation: rlsim simulates training steps only"
_SAMPLING = "a sampling parameter: rlsim draws response lengths from workload.response_len"
_FUSION = "a kernel fusion or overlap switch: inside rlsim's calibrated backend constants"
_CLASS = "which Python class ROLL runs: the cost is in the fields rlsim reads"

REASONS: dict[str, str] = {
    **dict.fromkeys(
        ("exp_name", "seed", "logging_dir", "output_dir", "base_dir", "render_save_dir",
         "system_envs", "track_with", "tracker_kwargs", "checkpoint_config",
         "logging_steps", "resume_from_checkpoint", "max_ckpt_to_keep", "rpc_timeout",
         "profiler_timeline", "profiler_memory", "length_profiler_dir",
         "profiler_output_dir", "otlp_output_dir", "model_download_type", "rollout_dump_dir",
         "report_length_and_rewards", "save_logging_board_dir", "local_rank", "env_monitor",
         "data_seed", "save_hf_model", "dataloader_num_workers", "backend_timeout",
         "rollout_mock", "hydra"), _BOOKKEEPING),
    **dict.fromkeys(
        ("learning_rate", "weight_decay", "warmup_steps", "warmup_ratio", "lr_scheduler_type",
         "num_train_epochs", "adam_beta1", "adam_beta2", "max_grad_norm", "l2"), _OPTIMIZER),
    "max_steps": "the run's length in steps: rlsim simulates --steps (default 10)",
    **dict.fromkeys(
        ("pg_clip", "use_pg_clip_range", "pg_clip_low", "pg_clip_high", "value_clip",
         "kl_penalty", "target_kl", "kl_horizon", "use_reward_scaling", "add_len_reward",
         "reward_clip", "use_reward_norm", "whiten_rewards", "whiten_advantages",
         "advantage_clip", "norm_mean_type", "norm_std_type", "add_token_level_kl",
         "critic_warmup", "kl_loss_coef", "entropy_loss_coef", "loss_agg_mode",
         "dual_clip_loss", "lambd", "gamma", "difficulty_loss_weight", "length_loss_weight",
         "postive_loss_coef", "use_topr_neg_loss_coef", "use_policy_loss_type",
         "use_topr_loss", "rl_loss_coef", "importance_sampling", "max_len_mask", "mask_type",
         "difficulty_mask", "balance_length", "difficulty_low_threshold",
         "difficulty_high_threshold", "error_max_len_clip", "error_max_len_threshold",
         "reward_normalization", "format_penalty", "dirty_data_mask", "use_token_reward",
         "episode_reward_weight", "step_reward_weight", "step_reward_gamma", "ratio_type",
         "train_infer_correction", "batch_adjust_mode", "topr_positive_weight",
         "topr_negative_weight", "pg_variant", "reward_type", "response_length_penalty_coef",
         "query_filter_config", "response_filter_config", "dataset_filter",
         "minibatch_data_iter_num", "group_filter_cls", "apply_loss_scale"), _LOSS),
    **dict.fromkeys(
        ("val_batch_size", "val_prompt_length", "val_sequence_length", "validation",
         "val_env_manager", "eval_steps", "val_greedy", "val_n_sample"), _VALIDATION),
    **dict.fromkeys(
        ("top_p", "top_k", "temperature", "num_beams", "do_sample", "repetition_penalty",
         "length_penalty", "stop_strings", "include_stop_str_in_output", "logprobs",
         "max_length"), _SAMPLING),
    **dict.fromkeys(
        ("apply_rope_fusion", "bias_activation_fusion", "overlap_grad_reduce",
         "overlap_param_gather", "masked_softmax_fusion", "gradient_accumulation_fusion",
         "bias_dropout_fusion", "moe_grouped_gemm",
         "attn_implementation", "logits_in_fp32"), _FUSION),
    **dict.fromkeys(("worker_cls", "name", "env_manager_cls", "agent_runner_cls",
                     "user_defined_rollout_loop_cls", "env_type", "llm_proxy"), _CLASS),
    "data_args": ("the training data (files, template, mixing): rlsim draws prompt lengths "
                  "from workload.prompt_len"),
    "global_template": "the chat template: rlsim draws prompt lengths from workload.prompt_len",
    "tag_to_template": "the chat template: rlsim draws prompt lengths from workload.prompt_len",
    "dtype": "16-bit weights (bf16 or fp16): rlsim prices both alike",
    "bf16": "16-bit weights: rlsim prices bf16 and fp16 alike",
    "fp16": "16-bit weights: rlsim prices bf16 and fp16 alike",
    "model_type": "the model head class: rlsim's model is the catalogue entry",
    "reward_pretrain": ("the reward / critic model path: rlsim's critic has the actor's size "
                        "and rule rewards run no model"),
    "num_nodes": "ROLL recomputes it from the device_mapping (base_config.py)",
    "block_size": "vLLM's KV page size: rlsim counts the KV cache in tokens",
    "load_format": "how the engine loads weights at start: rlsim does not model start-up",
    "max_model_len": ("vLLM's context limit: rlsim bounds contexts by the prompt and response "
                      "caps"),
    "VLLM_USE_V1": "the vLLM engine version: rlsim models one engine",
    "disable_custom_all_reduce": "a TP all-reduce implementation switch",
    "enable_memory_saver": "SGLang's sleep support: rlsim's colocated switch models it",
    "sequence_parallel": ("Megatron sequence parallelism with TP: rlsim's Megatron cost model "
                          "does not tell it apart"),
    "use_distributed_optimizer": ("rlsim's Megatron backend prices the distributed optimizer; "
                                  "a replicated one moves the same DP bytes"),
    "virtual_pipeline_model_parallel_size": "interleaved PP stages: rlsim's PP is plain 1F1B",
    "recompute_method": "which layers recompute: rlsim recomputes every layer when enabled",
    "recompute_num_layers": "which layers recompute: rlsim recomputes every layer when enabled",
    "fsdp_size": ("HSDP shard group size: not read from ROLL's configs (rlsim's "
                  "train.fsdp_size has veRL's meaning); rlsim shards over every trainer GPU"),
    "param_dtype": "FSDP mixed-precision dtype: rlsim prices 16-bit compute",
    "reduce_dtype": "FSDP gradient reduce dtype: inside rlsim's FSDP constants",
    "reshard_after_forward": "FSDP resharding: inside rlsim's FSDP constants",
    "num_gpus_per_worker": ("GPUs per ROLL worker: vLLM's are tp x pp, the trainers' 1 "
                            "(worker_config.py)"),
    "model_update_frequency": "rlsim syncs the weights after every step",
    "max_concurrency": "Ray actor concurrency: no effect on the GPU work",
    "offload_nccl": "ROLL forces it off (worker_config.py)",
    "router_replay": "MoE router replay: no effect on rlsim's timing model",
    "mtp_training_mode": "multi-token prediction: rlsim's models have no MTP head",
    "sequence_length_round_in_train": ("dynamic batching's length rounding (a few tokens): "
                                       "below rlsim's resolution"),
    "sequence_length_round_in_infer": ("dynamic batching's length rounding (a few tokens): "
                                       "below rlsim's resolution"),
    "sequence_packing_args": ("how packed sequences are split into micro-batches: rlsim packs "
                              "by micro_batch_size_per_gpu"),
    "disable_gradient_checkpointing": ("HF gradient checkpointing, which the Megatron and "
                                       "inference strategies do not use"),
    "ulysses_size": "Ulysses sequence parallelism: read for fsdp2 trainers only",
    "generate_opt_level": ("ROLL's request scheduler level: read for RLVR sync runs "
                           "(policy.schedule); 1 is required for async"),
    "is_use_additional_prompts": ("ROLL's dynamic sampling (prompts beyond the batch): read "
                                  "for RLVR sync runs with the request scheduler "
                                  "(policy.schedule)"),
    "max_additional_running_prompts": ("ROLL's dynamic sampling (prompts beyond the batch): "
                                       "read for RLVR sync runs with is_use_additional_"
                                       "prompts (policy.schedule)"),
    "tag_included": "which data tags a reward or teacher takes",
    "use_local": "where a reward's code lives",
    "max_traj_per_env": "derived by ROLL from rollout_batch_size (agentic_config.py)",
    "num_return_sequences": ("ROLL sets it from num_return_sequences_in_group (RLVR) or 1 "
                             "(agentic)"),
    "partial_gpu_mode": "ROLL's partial-GPU rollout shrinking: not modelled",
    "exp_mode": "training or evaluation run: rlsim simulates training",
    "open_feedback_turn": "a prompt-format switch of the agentic env managers",
    "parse_tool_call_parameter_to_dict": "a tool-call parsing switch",
    "skip_mock_system_prompt": "a chat-template switch",
    "env_config": "the environment's own game settings: rlsim's environment is its latency",
    "use_thread_lock": "a thread lock around the environment: rlsim's env.workers bound it",
    "agent_system_template": "the agent's prompt text: rlsim draws prompt lengths",
    "agent_template": "the agent's prompt text: rlsim draws prompt lengths",
    "max_env_num_per_worker": ("how ROLL packs environments into Ray workers (one thread "
                               "each): every environment still steps on its own"),
    "num_groups_partition": "how the groups split over the tags: read to check the tags",
    "is_offload_optimizer_states_in_train_step": ("optimizer offload inside the train step: "
                                                  "rlsim offloads per pass or not at all"),
    "pure_opd_pipeline_type": "on-policy distillation: rlsim simulates RL",
    "teacher": "on-policy distillation: rlsim simulates RL",
    "student_train": "on-policy distillation: rlsim simulates RL",
    "student_infer": "on-policy distillation: rlsim simulates RL",
    "is_pure_opd": "on-policy distillation: rlsim simulates RL",
    "use_opd": "on-policy distillation: rlsim simulates RL",
    "opd_kl_coef": "on-policy distillation: rlsim simulates RL",
    "is_num_return_sequences_expand": ("whether a prompt's samples are separate requests: "
                                       "ROLL's PromptAffinityRouter sends them to one engine "
                                       "either way"),
    "transfer_backend": "the weight transfer backend: rlsim prices ROLL's model update",
    **dict.fromkeys(("lora_target", "lora_rank", "lora_alpha", "lora_dropout",
                     "additional_target", "adapter_name_or_path"),
                    "LoRA adapters: rlsim trains every weight, so its train time is an upper "
                    "bound for a LoRA job"),
    "freeze_module_prefix": ("frozen modules: rlsim trains every weight, so its train time is "
                             "an upper bound"),
    "flash_attn": _FUSION,
    "wrap_policy": "FSDP wrapping units: inside rlsim's FSDP constants",
    "history_length": ("how many past turns the agent's prompt keeps: rlsim's context keeps "
                       "every turn (an upper bound when this is set)"),
    "pre_step_template": "the agent's prompt text: rlsim draws prompt lengths",
    "next_step_template": "the agent's prompt text: rlsim draws prompt lengths",
    "use_dynamic_batching_in_infer": ("dynamic batching of a log-prob pass that does not run "
                                      "(or whose worker rlsim does not read)"),
    "max_tokens_per_microbatch_in_infer": ("dynamic batching of a log-prob pass that does not "
                                           "run (or whose worker rlsim does not read)"),
    "reward_model": ("a shared reward-model cluster on GPUs (an LLM judge): not imported; add "
                     "reward.judge (a catalogue model, its pool and GPUs) by hand"),
    "model_name_or_path": "a model path: rlsim's model is the catalogue entry (pretrain)",
    "infer_batch_size": "a worker's inference micro-batch: read for actor_train / reference",
    "world_size": "a worker count: read for the CPU reward workers",
}
# Whole paths whose reason depends on where they are.
PATH_REASONS: dict[str, str] = {
    "actor_train.strategy_args.strategy_config.overlap_cpu_optimizer_d2h_h2d": (
        "ROLL's mcore_adapter does not hand it to Megatron-Core (mcore_adapter/src/"
        "mcore_adapter/trainer/trainer.py:500-517): the hybrid CPU optimizer's copies run "
        "without overlap"),
    "reference.strategy_args": ("the reference worker's backend: rlsim runs the reference "
                                "pass with the trainer's backend and layout"),
    "reference.model_args": "the reference model is the policy model",
    "reference.data_args": "the reference worker's chat template",
    "reference.device_mapping": "rlsim runs the reference pass on the trainer's GPUs",
    "actor_infer.infer_batch_size": ("the engines batch requests themselves (continuous "
                                     "batching; rollout.max_running_seqs)"),
    "actor_infer.model_args": "the engines serve the policy model (model)",
    "actor_train.model_args.model_name_or_path": "ROLL uses pretrain (base_config.py)",
}
_FALLBACK = "a ROLL setting that rlsim's model has no counterpart for"
_UNKNOWN = ("not a key of ROLL's config classes at 8eb27cc2 (ROLL's loader, dacite "
            "from_dict, drops it): a key of another ROLL version, or a template variable")
_TEMPLATE = "a template variable: its value reaches the keys that use it through ${...}"


# --- reading the YAML as Hydra composes it ---

def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as err:
        raise ScenarioError(str(path), f"cannot read: {err.strerror}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ScenarioError(where, f"not valid YAML: {getattr(err, 'problem', err)}") from None
    if doc is None:
        return {}  # an empty file: an empty config, as Hydra reads it
    if not isinstance(doc, dict):
        raise ScenarioError(str(path), "a ROLL config is a YAML mapping of keys")
    return doc


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """Hydra's merge: mappings merge key by key, anything else is replaced by `top`."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _default_entry(entry: Any, folder: Path) -> tuple[Path, list[str]] | None:
    """The file a `defaults:` entry names and the package (key path) it lands under;
    None for `_self_`."""
    if entry == "_self_":
        return None
    if isinstance(entry, dict) and len(entry) == 1:
        group, option = next(iter(entry.items()))
        if not isinstance(group, str) or not isinstance(option, str):
            raise ScenarioError("defaults", f"entry {entry!r}: write `group: option` names")
        name, package = f"{group}/{option}", group.replace("/", ".")
    elif isinstance(entry, str):
        name, _, package = entry.partition("@")
        if not package:
            group = name.rpartition("/")[0]
            if ".." in group.split("/"):
                raise ScenarioError("defaults", f"entry {entry!r} names a file outside a config "
                                    "group without a package; add @_here_ as ROLL's examples do")
            package = group.replace("/", ".")
    else:
        raise ScenarioError("defaults", f"entry {entry!r}: rlsim reads `file@package`, "
                            "`group: option` and `_self_` entries")
    if name.startswith(("override ", "optional ")):
        raise ScenarioError("defaults", f"entry {entry!r}: override and optional entries "
                            "are not read; name the file itself")
    if package in ("_here_", "_global_"):
        package = ""
    file = folder / (name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")
    return file, [p for p in package.split(".") if p]


def _compose(path: Path, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The config at `path` with its `defaults:` files merged in Hydra's order: each entry
    in turn, the file's own keys at `_self_` (last when not listed)."""
    resolved = path.resolve()
    if resolved in chain:
        raise ScenarioError("defaults", f"{path} includes itself through its defaults")
    doc = _read_yaml(path)
    defaults = doc.pop("defaults", None)
    if defaults is None:
        return doc
    if not isinstance(defaults, list):
        raise ScenarioError("defaults", f"in {path}: a list of files, e.g. - ../config/"
                            "traj_envs@_here_")
    parts: list[dict[str, Any] | None] = []
    for entry in defaults:
        target = _default_entry(entry, path.parent)
        if target is None:
            parts.append(None)
            continue
        file, package = target
        if not file.is_file():
            raise ScenarioError("defaults", f"{entry!r} in {path}: no file {file}; put it beside "
                                "the config as in ROLL's examples/ tree")
        sub = _compose(file, (*chain, resolved))
        for key in reversed(package):
            sub = {key: sub}
        parts.append(sub)
    if None not in parts:
        parts.append(None)
    merged: dict[str, Any] = {}
    for part in parts:
        merged = _merge(merged, doc if part is None else part)
    return merged


_REF = re.compile(r"\$\{([^${}]*)\}")


class _Interpolator:
    """Resolves `${a.b}` against the composed config (OmegaConf's absolute references): a
    whole-string reference takes the value itself (a mapping included), a reference inside
    a string its text. `${resolver:...}` calls are left as written."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.used_roots: set[str] = set()
        self.origins: dict[str, str] = {}  # a key whose whole value is ${ref} -> ref
        self._active: list[str] = []

    def resolve(self, node: Any, where: str) -> Any:
        if isinstance(node, dict):
            return {k: self.resolve(v, f"{where}.{k}" if where else str(k))
                    for k, v in node.items()}
        if isinstance(node, list):
            return [self.resolve(v, f"{where}.{i}") for i, v in enumerate(node)]
        if not isinstance(node, str) or "${" not in node:
            return node
        whole = _REF.fullmatch(node.strip())
        if whole is not None:
            ref = whole.group(1).strip()
            value = self._lookup(ref, where, node)
            if value is not node:
                self.origins[where] = ref
            return value
        return _REF.sub(lambda m: self._text(m, where), node)

    def _text(self, match: re.Match[str], where: str) -> str:
        value = self._lookup(match.group(1).strip(), where, match.group(0))
        return match.group(0) if isinstance(value, str) and value == match.group(0) \
            else str(value)

    def _lookup(self, ref: str, where: str, raw: str) -> Any:
        if ":" in ref:
            return raw  # a resolver (oc.env, ...): not ROLL's keys, left as written
        if not ref or ref.startswith("."):
            raise ScenarioError(where, f"${{{ref}}}: rlsim reads absolute references only "
                                "(${top_key.sub_key})")
        if ref in self._active:
            raise ScenarioError(where, f"${{{ref}}} refers back to itself through "
                                + " -> ".join(self._active))
        node: Any = self.root
        for part in ref.split("."):
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise ScenarioError(where, f"${{{ref}}} names no key of the config; define "
                                    f"{ref} or write the value")
        self.used_roots.add(ref.split(".")[0])
        self._active.append(ref)
        try:
            return self.resolve(node, ref)
        finally:
            self._active.pop()


@dataclass(frozen=True)
class RollConfig:
    """A ROLL config as its launcher sees it: `root` composed and interpolated;
    `template_vars` the top-level keys that `${...}` used; `origins` each key whose whole
    value was a `${ref}`, with the ref (so a field can name the key to edit)."""

    root: dict[str, Any]
    template_vars: frozenset[str]
    origins: dict[str, str]


def load_roll_config(path: Path, sets: Sequence[SetOverride] = ()) -> RollConfig:
    """The config at `path` with its defaults files merged, the --set overrides `sets`
    applied in order, and its interpolations resolved."""
    composed = _compose(path)
    apply_to_tree(composed, sets, _missing)
    interp = _Interpolator(composed)
    root = interp.resolve(composed, "")
    return RollConfig(root, frozenset(interp.used_roots), interp.origins)


def _missing(s: SetOverride) -> ScenarioError:
    """`key=value` on a key the composed config lacks: Hydra refuses it (`+key=value` adds
    one); a near miss of one of ROLL's names is named."""
    path = s.key.split(".")
    known = _known_keys(path)
    close = difflib.get_close_matches(path[-1], sorted(known), n=1, cutoff=0.85) \
        if known is not None and path[-1] not in known else []
    if close:
        return s.error(f"not a ROLL config key; did you mean {close[0]}?")
    return s.error("the config does not have it, and Hydra's key=value overrides only keys "
                   f"it has: write +{s.word} to add it")


# --- device_mapping: ROLL evals it; rlsim reads a small safe subset ---

def _device_list(node: ast.expr, key: str) -> list[int]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _device_list(node.left, key) + _device_list(node.right, key)
    if isinstance(node, ast.List):
        return [_device_int(elt, key) for elt in node.elts]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "list" and len(node.args) == 1 and not node.keywords):
        inner = node.args[0]
        if isinstance(inner, ast.List):
            return _device_list(inner, key)
        if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
                and inner.func.id == "range" and 1 <= len(inner.args) <= 3
                and not inner.keywords):
            bounds = [_device_int(a, key, allow_negative=True) for a in inner.args]
            span = range(*bounds)
            if len(span) > MAX_DEVICES:
                raise ScenarioError(key, f"{len(span)} devices: more than any cluster rlsim "
                                    "simulates")
            return list(span)
    raise ScenarioError(key, "rlsim reads only list(range(a, b[, step])), [i, j, ...], "
                        "list([i, j, ...]) and their sums (ROLL evals this as Python; rlsim "
                        "runs no code from a config)")


def _device_int(node: ast.expr, key: str, allow_negative: bool = False) -> int:
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    inner = node.operand if isinstance(node, ast.UnaryOp) and negative else node
    if not (isinstance(inner, ast.Constant) and type(inner.value) is int):
        raise ScenarioError(key, "device numbers must be whole numbers written out, e.g. "
                            "list(range(0, 8))")
    value = -inner.value if negative else inner.value
    if value < 0 and not allow_negative:
        raise ScenarioError(key, f"device {value} is negative")
    return int(value)


def parse_device_mapping(value: Any, key: str) -> list[int]:
    """The GPU indices of a ROLL `device_mapping`: a YAML list of ints or a string of the
    restricted form; every index once, none negative."""
    if isinstance(value, list):
        devices = [_to_int(v, key) for v in value]
    elif isinstance(value, str):
        try:
            tree = ast.parse(value.strip(), mode="eval")
        except SyntaxError:
            raise ScenarioError(key, f"{value!r} is not an expression; write e.g. "
                                "list(range(0, 8))") from None
        devices = _device_list(tree.body, key)
    else:
        raise ScenarioError(key, f"{value!r}: write list(range(a, b)) or a list of GPUs")
    if not devices:
        raise ScenarioError(key, "no GPUs; give at least one (or drop the key for a CPU worker)")
    if min(devices) < 0:
        raise ScenarioError(key, f"device {min(devices)} is negative")
    seen: set[int] = set()
    for device in devices:
        if device in seen:
            raise ScenarioError(key, f"GPU {device} appears twice")
        seen.add(device)
    return devices


# --- the config with the keys the mapping read ---

_MISSING = object()


class _Config:
    """The composed config; remembers every key path read so that the rest can be listed
    as ignored."""

    def __init__(self, loaded: RollConfig) -> None:
        self.root = loaded.root
        self.template_vars = loaded.template_vars
        self.origins = loaded.origins
        self.read: set[str] = set()
        self.asked: set[str] = set()  # every key looked for, present or not

    def raw(self, key: str) -> Any:
        """The value at dotted `key` (None counts as absent), marking it read."""
        self.asked.add(key)
        node: Any = self.root
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return _MISSING
            node = node[part]
        self.read.add(key)
        return _MISSING if node is None else node

    def peek(self, key: str) -> Any:
        """The value at dotted `key` without marking it read (None counts as absent)."""
        self.asked.add(key)
        node: Any = self.root
        for part in key.split("."):
            if not isinstance(node, dict) or node.get(part) is None:
                return _MISSING
            node = node[part]
        return node

    def has(self, key: str) -> bool:
        return self.peek(key) is not _MISSING

    def get(self, key: str, convert: Callable[[Any, str], Any], default: Any,
            default_source: str) -> tuple[Any, str]:
        """(value, source): the key's converted value, or ROLL's default and its citation."""
        value = self.raw(key)
        if value is _MISSING:
            return default, default_source
        return convert(value, key), self.src(key)

    def src(self, key: str) -> str:
        """`key`, with the key its value came from through `${...}` when there is one."""
        seen: set[str] = set()
        current, origin = key, None
        while current not in seen:
            seen.add(current)
            parts = current.split(".")
            for i in range(len(parts), 0, -1):
                prefix = ".".join(parts[:i])
                if prefix in self.origins:
                    current = ".".join([self.origins[prefix], *parts[i:]])
                    origin = current
                    break
            else:
                break
        return key if origin is None else f"{key} (= ${{{origin}}})"

    def section(self, key: str) -> dict[str, Any]:
        value = self.raw(key)
        if value is _MISSING:
            return {}
        if not isinstance(value, dict):
            raise ScenarioError(key, f"{value!r}: expected a mapping of keys")
        self.read.discard(key)  # a section is read key by key
        return value

    def peek_keys(self, key: str) -> list[str]:
        node = self.peek(key)
        return list(node) if isinstance(node, dict) else []

    def mark(self, key: str) -> None:
        self.read.add(key)

    def is_read(self, key: str) -> bool:
        parts = key.split(".")
        return any(".".join(parts[:i]) in self.read for i in range(1, len(parts) + 1))


# --- the mapping ---

@dataclass(frozen=True)
class _Layout:
    """Where actor_train and actor_infer run."""

    colocated: bool
    train_gpus: int


def import_roll(path: Path, facts: Facts, sets: Sequence[SetOverride] = ()) -> Imported:
    """The rlsim scenario of the ROLL pipeline config at `path` (RLVR or agentic) with the
    `--set` overrides `sets` applied, and `facts` for what the config does not hold (--gpu,
    --response-len-median, ...). An error about a key a --set gave names that --set."""
    try:
        imp = _import(path, facts, sets)
    except ScenarioError as err:
        hit = next((s for s in reversed(sets) if err.source is None and (
            err.field == s.key or err.field.startswith(s.key + "."))), None)
        if hit is None:
            raise
        raise ScenarioError(err.field, err.message, hit.where) from None
    cite_sets(imp, sets)
    return imp


def _import(path: Path, facts: Facts, sets: Sequence[SetOverride]) -> Imported:
    cfg = _Config(load_roll_config(path, sets))
    if not cfg.has("actor_infer"):
        raise ScenarioError("actor_infer", f"{path.name} is not a ROLL RLVR or agentic "
                            "pipeline config: it has no actor_infer (rollout) section")
    imp = Imported(defaults_of=DEFAULTS_OF)
    agentic = cfg.has("train_env_manager") or cfg.has("custom_envs")
    _basics(cfg, imp, facts, path, agentic)
    prompt_len, seq_len, seq_source = _lengths(cfg, imp)
    layout = _placement(cfg, imp, facts)
    _policy(cfg, imp, agentic, layout)
    if not agentic and imp.scenario["policy"]["name"] == "sync":
        _schedule(cfg, imp)
    if agentic:
        samples = _agentic_workload(cfg, imp, facts, seq_len, seq_source)
    else:
        samples = _rlvr_workload(cfg, imp, facts, prompt_len, seq_len)
    _trainer(cfg, imp, layout, samples, seq_len, seq_source)
    _rollout(cfg, imp, agentic)
    _rewards(cfg, imp, agentic)
    _weight_sync(cfg, imp)
    _checkpoints(cfg, imp)
    _sweep(cfg, imp)
    return imp


def _checkpoints(cfg: _Config, imp: Imported) -> None:
    """ROLL saves after every save_steps-th step and after the last one (roll/pipeline/
    base_pipeline.py), whatever the config says: a trainer fault restarts the job from
    the last save."""
    every, source = cfg.get("save_steps", _to_pos_int, 50, _default(BASE, "save_steps 50"))
    imp.set("recovery.trainer.checkpoint_every", every, source)


def _basics(cfg: _Config, imp: Imported, facts: Facts, path: Path, agentic: bool) -> None:
    if facts.name is not None:
        imp.set("name", facts.name, "--name")
    else:
        imp.set("name", path.stem, "the config file's name")
    kind = "agentic" if agentic else "RLVR"
    imp.set("description", f"ROLL {kind} pipeline imported from {path.name}",
            "rlsim import roll")
    if facts.steps is not None:
        imp.set("steps", facts.steps, "--steps")
    if facts.model is not None:
        imp.set("model", resolve_model(facts.model, "--model"), "--model")
        if cfg.has("pretrain"):
            cfg.mark("pretrain")
            imp.ignore("pretrain", "--model replaces it")
    else:
        for key in ("pretrain", "actor_train.model_args.model_name_or_path"):
            name = cfg.raw(key)
            if name is not _MISSING:
                imp.set("model", resolve_model(_to_str(name, key), key), key)
                break
        else:
            need(None, "--model", "the model (pretrain)")
    resolve_gpu(need(facts.gpu, "--gpu", "the GPU type"), "--gpu")  # fail early


def _lengths(cfg: _Config, imp: Imported) -> tuple[int, int, str]:
    """prompt_length, sequence_length and how the latter was found (base_config.py: the
    sum of prompt and response lengths unless sequence_length is given)."""
    prompt, _ = cfg.get("prompt_length", _to_pos_int, 1024,
                        _default(BASE, "prompt_length 1024"))
    seq = cfg.raw("sequence_length")
    response = cfg.raw("response_length")
    if seq is not _MISSING:
        seq_len = _to_pos_int(seq, "sequence_length")
        if response is not _MISSING:
            _to_pos_int(response, "response_length")
            imp.ignore("response_length", "sequence_length is given: ROLL keeps it and drops "
                       f"response_length ({BASE})")
        return prompt, seq_len, "sequence_length"
    if response is _MISSING:
        raise ScenarioError("response_length", "set response_length or sequence_length (ROLL "
                            "asserts one of them, base_config.py)")
    return prompt, prompt + _to_pos_int(response, "response_length"), \
        "prompt_length + response_length"


def _devices(cfg: _Config, worker: str) -> list[int] | None:
    key = f"{worker}.device_mapping"
    value = cfg.raw(key)
    return None if value is _MISSING else parse_device_mapping(value, key)


def _nodes(devices: set[int], per_node: int) -> set[int]:
    return {d // per_node for d in devices}



def _one_pool(imp: Imported, gpu: str, nodes: int, per_node: int, per_source: str,
              why: str) -> None:
    """One pool, `cluster`, holding both roles' GPUs (`why`: how the mappings say so)."""
    train_src, infer_src = "actor_train.device_mapping", "actor_infer.device_mapping"
    imp.set("pools.0.name", "cluster", why)
    imp.set("pools.0.gpu", gpu, "--gpu")
    imp.set("pools.0.nodes", nodes, f"{train_src}, {infer_src}: GPUs on {nodes} node(s) "
            f"of {per_node}")
    imp.set("pools.0.gpus_per_node", per_node, per_source)
    imp.set("rollout.pool", "cluster", infer_src)
    imp.set("train.pool", "cluster", train_src)

def _placement(cfg: _Config, imp: Imported, facts: Facts) -> _Layout:
    if facts.gpus_per_node is not None:
        per_node, per_source = facts.gpus_per_node, "--gpus-per-node"
    else:
        per_node, per_source = cfg.get("num_gpus_per_node", _to_pos_int, 8,
                                       _default(BASE, "num_gpus_per_node 8"))
    train_list = _devices(cfg, "actor_train")
    infer_list = _devices(cfg, "actor_infer")
    if train_list is None:
        raise ScenarioError("actor_train.device_mapping", "the trainer needs GPUs; give e.g. "
                            "list(range(0, 8))")
    if infer_list is None:
        raise ScenarioError("actor_infer.device_mapping", "the rollout engines need GPUs; give "
                            "e.g. list(range(0, 8))")
    train, infer = set(train_list), set(infer_list)
    gpu = resolve_gpu(need(facts.gpu, "--gpu", "the GPU type"), "--gpu")
    # ROLL counts nodes over every worker with GPUs (rlvr_config.py, "the required num nodes").
    every = train | infer
    others = ["reference", "critic", "reward_model",
              *(f"rewards.{d}" for d in cfg.peek_keys("rewards"))]
    for worker in others:
        more = cfg.peek(f"{worker}.device_mapping")
        if more is not _MISSING:
            every |= set(parse_device_mapping(more, f"{worker}.device_mapping"))
    needed_nodes = max(every) // per_node + 1
    if facts.nodes is not None and facts.nodes != needed_nodes:
        raise ScenarioError("--nodes", f"the device_mappings use GPUs 0-{max(every)}, "
                            f"{needed_nodes} node(s) of {per_node}; drop --nodes or change "
                            "device_mapping (ROLL derives its node count from them)")
    train_src, infer_src = "actor_train.device_mapping", "actor_infer.device_mapping"
    colocated = bool(train & infer)
    if colocated:
        _one_pool(imp, gpu, len(_nodes(train | infer, per_node)), per_node, per_source,
                  f"{train_src} and {infer_src} share GPUs")
        imp.set("train.gpus", len(train), train_src)
        if infer == train:
            imp.set("rollout.gpus", len(infer), infer_src)
            how = f"{infer_src} = {train_src} (the same GPUs)"
        else:
            # rlsim's colocated roles time-share one set of GPUs; ROLL lets the engines use
            # part of the trainer's (or overlap it partly). The engines get the trainer's.
            imp.set("rollout.gpus", len(train), f"{infer_src} ({len(infer)} GPUs overlapping "
                    f"actor_train's {len(train)}): rlsim's colocated roles share one GPU set, "
                    "so the engines run on actor_train's")
            how = f"{infer_src} overlaps {train_src}"
        imp.set("policy.placement", "colocated", how)
    else:
        t_nodes, i_nodes = _nodes(train, per_node), _nodes(infer, per_node)
        if t_nodes & i_nodes:
            _one_pool(imp, gpu, len(t_nodes | i_nodes), per_node, per_source,
                      f"{train_src} and {infer_src}: one set of nodes")
        else:
            imp.set("pools.0.name", "train", train_src)
            imp.set("pools.0.gpu", gpu, "--gpu")
            imp.set("pools.0.nodes", len(t_nodes), f"{train_src}: GPUs on {len(t_nodes)} "
                    f"node(s) of {per_node}")
            imp.set("pools.0.gpus_per_node", per_node, per_source)
            imp.set("pools.1.name", "rollout", infer_src)
            imp.set("pools.1.gpu", gpu, "--gpu")
            imp.set("pools.1.nodes", len(i_nodes), f"{infer_src}: GPUs on {len(i_nodes)} "
                    f"node(s) of {per_node}")
            imp.set("pools.1.gpus_per_node", per_node, per_source)
            imp.set("rollout.pool", "rollout", infer_src)
            imp.set("train.pool", "train", train_src)
        imp.set("train.gpus", len(train), train_src)
        imp.set("rollout.gpus", len(infer), infer_src)
        imp.set("policy.placement", "disaggregated", f"{infer_src} and {train_src} (no GPU "
                "in common)")
    return _Layout(colocated, len(train))


def _policy(cfg: _Config, imp: Imported, agentic: bool, layout: _Layout) -> None:
    ratio, source = cfg.get("async_generation_ratio", _to_float, 0.0,
                            _default(BASE, "async_generation_ratio 0: synchronous"))
    if ratio <= 0:
        imp.set("policy.name", "sync", source)
        return
    if ratio < 1 or ratio != int(ratio):
        raise ScenarioError("async_generation_ratio", f"{ratio:g}: rlsim's async ratio is a "
                            "whole number of policy versions (ROLL asserts >= 1); use 1, 2, ...")
    if layout.colocated:
        raise ScenarioError("actor_infer.device_mapping", "async_generation_ratio > 0 overlaps "
                            "generation with training, which rlsim runs on separate GPUs; make "
                            "actor_infer's GPUs disjoint from actor_train's, or set "
                            "async_generation_ratio: 0")
    imp.set("policy.name", "async", "async_generation_ratio > 0 (ROLL's async pipeline, "
            "base_config.py async_pipeline)")
    imp.set("policy.asynchronous.alpha", int(ratio), "async_generation_ratio")
    if not agentic and not cfg.has("router_args"):
        imp.set("policy.asynchronous.routing", "per_prompt", f"{ROUTER} PromptAffinityRouter "
                f"(RLVR's default router, {RLVR_CFG}): a prompt's requests go to one engine, "
                "expanded or not")


def _rlvr_workload(cfg: _Config, imp: Imported, facts: Facts, prompt_len: int,
                   seq_len: int) -> tuple[int, int]:
    prompts, source = cfg.get("rollout_batch_size", _to_pos_int, 128,
                              _default(BASE, "rollout_batch_size 128"))
    imp.set("workload.prompts_per_step", prompts, source)
    n, source = cfg.get("num_return_sequences_in_group", _to_pos_int, 1,
                        _default(RLVR_CFG, "num_return_sequences_in_group 1"))
    imp.set("workload.samples_per_prompt", n, source)
    prompt_source = "prompt_length" if cfg.has("prompt_length") else \
        _default(BASE, "prompt_length 1024")
    imp.set("workload.max_prompt_len", prompt_len, prompt_source)
    if seq_len <= prompt_len:
        raise ScenarioError("sequence_length", f"{seq_len} leaves no room for a response after "
                            f"prompt_length {prompt_len}")
    response_source = "response_length" if not cfg.has("sequence_length") else \
        f"sequence_length - prompt_length ({RLVR_CFG} sets max_new_tokens so)"
    cap = seq_len - prompt_len
    imp.set("workload.max_response_len", cap, response_source)
    if cfg.has("actor_infer.generating_args.max_new_tokens"):
        imp.ignore("actor_infer.generating_args.max_new_tokens", "ROLL rewrites it to "
                   f"sequence_length - prompt_length ({RLVR_CFG})")
    _response_len(imp, facts, cap, "the response lengths (only their cap: response_length)")
    _prompt_len(imp, facts, prompt_len)
    return prompts, n


def _response_len(imp: Imported, facts: Facts, cap: int, what: str) -> None:
    median = need(facts.response_len_median, "--response-len-median", what)
    if median > cap:
        raise ScenarioError("--response-len-median", f"{median} is above the response cap "
                            f"{cap} the config sets")
    if facts.response_len_sigma is not None:
        sigma, sigma_source = facts.response_len_sigma, "--response-len-sigma"
    else:
        sigma, sigma_source = DAPO_LOG_SIGMA, DAPO_SIGMA_SOURCE
    imp.set("workload.response_len", {"dist": "lognormal", "median": median, "sigma": sigma},
            f"--response-len-median; sigma: {sigma_source}")


def _prompt_len(imp: Imported, facts: Facts, cap: int) -> None:
    if facts.prompt_len_median is None:
        return
    if facts.prompt_len_median > cap:
        raise ScenarioError("--prompt-len-median", f"{facts.prompt_len_median} is above the "
                            f"prompt cap {cap}")
    imp.set("workload.prompt_len", {"dist": "lognormal", "median": facts.prompt_len_median,
                                    "sigma": PROMPT_LOG_SIGMA},
            "--prompt-len-median; sigma 0.5: rlsim's default prompt shape")


def _agentic_workload(cfg: _Config, imp: Imported, facts: Facts, seq_len: int,
                      seq_source: str) -> tuple[int, int]:
    tem = "train_env_manager"
    group, group_src = cfg.get(f"{tem}.group_size", _to_pos_int, 1,
                               _default(AGENTIC_CFG, "group_size 1"))
    batch, batch_src = cfg.get("rollout_batch_size", _to_pos_int, 128,
                               _default(BASE, "rollout_batch_size 128"))
    if batch % group:
        raise ScenarioError("rollout_batch_size", f"{batch} trajectories are not whole groups "
                            f"of {tem}.group_size {group} (ROLL asserts it, {AGENTIC_CFG})")
    prompts = batch // group
    imp.set("workload.prompts_per_step", prompts, f"{batch_src} / {group_src}")
    imp.set("workload.samples_per_prompt", group, group_src)
    groups, groups_src = cfg.get(f"{tem}.num_env_groups", _to_pos_int, 128,
                                 _default(AGENTIC_CFG, "num_env_groups 128"))
    spare, spare_src = cfg.get(f"{tem}.group_size_redundancy", _to_int, 0,
                               _default(AGENTIC_CFG, "group_size_redundancy 0"))
    tags = _env_tags(cfg, groups)
    # Per tag: the turn cap and the per-turn token cap; several tags: the largest of each.
    max_turns = max(_to_pos_int(_env_key(cfg, tag, "max_steps"), f"custom_envs.{tag}.max_steps")
                    for tag in tags)
    per_turn = max(_to_pos_int(_env_key(cfg, tag, "max_tokens_per_step"),
                               f"custom_envs.{tag}.max_tokens_per_step") for tag in tags)
    tag_list = ", ".join(tags)
    gen = "actor_infer.generating_args" if cfg.has("actor_infer.generating_args") \
        else f"{tem}.generating_args"
    new_tokens, new_src = cfg.get(f"{gen}.max_new_tokens", _to_pos_int, 8192,
                                  _default(GENERATING, "max_new_tokens 8192"))
    cap = min(per_turn, new_tokens, seq_len)
    steps_key = cfg.src(f"custom_envs.{tags[0]}.max_steps") if len(tags) == 1 else \
        f"custom_envs.[{tag_list}].max_steps (the largest)"
    tokens_key = cfg.src(f"custom_envs.{tags[0]}.max_tokens_per_step") if len(tags) == 1 else \
        f"custom_envs.[{tag_list}].max_tokens_per_step (the largest)"
    if cap == per_turn:
        imp.set("workload.max_response_len", cap, tokens_key)
    else:
        imp.set("workload.max_response_len", cap, f"min({tokens_key}, {new_src}) ({TRAJ_ENV} "
                "make_decision)")
    _response_len(imp, facts, cap, "the response lengths per turn (only their cap: "
                  "max_tokens_per_step)")
    # The first observation's cap: rlsim's default (2048) unless the context is shorter.
    if seq_len <= RLSIM_MAX_PROMPT_LEN:
        imp.set("workload.max_prompt_len", seq_len // 2, f"{seq_source} / 2: the first "
                "observation must leave room for turns")
    _prompt_len(imp, facts, min(seq_len // 2, RLSIM_MAX_PROMPT_LEN))
    if cfg.has("sequence_length") and cfg.has("prompt_length"):
        imp.ignore("prompt_length", "the agentic pipeline uses it only to make "
                   "sequence_length, which is given")
    imp.set("workload.agentic.max_turns", max_turns, steps_key)
    imp.set("workload.agentic.turns", {"dist": "fixed", "value": max_turns},
            f"default: every trajectory runs {steps_key} turns (the config holds only the "
            "cap: an upper bound; edit for episodes that end early)")
    imp.set("workload.agentic.max_context_len", seq_len, seq_source)
    imp.set("workload.agentic.env_step", dict(ENV_STEP_DEFAULT), ENV_STEP_SOURCE)
    imp.set("policy.env_interaction", "per_trajectory", f"{TRAJ_ENV} run_rollout_loop: "
            "every environment runs its own generate / step loop")
    limits = [cfg.raw(f"custom_envs.{tag}.max_env_step_concurrent") for tag in tags]
    if all(v is not _MISSING and _to_int(v, "max_env_step_concurrent") > 0 for v in limits):
        workers = sum(_to_int(v, "max_env_step_concurrent") for v in limits)
        imp.set("env.workers", workers, " + ".join(
            cfg.src(f"custom_envs.{tag}.max_env_step_concurrent") for tag in tags))
    else:
        imp.set("env.workers", groups * (group + spare), f"{groups_src} x ({group_src} + "
                f"{spare_src}): one environment each")
    extra_groups = max(0, groups - prompts)
    if imp.scenario["policy"]["name"] == "async":
        imp.set("policy.asynchronous.extra_groups", extra_groups,
                f"{groups_src} - rollout_batch_size / {group_src}")
        imp.set("policy.asynchronous.extra_per_group", spare, spare_src)
    elif extra_groups or spare:
        imp.ignore(f"{tem}.num_env_groups / group_size_redundancy",
                   f"{extra_groups} extra groups and {spare} extra per group: rlsim runs "
                   "redundant environments under the async policy only")
    imp.set("reward.kind", "rule", "the environments score their own episodes "
            "(custom_envs: the env's reward)")
    return prompts, group


def _env_tags(cfg: _Config, groups: int) -> list[str]:
    key = "train_env_manager.tags"
    raw = cfg.raw(key)
    tags = ["SimpleSokoban"] if raw is _MISSING else raw
    if not isinstance(tags, list) or not tags or not all(isinstance(t, str) for t in tags):
        raise ScenarioError(key, f"{tags!r}: a list of custom_envs names")
    part_key = "train_env_manager.num_groups_partition"
    parts = cfg.raw(part_key)
    partition = [128] if parts is _MISSING else parts
    if not isinstance(partition, list):
        raise ScenarioError(part_key, f"{partition!r}: a list of group counts, one per tag")
    counts = [_to_int(p, part_key) for p in partition]
    if sum(counts[:len(tags)]) != groups:
        raise ScenarioError(part_key, f"{counts} over tags {tags} makes "
                            f"{sum(counts[:len(tags)])} groups, not num_env_groups {groups} "
                            f"(ROLL asserts they match, {AGENTIC_CFG} make_env_configs)")
    used = [t for t, c in zip(tags, counts, strict=False) if c > 0]
    for tag in used:
        if not cfg.has(f"custom_envs.{tag}"):
            raise ScenarioError(key, f"{tag!r} has no custom_envs entry")
    return used


def _env_key(cfg: _Config, tag: str, name: str) -> Any:
    value = cfg.raw(f"custom_envs.{tag}.{name}")
    if value is _MISSING:
        raise ScenarioError(f"custom_envs.{tag}.{name}", f"the env manager reads it "
                            f"({TRAJ_ENV}); set it")
    return value


def _trainer(cfg: _Config, imp: Imported, layout: _Layout, samples: tuple[int, int],
             seq_len: int, seq_source: str) -> None:
    prompts, n = samples
    name, name_src = cfg.get("actor_train.strategy_args.strategy_name", _to_str,
                             "fsdp2_train", _default(WORKER, "strategy_name fsdp2_train"))
    if name not in TRAIN_BACKENDS:
        raise ScenarioError("actor_train.strategy_args.strategy_name",
                            f"{name!r} is not a training strategy; use one of "
                            + ", ".join(TRAIN_BACKENDS))
    backend = TRAIN_BACKENDS[name]
    imp.set("train.backend", backend, name_src)
    sc = "actor_train.strategy_args.strategy_config"
    layout_sizes = {"tp": 1, "pp": 1, "cp": 1, "ep": 1}
    if backend == "megatron":
        for key, field in MEGATRON_LAYOUT.items():
            value, src = cfg.get(f"{sc}.{key}", _to_pos_int, 1, _default(BASE, f"{key} 1"))
            layout_sizes[field] = value
            if field != "ep" or cfg.has(f"{sc}.{key}"):  # EP only when the config says
                imp.set(f"train.{field}", value, src)
        gran, gran_src = cfg.get(f"{sc}.recompute_granularity", _to_str, None,
                                 _default(MCORE_ARGS, "recompute_granularity None: no "
                                          "recompute"))
        if gran is not None and gran not in RECOMPUTE:
            raise ScenarioError(f"{sc}.recompute_granularity", f"{gran!r}: full or selective")
        imp.set("train.recompute", RECOMPUTE.get(gran or "", "none"), gran_src)
        if cfg.has(f"{sc}.moe_token_dispatcher_type"):
            _dispatcher(cfg, imp, sc)
        _cpu_optimizer(cfg, imp, sc)
    else:
        cp, cp_src = cfg.get("actor_train.model_args.ulysses_size", _to_pos_int, 1,
                             _default(MODEL_ARGS, "ulysses_size 1"))
        layout_sizes["cp"] = cp
        imp.set("train.cp", cp, cp_src)
        off, off_src = cfg.get("actor_train.model_args.disable_gradient_checkpointing",
                               _to_bool, False,
                               _default(MODEL_ARGS, "disable_gradient_checkpointing false"))
        imp.set("train.recompute", "none" if off else "full", off_src)
        offload, offload_src = cfg.get(f"{sc}.offload_policy", _to_bool, False,
                                       _default("roll/distributed/strategy/fsdp2_strategy.py",
                                                "no CPU offload"))
        if offload:
            imp.set("train.param_offload", True, offload_src)
            imp.set("train.optimizer_offload", True, offload_src)
    shard = layout_sizes["tp"] * layout_sizes["pp"] * layout_sizes["cp"]
    if layout.train_gpus % shard:
        raise ScenarioError(sc, f"TP x PP x CP = {shard} does not divide actor_train's "
                            f"{layout.train_gpus} GPUs (actor_train.device_mapping)")
    dp = layout.train_gpus // shard
    if backend == "megatron" and dp > 1 and _batch_prompts(cfg) % dp:
        raise ScenarioError("rollout_batch_size", f"{_batch_prompts(cfg)} is not a multiple "
                            f"of actor_train's data-parallel size {dp} (ROLL checks it, "
                            "roll/utils/config_utils.py validate_megatron_batch_size)")
    _batching(cfg, imp, backend, dp, prompts, n)
    # set_old_logprobs_status counts DP for megatron_train and fsdp2 only (base_config.py).
    status_dp = dp if backend in ("megatron", "fsdp2") else 1
    ref, old = _log_prob_passes(cfg, imp, status_dp, prompts * n)
    _padding(cfg, imp, backend, layout_sizes["cp"], ref, old, seq_len, seq_source)
    adv, adv_src = cfg.get("adv_estimator", _to_str, "gae", _default(BASE, "adv_estimator gae"))
    imp.set("train.critic", adv == "gae", adv_src)
    if adv == "gae" and cfg.has("critic"):
        cfg.mark("critic")
        imp.ignore("critic", "rlsim's critic has the actor's size and runs on the trainer's "
                   "GPUs")
    offload_states, offload_src = cfg.get("is_offload_states", _to_bool, False,
                                          _default(BASE, "is_offload_states false"))
    if offload_states:
        imp.set("train.param_offload", True, offload_src)
        imp.set("train.optimizer_offload", True, offload_src)


def _dispatcher(cfg: _Config, imp: Imported, sc: str) -> None:
    """Megatron's expert dispatcher as strategy_config names it: alltoall, or flex with
    DeepEP or HybridEP (rlsim's deepep)."""
    kind, src = cfg.get(f"{sc}.moe_token_dispatcher_type", _to_str, None, "")
    deepep, _ = cfg.get(f"{sc}.moe_enable_deepep", _to_bool, False, "")
    backend, _ = cfg.get(f"{sc}.moe_flex_dispatcher_backend", _to_str, None, "")
    try:
        value = moe_dispatcher(kind, deepep, backend)
    except ValueError as err:
        key = {"kind": "moe_token_dispatcher_type", "backend": "moe_flex_dispatcher_backend",
               "deepep": "moe_enable_deepep"}[err.args[1]]
        raise ScenarioError(f"{sc}.{key}", err.args[0]) from None
    bare = value == "deepep" and not deepep and backend is None
    imp.set("train.moe_dispatcher", value, src + FLEX_DEFAULT if bare else src)


def _cpu_optimizer(cfg: _Config, imp: Imported, sc: str) -> None:
    """Megatron's hybrid CPU optimizer as ROLL's mcore_adapter hands it to Megatron-Core
    (mcore_adapter/src/mcore_adapter/trainer/trainer.py:515-516: optimizer_cpu_offload and
    optimizer_offload_fraction; not overlap_cpu_optimizer_d2h_h2d, so Megatron-Core's
    default, no overlap)."""
    keys = [f"{sc}.{k}" for k in ("optimizer_cpu_offload", "optimizer_offload_fraction")]
    if not any(cfg.has(k) for k in keys):
        return
    on, _ = cfg.get(keys[0], _to_bool, False, "")
    frac, frac_src = cfg.get(keys[1], _to_float, None, "")
    try:
        value = cpu_optimizer_fraction(on, frac)
    except ValueError as err:
        raise ScenarioError(keys[1], err.args[0]) from None
    if value > 0.0:
        imp.set("train.optimizer_offload_fraction", value, frac_src)
        return
    for key in keys:
        if cfg.has(key):
            imp.ignore(key, CPU_OPTIMIZER_OFF)


def _batch_prompts(cfg: _Config) -> int:
    value, _ = cfg.get("rollout_batch_size", _to_pos_int, 128, "")
    return int(value)


def _batching(cfg: _Config, imp: Imported, backend: str, dp: int, prompts: int,
              n: int) -> None:
    """Micro-batches and optimizer steps: ROLL's mini-batch is per_device_train_batch_size x
    gradient_accumulation_steps samples per DP rank (base_config.py set_max_steps)."""
    ta = "actor_train.training_args"
    mbs, mbs_src = cfg.get(f"{ta}.per_device_train_batch_size", _to_pos_int, 8,
                           _default(TRAINING, "per_device_train_batch_size 8"))
    ga, ga_src = cfg.get(f"{ta}.gradient_accumulation_steps", _to_pos_int, 1,
                         _default(TRAINING, "gradient_accumulation_steps 1"))
    dyn, _ = cfg.get("actor_train.use_dynamic_batching_in_train", _to_bool, False, "")
    if dyn:
        key = "actor_train.max_tokens_per_microbatch_in_train"
        tokens = cfg.raw(key)
        if tokens is _MISSING or _to_int(tokens, key) <= 0:
            raise ScenarioError(key, "dynamic batching needs a token cap per micro-batch "
                                "(ROLL: sequence_length x 2 x micro-batch size recommended)")
        imp.set("train.max_token_len_per_gpu", _to_int(tokens, key), key)
    else:
        imp.set("train.micro_batch_size_per_gpu", mbs, mbs_src)
    samples = prompts * n
    per_step = mbs * ga * dp
    steps = max(1, (samples // dp) // (mbs * ga))
    how = f"{mbs_src} x {ga_src} x DP {dp} = {per_step} samples per optimizer step"
    if steps == 1:
        imp.set("train.ppo_mini_batch_size", None, f"{how}: one optimizer step for the "
                f"step's {samples} samples")
    else:
        # ROLL cuts mini-batches in samples, rlsim in whole prompts: the nearest in prompts.
        size = -(-prompts // steps)
        runs = -(-prompts // size)
        note = "" if runs == steps and prompts % steps == 0 else \
            f" (in whole prompts of {size}: {runs} steps)"
        imp.set("train.ppo_mini_batch_size", size, f"{how}: {steps} optimizer steps over "
                f"{prompts} prompts{note}")
    epochs, epochs_src = cfg.get("ppo_epochs", _to_pos_int, 1, _default(BASE, "ppo_epochs 1"))
    imp.set("train.ppo_epochs", epochs, epochs_src)


def _log_prob_passes(cfg: _Config, imp: Imported, dp: int,
                     samples: int) -> tuple[bool, bool]:
    """The reference and old-log-prob passes as base_config.py decides them (`samples`
    per step over `dp` ranks), and the micro-batching of the one rlsim prices."""
    kl_coef, kl_src = cfg.get("init_kl_coef", _to_float, 0.2,
                              _default(BASE, "init_kl_coef 0.2"))
    kl_loss, kl_loss_src = cfg.get("use_kl_loss", _to_bool, False,
                                   _default(BASE, "use_kl_loss false"))
    enable, enable_src = cfg.get("enable_reference", _to_bool, False,
                                 _default(BASE, "enable_reference false"))
    if kl_loss:
        ref, ref_src = True, kl_loss_src
    elif kl_coef > 0:
        ref, ref_src = True, kl_src
    elif enable:
        ref, ref_src = True, enable_src
    else:
        ref, ref_src = False, f"{kl_src}; {kl_loss_src}: no KL term, no reference pass"
    imp.set("train.ref_logprob", ref, ref_src)
    if not ref and cfg.has("reference"):
        cfg.mark("reference")
        imp.ignore("reference", "no KL term (init_kl_coef 0, use_kl_loss false): ROLL "
                   "skips the reference pass")

    adv, adv_src = cfg.get("adv_estimator", _to_str, "gae", _default(BASE, "adv_estimator gae"))
    force, force_src = cfg.get("force_disable_old_logprobs_recompute", _to_bool, False,
                               _default(BASE, "force_disable_old_logprobs_recompute false"))
    old, old_src = cfg.get("enable_old_logprobs_recompute", _to_bool, False,
                           _default(BASE, "enable_old_logprobs_recompute false"))
    ta = "actor_train.training_args"
    mbs, _ = cfg.get(f"{ta}.per_device_train_batch_size", _to_pos_int, 8, "")
    ga, _ = cfg.get(f"{ta}.gradient_accumulation_steps", _to_pos_int, 1, "")
    per_rank = (samples // dp) // (mbs * ga)
    if force:
        old, old_src = False, force_src
    elif adv in ("step_reinforce", "gigpo"):
        old, old_src = True, f"{adv_src} ({adv} recomputes old log-probs, {BASE})"
    elif per_rank > 1:
        old, old_src = True, (f"{ta}.per_device_train_batch_size x gradient_accumulation_steps"
                              f": {per_rank} optimizer steps per rank ({BASE} "
                              "set_old_logprobs_status)")
    elif kl_coef > 0:
        old, old_src = True, f"{kl_src} > 0 ({BASE} set_old_logprobs_status)"
    elif not old:
        old_src = (f"{old_src}; one optimizer step per rank and no KL: the train step's own "
                   f"forward gives the old log-probs ({BASE} set_old_logprobs_status)")
    imp.set("train.old_logprob", old, old_src)

    worker = "actor_train" if old else "reference" if ref else None
    if worker is None:
        if cfg.has("actor_train.infer_batch_size"):
            cfg.mark("actor_train.infer_batch_size")
            imp.ignore("actor_train.infer_batch_size", "no log-prob pass runs")
        return ref, old
    dyn, _ = cfg.get(f"{worker}.use_dynamic_batching_in_infer", _to_bool, False, "")
    if dyn:
        key = f"{worker}.max_tokens_per_microbatch_in_infer"
        tokens = cfg.raw(key)
        if tokens is _MISSING or _to_int(tokens, key) <= 0:
            raise ScenarioError(key, "dynamic batching needs a token cap per micro-batch")
        imp.set("train.log_prob_max_token_len_per_gpu", _to_int(tokens, key), key)
    else:
        size, size_src = cfg.get(f"{worker}.infer_batch_size", _to_pos_int, 16,
                                 _default(WORKER, "infer_batch_size 16"))
        imp.set("train.log_prob_micro_batch_size_per_gpu", size, size_src)
    if ref and old and cfg.has("reference.infer_batch_size"):
        cfg.mark("reference.infer_batch_size")
        imp.ignore("reference.infer_batch_size", "rlsim has one log-prob micro-batch size; "
                   "actor_train's (the old log-prob pass) is used")
    if ref and cfg.has("reference.device_mapping"):
        devices = parse_device_mapping(cfg.raw("reference.device_mapping"),
                                       "reference.device_mapping")
        train_devs = parse_device_mapping(cfg.raw("actor_train.device_mapping"),
                                          "actor_train.device_mapping")
        if set(devices) != set(train_devs):
            imp.ignore("reference.device_mapping", "rlsim runs the reference pass on the "
                       "trainer's GPUs")
    return ref, old


def _padded(cfg: _Config, worker: str, mode: str) -> bool:
    """Whether ROLL runs `worker`'s `mode` ('train' or 'infer') pass on the batch padded to
    sequence_length: no sequence packing and no dynamic batching (both default off,
    worker_config.py)."""
    packing, _ = cfg.get(f"{worker}.use_sequence_packing", _to_bool, False, "")
    dyn, _ = cfg.get(f"{worker}.use_dynamic_batching_in_{mode}", _to_bool, False, "")
    return not packing and not dyn


def _padding(cfg: _Config, imp: Imported, backend: str, cp: int, ref: bool, old: bool,
             seq_len: int, seq_source: str) -> None:
    why = (f"{seq_source}: without sequence packing or dynamic batching ROLL pads every "
           f"sample to it ({FUNCTIONALS} postprocess_generate; the agentic env managers' "
           "pad_to_length)")
    # FSDP2 with Ulysses CP unpads the batch before the forward (fsdp2_strategy.py).
    train_pad = _padded(cfg, "actor_train", "train") and not (backend == "fsdp2" and cp > 1)
    pad_to = seq_len if train_pad else None
    if pad_to is not None:
        imp.set("train.pad_to", pad_to, f"{why}, actor_train's train pass")
    old_pad = seq_len if old and _padded(cfg, "actor_train", "infer") else None
    ref_pad = seq_len if ref and _padded(cfg, "reference", "infer") else None
    first = old_pad if old else ref_pad
    if (old or ref) and first is not None and first != pad_to:
        imp.set("train.log_prob_pad_to", first, f"{why}, the "
                f"{'old log-prob' if old else 'reference'} pass")
    if ref and old and ref_pad is not None and ref_pad != old_pad:
        imp.set("train.ref_pad_to", ref_pad, f"{why}, the reference pass")
    if (old or ref) and first is None and pad_to is not None:
        imp.ignore("actor_train.use_dynamic_batching_in_infer", "the log-prob passes run "
                   "unpadded but rlsim pads them as training (train.pad_to)")


def _rollout(cfg: _Config, imp: Imported, agentic: bool) -> None:
    name, name_src = cfg.get("actor_infer.strategy_args.strategy_name", _to_str, None, "")
    if name not in ROLLOUT_STRATEGIES:
        raise ScenarioError("actor_infer.strategy_args.strategy_name", f"{name!r}: ROLL's "
                            "engines are vllm or sglang (base_config.py asserts it)")
    imp.cite_section("rollout", f"{name_src}: {name} engines (rlsim models vLLM and SGLang "
                     "alike: continuous batching, paged KV cache)")
    sc = "actor_infer.strategy_args.strategy_config"
    for key, spec in ENGINE_KEYS[name].items():
        value = cfg.raw(f"{sc}.{key}")
        if value is not _MISSING:
            imp.set(spec.field, spec.convert(value, f"{sc}.{key}"), f"{sc}.{key}")
        elif spec.default is not None:
            imp.set(spec.field, spec.default, spec.default_source)
    if name == "sglang":
        if not cfg.has(f"{sc}.mem_fraction_static"):
            raise ScenarioError(f"{sc}.mem_fraction_static", "ROLL's SGLang strategy reads it "
                                f"({SGLANG_STRATEGY}); set e.g. 0.85")
        if not cfg.has(f"{sc}.tensor_parallel_size"):
            tp, tp_src = cfg.get("actor_infer.num_gpus_per_worker", _to_pos_int, 1,
                                 _default(WORKER, "num_gpus_per_worker 1"))
            imp.set("rollout.tp", tp, f"{tp_src} ({SGLANG_STRATEGY}: TP defaults to the "
                    "worker's GPUs)")
    tp = imp.scenario["rollout"].get("tp", 1) * imp.scenario["rollout"].get("pp", 1)
    gpus = imp.scenario["rollout"]["gpus"]
    if gpus % tp:
        raise ScenarioError(f"{sc}.tensor_parallel_size", f"engines of {tp} GPUs do not "
                            f"divide actor_infer's {gpus} GPUs (actor_infer.device_mapping)")
    cap_key = f"{sc}.{ENGINE_SEQ_CAP[name]}"
    engine_cap = cfg.raw(cap_key)
    if agentic:
        # EnvAffinityRouter has no rate limit (router.py): only the engine's own cap.
        cfg.mark("max_running_requests")
        if engine_cap is not _MISSING:
            imp.set("rollout.max_running_seqs", _to_pos_int(engine_cap, cap_key), cap_key)
        return
    router = "router_args.max_running_requests" if cfg.has("router_args") \
        else "max_running_requests"
    limit, limit_src = cfg.get(router, _to_pos_int, 128,
                               _default(BASE, "max_running_requests 128"))
    if limit_src.startswith("default:"):
        limit_src += f"; PromptAffinityRouter caps each engine's running sequences ({ROUTER})"
    if engine_cap is not _MISSING and _to_pos_int(engine_cap, cap_key) < limit:
        imp.set("rollout.max_running_seqs", _to_pos_int(engine_cap, cap_key), cap_key)
    else:
        imp.set("rollout.max_running_seqs", limit, limit_src)


def _schedule(cfg: _Config, imp: Imported) -> None:
    """An RLVR sync run's rollout scheduling (policy.schedule, ROLL's own names): the
    request scheduler level, prompt replication, additional prompts, and whether any
    reward domain filters groups (rewards.<domain>.query_filter_config, whose filtered
    share the config does not hold)."""
    level, source = cfg.get("generate_opt_level", _to_int, 1,
                            _default(BASE, "generate_opt_level 1: the request scheduler"))
    if level not in (0, 1):
        raise ScenarioError("generate_opt_level", f"{level}: ROLL has levels 0 (batch "
                            "generate) and 1 (the request scheduler); write 0 or 1")
    imp.set("policy.schedule.queue_scheduling", level == 1, source)
    if level == 1:
        expand, source = cfg.get("is_num_return_sequences_expand", _to_bool, False,
                                 _default(BASE, "is_num_return_sequences_expand false"))
        imp.set("policy.schedule.prompt_replication", expand, source)
        use, source = cfg.get("is_use_additional_prompts", _to_bool, False,
                              _default(BASE, "is_use_additional_prompts false"))
        imp.set("policy.schedule.use_additional_prompts", use, source)
        if use:
            extra, source = cfg.get("max_additional_running_prompts", _to_int, 16,
                                    _default(BASE, "max_additional_running_prompts 16"))
            if extra < 0:
                raise ScenarioError("max_additional_running_prompts",
                                    f"{extra} must be at least 0")
            imp.set("policy.schedule.additional_prompts", extra, source)
    filtering = []
    for domain in cfg.peek_keys("rewards"):
        key = f"rewards.{domain}.query_filter_config.type"
        kind, _ = cfg.get(key, _to_str, "no_filter", "")
        if kind not in ("no_filter", "mean_filter", "std_filter"):
            raise ScenarioError(key, f"{kind!r}: ROLL's query filters are no_filter, "
                                "mean_filter and std_filter")
        cfg.mark(f"rewards.{domain}.query_filter_config")
        if kind != "no_filter":
            filtering.append(key)
    if filtering:
        imp.set("policy.schedule.zero_variance_fraction", 0.0,
                " + ".join(filtering) + f": {FILTERED_SHARE_UNKNOWN}")
        imp.set("description", imp.scenario["description"] + ". Group filtering "
                f"(query_filter_config): {FILTERED_SHARE_UNKNOWN}", "rlsim import roll")


def _rewards(cfg: _Config, imp: Imported, agentic: bool) -> None:
    if agentic:
        if cfg.has("reward"):
            cfg.mark("reward")
            imp.ignore("reward", "an LLM reward worker of the agentic pipeline: rlsim scores "
                       "episodes by the environments' own reward")
        return
    domains = cfg.section("rewards")
    kinds: dict[str, str] = {}
    workers = 0
    sources: list[str] = []
    for domain in domains:
        base = f"rewards.{domain}"
        cls = cfg.raw(f"{base}.worker_cls")
        cls_name = "" if cls is _MISSING else _to_str(cls, f"{base}.worker_cls")
        kind = next((k for part, k in REWARD_KINDS.items() if part in cls_name.lower()),
                    "rule")
        if cfg.has(f"{base}.device_mapping"):
            cfg.mark(base)
            imp.ignore(base, "a reward model on GPUs (an LLM judge): not imported; add "
                       "reward.judge (a catalogue model, its pool and GPUs) by hand")
            continue
        kinds[domain] = kind
        size = cfg.raw(f"{base}.world_size")
        if size is not _MISSING:
            workers += _to_pos_int(size, f"{base}.world_size")
            sources.append(f"{base}.world_size")
    if not kinds:
        return
    kind = "sandbox" if "sandbox" in kinds.values() else "rule"
    which = [f"rewards.{d}.worker_cls" for d, k in kinds.items() if k == kind]
    imp.set("reward.kind", kind, " + ".join(which))
    if len(set(kinds.values())) > 1:
        imp.ignore("rewards.*.worker_cls", f"reward kinds {sorted(set(kinds.values()))}: "
                   f"rlsim scores every sample one way ({kind}); workload.tasks with "
                   "reward.by_task would split them")
    if workers:
        imp.set("reward.workers", workers, " + ".join(sources))


def _weight_sync(cfg: _Config, imp: Imported) -> None:
    imp.set("framework.name", "roll", "rlsim import roll")
    imp.set("weight_sync.framework", "roll", "ROLL's model update "
            "(roll/third_party/megatron/model_update.py)")
    size, src = cfg.get("model_update_buffer_size_mb", _to_pos_int, 1024,
                        _default(BASE, "model_update_buffer_size_mb 1024"))
    imp.set("weight_sync.bucket_size", f"{size} MiB", src)


# --- every key not read: listed with why, typos refused ---

def _leaves(node: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, node


def _known_keys(path: list[str]) -> frozenset[str] | None:
    """ROLL's field names at the level of `path`'s last key, when known."""
    if len(path) == 1:
        return TOP_KEYS
    if len(path) == 2 and path[0] in WORKER_SECTIONS:
        return WORKER_KEYS
    if len(path) == 3 and path[0] == "rewards":
        return WORKER_KEYS
    parent = path[-2]
    return KNOWN_BELOW.get(parent) if len(path) >= 3 else None


def _typo(cfg: _Config, key: str, path: list[str], value: Any) -> str | None:
    """For a key that is not one of ROLL's but close to one: an error when the importer
    asked for that one (the setting would silently fall back to ROLL's default), else the
    reason to list it with."""
    known = _known_keys(path)
    name = path[-1]
    if known is None or name in known or (len(path) == 1 and name in cfg.template_vars):
        return None
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.85)
    if not close:
        return None
    meant = ".".join([*path[:-1], close[0]])
    # A top-level mapping is a template block (traj_envs.yaml's custom_env), not a typo.
    template_block = len(path) == 1 and isinstance(value, dict)
    if meant in cfg.asked and not template_block:
        raise ScenarioError(key, f"not a ROLL config key; did you mean {close[0]}? (ROLL's "
                            "loader drops unknown keys, so ROLL would use its default)")
    return (f"not a ROLL config key (did you mean {close[0]}?): ROLL's loader drops it, and "
            "rlsim does not use it")


def _sweep(cfg: _Config, imp: Imported) -> None:
    """List every key the mapping did not read, with why; refuse likely typos. A section
    none of whose keys was read and whose name has a reason is listed once, whole."""
    reported = {key for key, _ in imp.ignored}

    def visit(key: str, value: Any) -> None:
        path = key.split(".")
        hint = _typo(cfg, key, path, value)
        if key in reported or cfg.is_read(key):
            return
        if hint is not None:
            imp.ignore(key, hint)
            return
        if isinstance(value, dict) and value:
            untouched = not any(cfg.is_read(f"{key}.{leaf}") for leaf, _ in _leaves(value, ""))
            reason = PATH_REASONS.get(key) or REASONS.get(path[-1])
            if reason is None and len(path) == 1 and path[0] in cfg.template_vars:
                reason = _TEMPLATE
            if reason is None and len(path) == 2 and path[0] == "custom_envs":
                reason = "an environment that train_env_manager.tags does not run"
            known = _known_keys(path)
            if reason is None and known is not None and path[-1] not in known:
                reason = _UNKNOWN
            if untouched and reason is not None:
                imp.ignore(key, reason)
                return
            for sub, sub_value in value.items():
                visit(f"{key}.{sub}", sub_value)
            return
        imp.ignore(key, _reason(cfg, path))

    for key, value in cfg.root.items():
        visit(str(key), value)


def _reason(cfg: _Config, path: list[str]) -> str:
    name = path[-1]
    if ".".join(path) in PATH_REASONS:
        return PATH_REASONS[".".join(path)]
    if name in REASONS:
        return REASONS[name]
    if len(path) >= 3 and path[-2] == "strategy_config":
        return f"an option of {path[0]}'s strategy that rlsim's cost model has no counterpart for"
    if len(path) == 1 and name in cfg.template_vars:
        return _TEMPLATE
    known = _known_keys(path)
    if known is not None and name not in known:
        return _UNKNOWN
    return _FALLBACK
