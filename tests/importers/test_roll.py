"""`rlsim import roll`: ROLL's RLVR and agentic pipeline YAML to rlsim scenarios.

The fixtures under tests/data/importers/roll/ are copies of ROLL's example configs at
alibaba/ROLL@8eb27cc2 (first line of each names its source), laid out as in ROLL's examples/
tree so that `defaults: - ../config/traj_envs@_here_` resolves as it does for ROLL.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlsim.api import simulate_file
from rlsim.config.errors import ScenarioError
from rlsim.config.scenario import Scenario
from rlsim.importers import roll
from rlsim.importers.base import Facts, Imported, to_yaml, write_atomic
from rlsim.importers.overrides import parse_sets
from rlsim.importers.roll import import_roll, load_roll_config, parse_device_mapping

DATA = Path(__file__).parents[1] / "data" / "importers" / "roll"
RLVR_ASYNC = DATA / "qwen2.5-7B-rlvr_megatron" / "rlvr_config_async.yaml"
WEBSHOP = DATA / "qwen2.5-7B-agentic_megatron" / "agentic_val_webshop.yaml"
FROZEN_LAKE_ASYNC = DATA / "qwen2.5-0.5B-agentic" / "agent_val_frozen_lake_async.yaml"
QWEN3_SYNC = DATA / "qwen3-8B-rlvr_megatron" / "rlvr_config.yaml"
FIXTURES = (RLVR_ASYNC, WEBSHOP, FROZEN_LAKE_ASYNC, QWEN3_SYNC)
RLSIM = Path(sys.executable).parent / "rlsim"


def _facts(**kw: Any) -> Facts:
    return Facts(**{"gpu": "H800", "response_len_median": 600, **kw})


def _get(tree: dict[str, Any], dotted: str) -> Any:
    node: Any = tree
    for part in dotted.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _run_two_steps(imp: Imported, folder: Path) -> dict[str, Any]:
    """Write the imported scenario as `rlsim import roll` does and simulate 2 steps of it."""
    path = folder / "scenario.yaml"
    write_atomic(path, to_yaml(imp, "imported by a test"))
    assert yaml.safe_load(path.read_text()) == imp.scenario
    summary = simulate_file(path, ["steps=2"]).summary
    assert summary["steps"] == 2
    assert summary["step_time_s"]["mean"] > 0
    return summary


def _covered(key: str, ignored: list[tuple[str, str]]) -> bool:
    return any(key == k or key.startswith(k + ".") for k, _ in ignored)


# --- the must-show configs ---

def test_fixtures_name_their_roll_source() -> None:
    for path in [*FIXTURES, DATA / "config" / "traj_envs.yaml"]:
        first = path.read_text().splitlines()[0]
        rel = path.relative_to(DATA).as_posix()
        assert first == ("# Copied from alibaba/ROLL@8eb27cc2dc34c4d1310b169d9b86d339004d811a "
                         f"examples/{rel}"), path


def test_qwen25_7b_rlvr_async_imports_validates_and_runs(tmp_path: Path) -> None:
    imp = import_roll(RLVR_ASYNC, _facts(response_len_median=1200))
    sc = Scenario.model_validate(imp.scenario)
    # async_generation_ratio: 1, actor_train on GPUs 0-15, actor_infer (SGLang) on 16-23.
    assert sc.policy.name == "async" and sc.policy.asynchronous.alpha == 1
    assert sc.policy.placement == "disaggregated"
    assert [(p.name, p.nodes) for p in sc.pools] == [("train", 2), ("rollout", 1)]
    assert (sc.train.gpus, sc.rollout.gpus) == (16, 8)
    assert (sc.train.backend, sc.train.tp, sc.train.pp) == ("megatron", 2, 1)
    assert sc.rollout.gpu_memory_utilization == 0.85  # SGLang mem_fraction_static
    assert (sc.workload.prompts_per_step, sc.workload.samples_per_prompt) == (64, 8)
    assert (sc.workload.max_prompt_len, sc.workload.max_response_len) == (2048, 8192)
    # No init_kl_coef in the file: ROLL's default 0.2 turns on the reference pass and the
    # old-log-prob recompute (base_config.py).
    assert sc.train.ref_logprob and sc.train.old_logprob
    assert imp.sources["train.ref_logprob"].startswith("default: alibaba/ROLL@8eb27cc2 "
                                                       "roll/configs/base_config.py")
    assert sc.train.pad_to == 2048 + 8192
    assert sc.reward.workers == 8
    summary = _run_two_steps(imp, tmp_path)
    assert summary["policy"] == "async"


def test_agentic_webshop_imports_validates_and_runs(tmp_path: Path) -> None:
    """ROLL's Qwen2.5-7B agentic example (WebShop: ROLL publishes no ALFWorld pipeline
    config at 8eb27cc2 or in its history; WebShop is its text-agent example closest to it)."""
    imp = import_roll(WEBSHOP, _facts(response_len_median=60))
    sc = Scenario.model_validate(imp.scenario)
    assert sc.policy.name == "sync" and sc.policy.placement == "colocated"
    assert (sc.workload.prompts_per_step, sc.workload.samples_per_prompt) == (8, 8)
    agentic = sc.workload.agentic
    assert agentic is not None
    # max_tokens_per_step 128 and max_actions_per_traj 10 come from ../config/traj_envs.yaml
    # through ${custom_env.WebShopEnv}: the defaults file and the interpolations resolved.
    assert sc.workload.max_response_len == 128
    # Each source names the key to edit: the template variable the value came from.
    assert imp.sources["workload.max_response_len"] == \
        "custom_envs.WebShopEnv.max_tokens_per_step (= ${max_tokens_per_step})"
    assert imp.sources["workload.agentic.max_turns"] == \
        "custom_envs.WebShopEnv.max_steps (= ${max_actions_per_traj})"
    assert agentic.max_turns == 10 and agentic.max_context_len == 8192
    assert sc.env.workers == 5  # WebShopEnv.max_env_step_concurrent
    assert not sc.train.ref_logprob  # init_kl_coef: 0.0
    assert sc.train.pad_to == 8192
    _run_two_steps(imp, tmp_path)


ALFWORLD_OVERLAY = """\
# ALFWorld as ROLL Flash runs it (arXiv 2510.11345 App. A.2, quoted in shared/PAPER-FACTS.md
# section 1b): ROLL publishes no ALFWorld pipeline config, so this overlays the paper's
# settings on ROLL's agentic example.
defaults:
  - ../qwen2.5-7B-agentic_megatron/agentic_val_webshop@_here_
