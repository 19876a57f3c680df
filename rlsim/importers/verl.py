"""Importing a veRL job: its Hydra YAML or launch script becomes an rlsim scenario.

Owns `import_verl(path, facts, sets)`. The input is a veRL config as a Hydra YAML
(ppo_trainer style, nested; a run's `.hydra/config.yaml` too) or a launch script (`python3
-m verl.trainer.main_ppo key=value ...`, read by `rlsim.importers.shell`); which one is
told by the content. The user's `--set` overrides (`rlsim.importers.overrides`) apply
after the config's own, as if appended to the script's command line, with Hydra's rules
for which keys they may override, add or remove. The config's values apply on top of
veRL's own defaults, which this module holds as a table, each with the file and line it
comes from at volcengine/verl@b178a3c (`DEFAULTS_OF`, which the scenario file's header
names; `_generated_ppo_trainer.yaml` and `_generated_ppo_megatron_trainer.yaml`, the
flattened ppo_trainer / ppo_megatron_trainer configs) and, for the recipes, their own
config files; a scenario field set from a default names it, one set or changed by a
--set names that.

Mapped: the `_FIELDS` table (one veRL key to one scenario field, with its converter) and the
settings that need more than one key (`_train_batching`, `_recompute`, `_passes`, pools and
policy). Every other key the config sets is listed as not used, with why (`_IGNORED`); a key
veRL does not have is an error, as it is in veRL (Hydra refuses it) unless written `+key`.
The entry point sets the policy: `verl.trainer.main_ppo` and the DAPO recipe are
synchronous and colocated (veRL's hybrid engine); the one-step-off recipe is `one_off`,
disaggregated, rollout on `rollout.nnodes` x `rollout.n_gpus_per_node` GPUs. The config
holds neither the GPU type nor the response lengths (only their cap): flags supply them.
A config veRL itself would reject (a mini-batch larger than the batch, a TP that does not
divide the GPUs) is an error naming the key, with veRL's own check cited.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import MODELS
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
from rlsim.importers.overrides import SetOverride, cite_sets
from rlsim.importers.shell import LaunchScript, hydra_value, parse_launch_script

VERL = "verl@b178a3cd56f5"            # volcengine/verl commit the defaults are read at
RECIPE = "verl-recipe@21892b927693"   # verl-project/verl-recipe, pinned by that commit
DEFAULTS_OF = f"veRL at volcengine/{VERL}"  # what the scenario file and the CLI say
_FSDP_FILE = "verl/trainer/config/_generated_ppo_trainer.yaml"
_MEGATRON_FILE = "verl/trainer/config/_generated_ppo_megatron_trainer.yaml"
_ONE_OFF_DIR = "verl/experimental/one_step_off_policy"

# Log-space sigma of the response lengths when --response-len-sigma is not given: that of
# the shipped DAPO Qwen2.5-32B math trace (traces/polytrace/dapo-qwen2.5-32b; docs/
# validation.md "Public real runs": "sigma 0.928 of log length"; computed by
# calibration/realruns/translate.py dapo_lognormal()).
DAPO_TRACE_SIGMA = 0.928411
_SIGMA_SOURCE = ("default: log-sigma of the DAPO Qwen2.5-32B trace (traces/polytrace/"
                 "dapo-qwen2.5-32b; docs/validation.md 'Public real runs')")
# rlsim's default prompt-length sigma (docs/workload.md: prompt_len lognormal median 256,
# sigma 0.5), kept when --prompt-len-median moves the median.
_PROMPT_SIGMA = 0.5

# veRL's defaults for the keys this module reads: key -> (value, line in _FSDP_FILE, line
# in _MEGATRON_FILE); None: the key is not in that file. tests/importers/test_verl.py
# checks every entry against copies of both files.
_DEFAULTS: dict[str, tuple[Any, int | None, int | None]] = {
    "data.train_batch_size": (1024, 345, 380),
    "data.max_prompt_length": (512, 343, 378),
    "data.max_response_length": (512, 344, 379),
    "actor_rollout_ref.hybrid_engine": (True, 332, 367),
    "actor_rollout_ref.model.path": ("~/models/deepseek-llm-7b-chat", 296, 307),
    "actor_rollout_ref.model.enable_gradient_checkpointing": (True, 304, 318),
    "actor_rollout_ref.model.use_remove_padding": (True, 306, 320),
    "actor_rollout_ref.model.lora_rank": (0, 307, 321),
    "actor_rollout_ref.rollout.n": (1, 224, 233),
    "actor_rollout_ref.rollout.name": ("???", 193, 202),
    "actor_rollout_ref.rollout.prompt_length": ("${oc.select:data.max_prompt_length,512}",
                                                198, 207),
    "actor_rollout_ref.rollout.response_length": (
        "${oc.select:data.max_response_length,512}", 199, 208),
    "actor_rollout_ref.rollout.dtype": ("bfloat16", 200, 209),
    "actor_rollout_ref.rollout.gpu_memory_utilization": (0.5, 201, 210),
    "actor_rollout_ref.rollout.ignore_eos": (False, 202, 211),
    "actor_rollout_ref.rollout.enforce_eager": (False, 203, 212),
    "actor_rollout_ref.rollout.free_cache_engine": (True, 205, 214),
    "actor_rollout_ref.rollout.tensor_model_parallel_size": (2, 206, 215),
    "actor_rollout_ref.rollout.expert_parallel_size": (1, 208, 217),
    "actor_rollout_ref.rollout.pipeline_model_parallel_size": (1, 209, 218),
    "actor_rollout_ref.rollout.max_num_batched_tokens": (8192, 210, 219),
    "actor_rollout_ref.rollout.max_num_seqs": (256, 212, 221),
    "actor_rollout_ref.rollout.enable_prefix_caching": (True, 214, 223),
    "actor_rollout_ref.rollout.log_prob_micro_batch_size": (None, 218, 227),
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": (None, 219, 228),
    "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz": (
        "${oc.select:actor_rollout_ref.actor.use_dynamic_bsz,false}", 220, 229),
    "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu": (
        "${oc.select:actor_rollout_ref.actor.ppo_max_token_len_per_gpu,16384}", 221, 230),
    "actor_rollout_ref.rollout.multi_turn.enable": (False, 240, 249),
    "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes": (
        2048, 265, 274),
    "actor_rollout_ref.rollout.quantization": (None, 290, 299),
    "actor_rollout_ref.actor.strategy": ("fsdp", 49, 62),
    "actor_rollout_ref.actor.ppo_mini_batch_size": (256, 50, 63),
    "actor_rollout_ref.actor.ppo_micro_batch_size": (None, 51, 64),
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": (None, 52, 65),
    "actor_rollout_ref.actor.use_dynamic_bsz": (False, 53, 66),
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": (16384, 54, 67),
    "actor_rollout_ref.actor.use_kl_loss": (False, 74, 87),
    "actor_rollout_ref.actor.ppo_epochs": (1, 79, 92),
    "actor_rollout_ref.actor.ulysses_sequence_parallel_size": (1, 122, None),
    "actor_rollout_ref.actor.fsdp_config.param_offload": (False, 30, None),
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload": (False, 31, None),
    "actor_rollout_ref.actor.fsdp_config.fsdp_size": (-1, 34, None),
    "actor_rollout_ref.actor.megatron.param_offload": (False, None, 31),
    "actor_rollout_ref.actor.megatron.grad_offload": (False, None, 32),
    "actor_rollout_ref.actor.megatron.optimizer_offload": (False, None, 33),
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size": (1, None, 34),
    "actor_rollout_ref.actor.megatron.expert_model_parallel_size": (1, None, 35),
    "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size": (1, None, 37),
    "actor_rollout_ref.actor.megatron.context_parallel_size": (1, None, 39),
    "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity": (
        None, None, 48),
    "critic.enable": (None, 442, 473),
    "reward_model.enable": (False, 492, 551),
    "reward_model.reward_manager": ("naive", 519, 567),
    "algorithm.rollout_correction.bypass_mode": (False, 568, 637),
    "algorithm.adv_estimator": ("gae", 574, 643),
    "algorithm.use_kl_in_reward": (False, 576, 645),
    "trainer.nnodes": (1, 603, 670),
    "trainer.n_gpus_per_node": (8, 604, 671),
    "trainer.save_freq": (-1, 605, 672),
}
# Where the megatron flavour's default differs from the table's (the fsdp flavour's).
_MEGATRON_VALUES: dict[str, Any] = {"actor_rollout_ref.actor.strategy": "megatron",
                                    "actor_rollout_ref.model.use_remove_padding": False}


@dataclass(frozen=True)
class _Entry:
    """A veRL entry point: the policy it runs and the config file its defaults extend."""

    policy: str                                  # sync | one_off
    how: str                                     # what its step does, for the source
    fsdp_config: str                             # its config file (ppo_trainer flavour)
    megatron_config: str                         # its megatron flavour
    overlay: dict[str, tuple[Any, str]] = field(default_factory=dict)  # key -> (value, cite)


def _one_off_overlay(name: str) -> dict[str, tuple[Any, str]]:
    # verl/experimental/one_step_off_policy/config/{name}.yaml at VERL: its own settings on
    # top of ppo_trainer (the rollout pool, engines that never sleep, rollout log-probs).
    f = f"{VERL} {_ONE_OFF_DIR}/config/{name}.yaml"
    return {"rollout.nnodes": (1, f"{f}:12"), "rollout.n_gpus_per_node": (8, f"{f}:14"),
            "actor_rollout_ref.rollout.free_cache_engine": (False, f"{f}:20"),
            "algorithm.rollout_correction.bypass_mode": (True, f"{f}:28")}


_ONE_OFF = _Entry("one_off", "trains step k on step k-1's rollouts (OneStepOffRayTrainer)",
                  "one_step_off_ppo_trainer", "one_step_off_ppo_megatron_trainer",
                  _one_off_overlay("one_step_off_ppo_trainer"))
_MAIN = _Entry("sync", "synchronous (RayPPOTrainer.fit)", "ppo_trainer",
               "ppo_megatron_trainer")
_ENTRIES: dict[str, _Entry] = {
    "verl.trainer.main_ppo": _MAIN,
    # DAPO: RayDAPOTrainer (dapo/dapo_ray_trainer.py) runs main_ppo's synchronous step;
    # dapo/config/dapo_trainer.yaml extends ppo_trainer (defaults: - ppo_trainer).
    "recipe.dapo.main_dapo": _Entry("sync", "synchronous (RayDAPOTrainer.fit)", "dapo_trainer",
                                    "dapo_megatron_trainer"),
    "verl.experimental.one_step_off_policy.main_ppo": _ONE_OFF,
    "recipe.one_step_off_policy.main_ppo": _ONE_OFF,
}
_NOT_IMPORTED = {
    "fully_async_main": "veRL's fully-async trainer streams mini-batches and bounds "
    "staleness by async_training.staleness_threshold, a fraction of a sync window, which "
    "has no faithful rlsim policy (rlsim's async bounds the version lag, ROLL's "
    "async_generation_ratio); describe the job with policy: {name: async} by hand",
}


# --- reading values -----------------------------------------------------------------------

@dataclass(frozen=True)
class _Value:
    """A key's value: set by the config (`where` is its FILE:LINE) or a default."""

    key: str
    value: Any
    source: str                   # the key itself, or `key (default: <file:line>)`
    where: str | None = None      # FILE:LINE when the config sets it
    unresolved: tuple[str, ...] = ()

    def error(self, message: str) -> ScenarioError:
        return ScenarioError(self.key, message, self.where)


