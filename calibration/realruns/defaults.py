"""rlsim's own defaults for the scenario fields a measured run may leave unstated.

Owns the list of fields the translator answers for and where each default is read: the
scenario schema itself (rlsim.config), never a copy, so a changed default shows up here.
A field neither the record, its `config` nor its framework's cited tables set gets the
schema's default, written into the scenario and listed "default (not stated)" in the
report, so a reader sees every value rlsim chose for the run.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from rlsim.config.scenario import (
    AsyncConfig,
    PolicyConfig,
    RolloutConfig,
    TrainConfig,
    WeightSyncConfig,
)
from rlsim.config.workload import WorkloadConfig

NOT_STATED = "default (not stated)"

_SECTIONS: dict[str, type[BaseModel]] = {
    "rollout": RolloutConfig, "train": TrainConfig, "policy": PolicyConfig,
    "weight_sync": WeightSyncConfig, "workload": WorkloadConfig,
    "policy.asynchronous": AsyncConfig,
}


def schema_default(path: str) -> Any:
    """The schema's default of a dotted scenario field (`rollout.tp`), as plain data."""
    section, _, name = path.rpartition(".")
    value = _SECTIONS[section].model_fields[name].default
    return value.model_dump() if isinstance(value, BaseModel) else value


# Fields every translated run answers for, in report order: (dotted path, applies) where
# `applies(scenario, moe)` says whether the field means anything for this run.
def _always(_s: dict[str, Any], _moe: bool) -> bool:
    return True


def _moe_only(_s: dict[str, Any], moe: bool) -> bool:
    return moe


def _no_recompute(s: dict[str, Any], _moe: bool) -> bool:
    return "recompute" not in s["train"]


def _no_batching(s: dict[str, Any], _moe: bool) -> bool:
    return not ({"micro_batch_size_per_gpu", "max_token_len_per_gpu"} & set(s["train"]))


def _bucketed(s: dict[str, Any], _moe: bool) -> bool:
    return s["weight_sync"].get("scheme", schema_default("weight_sync.scheme")) in (
        "bucketed", "delta")


def _colocated(s: dict[str, Any], _moe: bool) -> bool:
    return s["policy"].get("placement", schema_default("policy.placement")) == "colocated"


FIELDS: tuple[tuple[str, Any], ...] = (
    ("rollout.tp", _always),
    ("rollout.max_running_seqs", _always),
    ("rollout.max_batched_tokens", _always),
    ("rollout.gpu_memory_utilization", _always),
    ("rollout.cuda_graphs", _always),
    ("rollout.dtype", _always),
    ("rollout.kv_cache_dtype", _always),
    ("rollout.ep", _moe_only),
    ("train.backend", _always),
    ("train.tp", _always),
    ("train.pp", _always),
    ("train.cp", _always),
    ("train.ep", _moe_only),
    ("train.recompute_activations", _no_recompute),
    ("train.critic", _always),
    ("train.ref_logprob", _always),
    ("train.old_logprob", _always),
    ("train.ppo_epochs", _always),
    ("train.micro_batch_tokens", _no_batching),
    ("train.param_offload", _always),
    ("train.optimizer_offload", _always),
    ("workload.max_prompt_len", _always),
    ("workload.prompt_len", _always),
    ("weight_sync.scheme", _always),
    ("weight_sync.bucket_size", _bucketed),
    ("weight_sync.engine_sleep_level", _colocated),
    ("weight_sync.framework", _always),
)


def fill_defaults(scenario: dict[str, Any], moe: bool, taken: list[str]) -> None:
    """Write the schema's default into every field of FIELDS the scenario leaves unset and
    that means something for this run; list each in `taken` as "default (not stated)"."""
    for path, applies in FIELDS:
        section, _, name = path.rpartition(".")
        node = scenario.setdefault(section, {})
        if name in node or not applies(scenario, moe):
            continue
        node[name] = schema_default(path)
        taken.append(f"{path} = {node[name]} ({NOT_STATED})")
    train = scenario["train"]
    if "ppo_mini_batch_size" not in train:
        taken.append(f"train.ppo_mini_batch_size = none: one optimizer step per RL step "
                     f"({NOT_STATED})")