pretrain: Qwen/Qwen3-8B                      # "pretrain: Qwen/Qwen3-8B"
rollout_batch_size: 128                      # "rollout_batch_size: 128 # env count for train"
sequence_length: 32768                       # "sequence_length: 32768"
async_generation_ratio: 1                    # "async_generation_ratio: 1"
actor_train:
  device_mapping: list(range(0,32))          # "list(range(0,32))"
actor_infer:
  device_mapping: list(range(32,64))         # "list(range(32,64))"
  generating_args:
    max_new_tokens: 4096                     # AlfworldEnv "max_new_tokens: 4096"
reference:
  device_mapping: list(range(0,32))
train_env_manager:
  num_env_groups: 9                          # redundant mode: 9 groups of 17 for 8 x 16
  group_size: 16
  group_size_redundancy: 1
  tags: [AlfworldEnv]
  num_groups_partition: [9]
custom_envs:
  AlfworldEnv:
    env_type: alfworld
    max_steps: 30                            # AlfworldEnv "max_steps: 30"
    max_tokens_per_step: 4096
"""


def test_alfworld_as_rollflash_describes_it_imports_and_runs(tmp_path: Path) -> None:
    tree = tmp_path / "roll"
    shutil.copytree(DATA, tree)
    config = tree / "alfworld" / "alfworld_rollflash.yaml"
    config.parent.mkdir()
    config.write_text(ALFWORLD_OVERLAY)
    imp = import_roll(config, _facts(response_len_median=150))
    sc = Scenario.model_validate(imp.scenario)
    assert sc.model == "qwen3-8b"
    assert sc.policy.name == "async" and sc.policy.placement == "disaggregated"
    assert (sc.train.gpus, sc.rollout.gpus) == (32, 32)
    assert (sc.workload.prompts_per_step, sc.workload.samples_per_prompt) == (8, 16)
    assert sc.policy.asynchronous.extra_groups == 1
    assert sc.policy.asynchronous.extra_per_group == 1
    assert sc.env.workers == 9 * 17
    assert sc.workload.agentic is not None and sc.workload.agentic.max_turns == 30
    assert sc.workload.max_response_len == 4096
    _run_two_steps(imp, tmp_path)


def test_frozen_lake_async_and_qwen3_sync_import_and_run(tmp_path: Path) -> None:
    imp = import_roll(FROZEN_LAKE_ASYNC, _facts(response_len_median=30))
    sc = Scenario.model_validate(imp.scenario)
    # max_tokens_per_step: 64 at the top overrides traj_envs.yaml's 128 through ${...}.
    assert sc.workload.max_response_len == 64
    assert (sc.policy.name, sc.rollout.gpus, sc.train.gpus) == ("async", 4, 4)
    assert [p.name for p in sc.pools] == ["cluster"]  # both roles on node 0
    _run_two_steps(imp, tmp_path / "a")

    imp = import_roll(QWEN3_SYNC, _facts())
    sc = Scenario.model_validate(imp.scenario)
    # actor_infer on GPUs 0-11 inside actor_train's 0-15: colocated on the trainer's GPUs.
    assert sc.policy.placement == "colocated" and sc.rollout.gpus == 16
    assert "12 GPUs" in imp.sources["rollout.gpus"]
    assert _covered("rewards.llm_judge", imp.ignored)  # the GPU judge is not imported
    (tmp_path / "b").mkdir()
    _run_two_steps(imp, tmp_path / "b")


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_key_is_mapped_or_listed_with_why(path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    sweep = roll._sweep

    def spy(cfg: Any, imp: Imported) -> None:
        seen["cfg"] = cfg
        sweep(cfg, imp)

    monkeypatch.setattr(roll, "_sweep", spy)
    imp = import_roll(path, _facts(response_len_median=40))
    cfg = seen["cfg"]
    for leaf, _ in roll._leaves(cfg.root, ""):
        assert cfg.is_read(leaf) or _covered(leaf, imp.ignored), leaf
    assert all(why for _, why in imp.ignored)


def test_cli_imports_and_runs(tmp_path: Path) -> None:
    out = tmp_path / "job.yaml"
    done = subprocess.run(
        [str(RLSIM), "import", "roll", str(RLVR_ASYNC), "--gpu", "H800",
         "--response-len-median", "1000", "--out", str(out)],
        capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "  # async_generation_ratio" in text and "# Not used:" in text
    done = subprocess.run([str(RLSIM), "run", str(out), "--set", "steps=2", "--json"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    bad = subprocess.run([str(RLSIM), "import", "roll", str(RLVR_ASYNC), "--out",
                          str(tmp_path / "x.yaml")], capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "rlsim: error: --gpu: the config does not say the GPU type; pass --gpu"]


# --- round trips: key K = value gives the field, and names K as its source ---

RLVR_BASE: dict[str, Any] = {
    "pretrain": "Qwen/Qwen2.5-7B",
    "rollout_batch_size": 64,
    "num_return_sequences_in_group": 8,
    "prompt_length": 1024,
    "response_length": 2048,
    "adv_estimator": "grpo",
    "actor_train": {
        "device_mapping": "list(range(0,8))",
        "training_args": {"per_device_train_batch_size": 1, "gradient_accumulation_steps": 64},
        "strategy_args": {"strategy_name": "megatron_train",
                          "strategy_config": {"tensor_model_parallel_size": 1}},
    },
    "actor_infer": {
        "device_mapping": "list(range(0,8))",
        "strategy_args": {"strategy_name": "vllm", "strategy_config": {}},
    },
    "reference": {"device_mapping": "list(range(0,8))"},
}
DISJOINT = {"actor_train.device_mapping": "list(range(0,8))",
            "actor_infer.device_mapping": "list(range(8,16))"}
NO_KL = {"init_kl_coef": 0.0}
FSDP2 = {"actor_train.strategy_args": {"strategy_name": "fsdp2_train", "strategy_config": {}}}
SGLANG = {"actor_infer.strategy_args": {"strategy_name": "sglang",
                                        "strategy_config": {"mem_fraction_static": 0.8}}}
SC = "actor_train.strategy_args.strategy_config"
IC = "actor_infer.strategy_args.strategy_config"


def _with(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = yaml.safe_load(yaml.safe_dump(base))
    for dotted, value in overrides.items():
        node = out
        *parents, last = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = copy.deepcopy(value)
    return out


def _import_dict(tmp_path: Path, config: dict[str, Any], **facts: Any) -> Imported:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return import_roll(path, _facts(**facts))


ROUND_TRIPS: list[tuple[str, Any, str, Any, dict[str, Any]]] = [
    # (key, value, field, expected field value, other keys the case needs)
    ("rollout_batch_size", 32, "workload.prompts_per_step", 32, {}),
    ("num_return_sequences_in_group", 4, "workload.samples_per_prompt", 4, {}),
    ("prompt_length", 512, "workload.max_prompt_len", 512, {}),
    ("response_length", 3000, "workload.max_response_len", 3000, {}),
    ("async_generation_ratio", 2, "policy.asynchronous.alpha", 2, DISJOINT),
    ("num_gpus_per_node", 4, "pools.0.gpus_per_node", 4, {}),
    ("ppo_epochs", 2, "train.ppo_epochs", 2, {}),
    ("init_kl_coef", 0.1, "train.ref_logprob", True, {}),
    ("use_kl_loss", True, "train.ref_logprob", True, NO_KL),
    ("enable_reference", True, "train.ref_logprob", True, NO_KL),
    ("enable_old_logprobs_recompute", True, "train.old_logprob", True, NO_KL),
    ("force_disable_old_logprobs_recompute", True, "train.old_logprob", False, {}),
    ("adv_estimator", "gae", "train.critic", True, {}),
    ("adv_estimator", "reinforce", "train.critic", False, {}),
    ("max_running_requests", 100, "rollout.max_running_seqs", 100, {}),
    ("model_update_buffer_size_mb", 512, "weight_sync.bucket_size", "512 MiB", {}),
    ("is_offload_states", True, "train.param_offload", True, {}),
    ("actor_train.device_mapping", "list(range(0,16))", "train.gpus", 16,
     {"actor_infer.device_mapping": "list(range(16,24))"}),
    ("actor_infer.device_mapping", "[8, 9, 10, 11]", "rollout.gpus", 4, {}),
    ("actor_train.strategy_args.strategy_name", "fsdp2_train", "train.backend", "fsdp2", {}),
    ("actor_train.strategy_args.strategy_name", "deepspeed_train", "train.backend", "fsdp",
     {}),
    (f"{SC}.tensor_model_parallel_size", 2, "train.tp", 2, {}),
    (f"{SC}.pipeline_model_parallel_size", 2, "train.pp", 2, {}),
    (f"{SC}.context_parallel_size", 2, "train.cp", 2, {}),
    (f"{SC}.expert_model_parallel_size", 2, "train.ep", 2, {}),
    (f"{SC}.recompute_granularity", "selective", "train.recompute", "selective", {}),
    (f"{SC}.recompute_granularity", "full", "train.recompute", "full", {}),
    (f"{SC}.moe_token_dispatcher_type", "alltoall", "train.moe_dispatcher", "alltoall", {}),
    (f"{SC}.moe_token_dispatcher_type", "flex", "train.moe_dispatcher", "deepep",
     {f"{SC}.moe_enable_deepep": True}),
    (f"{SC}.optimizer_offload_fraction", 0.5, "train.optimizer_offload_fraction", 0.5,
     {f"{SC}.optimizer_cpu_offload": True}),
    ("actor_train.model_args.ulysses_size", 2, "train.cp", 2, FSDP2),
    ("actor_train.model_args.disable_gradient_checkpointing", True, "train.recompute", "none",
     FSDP2),
    (f"{SC}.offload_policy", True, "train.param_offload", True, FSDP2),
    ("actor_train.training_args.per_device_train_batch_size", 2,
     "train.micro_batch_size_per_gpu", 2, {}),
    ("actor_train.max_tokens_per_microbatch_in_train", 16384, "train.max_token_len_per_gpu",
     16384, {"actor_train.use_dynamic_batching_in_train": True}),
    ("actor_train.infer_batch_size", 4, "train.log_prob_micro_batch_size_per_gpu", 4, {}),
    ("reference.infer_batch_size", 2, "train.log_prob_micro_batch_size_per_gpu", 2,
     {"init_kl_coef": 0.0, "use_kl_loss": True}),
    ("actor_train.max_tokens_per_microbatch_in_infer", 20000,
     "train.log_prob_max_token_len_per_gpu", 20000,
     {"actor_train.use_dynamic_batching_in_infer": True}),
    (f"{IC}.tensor_parallel_size", 2, "rollout.tp", 2, {}),
    (f"{IC}.pipeline_parallel_size", 2, "rollout.pp", 2, {}),
    (f"{IC}.gpu_memory_utilization", 0.7, "rollout.gpu_memory_utilization", 0.7, {}),
    (f"{IC}.max_num_seqs", 64, "rollout.max_running_seqs", 64, {}),
    (f"{IC}.max_num_batched_tokens", 4096, "rollout.max_batched_tokens", 4096, {}),
    (f"{IC}.enforce_eager", True, "rollout.cuda_graphs", False, {}),
    (f"{IC}.enable_prefix_caching", False, "rollout.prefix_caching", False, {}),
    (f"{IC}.kv_cache_dtype", "fp8_e4m3", "rollout.kv_cache_dtype", "fp8", {}),
    (f"{IC}.quantization", "fp8", "rollout.dtype", "fp8", {}),
    (f"{IC}.sleep_level", 2, "weight_sync.engine_sleep_level", 2, {}),
    (f"{IC}.mem_fraction_static", 0.75, "rollout.gpu_memory_utilization", 0.75, SGLANG),
    (f"{IC}.tensor_parallel_size", 4, "rollout.tp", 4, SGLANG),
    (f"{IC}.max_running_requests", 32, "rollout.max_running_seqs", 32, SGLANG),
    (f"{IC}.chunked_prefill_size", 4096, "rollout.max_batched_tokens", 4096, SGLANG),
    (f"{IC}.disable_radix_cache", True, "rollout.prefix_caching", False, SGLANG),
    (f"{IC}.disable_cuda_graph", True, "rollout.cuda_graphs", False, SGLANG),
    ("actor_infer.num_gpus_per_worker", 2, "rollout.tp", 2, SGLANG),
    ("rewards.math_rule.world_size", 16, "reward.workers", 16,
     {"rewards.math_rule.worker_cls": "roll.pipeline.rlvr.rewards.math_rule_reward_worker."
                                      "MathRuleRewardWorker"}),
    ("rewards.code.worker_cls", "x.code_sandbox_reward_worker.CodeSandboxRewardWorker",
     "reward.kind", "sandbox", {}),
    ("save_steps", 20, "recovery.trainer.checkpoint_every", 20, {}),
]


@pytest.mark.parametrize(("key", "value", "field", "expected", "needs"), ROUND_TRIPS,
                         ids=[f"{c[0]}={c[1]}" for c in ROUND_TRIPS])
def test_rlvr_round_trip(tmp_path: Path, key: str, value: Any, field: str, expected: Any,
                         needs: dict[str, Any]) -> None:
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {**needs, key: value}))
    assert _get(imp.scenario, field) == expected
    if key == "actor_infer.num_gpus_per_worker":
        assert imp.sources[field].startswith(key)  # SGLang's TP default, with the why
    else:
        assert imp.sources[field] == key
    Scenario.model_validate(imp.scenario)


def test_checkpoints_default_to_rolls_save_steps(tmp_path: Path) -> None:
    # ROLL always saves (base_config.py save_steps 50): an imported job restarts from its
    # last save, not from step 1
    imp = _import_dict(tmp_path, RLVR_BASE)
    assert _get(imp.scenario, "recovery.trainer.checkpoint_every") == 50
    assert "save_steps 50" in imp.sources["recovery.trainer.checkpoint_every"]


AGENTIC_BASE: dict[str, Any] = {
    "pretrain": "Qwen/Qwen2.5-7B-Instruct",
    "rollout_batch_size": 16,
    "sequence_length": 4096,
    "adv_estimator": "grpo",
    "init_kl_coef": 0.0,
    "actor_train": {
        "device_mapping": "list(range(0,8))",
        "training_args": {"per_device_train_batch_size": 1, "gradient_accumulation_steps": 2},
        "strategy_args": {"strategy_name": "megatron_train", "strategy_config": {}},
    },
    "actor_infer": {
        "device_mapping": "list(range(0,8))",
        "generating_args": {"max_new_tokens": 1024},
        "strategy_args": {"strategy_name": "vllm", "strategy_config": {}},
    },
    "train_env_manager": {"num_env_groups": 4, "group_size": 4, "tags": ["Game"],
                          "num_groups_partition": [4]},
    "custom_envs": {"Game": {"env_type": "sokoban", "max_steps": 5, "max_tokens_per_step": 100}},
}
AGENTIC_ROUND_TRIPS: list[tuple[str, Any, str, Any, dict[str, Any]]] = [
    ("train_env_manager.group_size", 8, "workload.samples_per_prompt", 8,
     {"rollout_batch_size": 32}),
    ("custom_envs.Game.max_steps", 7, "workload.agentic.max_turns", 7, {}),
    ("custom_envs.Game.max_tokens_per_step", 200, "workload.max_response_len", 200, {}),
    ("sequence_length", 8192, "workload.agentic.max_context_len", 8192, {}),
    ("custom_envs.Game.max_env_step_concurrent", 3, "env.workers", 3, {}),
    ("async_generation_ratio", 1, "policy.asynchronous.alpha", 1, DISJOINT),
    ("train_env_manager.group_size_redundancy", 1, "policy.asynchronous.extra_per_group", 1,
     {**DISJOINT, "async_generation_ratio": 1}),
]


@pytest.mark.parametrize(("key", "value", "field", "expected", "needs"), AGENTIC_ROUND_TRIPS,
                         ids=[f"{c[0]}={c[1]}" for c in AGENTIC_ROUND_TRIPS])
def test_agentic_round_trip(tmp_path: Path, key: str, value: Any, field: str, expected: Any,
                            needs: dict[str, Any]) -> None:
    imp = _import_dict(tmp_path, _with(AGENTIC_BASE, {**needs, key: value}),
                       response_len_median=50)
    assert _get(imp.scenario, field) == expected
    assert imp.sources[field] == key
    Scenario.model_validate(imp.scenario)


def test_derived_fields_name_their_keys(tmp_path: Path) -> None:
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {"sequence_length": 4000}))
    sc = imp.scenario
    assert sc["workload"]["max_response_len"] == 4000 - 1024
    assert imp.sources["workload.max_response_len"].startswith("sequence_length - prompt_length")
    assert _covered("response_length", imp.ignored)  # ROLL drops it when sequence_length is set
    assert sc["train"]["pad_to"] == 4000
    assert imp.sources["train.pad_to"].startswith("sequence_length")
    # 64 prompts x 8 = 512 samples, 1 x 64 x DP 8 per optimizer step: one step.
    assert sc["train"]["ppo_mini_batch_size"] is None
    # 1 x 16 x DP 8 = 128 samples per step: 4 steps of 16 prompts, and (several optimizer
    # steps per rank) the old log-probs are recomputed.
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {
        **NO_KL, "actor_train.training_args.gradient_accumulation_steps": 16}))
    assert imp.scenario["train"]["ppo_mini_batch_size"] == 16
    assert "gradient_accumulation_steps" in imp.sources["train.ppo_mini_batch_size"]
    assert imp.scenario["train"]["old_logprob"] is True
    # 10 prompts x 8 on DP 1 in 1 x 24 samples: ROLL's 3 optimizer steps; rlsim counts
    # whole prompts, 4 per mini-batch, which makes 3 steps too.
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {
        "rollout_batch_size": 10, f"{SC}.tensor_model_parallel_size": 8,
        "actor_train.training_args.gradient_accumulation_steps": 24}))
    assert imp.scenario["train"]["ppo_mini_batch_size"] == 4
    assert "3 optimizer steps" in imp.sources["train.ppo_mini_batch_size"]
    # Sequence packing: no padding; agentic batch over groups.
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {"actor_train.use_sequence_packing": True,
                                                   "reference.use_sequence_packing": True}))
    assert "pad_to" not in imp.scenario["train"]
    assert "log_prob_pad_to" not in imp.scenario["train"]
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {"actor_train.use_sequence_packing": True}))
    assert imp.scenario["train"]["ref_pad_to"] == 1024 + 2048  # reference still pads
    imp = _import_dict(tmp_path, AGENTIC_BASE, response_len_median=50)
    assert imp.scenario["workload"]["prompts_per_step"] == 4
    assert imp.sources["workload.prompts_per_step"] == \
        "rollout_batch_size / train_env_manager.group_size"


def test_response_sigma_defaults_to_the_dapo_trace(tmp_path: Path) -> None:
    imp = _import_dict(tmp_path, RLVR_BASE)
    assert imp.scenario["workload"]["response_len"] == {
        "dist": "lognormal", "median": 600, "sigma": 0.928}
    assert "0.928" in imp.sources["workload.response_len"]
    assert "dapo-qwen2.5-32b" in imp.sources["workload.response_len"]
    imp = _import_dict(tmp_path, RLVR_BASE, response_len_sigma=0.5, prompt_len_median=300)
    assert imp.scenario["workload"]["response_len"]["sigma"] == 0.5
    assert imp.scenario["workload"]["prompt_len"]["median"] == 300
    assert imp.sources["workload.response_len"].endswith("--response-len-sigma")


def test_flags_override_and_check_the_config(tmp_path: Path) -> None:
    imp = _import_dict(tmp_path, RLVR_BASE, model="qwen3-8b", name="job", steps=3,
                       gpus_per_node=4, nodes=2)
    assert (imp.scenario["model"], imp.sources["model"]) == ("qwen3-8b", "--model")
    assert (imp.scenario["name"], imp.scenario["steps"]) == ("job", 3)
    assert imp.scenario["pools"][0]["gpus_per_node"] == 4
    assert imp.sources["pools.0.gpus_per_node"] == "--gpus-per-node"


# --- bad input: one ScenarioError naming the key or flag ---

BAD: list[tuple[dict[str, Any], dict[str, Any], str, str]] = [
    # (config overrides, facts, the error's field, a word of its message)
    ({"pretrain": "foo/Bar-9B"}, {}, "pretrain", "not in rlsim's catalogue"),
    ({}, {"gpu": None}, "--gpu", "pass --gpu"),
    ({}, {"gpu": "X9"}, "--gpu", "not in rlsim's catalogue"),
    ({}, {"response_len_median": None}, "--response-len-median", "pass"),
    ({}, {"response_len_median": 5000}, "--response-len-median", "above the response cap"),
    ({}, {"nodes": 3}, "--nodes", "1 node(s) of 8"),
    ({"rollout_batch_size": "many"}, {}, "rollout_batch_size", "not a whole number"),
    ({"rollout_batch_size": 6.5}, {}, "rollout_batch_size", "not a whole number"),
    ({f"{IC}.gpu_memory_utilization": "high"}, {}, f"{IC}.gpu_memory_utilization",
     "not a number"),
    ({f"{IC}.enforce_eager": "yes"}, {}, f"{IC}.enforce_eager", "not true or false"),
    ({"actor_train.device_mapping": "__import__('os').system('true')"}, {},
     "actor_train.device_mapping", "rlsim runs no code"),
    ({"actor_train.device_mapping": "list(range(0,8)) * 2"}, {}, "actor_train.device_mapping",
     "rlsim runs no code"),
    ({"actor_train.device_mapping": "[0, 1, 1]"}, {}, "actor_train.device_mapping",
     "appears twice"),
    ({"actor_infer.device_mapping": "list(range(0,"}, {}, "actor_infer.device_mapping",
     "not an expression"),
    ({f"{SC}.tensor_model_parallel_size": 3}, {}, SC, "does not divide actor_train's 8 GPUs"),
    ({f"{SC}.tensor_model_parallel_size": 2, f"{SC}.context_parallel_size": 2,
      "rollout_batch_size": 5}, {}, "rollout_batch_size", "data-parallel size 2"),
    ({f"{IC}.tensor_parallel_size": 3}, {}, f"{IC}.tensor_parallel_size", "do not divide"),
    ({"async_generation_ratio": 1}, {}, "actor_infer.device_mapping", "separate GPUs"),
    ({"async_generation_ratio": 1.5, **DISJOINT}, {}, "async_generation_ratio",
     "whole number"),
    ({"actor_infer.strategy_args.strategy_name": "hf_infer"}, {},
     "actor_infer.strategy_args.strategy_name", "vllm or sglang"),
    ({"actor_train.strategy_args.strategy_name": "megatron_infer"}, {},
     "actor_train.strategy_args.strategy_name", "not a training strategy"),
    ({"response_length": None}, {}, "response_length", "set response_length or "
     "sequence_length"),
    ({"sequence_length": 1000}, {}, "sequence_length", "no room"),
    ({"rollout_batch_szie": 64}, {}, "rollout_batch_szie", "did you mean rollout_batch_size"),
    ({"actor_train.training_args.per_device_train_batch_sise": 2}, {},
     "actor_train.training_args.per_device_train_batch_sise",
     "did you mean per_device_train_batch_size"),
    ({"actor_train.use_dynamic_batching_in_train": True}, {},
     "actor_train.max_tokens_per_microbatch_in_train", "token cap"),
    ({"checkpoint_config": {"output_dir": "/x/${exp_nam}"}}, {},
     "checkpoint_config.output_dir", "${exp_nam} names no key"),
]


@pytest.mark.parametrize(("overrides", "facts", "field", "words"), BAD,
                         ids=[b[2] + ":" + b[3][:20] for b in BAD])
def test_bad_input_names_the_key_or_flag(tmp_path: Path, overrides: dict[str, Any],
                                         facts: dict[str, Any], field: str,
                                         words: str) -> None:
    with pytest.raises(ScenarioError) as err:
        _import_dict(tmp_path, _with(RLVR_BASE, overrides), **facts)
    assert err.value.field == field
    assert words in err.value.message
    assert "\n" not in err.value.line()


AGENTIC_BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"rollout_batch_size": 18}, "rollout_batch_size", "not whole groups"),
    ({"train_env_manager.num_groups_partition": [3]},
     "train_env_manager.num_groups_partition", "not num_env_groups 4"),
    ({"train_env_manager.tags": ["Nope"]}, "train_env_manager.tags", "no custom_envs entry"),
    ({"custom_envs.Game.max_steps": None}, "custom_envs.Game.max_steps", "set it"),
]


@pytest.mark.parametrize(("overrides", "field", "words"), AGENTIC_BAD,
                         ids=[b[1] for b in AGENTIC_BAD])
def test_bad_agentic_input_names_the_key(tmp_path: Path, overrides: dict[str, Any],
                                         field: str, words: str) -> None:
    with pytest.raises(ScenarioError) as err:
        _import_dict(tmp_path, _with(AGENTIC_BASE, overrides), response_len_median=50)
    assert err.value.field == field
    assert words in err.value.message


def test_typos_of_unused_keys_and_template_blocks_are_listed_not_refused(
        tmp_path: Path) -> None:
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {
        "positive_loss_coef": 0.1,  # ROLL's own field is spelt postive_loss_coef
        "reward_models": {"a": 1},  # a template block near reward_model
        "actor_infer.device_mapping": "list([0, 1, 2, 3]) + [4, 5, 6, 7]"}))
    why = dict(imp.ignored)
    assert "did you mean postive_loss_coef" in why["positive_loss_coef"]
    assert "did you mean reward_model" in why["reward_models"]
    assert imp.scenario["rollout"]["gpus"] == 8
    with pytest.raises(ScenarioError) as err:
        _import_dict(tmp_path, {k: v for k, v in RLVR_BASE.items() if k != "actor_infer"})
    assert err.value.field == "actor_infer" and "not a ROLL RLVR or agentic" in err.value.message


def test_bad_yaml_and_missing_defaults_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("rollout_batch_size: 64\nactor_train: [unclosed\n")
    with pytest.raises(ScenarioError, match=r"bad.yaml:\d+: not valid YAML"):
        import_roll(path, _facts())
    path.write_text("- a list\n")
    with pytest.raises(ScenarioError, match="a YAML mapping"):
        import_roll(path, _facts())
    path.write_text("defaults:\n  - ../config/missing_envs@_here_\n")
    with pytest.raises(ScenarioError) as err:
        import_roll(path, _facts())
    assert err.value.field == "defaults" and "missing_envs.yaml" in err.value.message


# --- the Hydra reading and the device_mapping reader ---

def test_defaults_merge_in_hydra_order_and_interpolations_resolve(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "envs.yaml").write_text(
        "max_tokens_per_step: 128\nseq: 1000\n"
        "custom_env:\n  Game: {max_tokens_per_step: '${max_tokens_per_step}', cap: '${seq}'}\n")
    (tmp_path / "group").mkdir()
    (tmp_path / "group" / "opt.yaml").write_text("value: 7\n")
    (tmp_path / "job").mkdir()
    job = tmp_path / "job" / "main.yaml"
    job.write_text(
        "defaults:\n  - ../shared/envs@_here_\n  - ../group/opt@extra.sub\n"
        "max_tokens_per_step: 64\n"
        "custom_envs:\n  Game: ${custom_env.Game}\n"
        "label: 'run-${max_tokens_per_step}-x'\n"
        "home: ${oc.env:HOME}\n")
    loaded = load_roll_config(job)
    root, used = loaded.root, loaded.template_vars
    assert loaded.origins["custom_envs.Game"] == "custom_env.Game"
    # The file's own keys win over its defaults (Hydra puts _self_ last); the included
    # file's ${max_tokens_per_step} sees the merged value.
    assert root["custom_envs"]["Game"] == {"max_tokens_per_step": 64, "cap": 1000}
    assert root["extra"] == {"sub": {"value": 7}}
    assert root["label"] == "run-64-x"
    assert root["home"] == "${oc.env:HOME}"  # resolvers are left as written
    assert {"custom_env", "max_tokens_per_step", "seq"} <= used
    job.write_text("defaults:\n  - _self_\n  - ../shared/envs@_here_\nmax_tokens_per_step: 64\n")
    # _self_ first: the defaults win.
    assert load_roll_config(job).root["max_tokens_per_step"] == 128
    job.write_text("a: ${b}\nb: ${a}\n")
    with pytest.raises(ScenarioError, match="refers back to itself"):
        load_roll_config(job)
    job.write_text("defaults:\n  - main@_here_\n")
    with pytest.raises(ScenarioError, match="includes itself"):
        load_roll_config(job)


def test_device_mapping_reads_only_the_safe_forms() -> None:
    assert parse_device_mapping("list(range(0,8))", "k") == list(range(8))
    assert parse_device_mapping("list(range(0, 16, 2))", "k") == list(range(0, 16, 2))
    assert parse_device_mapping("[0, 1] + list(range(4,6))", "k") == [0, 1, 4, 5]
    assert parse_device_mapping([3, 4], "k") == [3, 4]
    for bad in ("range(0,8)", "list(range(n))", "[i for i in range(8)]", "eval('1')",
                "list(range(0,8), x=1)", "[0.5]", "[-1]", "list(range(-2, 2))", "True",
                "list(range(0, 1 << 40))", "list(range(0, 100000000))"):
        with pytest.raises(ScenarioError) as err:
            parse_device_mapping(bad, "actor_train.device_mapping")
        assert err.value.field == "actor_train.device_mapping", bad
    with pytest.raises(ScenarioError, match="no GPUs"):
        parse_device_mapping("[]", "k")


# --- --set: Hydra's overrides on the composed config, before interpolation ---

SC_INFER = "actor_infer.strategy_args.strategy_config"


def _hydra(value: Any) -> str:
    """A value as a Hydra override writes it (a string with a comma or call quoted)."""
    if isinstance(value, bool):
        return str(value).lower()
    text = str(value)
    return f"'{text}'" if isinstance(value, str) and any(c in text for c in ",()") else text


def test_defaults_of_names_the_pinned_commit_of_the_fixtures() -> None:
    imp = import_roll(RLVR_ASYNC, _facts(response_len_median=1200))
    assert imp.defaults_of == f"ROLL at {roll.ROLL}" == "ROLL at alibaba/ROLL@8eb27cc2"
    assert RLVR_ASYNC.read_text().startswith(f"# Copied from {roll.ROLL}")


@pytest.mark.parametrize(("key", "value", "field", "expected", "needs"), ROUND_TRIPS,
                         ids=[f"{c[0]}={c[1]}" for c in ROUND_TRIPS])
def test_rlvr_round_trip_by_set(tmp_path: Path, key: str, value: Any, field: str,
                                expected: Any, needs: dict[str, Any]) -> None:
    """Each mapped key given by `++key=value` reaches its field, whose source names it."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(_with(RLVR_BASE, needs)))
    word = f"++{key}={_hydra(value)}"
    imp = import_roll(path, _facts(), parse_sets([word]))
    assert _get(imp.scenario, field) == expected
    assert imp.sources[field].startswith(f"{key} (--set {word})")