@dataclass
class _Given:
    """A key the config sets: its value, FILE:LINE, whether written `+key`, and why the
    script's text may not be what the job saw."""

    value: Any
    where: str
    added: bool = False
    unresolved: tuple[str, ...] = ()


class _Config:
    """The config's keys over veRL's defaults; remembers which keys were read."""

    def __init__(self, given: dict[str, _Given], megatron: bool, entry: _Entry) -> None:
        self.given, self.megatron, self.entry = given, megatron, entry
        self.read: set[str] = set()
        self.used: set[str] = set()      # keys some field names as its source
        self.notes: dict[str, str] = {}  # keys read that set no field: why

    def __call__(self, key: str) -> _Value:
        self.read.add(key)
        g = self.given.get(key)
        if g is not None:
            value = self._interpolate(g.value, key)
            return _Value(key, value, key, g.where, g.unresolved)
        if key in self.entry.overlay:
            value, cite = self.entry.overlay[key]
            return _Value(key, value, f"{key} (default: {cite})")
        value, fsdp_line, megatron_line = _DEFAULTS[key]
        line = megatron_line if self.megatron else fsdp_line
        if line is None:
            raise KeyError(key)  # a key of the other flavour: the caller checks strategy
        cite = f"{VERL} {_MEGATRON_FILE if self.megatron else _FSDP_FILE}:{line}"
        if self.megatron:
            value = _MEGATRON_VALUES.get(key, value)
        return _Value(key, self._interpolate(value, key), f"{key} (default: {cite})")

    def has(self, key: str) -> bool:
        return key in self.given

    def note(self, key: str, why: str) -> None:
        """A key the config sets that was read but sets no scenario field."""
        self.read.add(key)
        if key in self.given:
            self.notes[key] = why

    def _interpolate(self, value: Any, key: str) -> Any:
        """OmegaConf's `${a.b}` and `${oc.select:a.b,default}` (a whole value only)."""
        if not isinstance(value, str) or "${" not in value:
            return value
        m = re.fullmatch(r"\$\{(?:oc\.select:)?([\w.]+)(?:,\s*(.*))?\}", value.strip())
        if m is None:
            return value
        ref, fallback = m.group(1), m.group(2)
        if ref == key:
            return value
        try:
            return self(ref).value
        except KeyError:
            return hydra_value(fallback) if fallback is not None else value


def _check_resolved(v: _Value) -> None:
    if v.unresolved:
        raise v.error(f"its value {v.value!r} depends on something the script does not set: "
                      f"{v.unresolved[0]}; set it in the script or pass the value")


def _int(v: _Value, low: int = 1) -> int:
    _check_resolved(v)
    if isinstance(v.value, bool) or not isinstance(v.value, int):
        raise v.error(f"{v.value!r} is not a whole number")
    if v.value < low:
        raise v.error(f"{v.value} must be at least {low}")
    return v.value


def _opt_int(v: _Value) -> int | None:
    return None if v.value is None else _int(v)


def _fsdp_size(v: _Value) -> int:
    # veRL's -1 (its default) shards over every GPU; a positive size is HSDP.
    if v.value == -1:
        return -1
    return _int(v)


def _flag(v: _Value) -> bool:
    _check_resolved(v)
    if not isinstance(v.value, bool):
        raise v.error(f"{v.value!r} is not true or false")
    return v.value


def _fraction(v: _Value) -> float:
    _check_resolved(v)
    if isinstance(v.value, bool) or not isinstance(v.value, (int, float)) \
            or not 0 < v.value <= 1:
        raise v.error(f"{v.value!r} is not a fraction in (0, 1]")
    return float(v.value)


def _not(v: _Value) -> bool:
    return not _flag(v)


def _mib(v: _Value) -> int:
    return _int(v) * 2**20


def _rollout_dtype(v: _Value) -> str:
    _check_resolved(v)
    # float16 weights take the bytes and the tensor-core peak of bfloat16 (rlsim's "bf16").
    if v.value in ("bfloat16", "bf16", "float16", "fp16", "half"):
        return "bf16"
    raise v.error(f"{v.value!r}: rlsim's engines run 16-bit weights (bfloat16, float16) or "
                  "fp8 (actor_rollout_ref.rollout.quantization: fp8)")


# --- the one-key mappings -----------------------------------------------------------------

_R = "actor_rollout_ref.rollout."
_A = "actor_rollout_ref.actor."
_FSDP, _MEGATRON = ("fsdp", "fsdp2"), ("megatron",)