def test_set_applies_before_interpolation() -> None:
    # max_tokens_per_step is a template variable of ../config/traj_envs.yaml: the env's
    # ${max_tokens_per_step} takes the --set value, and its source names both.
    imp = import_roll(WEBSHOP, _facts(response_len_median=60),
                      parse_sets(["max_tokens_per_step=64"]))
    assert imp.scenario["workload"]["max_response_len"] == 64
    assert imp.sources["workload.max_response_len"] == (
        "custom_envs.WebShopEnv.max_tokens_per_step (= ${max_tokens_per_step}) "
        "(--set max_tokens_per_step=64)")


def test_set_forms_follow_hydra() -> None:
    def imported(*words: str) -> Imported:
        return import_roll(RLVR_ASYNC, _facts(response_len_median=1200), parse_sets(words))

    imp = imported("async_generation_ratio=2")
    assert imp.scenario["policy"]["asynchronous"]["alpha"] == 2
    assert imp.sources["policy.asynchronous.alpha"] == \
        "async_generation_ratio (--set async_generation_ratio=2)"
    # ~ removes the key: ROLL's default (synchronous) applies, and the source says why.
    imp = imported("~async_generation_ratio")
    assert imp.scenario["policy"]["name"] == "sync"
    assert imp.sources["policy.name"].endswith(
        "(async_generation_ratio 0: synchronous) (--set ~async_generation_ratio)")
    # + adds a key the config lacks (init_kl_coef: ROLL's default 0.2 turned the
    # reference pass on).
    imp = imported("+init_kl_coef=0")
    assert imp.scenario["train"]["ref_logprob"] is False
    assert imp.sources["train.ref_logprob"].startswith("init_kl_coef (--set +init_kl_coef=0);")
    # A mapping merges into the config's key by key (load_format stays, listed unused).
    imp = imported(f"++{SC_INFER}={{mem_fraction_static: 0.7}}")
    assert imp.scenario["rollout"]["gpu_memory_utilization"] == 0.7
    assert any(key == f"{SC_INFER}.load_format" for key, _ in imp.ignored)
    # The engine the config names is the rollout section's source.
    assert imp.sections["rollout"].startswith("actor_infer.strategy_args.strategy_name: "
                                              "sglang engines")