# (veRL key, scenario field, converter, the train backends it applies to or None: all)
_FIELDS: list[tuple[str, str, Callable[[_Value], Any], tuple[str, ...] | None]] = [
    ("data.train_batch_size", "workload.prompts_per_step", _int, None),
    (_R + "n", "workload.samples_per_prompt", _int, None),
    ("data.max_prompt_length", "workload.max_prompt_len", _int, None),
    (_R + "tensor_model_parallel_size", "rollout.tp", _int, None),
    (_R + "pipeline_model_parallel_size", "rollout.pp", _int, None),
    (_R + "expert_parallel_size", "rollout.ep", _int, None),
    (_R + "gpu_memory_utilization", "rollout.gpu_memory_utilization", _fraction, None),
    (_R + "max_num_seqs", "rollout.max_running_seqs", _int, None),
    (_R + "max_num_batched_tokens", "rollout.max_batched_tokens", _int, None),
    (_R + "enforce_eager", "rollout.cuda_graphs", _not, None),
    (_R + "enable_prefix_caching", "rollout.prefix_caching", _flag, None),
    (_R + "dtype", "rollout.dtype", _rollout_dtype, None),
    (_R + "checkpoint_engine.update_weights_bucket_megabytes", "weight_sync.bucket_size",
     _mib, None),
    (_A + "ppo_mini_batch_size", "train.ppo_mini_batch_size", _int, None),
    (_A + "ppo_epochs", "train.ppo_epochs", _int, None),
    (_A + "ulysses_sequence_parallel_size", "train.cp", _int, _FSDP),
    (_A + "fsdp_config.param_offload", "train.param_offload", _flag, _FSDP),
    (_A + "fsdp_config.optimizer_offload", "train.optimizer_offload", _flag, _FSDP),
    (_A + "fsdp_config.fsdp_size", "train.fsdp_size", _fsdp_size, _FSDP),
    (_A + "megatron.tensor_model_parallel_size", "train.tp", _int, _MEGATRON),
    (_A + "megatron.pipeline_model_parallel_size", "train.pp", _int, _MEGATRON),
    (_A + "megatron.context_parallel_size", "train.cp", _int, _MEGATRON),
    (_A + "megatron.expert_model_parallel_size", "train.ep", _int, _MEGATRON),
    (_A + "megatron.param_offload", "train.param_offload", _flag, _MEGATRON),
    (_A + "megatron.grad_offload", "train.grad_offload", _flag, _MEGATRON),
    (_A + "megatron.optimizer_offload", "train.optimizer_offload", _flag, _MEGATRON),
]


# --- keys that are read past, with why ---------------------------------------------------