@pytest.mark.parametrize(("word", "key", "text"), [
    ("rollout_batch_sise=1", "rollout_batch_sise",
     "not a ROLL config key; did you mean rollout_batch_size?"),
    ("init_kl_coef=0.1", "init_kl_coef", "the config does not have it, and Hydra's key=value "
     "overrides only keys it has: write +init_kl_coef=0.1 to add it"),
    ("+rollout_batch_size=1", "rollout_batch_size", "the config has it already (64)"),
    ("~nope", "nope", "nothing to remove"),
    ("~rollout_batch_size=63", "rollout_batch_size", "its value is 64, not 63"),
    ("rollout_batch_size=abc", "rollout_batch_size", "'abc' is not a whole number"),
    (f"~{SC_INFER}.mem_fraction_static", f"{SC_INFER}.mem_fraction_static",
     "ROLL's SGLang strategy reads it"),
    ("+rollout_batch_sise=1", "rollout_batch_sise", "did you mean rollout_batch_size?"),
])
def test_set_refusals_name_the_set(word: str, key: str, text: str) -> None:
    with pytest.raises(ScenarioError) as err:
        import_roll(RLVR_ASYNC, _facts(response_len_median=1200), parse_sets([word]))
    assert (err.value.field, err.value.source) == (key, f"--set {word}")
    assert text in err.value.message