def _expand(pattern: str) -> list[str]:
    """`a.{b,c}.d` -> [a.b.d, a.c.d] (one brace group per pattern is enough here)."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if m is None:
        return [pattern]
    return [x for alt in m.group(1).split(",")
            for x in _expand(pattern[:m.start()] + alt.strip() + pattern[m.end():])]


_BOOKKEEPING = ("run bookkeeping (names, logging, checkpoint and data paths, resuming, "
                "timeouts): no effect on a simulated step")
_LOSS = ("a loss, advantage or KL hyperparameter: it changes the numbers a step computes, "
         "not the work it does")
_SAMPLING = ("sampling parameters: rlsim takes the response lengths from "
             "--response-len-median/--response-len-sigma, not from how tokens are drawn")
_INTERNALS = ("an implementation detail of the trainer or engine that rlsim's cost model "
              "does not separate (docs/cost-model.md prices each backend as a whole)")
_IGNORED: list[tuple[str, str]] = [
    (_BOOKKEEPING, "trainer.{project_name,experiment_name,logger,log_val_generations,"
     "rollout_data_dir,validation_data_dir,default_local_dir,default_hdfs_dir,"
     "del_local_ckpt_after_load,resume_mode,resume_from_path,max_actor_ckpt_to_keep,"
     "max_critic_ckpt_to_keep,ray_wait_register_center_timeout,device,"
     "use_legacy_worker_impl,esi_redundant_time}"),
    (_BOOKKEEPING, "*.checkpoint.*"),
    (_BOOKKEEPING, "{actor_rollout_ref,critic,reward_model}.nccl_timeout"),
    (_BOOKKEEPING, "hydra.*"),
    (_BOOKKEEPING, "defaults"),
    (_BOOKKEEPING, "*._target_"),
    (_BOOKKEEPING, "ray_kwargs.*"),
    ("profiling and tracing: no effect on a simulated step",
     "{global_profiler,*.profiler,*.prometheus,*.trace}.*"),
    ("validation runs between training steps are not simulated (the fit leaves "
     "validation steps out)", "trainer.{test_freq,val_before_train,val_only}"),
    ("run length: rlsim simulates --steps steps (default: rlsim's)",
     "trainer.{total_epochs,total_training_steps}"),
    ("critic-only warm-up steps at the start are not part of the steady state rlsim "
     "simulates", "trainer.critic_warmup"),
    ("rlsim always balances each batch over the data-parallel ranks (veRL's default, "
     "true)", "trainer.balance_batch"),
    ("the transfer queue changes how the controller moves data, which rlsim prices as "
     "veRL's default driver (controller section)", "transfer_queue.*"),
    ("dataset, tokenization and loading: rlsim draws prompt lengths (its default, or "
     "--prompt-len-median) up to data.max_prompt_length",
     "data.{tokenizer,use_shm,train_files,val_files,train_max_samples,val_max_samples,"
     "prompt_key,reward_fn_key,val_batch_size,tool_config_path,return_raw_input_ids,"
     "return_raw_chat,return_full_prompt,shuffle,seed,dataloader_num_workers,"
     "image_patch_size,validation_shuffle,filter_overlong_prompts,"
     "filter_overlong_prompts_workers,truncation,image_key,video_key,trust_remote_code,"
     "custom_cls,sampler,datagen,apply_chat_template_kwargs,return_multi_modal_inputs}"),
    ("dataset, tokenization and loading: rlsim draws prompt lengths (its default, or "
     "--prompt-len-median) up to data.max_prompt_length",
     "data.{custom_cls,sampler,datagen,apply_chat_template_kwargs}.*"),
    ("the critic's update is priced with the actor's trainer settings: the hybrid CPU "
     "optimizer of the actor's optim.override_optimizer_config "
     "(train.optimizer_offload_fraction) applies to it too, the critic's own is not read",
     "critic.optim.override_optimizer_config.{optimizer_cpu_offload,"
     "optimizer_offload_fraction,overlap_cpu_optimizer_d2h_h2d}"),
    ("optimizer hyperparameters: the optimizer step's work does not depend on them",
     "*.optim.*"),
    (_LOSS, _A + "{clip_ratio,clip_ratio_low,clip_ratio_high,clip_ratio_c,tau_pos,tau_neg,"
     "loss_agg_mode,loss_scale_factor,entropy_coeff,calculate_entropy,kl_loss_coef,"
     "kl_loss_type,grad_clip,shuffle,data_loader_seed,use_prefix_grouper,"
     "calculate_sum_pi_squared,sum_pi_squared_checkpointing,freeze_vision_tower}"),
    (_LOSS, _A + "policy_loss.*"),
    (_LOSS, "algorithm.{gamma,lam,norm_adv_by_std_in_grpo,kl_penalty,use_pf_ppo}"),
    (_LOSS, "algorithm.{kl_ctrl,pf_ppo}.*"),
    (_LOSS, "algorithm.rollout_correction.{rollout_is,rollout_is_threshold,rollout_rs,"
     "rollout_rs_threshold,loss_type,rollout_is_batch_normalize}"),
    (_SAMPLING, _R + "{temperature,top_k,top_p,do_sample,logprobs_mode}"),
    (_SAMPLING, _R + "val_kwargs.*"),
    ("the log-probs the engine returns (needed by one-step-off's bypass mode) cost it "
     "nothing rlsim prices", _R + "calculate_log_probs"),
    (_INTERNALS, "actor_rollout_ref.model.{use_shm,trust_remote_code,custom_chat_template,"
     "external_lib,override_config,hf_config_path,tokenizer_path,target_modules,"
     "exclude_modules,use_liger,use_fused_kernels,lora_alpha,lora_adapter_path}"),
    (_INTERNALS, "actor_rollout_ref.model.{override_config,fused_kernel_options,tiled_mlp,"
     "lora}.*"),
    (_INTERNALS, _A + "{use_torch_compile,use_fused_kernels,entropy_from_logits_with_chunking,"
     "entropy_checkpointing,use_remove_padding,rollout_n,load_weight,use_rollout_log_probs}"),
    (_INTERNALS, _A + "router_replay.*"),
    (_INTERNALS, _A + "fsdp_config.{wrap_policy.min_num_params,offload_policy,"
     "reshard_after_forward,forward_prefetch,model_dtype,use_orig_params,seed,"
     "full_determinism,ulysses_sequence_parallel_size,entropy_from_logits_with_chunking,"
     "use_torch_compile,entropy_checkpointing,forward_only,strategy,dtype}"),
    (_INTERNALS, _A + "megatron.{sequence_parallel,use_distributed_optimizer,"
     "use_dist_checkpointing,dist_checkpointing_path,dist_checkpointing_prefix,seed,"
     "override_ddp_config,override_mcore_model_config,use_mbridge,vanilla_mbridge,"
     "use_remove_padding,forward_only,dtype,expert_tensor_parallel_size}"),
    (_INTERNALS, _A + "megatron.{override_ddp_config,override_mcore_model_config}.*"),
    (_INTERNALS, _A + "megatron.override_transformer_config.*"),
    (_INTERNALS, _R + "{mode,cudagraph_capture_sizes,max_model_len,enable_chunked_prefill,"
     "scheduling_policy,load_format,disable_log_stats,skip_rollout,skip_dump_dir,"
     "skip_tokenizer_init,enable_rollout_routing_replay,layered_summon,multi_stage_wake_up,"
     "quantization_config_file,prompt_length,mtp,engine_kwargs}"),
    (_INTERNALS, _R + "{engine_kwargs,layer_name_map,agent,checkpoint_engine}.*"),
    ("each of vLLM's data-parallel ranks is an engine of its own in rlsim (rollout GPUs / "
     "(tp x pp) engines)", _R + "data_parallel_size"),
    ("rlsim prices the reference pass like the old-log-prob pass, on the actor's layout "
     "and with actor_rollout_ref.rollout's log-prob micro-batching; the reference "
     "worker's own settings are not read", "actor_rollout_ref.ref.*"),
    ("rlsim's critic (train.critic) has the actor's size, layout and batching; the "
     "critic's own settings are not read", "critic.*"),
    ("the reward function: rlsim prices a rule-based reward (reward.kind rule) unless "
     "reward_model.enable", "{reward_model,reward_manager,custom_reward_function}.*"),
    ("the model's multi-token-prediction head is not modelled",
     "actor_rollout_ref.model.mtp.*"),
    ("interleaved (virtual) pipeline stages are not modelled: rlsim prices the plain "
     "pipeline's bubble", _A + "megatron.virtual_pipeline_model_parallel_size"),
    ("activation offloading is not modelled", "actor_rollout_ref.model.enable_activation_offload"),
    ("multi-turn settings, used only with actor_rollout_ref.rollout.multi_turn.enable",
     _R + "multi_turn.*"),
    ("veRL's over-sampling (abort the last over_sample_rate share of requests) is not "
     "modelled: rlsim waits for every response (exact at veRL's default, 0)",
     _R + "over_sample_rate"),
]


def _ignore_reason(key: str) -> str | None:
    for why, pattern in _IGNORED:
        if any(fnmatch.fnmatchcase(key, p) for p in _expand(pattern)):
            return why
    return None


# --- reading the input --------------------------------------------------------------------

@dataclass
class _Input:
    """What a config file says: its keys, entry point, Hydra config name, and what the
    script reader skipped that might have mattered (`FILE:LINE: ...`)."""

    given: dict[str, _Given]
    module: str
    config_name: str | None
    notes: tuple[str, ...] = ()


def _read(path: Path) -> _Input:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ScenarioError(str(path), f"cannot read it: {err}") from None
    if _looks_like_script(text):
        script: LaunchScript = parse_launch_script(path, text)
        given = {k: _Given(o.value, f"{path}:{o.line}", o.added, o.unresolved)
                 for k, o in script.overrides.items()}
        return _Input(given, script.module, script.config_name, script.notes)
    return _read_yaml(path, text)


def _looks_like_script(text: str) -> bool:
    """A launch script runs a command (python3 -m ..., a shebang, `set -x`, a variable
    assignment); a Hydra YAML is a mapping."""
    if text.startswith("#!"):
        return True
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("---"):
            return False
        return not re.match(r"[\w.\-]+\s*:(\s|$)", line) and not line.startswith("- ")
    return False


def _read_yaml(path: Path, text: str) -> _Input:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ScenarioError(f"{path}{line}", f"not valid YAML: "
                            f"{getattr(err, 'problem', None) or err}") from None
    if not isinstance(root, yaml.MappingNode):
        raise ScenarioError(str(path), "a veRL config is a YAML mapping "
                            "(actor_rollout_ref: ..., data: ...) or a launch script")
    given: dict[str, _Given] = {}

    def walk(node: yaml.MappingNode, prefix: str) -> None:
        for k, v in node.value:
            key = f"{prefix}{k.value}"
            if isinstance(v, yaml.MappingNode) and v.value:
                walk(v, key + ".")
                continue
            if key in given:
                raise ScenarioError(key, f"set twice (also at {given[key].where})",
                                    f"{path}:{k.start_mark.line + 1}")
            value = yaml.safe_load(yaml.serialize(v))
            given[key] = _Given(value, f"{path}:{k.start_mark.line + 1}")

    walk(root, "")
    defaults = given.get("defaults")
    names = [str(d) for d in defaults.value] if defaults and isinstance(
        defaults.value, list) else []
    if "async_training.staleness_threshold" in given or any(
            "fully_async" in n for n in names):
        module = "verl.experimental.fully_async_policy.fully_async_main"
    elif any("one_step_off" in n for n in names) or "rollout.n_gpus_per_node" in given \
            or "rollout.nnodes" in given:
        # Only the one-step-off recipe has a top-level `rollout` (its own resource pool).
        module = "verl.experimental.one_step_off_policy.main_ppo"
    else:
        module = "verl.trainer.main_ppo"
    strategy = given.get(_A + "strategy")
    megatron = any("megatron" in n for n in names) or any(
        k.startswith(_A + "megatron.") for k in given) or (
        strategy is not None and strategy.value == "megatron")
    return _Input(given, module, "ppo_megatron_trainer" if megatron else None)


# --- the importer -------------------------------------------------------------------------

def import_verl(path: Path, facts: Facts, sets: Sequence[SetOverride] = ()) -> Imported:
    """The rlsim scenario of the veRL job configured at `path` (a Hydra YAML or a launch
    script) with the `--set` overrides `sets` applied after its own, and `facts` for what
    the config does not hold."""
    src = _read(path)
    entry = _entry(src.module, path)
    _apply_sets(src.given, sets, entry)
    name = src.config_name
    if name is not None and name not in (entry.fsdp_config, entry.megatron_config,
                                         "ppo_trainer", "ppo_megatron_trainer"):
        raise ScenarioError("--config-name", f"{name!r}: rlsim knows the defaults of "
                            f"{entry.fsdp_config} and {entry.megatron_config} for "
                            f"{src.module}; import the composed config (the run's "
                            ".hydra/config.yaml) instead", str(path))
    cfg = _Config(src.given, name is not None and "megatron" in name, entry)
    imp = Imported(defaults_of=DEFAULTS_OF)
    b = _Builder(cfg, imp, facts, path, src.module, entry)
    b.build()
    _unused(cfg, imp)
    for note in src.notes:
        where, why = note.split(": ", 1)
        imp.ignore(where, why)
    b.describe()
    cite_sets(imp, sets)
    return imp


# Keys the importer reads that veRL's ppo_trainer.yaml does not hold (a recipe's own:
# DAPO's dapo_trainer.yaml adds data.gen_batch_size), so a --set may override them.
_RECIPE_KEYS = frozenset({"data.gen_batch_size"})


def _has_default(key: str, entry: _Entry) -> bool:
    """Whether veRL's config (or the entry point's own) holds `key` with a default."""
    return key in _DEFAULTS or key in entry.overlay


def _known(key: str, entry: _Entry) -> bool:
    """Whether `key` is one of veRL's config keys as far as rlsim knows them: with a
    default rlsim reads, a recipe key it reads, or one it lists as not used with why."""
    return _has_default(key, entry) or key in _RECIPE_KEYS or _ignore_reason(key) is not None


def _unknown_key(key: str, where: str | None) -> ScenarioError:
    return ScenarioError(key, f"not a veRL config key rlsim knows (ppo_trainer.yaml at {VERL}); "
                         "check its spelling (Hydra rejects unknown keys unless written "
                         "+key=value)", where)


def _flat(key: str, value: Any) -> list[tuple[str, Any]]:
    """A mapping value as its leaf keys (Hydra merges a mapping into the config's key by
    key); anything else, an empty mapping too, as the key itself."""
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in _flat(f"{key}.{k}", v)]
    return [(key, value)]


def _apply_sets(given: dict[str, _Given], sets: Sequence[SetOverride], entry: _Entry) -> None:
    """Apply the --set overrides in order to the config's keys, as Hydra applies overrides
    appended to the trainer's command line: `key=value` needs a key veRL's config has (or
    the config added), `+key=value` one it does not have, `~key` one the config sets (its
    value goes, so veRL's default applies)."""
    for s in sets:
        if s.op == "delete":
            gone = [k for k in given if k == s.key or k.startswith(s.key + ".")]
            if not gone:
                if _known(s.key, entry) or any(k.startswith(s.key + ".") for k in _DEFAULTS):
                    raise s.error("the config does not set it, so veRL's default applies "
                                  "already; there is nothing to remove")
                raise _unknown_key(s.key, s.where)
            if s.has_value and (s.key not in given or given[s.key].value != s.value):
                now = given[s.key].value if s.key in given else "a mapping"
                raise s.error(f"its value is {now!r}, not {s.value!r}; Hydra removes a key "
                              "with ~key=value only when the value matches")
            for k in gone:
                del given[k]
            continue
        for key, value in _flat(s.key, s.value):
            if s.op == "set" and key not in given and not _known(key, entry):
                raise _unknown_key(key, s.where)
            if s.op == "add" and (key in given or _has_default(key, entry)):
                raise s.error(f"veRL's config has it already; write {s.key}=... to override "
                              f"it (or ++{s.key}=...)", key)
            # A key veRL's config does not have stays `added` (listed as not used, not an
            # error), as one the script adds with +key=value.
            added = given[key].added if key in given else (
                s.op != "set" and not _known(key, entry))
            given[key] = _Given(value, s.where, added)


def _entry(module: str, path: Path) -> _Entry:
    if module in _ENTRIES:
        return _ENTRIES[module]
    for tail, why in _NOT_IMPORTED.items():
        if module.endswith(tail):
            raise ScenarioError(module, why, str(path))
    known = ", ".join(_ENTRIES)
    raise ScenarioError(module, f"not a veRL trainer rlsim imports (it imports {known})",
                        str(path))


_Src = tuple[int, "_Value | str"]  # a count and where it came from (a config value, a flag)


@dataclass
class _Builder:
    """Builds the scenario from the config, section by section; `train_gpus` and
    `rollout_gpus` are the GPU counts the checks divide."""

    cfg: _Config
    imp: Imported
    facts: Facts
    path: Path
    module: str
    entry: _Entry
    caveats: list[str] = field(default_factory=list)
    backend: str = "fsdp"
    train_gpus: int = 0
    rollout_gpus: int = 0

    def set(self, scenario_field: str, value: Any, v: _Value | str, why: str = "",
            also: tuple[_Value, ...] = ()) -> None:
        """Set a field from a config value (its source: the key, or the default cited),
        a flag or a stated reason; `why` is appended to the source, `also` names further
        keys the value depends on."""
        if isinstance(v, str):
            self.imp.set(scenario_field, value, v + why)
            return
        self.imp.set(scenario_field, value, v.source + why)
        for dep in (v, *also):
            self.cfg.used.add(dep.key)

    def cite_section(self, path: str, v: _Value, why: str) -> None:
        """Name the config value `v` beside the section `path` it describes as a whole."""
        self.imp.cite_section(path, v.source + why)
        self.cfg.used.add(v.key)

    def build(self) -> None:
        c, f = self.cfg, self.facts
        name = f.name or self.path.stem
        self.set("name", name, "--name" if f.name else "the config file's name")
        self.set("framework.name", "verl", "rlsim import verl")
        if f.steps is not None:
            self.set("steps", f.steps, "--steps")
        self._model()
        self._engine_and_backend()
        self._pools_and_policy()
        for key, target, convert, backends in _FIELDS:
            if backends is None or self.backend in backends:
                v = c(key)
                self.set(target, convert(v), v)
        quant = c(_R + "quantization")
        if quant.value is not None:
            if quant.value != "fp8":
                raise quant.error(f"{quant.value!r}: rlsim models fp8 rollout weights or none")
            self.set("rollout.dtype", "fp8", quant)
        self._workload()
        self._train_batching()
        self._padding()
        self._recompute()
        self._dispatcher()
        self._cpu_optimizer()
        self._passes()
        self._reward()
        self._checkpoints()
        self._checks()

    def _model(self) -> None:
        v = self.cfg("actor_rollout_ref.model.path")
        if self.facts.model is not None:
            self.set("model", resolve_model(self.facts.model, "--model"), "--model")
            self.cfg.note(v.key, "replaced by --model")
            return
        if v.unresolved and "${" in str(v.value).rsplit("/", 1)[-1]:
            # The name itself is unknown (a path prefix may be: the name is what counts).
            raise v.error(f"the model's name is not in the script ({v.unresolved[0]}); "
                          "pass --model")
        try:
            model = resolve_model(str(v.value), v.key)
        except ScenarioError as err:
            raise ScenarioError(err.field, err.message, v.where) from None
        ctx_key = "actor_rollout_ref.model.override_config.max_position_embeddings"
        if self.cfg.has(ctx_key):
            # veRL's DAPO recipes raise Qwen2.5-Math's 4,096-token context this way; the
            # model is the catalogue's with that context (an inline model spec).
            ctx = self.cfg(ctx_key)
            if not isinstance(ctx.value, int) or ctx.value < 1:
                raise ctx.error(f"{ctx.value!r}: a positive whole number of tokens")
            spec = MODELS[model].model_dump(exclude_none=True)
            spec["max_context"] = ctx.value
            self.set("model", spec, v, f"; max_context from {ctx_key}", also=(ctx,))
            return
        self.set("model", model, v)

    def _engine_and_backend(self) -> None:
        c = self.cfg
        name = c(_R + "name")
        if name.value == "???":
            # Scripts written before volcengine/verl#2757 (2025-07) leave it out: it
            # defaulted to vllm (verl/trainer/config/rollout/rollout.yaml:2 at a31a8f251).
            raise name.error(f"veRL requires it (??? in ppo_trainer.yaml at volcengine/{VERL};"
                             " before volcengine/verl#2757 it defaulted to vllm): set it in "
                             f"the script or pass --set {name.key}=vllm (or sglang)")
        if name.value not in ("vllm", "sglang"):
            raise name.error(f"{name.value!r}: rlsim's engines model vLLM and SGLang "
                             "(continuous batching with paged KV); use one of them")
        self.cite_section("rollout", name, f": {name.value} engines (rlsim models vLLM and "
                          "SGLang alike: continuous batching, paged KV cache)")
        strategy = c(_A + "strategy")
        if strategy.value not in ("fsdp", "fsdp2", "megatron"):
            raise strategy.error(f"{strategy.value!r}: rlsim models fsdp, fsdp2 and megatron")
        # A script picks its flavour by --config-name (as veRL does); a YAML's follows its
        # strategy, its megatron keys or its `defaults`.
        if (strategy.value == "megatron") != self.cfg.megatron:
            flavour = "ppo_megatron_trainer" if strategy.value == "megatron" else "ppo_trainer"
            raise strategy.error(f"{strategy.value} needs veRL's {flavour} config (pass "
                                 f"--config-name={flavour} to the trainer, as veRL does)")
        self.backend = str(strategy.value)
        self.set("train.backend", self.backend, strategy)
        multi = c(_R + "multi_turn.enable")
        if _flag(multi):
            raise multi.error("multi-turn agent rollouts are not imported; describe the "
                              "turns as workload.agentic in the scenario by hand")
        c.note(multi.key, "single-turn rollouts")
        lora = c("actor_rollout_ref.model.lora_rank")
        if _int(lora, low=0) > 0:
            self.caveats.append("LoRA (actor_rollout_ref.model.lora_rank) is not modelled: "
                                "training is priced as full-parameter")
            c.note(lora.key, "NOT modelled: rlsim prices full-parameter training, so LoRA's "
                   "smaller gradients and optimizer state are overpriced")
        else:
            c.note(lora.key, "0: full-parameter training, as rlsim prices it")

    def _pools_and_policy(self) -> None:
        c, f = self.cfg, self.facts
        gpu = resolve_gpu(need(f.gpu, "--gpu", "the GPU type"), "--gpu")
        nodes, per_node = self._layout("trainer", f.nodes, f.gpus_per_node)
        self.train_gpus = nodes[0] * per_node[0]
        hybrid = c("actor_rollout_ref.hybrid_engine")
        entry_src = f"entry point {self.module}"
        if self.entry.policy == "sync":
            if not _flag(hybrid):
                raise hybrid.error("veRL's main_ppo supports only the hybrid engine "
                                   f"(verl/trainer/ppo/ray_trainer.py:276 at {VERL}); set "
                                   "it true or use the one-step-off recipe")
            c.note(hybrid.key, "rollout and training share the GPUs (policy.placement "
                   "colocated)")
            self._pool(0, "cluster", gpu, nodes, per_node)
            self.set("rollout.pool", "cluster", entry_src)
            self.set("train.pool", "cluster", entry_src)
            self.set("policy.name", "sync", f"{entry_src}: {self.entry.how}")
            self.set("policy.placement", "colocated", hybrid,
                     ": hybrid engine, one resource pool")
            self.rollout_gpus = self.train_gpus
            free = c(_R + "free_cache_engine")
            if _flag(free):
                # The hybrid engine's servers drop weights and KV cache while training:
                # vLLM sleep level 2 (verl/workers/rollout/vllm_rollout/vllm_async_server.py
                # :567-569 at VERL), SGLang releases both (async_sglang_server.py:388-390).
                self.set("weight_sync.engine_sleep_level", 2, free)
            else:
                self.caveats.append("engines that keep their memory during training "
                                    "(free_cache_engine: false) are not modelled")
                c.note(free.key, "NOT modelled: rlsim's colocated engines always sleep "
                       "during training, so the switch is priced as if it were true")
            return
        c.note(hybrid.key, "separate rollout and training GPUs (one-step-off)")
        rnodes, rper_node = self._layout("rollout", None, None)
        self._pool(0, "rollout", gpu, rnodes, rper_node)
        self._pool(1, "train", gpu, nodes, per_node)
        self.rollout_gpus = rnodes[0] * rper_node[0]
        self.set("rollout.pool", "rollout", f"{entry_src}: rollout.nnodes x "
                 "rollout.n_gpus_per_node")
        self.set("train.pool", "train", f"{entry_src}: trainer.nnodes x "
                 "trainer.n_gpus_per_node")
        self.set("policy.name", "one_off", f"{entry_src}: {self.entry.how}")
        self.set("policy.placement", "disaggregated", f"{entry_src}: rollout on its own "
                 "GPUs")
        free = c(_R + "free_cache_engine")
        if _flag(free):
            raise free.error("the one-step-off recipe needs it false (its config: 'Must be "
                             f"turned off!', {_ONE_OFF_DIR}/config/one_step_off_ppo_trainer."
                             "yaml:19-20)")
        c.note(free.key, "false: the rollout engines keep their memory (own GPUs)")
        # One NCCL broadcast per tensor from trainer rank 0 to the engines
        # (one_step_off_policy/fsdp_workers.py:88-101, megatron_workers.py:85-99).
        self.set("weight_sync.scheme", "broadcast",
                 f"{entry_src} ({VERL} {_ONE_OFF_DIR}/fsdp_workers.py:88-101)")

    def _layout(self, section: str, nodes_flag: int | None,
                per_node_flag: int | None) -> tuple[_Src, _Src]:
        """(nodes, source), (GPUs per node, source) of `trainer` or `rollout`."""
        out: list[_Src] = []
        for key, flag, fact in ((f"{section}.nnodes", "--nodes", nodes_flag),
                                (f"{section}.n_gpus_per_node", "--gpus-per-node",
                                 per_node_flag)):
            v = self.cfg(key)
            if fact is not None:
                self.cfg.note(key, f"replaced by {flag}")
                out.append((fact, flag))
            elif v.unresolved:
                what = "the node count" if "nnodes" in key else "the GPUs per node"
                raise ScenarioError(flag, f"the config does not say {what} ({key} is "
                                    f"{v.value!r}: {v.unresolved[0]}); pass {flag}",
                                    v.where)
            else:
                out.append((_int(v), v))
        return out[0], out[1]

    def _pool(self, i: int, name: str, gpu: str, nodes: _Src, per_node: _Src) -> None:
        self.set(f"pools.{i}.name", name, "rlsim's pool name")
        self.set(f"pools.{i}.gpu", gpu, "--gpu")
        self.set(f"pools.{i}.nodes", nodes[0], nodes[1])
        self.set(f"pools.{i}.gpus_per_node", per_node[0], per_node[1])

    def _workload(self) -> None:
        c, f = self.cfg, self.facts
        # The engine's max_tokens is rollout.response_length (by default
        # data.max_response_length): it caps the responses.
        resp = c(_R + "response_length")
        if not c.has(resp.key):
            resp = c("data.max_response_length")
        else:
            c.note("data.max_response_length", f"replaced by {resp.key}")
        max_resp = _int(resp)
        self.set("workload.max_response_len", max_resp, resp)
        eos = c(_R + "ignore_eos")
        if _flag(eos):
            self.set("workload.response_len.dist", "fixed", eos)
            # Every response runs to the cap.
            self.set("workload.response_len.value", max_resp, eos, also=(resp,))
        else:
            c.note(eos.key, "responses end at their EOS: lengths from --response-len-median")
            median = need(f.response_len_median, "--response-len-median",
                          "the response lengths (it holds only their cap, "
                          f"{resp.key} = {max_resp})")
            self.set("workload.response_len.dist", "lognormal", "--response-len-median")
            self.set("workload.response_len.median", median, "--response-len-median")
            if f.response_len_sigma is not None:
                self.set("workload.response_len.sigma", f.response_len_sigma,
                         "--response-len-sigma")
            else:
                self.set("workload.response_len.sigma", DAPO_TRACE_SIGMA, _SIGMA_SOURCE)
        if f.prompt_len_median is not None:
            self.set("workload.prompt_len.dist", "lognormal", "--prompt-len-median")
            self.set("workload.prompt_len.median", f.prompt_len_median,
                     "--prompt-len-median")
            self.set("workload.prompt_len.sigma", _PROMPT_SIGMA,
                     "default: rlsim's prompt_len sigma (docs/workload.md)")
        self._dynamic_sampling()

    def _dynamic_sampling(self) -> None:
        """DAPO's data.gen_batch_size and algorithm.filter_groups (verl-recipe
        dapo/dapo_ray_trainer.py): every round generates gen_batch_size prompts; with
        filter_groups the groups whose rewards are all equal are dropped and rounds repeat
        until train_batch_size groups passed, then the batch is cut to train_batch_size;
        without it the whole round trains (veRL's dataloader yields gen_batch_size
        prompts)."""
        c = self.cfg
        gen = c("data.gen_batch_size") if c.has("data.gen_batch_size") else None
        enable = (c("algorithm.filter_groups.enable")
                  if c.has("algorithm.filter_groups.enable") else None)
        filtering = enable is not None and _flag(enable)
        train_bsz = self.imp.scenario["workload"]["prompts_per_step"]
        sync = self.imp.scenario.get("policy", {}).get("name") == "sync"
        for key in ("algorithm.filter_groups.metric",
                    "algorithm.filter_groups.max_num_gen_batches"):
            if c.has(key):
                c.note(key, "read: rlsim filters on the groups' share "
                       "(policy.schedule.zero_variance_fraction) and generates rounds until "
                       "enough pass (veRL raises an error past max_num_gen_batches)")
        if not filtering:
            if enable is not None:
                c.note(enable.key, "group filtering off")
            if gen is not None and gen.value != train_bsz:
                rounds = _int(gen)
                self.set("workload.prompts_per_step", rounds, gen,
                         " (without filter_groups the whole generated batch trains)")
            elif gen is not None:
                c.note(gen.key, "equals data.train_batch_size")
            return
        assert enable is not None
        if not sync:
            self.caveats.append("DAPO dynamic sampling (algorithm.filter_groups) is "
                                "modelled under policy sync only; this run trains every "
                                "group it generates")
            c.note(enable.key, "NOT modelled outside policy sync")
            return
        self.set("policy.schedule.zero_variance_fraction", 0.0, enable,
                 f": {FILTERED_SHARE_UNKNOWN}")
        self.caveats.append(f"DAPO dynamic sampling: {FILTERED_SHARE_UNKNOWN}")
        if gen is not None:
            self.set("policy.schedule.gen_batch_prompts", _int(gen), gen,
                     f" (each round generates {gen.value} prompts; the first "
                     f"{train_bsz} passing groups train)", also=(enable,))

    def _train_batching(self) -> None:
        """Micro-batches: dynamic (use_dynamic_bsz, a token cap per GPU) or fixed (samples
        per GPU); veRL's checks (verl/workers/config/actor.py at VERL) apply."""
        c = self.cfg
        dyn = c(_A + "use_dynamic_bsz")
        if _flag(dyn):
            cap = c(_A + "ppo_max_token_len_per_gpu")
            self.set("train.max_token_len_per_gpu", _int(cap), cap)
            c.note(dyn.key, "dynamic micro-batches: train.max_token_len_per_gpu set, "
                   "micro_batch_size_per_gpu left unset")
            for key in ("ppo_micro_batch_size", "ppo_micro_batch_size_per_gpu"):
                c.note(_A + key, "not used with use_dynamic_bsz (veRL ignores it too)")
            return
        c.note(dyn.key, "fixed micro-batches: train.micro_batch_size_per_gpu set")
        c.note(_A + "ppo_max_token_len_per_gpu", "used only with use_dynamic_bsz")
        per_gpu = c(_A + "ppo_micro_batch_size_per_gpu")
        total = c(_A + "ppo_micro_batch_size")
        if per_gpu.value is not None and total.value is not None:
            raise total.error("set it or ppo_micro_batch_size_per_gpu, not both (veRL: "
                              "verl/workers/config/actor.py:179)")
        if per_gpu.value is not None:
            self.set("train.micro_batch_size_per_gpu", _int(per_gpu), per_gpu)
        elif total.value is not None:
            # Deprecated global size: veRL divides it by the data-parallel ranks
            # (fsdp_workers.py:249, megatron_workers.py:357).
            size = _int(total) // self._dp()
            if size < 1:
                raise total.error(f"{total.value} over {self._dp()} data-parallel ranks is "
                                  "less than one sample per GPU")
            self.set("train.micro_batch_size_per_gpu", size, total, " / data-parallel ranks")
        else:
            raise per_gpu.error("veRL needs it (or use_dynamic_bsz: true) when "
                                "use_dynamic_bsz is false (verl/workers/config/actor.py:186)")

    def _padding(self) -> None:
        """Pads that cost like tokens. veRL's FSDP workers without use_remove_padding run
        each micro-batch as the padded batch: prompts left-padded to data.max_prompt_length
        by the dataset, responses to the rollout's response_length (dp_actor.py
        _forward_micro_batch, at VERL), in the train and both log-prob passes. The default
        flipped to true in veRL v0.7.0 (false through v0.6.x), so an older job's config
        that leaves it unset ran padded: the caveat says so."""
        c = self.cfg
        key = "actor_rollout_ref.model.use_remove_padding"
        if self.backend not in _FSDP:
            c.note(key, "read by veRL's FSDP workers (Megatron's is "
                   "actor.megatron.use_remove_padding, packed by default)")
            return
        rmpad = c(key)
        if not c.has(key):
            self.caveats.append(
                f"{key} is unset: veRL at {VERL} packs the samples (default true), but "
                "veRL up to v0.6.x defaulted to false and padded every sample to "
                "max_prompt_length + response_length; for a job run on such a version add "
                f"--set {key}=false")
        if _flag(rmpad):
            c.note(key, "packed: every sample keeps its own length")
            return
        prompt = c("data.max_prompt_length")
        resp = c(_R + "response_length")
        if not c.has(resp.key):
            resp = c("data.max_response_length")
        self.set("train.pad_to", _int(prompt) + _int(resp), rmpad,
                 f" false: every sample padded to {prompt.key} + {resp.key} "
                 "(dp_actor.py _forward_micro_batch)", also=(prompt, resp))

    def _dp(self) -> int:
        t = self.imp.scenario["train"]
        return max(self.train_gpus // (t.get("tp", 1) * t.get("pp", 1) * t.get("cp", 1)), 1)

    def _recompute(self) -> None:
        c = self.cfg
        gc = c("actor_rollout_ref.model.enable_gradient_checkpointing")
        if self.backend in _FSDP:
            self.set("train.recompute", "full" if _flag(gc) else "none", gc)
            return
        c.note(gc.key, "not used by veRL's Megatron workers (recompute_granularity is)")
        g = c(_A + "megatron.override_transformer_config.recompute_granularity")
        if g.value not in (None, "selective", "full"):
            raise g.error(f"{g.value!r}: Megatron's recompute_granularity is null, selective "
                          "or full")
        self.set("train.recompute", g.value or "none", g)

    def _dispatcher(self) -> None:
        """Megatron's expert dispatcher: veRL's workers set `alltoall`
        (verl/workers/megatron_workers.py:218) unless override_transformer_config sets
        `flex` with DeepEP or HybridEP (rlsim's deepep)."""
        if self.backend in _FSDP:
            return
        c, o = self.cfg, _A + "megatron.override_transformer_config."
        kind, deepep, flex_backend = (o + "moe_token_dispatcher_type", o + "moe_enable_deepep",
                                      o + "moe_flex_dispatcher_backend")
        if not c.has(kind):
            for k in (deepep, flex_backend):
                if c.has(k):
                    c.note(k, "no moe_token_dispatcher_type flex: veRL's alltoall stands")
            return
        v = c(kind)
        on = [c(k) for k in (deepep, flex_backend) if c.has(k)] if v.value == "flex" else []
        try:
            value = moe_dispatcher(
                v.value, any(x.key == deepep and _flag(x) for x in on),
                next((x.value for x in on if x.key == flex_backend), None))
        except ValueError as err:
            raise v.error(err.args[0]) from None
        why = FLEX_DEFAULT if value == "deepep" and not on else ""
        self.set("train.moe_dispatcher", value, v, why, also=tuple(on))

    def _cpu_optimizer(self) -> None:
        """Megatron's hybrid CPU optimizer: veRL hands override_optimizer_config to
        Megatron-Core's OptimizerConfig key by key (verl/utils/megatron/optimizer.py:54-57),
        so optimizer_cpu_offload with optimizer_offload_fraction puts that share of the
        optimizer on the CPU, and overlap_cpu_optimizer_d2h_h2d overlaps its copies."""
        c, o = self.cfg, _A + "optim.override_optimizer_config."
        keys = [o + k for k in ("optimizer_cpu_offload", "optimizer_offload_fraction",
                                "overlap_cpu_optimizer_d2h_h2d")]
        given = [c(k) for k in keys if c.has(k)]
        if not given:
            return
        if self.backend in _FSDP:
            for v in given:
                c.note(v.key, "Megatron's hybrid CPU optimizer: not used by veRL's FSDP "
                       "workers")
            return
        on, frac, overlap = (next((v for v in given if v.key == k), None) for k in keys)
        cpu_offload = on is not None and _flag(on)
        if frac is not None:
            _check_resolved(frac)
        try:
            value = cpu_optimizer_fraction(cpu_offload, None if frac is None else frac.value)
        except ValueError as err:
            assert frac is not None  # only a stated fraction can be out of range
            raise frac.error(err.args[0]) from None
        if overlap is not None:
            _flag(overlap)
        if value == 0.0 or on is None or frac is None:
            for v in given:
                c.note(v.key, CPU_OPTIMIZER_OFF)
            return
        self.set("train.optimizer_offload_fraction", value, frac, also=(on,))
        if overlap is not None and _flag(overlap):
            self.set("train.overlap_cpu_optimizer_d2h_h2d", True, overlap)
        elif overlap is not None:
            c.note(overlap.key, "false: Megatron-Core's default")

    def _passes(self) -> None:
        """The forward passes and the critic: reference (KL), old log-probs, values."""
        c = self.cfg
        kl_loss, kl_reward = c(_A + "use_kl_loss"), c("algorithm.use_kl_in_reward")
        # verl/trainer/ppo/utils.py need_reference_policy: either KL needs the reference.
        on = [v for v in (kl_loss, kl_reward) if _flag(v)]
        if on:
            self.set("train.ref_logprob", True, on[0])
            other = kl_reward if on[0] is kl_loss else kl_loss
            c.note(other.key, f"{str(other.value).lower()}; the reference pass is needed for "
                   f"{on[0].key} anyway")
        else:
            self.set("train.ref_logprob", False, kl_loss, f" and {kl_reward.source} (both "
                     "false)", also=(kl_reward,))
        bypass = c("algorithm.rollout_correction.bypass_mode")
        # ray_trainer.py:1491: bypass mode trains on the engine's log-probs (no recompute).
        self.set("train.old_logprob", not _flag(bypass), bypass)
        adv = c("algorithm.adv_estimator")
        enable = c("critic.enable")
        # verl/trainer/ppo/utils.py need_critic: critic.enable, else adv_estimator == gae.
        if enable.value is not None:
            self.set("train.critic", _flag(enable), enable)
            c.note(adv.key, "advantage estimator: the critic follows critic.enable")
        else:
            self.set("train.critic", adv.value == "gae", adv)
        logp_dyn = c(_R + "log_prob_use_dynamic_bsz")
        if _flag(logp_dyn):
            cap = c(_R + "log_prob_max_token_len_per_gpu")
            self.set("train.log_prob_max_token_len_per_gpu", _int(cap), cap)
            c.note(logp_dyn.key, "dynamic log-prob micro-batches")
            for key in ("log_prob_micro_batch_size", "log_prob_micro_batch_size_per_gpu"):
                c.note(_R + key, "not used with log_prob_use_dynamic_bsz")
            return
        c.note(logp_dyn.key, "fixed log-prob micro-batches")
        c.note(_R + "log_prob_max_token_len_per_gpu", "used only with "
               "log_prob_use_dynamic_bsz")
        per_gpu = c(_R + "log_prob_micro_batch_size_per_gpu")
        total = c(_R + "log_prob_micro_batch_size")
        if per_gpu.value is not None and total.value is not None:
            raise total.error("set it or log_prob_micro_batch_size_per_gpu, not both (veRL: "
                              "verl/utils/config.py check_mutually_exclusive)")
        if per_gpu.value is not None:
            self.set("train.log_prob_micro_batch_size_per_gpu", _int(per_gpu), per_gpu)
        elif total.value is not None:
            size = max(_int(total) // self._dp(), 1)
            self.set("train.log_prob_micro_batch_size_per_gpu", size, total,
                     " / data-parallel ranks")
        else:
            raise per_gpu.error("veRL needs it when log_prob_use_dynamic_bsz is false "
                                "(verl/utils/config.py check_mutually_exclusive)")

    def _reward(self) -> None:
        c = self.cfg
        rm = c("reward_model.enable")
        if _flag(rm):
            self.caveats.append("the reward model (reward_model.enable) is not modelled")
            c.note(rm.key, "NOT modelled: a reward model scores every response on GPUs; "
                   "add reward: {kind: judge, judge: {...}} to the scenario by hand")
        else:
            c.note(rm.key, "no reward model")
        manager = c("reward_model.reward_manager")
        self.set("reward.kind", "rule", manager, ": a Python reward function")

    def _checkpoints(self) -> None:
        # veRL saves after every save_freq-th step and after the last one, when save_freq
        # > 0 (ray_trainer.py's fit loop); what a fault restarts from (docs/faults.md)
        v = self.cfg("trainer.save_freq")
        every = None if v.value is None else _int(v, low=-1)
        if every is not None and every > 0:
            self.set("recovery.trainer.checkpoint_every", every, v)
        else:
            self.cfg.note(v.key, "no checkpoints (save_freq <= 0): a trainer fault "
                          "restarts the job from its first step")

    def _checks(self) -> None:
        """Configs veRL itself rejects, named by their veRL keys."""
        c, t, w = self.cfg, self.imp.scenario["train"], self.imp.scenario["workload"]
        r = self.imp.scenario["rollout"]
        engine = r.get("tp", 1) * r.get("pp", 1)
        if self.rollout_gpus % engine:
            raise c(_R + "tensor_model_parallel_size").error(
                f"an engine of tp x pp = {engine} GPUs does not divide the "
                f"{self.rollout_gpus} rollout GPUs")
        shard = t.get("tp", 1) * t.get("pp", 1) * t.get("cp", 1)
        if self.train_gpus % shard:
            key = _A + ("ulysses_sequence_parallel_size" if self.backend in _FSDP
                        else "megatron.tensor_model_parallel_size")
            raise c(key).error(f"TP x PP x CP = {shard} does not divide the "
                               f"{self.train_gpus} training GPUs (verl/utils/config.py:95)")
        mini = c(_A + "ppo_mini_batch_size")
        dynamic = "micro_batch_size_per_gpu" not in t
        if not dynamic and w["prompts_per_step"] < t["ppo_mini_batch_size"]:
            raise mini.error(f"{mini.value} is larger than data.train_batch_size "
                             f"({w['prompts_per_step']}); veRL rejects it "
                             "(verl/workers/config/actor.py:203)")
        dp = self._dp() if self.backend in _MEGATRON else self.train_gpus // t.get("cp", 1)
        samples = t["ppo_mini_batch_size"] * w["samples_per_prompt"]
        if samples // dp < 1:
            raise mini.error(f"{mini.value} prompts x rollout.n {w['samples_per_prompt']} "
                             f"over {dp} data-parallel ranks is less than one sample per rank "
                             "(verl/workers/fsdp_workers.py:243)")
        batch = w["prompts_per_step"] * w["samples_per_prompt"]
        minimal = dp * (t.get("micro_batch_size_per_gpu", 1) if self.backend in _MEGATRON
                        else 1)
        if not dynamic and batch % minimal:
            raise c("data.train_batch_size").error(
                f"{w['prompts_per_step']} prompts x rollout.n {w['samples_per_prompt']} = "
                f"{batch} samples is not a multiple of {minimal} (veRL's minimal batch, "
                "verl/utils/config.py:110)")
        micro = t.get("micro_batch_size_per_gpu")
        if micro and (samples // dp) % micro:
            raise c(_A + "ppo_micro_batch_size_per_gpu").error(
                f"{micro} does not divide the {samples // dp} samples of a mini-batch on "
                "one data-parallel rank (ppo_mini_batch_size x rollout.n / ranks; "
                "verl/workers/fsdp_workers.py:254)")

    def describe(self) -> None:
        lines = [f"veRL job imported from {self.path.name} ({self.module})."]
        if self.facts.prompt_len_median is None:
            lines.append("Prompt lengths: rlsim's default (lognormal median 256, sigma 0.5).")
        lines += self.caveats
        self.set("description", " ".join(lines), "rlsim import verl")


def _unused(cfg: _Config, imp: Imported) -> None:
    """List every key the config sets that no field names as its source, with why; a key
    veRL does not have is an error."""
    for key, g in cfg.given.items():
        if key in cfg.used:
            continue
        why = cfg.notes.get(key) or _ignore_reason(key)
        if why is None and key in cfg.read:
            why = "read: it changes nothing in this job's scenario"
        if why is None and g.added:
            why = "added with + (not in veRL's config): rlsim does not read it"
        if why is None:
            raise _unknown_key(key, g.where)
        imp.ignore(key, why)