def test_rlvr_sync_reads_the_rollout_scheduling(tmp_path: Path) -> None:
    # ROLL's default is the request scheduler (generate_opt_level 1, base_config.py)
    imp = _import_dict(tmp_path, RLVR_BASE)
    schedule = imp.scenario["policy"]["schedule"]
    assert schedule == {"queue_scheduling": True, "prompt_replication": False,
                        "use_additional_prompts": False}
    assert imp.sources["policy.schedule.queue_scheduling"].startswith("default: ")
    # level 0: batch generate; the other knobs belong to the scheduler
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {"generate_opt_level": 0}))
    assert imp.scenario["policy"]["schedule"] == {"queue_scheduling": False}
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {
        "is_num_return_sequences_expand": True, "is_use_additional_prompts": True,
        "max_additional_running_prompts": 8}))
    schedule = imp.scenario["policy"]["schedule"]
    assert (schedule["prompt_replication"], schedule["use_additional_prompts"],
            schedule["additional_prompts"]) == (True, True, 8)
    assert imp.sources["policy.schedule.additional_prompts"] == \
        "max_additional_running_prompts"
    Scenario.model_validate(imp.scenario)


def test_a_query_filter_is_read_and_its_share_left_to_the_user(tmp_path: Path) -> None:
    config = _with(RLVR_BASE, {"rewards.math.worker_cls": "x.MathRuleRewardWorker",
                               "rewards.math.query_filter_config.type": "std_filter"})
    imp = _import_dict(tmp_path, config)
    assert imp.scenario["policy"]["schedule"]["zero_variance_fraction"] == 0.0
    assert "not in the config" in imp.sources["policy.schedule.zero_variance_fraction"]
    assert "query_filter_config" in imp.scenario["description"]
    bad = _with(config, {"rewards.math.query_filter_config.type": "top_filter"})
    with pytest.raises(ScenarioError) as err:
        _import_dict(tmp_path, bad)
    assert err.value.field == "rewards.math.query_filter_config.type"
    with pytest.raises(ScenarioError) as err:
        _import_dict(tmp_path, _with(RLVR_BASE, {"generate_opt_level": 2}))
    assert err.value.field == "generate_opt_level"


def test_bare_flex_dispatcher_is_megatron_default_deepep(tmp_path: Path) -> None:
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {f"{SC}.moe_token_dispatcher_type": "flex"}))
    assert imp.scenario["train"]["moe_dispatcher"] == "deepep"
    assert "default deepep" in imp.sources["train.moe_dispatcher"]
    with pytest.raises(ScenarioError, match="use deepep or hybridep"):
        _import_dict(tmp_path, _with(RLVR_BASE, {f"{SC}.moe_token_dispatcher_type": "flex",
                                                 f"{SC}.moe_flex_dispatcher_backend": "ncclep"}))


def test_cpu_optimizer_needs_optimizer_cpu_offload(tmp_path: Path) -> None:
    # Megatron-Core builds its hybrid optimizer only under optimizer_cpu_offload, and its
    # default fraction is 0: either key alone puts nothing on the CPU.
    for keys in ({f"{SC}.optimizer_offload_fraction": 1.0},
                 {f"{SC}.optimizer_cpu_offload": True}):
        imp = _import_dict(tmp_path, _with(RLVR_BASE, keys))
        assert "optimizer_offload_fraction" not in imp.scenario["train"]
        assert set(keys) <= {key for key, _ in imp.ignored}  # listed as not used, with why
    with pytest.raises(ScenarioError, match=r"in \[0, 1\]") as err:
        _import_dict(tmp_path, _with(RLVR_BASE, {f"{SC}.optimizer_cpu_offload": True,
                                                 f"{SC}.optimizer_offload_fraction": 2.0}))
    assert err.value.field == f"{SC}.optimizer_offload_fraction"


def test_overlap_key_is_listed_as_not_passed_on(tmp_path: Path) -> None:
    imp = _import_dict(tmp_path, _with(RLVR_BASE, {
        f"{SC}.optimizer_cpu_offload": True, f"{SC}.optimizer_offload_fraction": 1.0,
        f"{SC}.overlap_cpu_optimizer_d2h_h2d": True}))
    assert imp.scenario["train"]["optimizer_offload_fraction"] == 1.0
    why = dict(imp.ignored)[f"{SC}.overlap_cpu_optimizer_d2h_h2d"]
    assert "does not hand it to Megatron-Core" in why
