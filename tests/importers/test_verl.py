"""`rlsim import verl`: veRL launch scripts and Hydra YAMLs to scenarios that run.

Fixtures in tests/data/importers/verl/ are copies of public veRL files, each naming its
source repository, commit and path on its first line.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import load_scenario, scenario_from_dict
from rlsim.config.scenario import Scenario
from rlsim.importers.base import Facts, Imported, check_runs, to_yaml, write_atomic
from rlsim.importers.overrides import parse_sets
from rlsim.importers.shell import hydra_value, parse_launch_script
from rlsim.importers.verl import (
    _DEFAULTS,
    _MEGATRON_VALUES,
    _ONE_OFF,
    DAPO_TRACE_SIGMA,
    import_verl,
)
from tests.cli.test_bad_input import run_cli as _cli

DATA = Path(__file__).resolve().parent.parent / "data" / "importers" / "verl"
REPO = Path(__file__).resolve().parents[2]
FACTS = Facts(gpu="H100", response_len_median=300)


def _cited(imp: Imported, key: str) -> bool:
    """Whether some field's (or section's) source names `key` (alone, or with its default
    or a note)."""
    pattern = re.compile(rf"(^|[ (]){re.escape(key)}($|[ :)])")
    return any(pattern.search(s) for s in [*imp.sources.values(), *imp.sections.values()])


def _field(imp: Imported, path: str) -> Any:
    node: Any = imp.scenario
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _run(imp: Imported, tmp_path: Path, steps: int = 2) -> dict[str, Any]:
    """Write the scenario as `rlsim import` does, load it back and simulate `steps` steps."""
    Scenario.model_validate(imp.scenario)
    path = tmp_path / "imported.yaml"
    write_atomic(path, to_yaml(imp, "test"))
    scenario, base = load_scenario(path, [f"steps={steps}"])
    result = simulate(scenario, base)
    assert result.summary["steps"] == steps
    return result.summary


# --- the must-show imports ----------------------------------------------------------------

def test_gsm8k_grpo_quickstart_imports_and_runs(tmp_path: Path) -> None:
    # veRL's GRPO reference example (docs/algo/grpo.md: bash examples/grpo_trainer/
    # run_qwen3-8b.sh), GSM8K, one node of 8 GPUs.
    imp = import_verl(DATA / "run_qwen3-8b.sh", FACTS)
    got = {f: _field(imp, f) for f in (
        "model", "workload.prompts_per_step", "workload.samples_per_prompt",
        "workload.max_prompt_len", "workload.max_response_len", "rollout.tp",
        "rollout.gpu_memory_utilization", "train.backend", "train.ppo_mini_batch_size",
        "train.micro_batch_size_per_gpu", "train.log_prob_micro_batch_size_per_gpu",
        "train.ref_logprob", "train.critic", "train.recompute", "policy.name",
        "policy.placement", "pools.0.nodes", "pools.0.gpus_per_node", "pools.0.gpu")}
    assert got == {
        "model": "qwen3-8b", "workload.prompts_per_step": 1024,
        "workload.samples_per_prompt": 5, "workload.max_prompt_len": 512,
        "workload.max_response_len": 1024, "rollout.tp": 2,
        "rollout.gpu_memory_utilization": 0.6, "train.backend": "fsdp",
        "train.ppo_mini_batch_size": 256, "train.micro_batch_size_per_gpu": 32,
        "train.log_prob_micro_batch_size_per_gpu": 32, "train.ref_logprob": True,
        "train.critic": False, "train.recompute": "full", "policy.name": "sync",
        "policy.placement": "colocated", "pools.0.nodes": 1, "pools.0.gpus_per_node": 8,
        "pools.0.gpu": "H100"}
    assert imp.sources["workload.prompts_per_step"] == "data.train_batch_size"
    assert imp.sources["rollout.max_running_seqs"].startswith(
        "actor_rollout_ref.rollout.max_num_seqs (default: verl@")
    ignored = dict(imp.ignored)
    assert "trainer.total_epochs" in ignored and "data.train_files" in ignored
    # trainer.save_freq=20: a trainer fault restarts from the last save
    assert _field(imp, "recovery.trainer.checkpoint_every") == 20
    summary = _run(imp, tmp_path)
    assert summary["step_time_s"]["mean"] > 0


def test_dapo_recipe_imports_and_runs(tmp_path: Path) -> None:
    # DAPO's Qwen2.5-32B recipe (verl-recipe dapo/run_dapo_qwen2.5_32b.sh): 16 nodes of 8
    # H800 in its reproduction table; `ray job submit ... -- python3 -m recipe.dapo.main_dapo`.
    imp = import_verl(DATA / "run_dapo_qwen2.5_32b.sh",
                      Facts(gpu="H800", response_len_median=420))
    s = imp.scenario
    assert s["model"] == "qwen2.5-32b"  # ${RAY_DATA_HOME}/models/Qwen2.5-32B
    assert (s["pools"][0]["nodes"], s["pools"][0]["gpus_per_node"]) == (16, 8)
    assert s["workload"]["prompts_per_step"] == 512
    assert s["workload"]["samples_per_prompt"] == 16
    assert s["workload"]["max_prompt_len"] == 2048            # $((1024 * 2))
    assert s["workload"]["max_response_len"] == 20480         # $((1024 * 20))
    assert s["rollout"]["max_batched_tokens"] == 22528       # prompt + response
    assert s["train"]["cp"] == 8                               # sp_size
    assert s["train"]["max_token_len_per_gpu"] == 22528
    assert "micro_batch_size_per_gpu" not in s["train"]        # use_dynamic_bsz
    assert s["train"]["param_offload"] and s["train"]["optimizer_offload"]
    assert s["train"]["ref_logprob"] is False                  # no KL
    # dynamic sampling (enable_filter_groups=True, gen_prompt_bsz=$((train_prompt_bsz * 3))):
    # rounds of 1,536 prompts; the filtered share is not in the config (0 until set)
    assert s["policy"] == {"name": "sync", "placement": "colocated",
                           "schedule": {"gen_batch_prompts": 1536,
                                        "zero_variance_fraction": 0.0}}
    assert imp.sources["policy.schedule.gen_batch_prompts"].startswith("data.gen_batch_size")
    assert "not in the config" in imp.sources["policy.schedule.zero_variance_fraction"]
    assert imp.sources["pools.0.nodes"] == "trainer.nnodes"    # NNODES=${NNODES:-16}
    assert imp.sources["workload.response_len.sigma"].startswith("default: log-sigma")
    ignored = dict(imp.ignored)
    assert "data.gen_batch_size" not in ignored
    assert "algorithm.filter_groups.enable" not in ignored
    assert "zero_variance_fraction" in s["description"]
    summary = _run(imp, tmp_path, steps=1)
    assert summary["step_time_s"]["mean"] > 0


def test_dapo_without_group_filtering_trains_the_whole_generated_batch() -> None:
    from rlsim.importers.overrides import parse_sets

    # veRL's dataloader yields data.gen_batch_size prompts; without filter_groups the DAPO
    # trainer trains all of them (batch = new_batch)
    imp = import_verl(DATA / "run_dapo_qwen2.5_32b.sh",
                      Facts(gpu="H800", response_len_median=420),
                      parse_sets(["algorithm.filter_groups.enable=False"]))
    s = imp.scenario
    assert s["workload"]["prompts_per_step"] == 1536
    assert "schedule" not in s["policy"]
    assert imp.sources["workload.prompts_per_step"].startswith("data.gen_batch_size")
    assert "dynamic sampling" not in s["description"]


def test_one_step_off_recipe_is_one_off_on_two_pools(tmp_path: Path) -> None:
    # veRL's one-step-off recipe, 4 rollout + 12 training GPUs on 2 nodes (README's run).
    imp = import_verl(DATA / "dapo_7b_math_fsdp2_4_12.sh",
                      Facts(gpu="H20", response_len_median=420, model="qwen2.5-7b"))
    s = imp.scenario
    assert s["policy"] == {"name": "one_off", "placement": "disaggregated"}
    assert [(p["name"], p["nodes"], p["gpus_per_node"]) for p in s["pools"]] == [
        ("rollout", 2, 2), ("train", 2, 6)]
    assert imp.sources["pools.0.gpus_per_node"] == "rollout.n_gpus_per_node"
    assert imp.sources["pools.1.gpus_per_node"] == "trainer.n_gpus_per_node"
    assert s["train"]["backend"] == "fsdp2"
    # one_step_off_ppo_trainer.yaml: bypass_mode True, the engine's log-probs are used.
    assert s["train"]["old_logprob"] is False
    assert "one_step_off_ppo_trainer.yaml:28" in imp.sources["train.old_logprob"]
    assert s["weight_sync"]["scheme"] == "broadcast"
    assert _run(imp, tmp_path, steps=3)["step_time_s"]["mean"] > 0


def test_override_config_context_makes_an_inline_model(tmp_path: Path) -> None:
    """veRL's DAPO recipes raise Qwen2.5-Math-7B's 4,096-token context with
    +actor_rollout_ref.model.override_config.max_position_embeddings=32768."""
    imp = import_verl(DATA / "dapo_7b_math_fsdp2_4_12.sh",
                      Facts(gpu="H20", response_len_median=420))
    model = imp.scenario["model"]
    assert isinstance(model, dict)
    assert model["name"] == "qwen2.5-math-7b" and model["max_context"] == 32768
    assert imp.sources["model"].endswith(
        "max_context from actor_rollout_ref.model.override_config.max_position_embeddings")
    assert _run(imp, tmp_path, steps=2)["step_time_s"]["mean"] > 0


def test_megatron_script_reads_the_megatron_defaults() -> None:
    imp = import_verl(DATA / "run_qwen2-7b_math_megatron.sh",
                      Facts(gpu="H800", response_len_median=500, model="qwen2.5-7b"))
    t = imp.scenario["train"]
    assert (t["backend"], t["tp"], t["pp"], t["cp"], t["recompute"]) == (
        "megatron", 2, 2, 1, "none")
    assert "_generated_ppo_megatron_trainer.yaml:62" in imp.sources["train.backend"]
    assert imp.sources["train.tp"] == "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"


def test_cli_import_then_run(tmp_path: Path) -> None:
    out = tmp_path / "q8.yaml"
    cmd = [sys.executable, "-m", "rlsim.cli", "import", "verl", str(DATA / "run_qwen3-8b.sh"),
           "--gpu", "H100", "--response-len-median", "300", "--steps", "2", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "  # data.train_batch_size" in text and "# Not used:" in text
    run = subprocess.run([sys.executable, "-m", "rlsim.cli", "run", str(out), "--json"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert run.returncode == 0, run.stderr
    no_gpu = [sys.executable, "-m", "rlsim.cli", "import", "verl",
              str(DATA / "run_qwen3-8b.sh"), "--response-len-median", "300",
              "--out", str(tmp_path / "x.yaml")]
    bad = subprocess.run(no_gpu, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "rlsim: error: --gpu: the config does not say the GPU type; pass --gpu"]


# --- round trips: a key set to a value gives the field that value, citing the key ----------

_R = "actor_rollout_ref.rollout."
_A = "actor_rollout_ref.actor."
_M = _A + "megatron."
# A small consistent job on one node of 8 GPUs (mini-batch 16 x 4 over 8 ranks = 8 samples,
# a multiple of the micro-batch 4; veRL's checks pass).
BASE: dict[str, Any] = {
    "actor_rollout_ref.model.path": "Qwen/Qwen2.5-7B-Instruct",
    _R + "name": "vllm",
    "data.train_batch_size": 64,
    _R + "n": 4,
    _A + "ppo_mini_batch_size": 16,
    _A + "ppo_micro_batch_size_per_gpu": 4,
    _R + "log_prob_micro_batch_size_per_gpu": 8,
}
MOE = Facts(gpu="H100", response_len_median=300, model="qwen3-30b-a3b")

# (overrides, scenario field, expected value, source key, megatron flavour, facts)
ROUND_TRIPS: list[tuple[dict[str, Any], str, Any, str, bool, Facts]] = [
    ({"data.train_batch_size": 128}, "workload.prompts_per_step", 128,
     "data.train_batch_size", False, FACTS),
    ({_R + "n": 8}, "workload.samples_per_prompt", 8, _R + "n", False, FACTS),
    ({"data.max_prompt_length": 1024}, "workload.max_prompt_len", 1024,
     "data.max_prompt_length", False, FACTS),
    ({"data.max_response_length": 4096}, "workload.max_response_len", 4096,
     "data.max_response_length", False, FACTS),
    ({_R + "response_length": 2048}, "workload.max_response_len", 2048,
     _R + "response_length", False, FACTS),
    ({_R + "ignore_eos": True, "data.max_response_length": 3000},
     "workload.response_len.value", 3000, _R + "ignore_eos", False, FACTS),
    ({_R + "tensor_model_parallel_size": 4}, "rollout.tp", 4,
     _R + "tensor_model_parallel_size", False, FACTS),
    ({_R + "pipeline_model_parallel_size": 2}, "rollout.pp", 2,
     _R + "pipeline_model_parallel_size", False, FACTS),
    ({_R + "expert_parallel_size": 2}, "rollout.ep", 2, _R + "expert_parallel_size",
     False, MOE),
    ({_R + "gpu_memory_utilization": 0.7}, "rollout.gpu_memory_utilization", 0.7,
     _R + "gpu_memory_utilization", False, FACTS),
    ({_R + "max_num_seqs": 512}, "rollout.max_running_seqs", 512, _R + "max_num_seqs",
     False, FACTS),
    ({_R + "max_num_batched_tokens": 16384}, "rollout.max_batched_tokens", 16384,
     _R + "max_num_batched_tokens", False, FACTS),
    ({_R + "enforce_eager": True}, "rollout.cuda_graphs", False, _R + "enforce_eager",
     False, FACTS),
    ({_R + "enable_prefix_caching": False}, "rollout.prefix_caching", False,
     _R + "enable_prefix_caching", False, FACTS),
    ({_R + "dtype": "float16"}, "rollout.dtype", "bf16", _R + "dtype", False, FACTS),
    ({_R + "quantization": "fp8"}, "rollout.dtype", "fp8", _R + "quantization", False,
     FACTS),
    ({_R + "free_cache_engine": True}, "weight_sync.engine_sleep_level", 2,
     _R + "free_cache_engine", False, FACTS),
    ({_R + "checkpoint_engine.update_weights_bucket_megabytes": 512},
     "weight_sync.bucket_size", 512 * 2**20,
     _R + "checkpoint_engine.update_weights_bucket_megabytes", False, FACTS),
    ({_A + "strategy": "fsdp2"}, "train.backend", "fsdp2", _A + "strategy", False, FACTS),
    ({_A + "ulysses_sequence_parallel_size": 2}, "train.cp", 2,
     _A + "ulysses_sequence_parallel_size", False, FACTS),
    ({_A + "ppo_mini_batch_size": 32}, "train.ppo_mini_batch_size", 32,
     _A + "ppo_mini_batch_size", False, FACTS),
    ({_A + "ppo_epochs": 2}, "train.ppo_epochs", 2, _A + "ppo_epochs", False, FACTS),
    ({_A + "ppo_micro_batch_size_per_gpu": 2}, "train.micro_batch_size_per_gpu", 2,
     _A + "ppo_micro_batch_size_per_gpu", False, FACTS),
    ({_A + "use_dynamic_bsz": True, _A + "ppo_max_token_len_per_gpu": 12000},
     "train.max_token_len_per_gpu", 12000, _A + "ppo_max_token_len_per_gpu", False, FACTS),
    ({_R + "log_prob_micro_batch_size_per_gpu": 16},
     "train.log_prob_micro_batch_size_per_gpu", 16,
     _R + "log_prob_micro_batch_size_per_gpu", False, FACTS),
    ({_R + "log_prob_use_dynamic_bsz": True, _R + "log_prob_max_token_len_per_gpu": 30000},
     "train.log_prob_max_token_len_per_gpu", 30000, _R + "log_prob_max_token_len_per_gpu",
     False, FACTS),
    ({"actor_rollout_ref.model.enable_gradient_checkpointing": False}, "train.recompute",
     "none", "actor_rollout_ref.model.enable_gradient_checkpointing", False, FACTS),
    ({_A + "fsdp_config.param_offload": True}, "train.param_offload", True,
     _A + "fsdp_config.param_offload", False, FACTS),
    ({_A + "fsdp_config.optimizer_offload": True}, "train.optimizer_offload", True,
     _A + "fsdp_config.optimizer_offload", False, FACTS),
    ({_A + "fsdp_config.fsdp_size": 2, _A + "strategy": "fsdp2"}, "train.fsdp_size", 2,
     _A + "fsdp_config.fsdp_size", False, FACTS),
    ({_A + "use_kl_loss": True}, "train.ref_logprob", True, _A + "use_kl_loss", False,
     FACTS),
    ({"algorithm.use_kl_in_reward": True}, "train.ref_logprob", True,
     "algorithm.use_kl_in_reward", False, FACTS),
    ({"algorithm.rollout_correction.bypass_mode": True}, "train.old_logprob", False,
     "algorithm.rollout_correction.bypass_mode", False, FACTS),
    ({"algorithm.adv_estimator": "gae"}, "train.critic", True, "algorithm.adv_estimator",
     False, FACTS),
    ({"algorithm.adv_estimator": "grpo", "critic.enable": True}, "train.critic", True,
     "critic.enable", False, FACTS),
    ({"trainer.nnodes": 2}, "pools.0.nodes", 2, "trainer.nnodes", False, FACTS),
    ({"trainer.n_gpus_per_node": 4, _A + "ppo_micro_batch_size_per_gpu": 2},
     "pools.0.gpus_per_node", 4, "trainer.n_gpus_per_node", False, FACTS),
    ({"actor_rollout_ref.model.path": "/ckpt/Qwen3-8B"}, "model", "qwen3-8b",
     "actor_rollout_ref.model.path", False, FACTS),
    # The megatron flavour (--config-name=ppo_megatron_trainer).
    ({_M + "tensor_model_parallel_size": 2}, "train.tp", 2, _M + "tensor_model_parallel_size",
     True, FACTS),
    ({_M + "pipeline_model_parallel_size": 2}, "train.pp", 2,
     _M + "pipeline_model_parallel_size", True, FACTS),
    ({_M + "context_parallel_size": 2}, "train.cp", 2, _M + "context_parallel_size", True,
     FACTS),
    ({_M + "expert_model_parallel_size": 2, _M + "pipeline_model_parallel_size": 4},
     "train.ep", 2, _M + "expert_model_parallel_size", True, MOE),
    ({_M + "param_offload": True}, "train.param_offload", True, _M + "param_offload", True,
     FACTS),
    ({_M + "grad_offload": True}, "train.grad_offload", True, _M + "grad_offload", True,
     FACTS),
    ({_M + "optimizer_offload": True}, "train.optimizer_offload", True,
     _M + "optimizer_offload", True, FACTS),
    ({_M + "override_transformer_config.recompute_granularity": "selective"},
     "train.recompute", "selective", _M + "override_transformer_config.recompute_granularity",
     True, FACTS),
    ({_A + "strategy": "megatron"}, "train.backend", "megatron", _A + "strategy", True, FACTS),
    ({"trainer.save_freq": 5}, "recovery.trainer.checkpoint_every", 5, "trainer.save_freq",
     False, FACTS),
    ({_M + "override_transformer_config.moe_token_dispatcher_type": "alltoall"},
     "train.moe_dispatcher", "alltoall",
     _M + "override_transformer_config.moe_token_dispatcher_type", True, FACTS),
    ({_M + "override_transformer_config.moe_token_dispatcher_type": "flex",
      _M + "override_transformer_config.moe_enable_deepep": True},
     "train.moe_dispatcher", "deepep",
     _M + "override_transformer_config.moe_token_dispatcher_type", True, FACTS),
]


def _script(tmp_path: Path, keys: dict[str, Any], megatron: bool = False,
            module: str = "verl.trainer.main_ppo") -> Path:
    args = ["--config-name=ppo_megatron_trainer"] if megatron else []
    for key, value in keys.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        args.append(f"{key}={text}")
    body = " \\\n    ".join([f"python3 -m {module}", *args])
    path = tmp_path / "job.sh"
    path.write_text(f"set -x\n{body} $@\n")
    return path


def _yaml(tmp_path: Path, keys: dict[str, Any], megatron: bool = False) -> Path:
    nested: dict[str, Any] = {}
    if megatron:
        nested["defaults"] = ["ppo_megatron_trainer", "_self_"]
    for key, value in keys.items():
        node = nested
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(nested, sort_keys=False))
    return path


@pytest.mark.parametrize("form", ["script", "yaml"])
@pytest.mark.parametrize(("keys", "field", "value", "source", "megatron", "facts"), ROUND_TRIPS,
                         ids=[f"{c[3]}->{c[1]}" for c in ROUND_TRIPS])
def test_round_trip(tmp_path: Path, form: str, keys: dict[str, Any], field: str, value: Any,
                    source: str, megatron: bool, facts: Facts) -> None:
    config = {**BASE, **keys}
    write = _script if form == "script" else _yaml
    imp = import_verl(write(tmp_path, config, megatron), facts)
    assert _field(imp, field) == value
    assert imp.sources[field] == source
    scenario_from_dict(imp.scenario)  # validates, placement included


def test_deprecated_global_micro_batch_is_divided_over_the_ranks(tmp_path: Path) -> None:
    keys = {**BASE, _A + "ppo_micro_batch_size": 16, _A + "ppo_micro_batch_size_per_gpu": None}
    imp = import_verl(_yaml(tmp_path, keys), FACTS)
    assert imp.scenario["train"]["micro_batch_size_per_gpu"] == 2  # 16 over 8 ranks
    assert imp.sources["train.micro_batch_size_per_gpu"].startswith(_A + "ppo_micro_batch_size")


_RMPAD = "actor_rollout_ref.model.use_remove_padding"


def test_without_remove_padding_every_sample_is_padded_to_the_batch_width(
        tmp_path: Path) -> None:
    # veRL's FSDP workers without use_remove_padding run each micro-batch as the padded
    # [n, max_prompt_length + response_length] tensor (dp_actor.py _forward_micro_batch).
    caps = {"data.max_prompt_length": 512, "data.max_response_length": 1024}
    padded = import_verl(_yaml(tmp_path, {**BASE, **caps, _RMPAD: False}), FACTS)
    assert padded.scenario["train"]["pad_to"] == 512 + 1024
    assert padded.sources["train.pad_to"].startswith(_RMPAD)
    packed = import_verl(_yaml(tmp_path, {**BASE, **caps, _RMPAD: True}), FACTS)
    assert "pad_to" not in packed.scenario["train"]
    assert "v0.6" not in packed.scenario["description"]
    # Unset: veRL at the pinned commit packs, and the description says older versions padded.
    unset = import_verl(_yaml(tmp_path, {**BASE, **caps}), FACTS)
    assert "pad_to" not in unset.scenario["train"]
    assert f"--set {_RMPAD}=false" in unset.scenario["description"]
    # The pads cost like tokens: the padded job trains longer than the packed one.
    runs = [simulate(*scenario_from_dict({**imp.scenario, "steps": 2}))
            for imp in (packed, padded)]
    train = [r.summary["phase_time_s"]["train"] for r in runs]
    assert train[1] > 1.5 * train[0], train


def test_megatron_workers_do_not_read_the_models_remove_padding(tmp_path: Path) -> None:
    imp = import_verl(_yaml(tmp_path, {**BASE, _RMPAD: False}, megatron=True), FACTS)
    assert "pad_to" not in imp.scenario["train"]
    assert any(key == _RMPAD and "Megatron" in why for key, why in imp.ignored)


def test_flags_override_the_config_and_name_themselves(tmp_path: Path) -> None:
    keys = {**BASE, "trainer.nnodes": 2, _A + "ppo_micro_batch_size_per_gpu": 1}
    imp = import_verl(_script(tmp_path, keys),
                      Facts(gpu="H800", nodes=4, response_len_median=700,
                            response_len_sigma=0.5, prompt_len_median=200, steps=3,
                            name="mine"))
    s = imp.scenario
    assert (s["pools"][0]["nodes"], imp.sources["pools.0.nodes"]) == (4, "--nodes")
    assert s["workload"]["response_len"] == {"dist": "lognormal", "median": 700, "sigma": 0.5}
    assert imp.sources["workload.response_len.sigma"] == "--response-len-sigma"
    assert s["workload"]["prompt_len"]["median"] == 200
    assert (s["steps"], s["name"]) == (3, "mine")
    assert dict(imp.ignored)["trainer.nnodes"] == "replaced by --nodes"


def test_one_step_off_rollout_pool_round_trips(tmp_path: Path) -> None:
    keys = {**BASE, "rollout.nnodes": 1, "rollout.n_gpus_per_node": 4,
            "trainer.n_gpus_per_node": 4, "actor_rollout_ref.hybrid_engine": False}
    module = "verl.experimental.one_step_off_policy.main_ppo"
    imp = import_verl(_script(tmp_path, keys, module=module), FACTS)
    assert imp.scenario["pools"][0] == {"name": "rollout", "gpu": "H100", "nodes": 1,
                                       "gpus_per_node": 4}
    assert imp.sources["pools.0.gpus_per_node"] == "rollout.n_gpus_per_node"
    assert imp.sources["pools.0.nodes"] == "rollout.nnodes"
    # The same job as a YAML: its top-level `rollout` section marks the recipe.
    imp2 = import_verl(_yaml(tmp_path, keys), FACTS)
    assert imp2.scenario["policy"]["name"] == "one_off"


def test_every_config_key_set_is_a_source_or_listed_with_why(tmp_path: Path) -> None:
    imp = import_verl(DATA / "run_dapo_qwen2.5_32b.sh", Facts(gpu="H800",
                                                               response_len_median=420))
    script = parse_launch_script(DATA / "run_dapo_qwen2.5_32b.sh")
    ignored = dict(imp.ignored)
    for key in script.overrides:
        assert _cited(imp, key) or ignored.get(key), key
    assert all(why for why in ignored.values())


# --- veRL's defaults, as cited --------------------------------------------------------------

def _leaves(text: str) -> dict[str, tuple[int, Any]]:
    """key -> (line, value) of a YAML file's leaves."""
    out: dict[str, tuple[int, Any]] = {}

    def walk(node: yaml.Node, prefix: str) -> None:
        for k, v in node.value:
            key = prefix + k.value
            if isinstance(v, yaml.MappingNode) and v.value:
                walk(v, key + ".")
            else:
                out[key] = (k.start_mark.line + 1, yaml.safe_load(yaml.serialize(v)))

    root = yaml.compose(text)
    assert root is not None
    walk(root, "")
    return out


@pytest.mark.parametrize(("fixture", "col"), [("_generated_ppo_trainer.yaml", 1),
                                              ("_generated_ppo_megatron_trainer.yaml", 2)])
def test_defaults_table_matches_verl_files(fixture: str, col: int) -> None:
    leaves = _leaves((DATA / fixture).read_text())
    for key, entry in _DEFAULTS.items():
        line = entry[col]
        if line is None:
            assert key not in leaves, key
            continue
        value = _MEGATRON_VALUES.get(key, entry[0]) if col == 2 else entry[0]
        # The fixture's first line names its source: veRL's line N is the fixture's N + 1.
        assert leaves[key] == (line + 1, value), key


def test_one_step_off_defaults_match_its_config() -> None:
    leaves = _leaves((DATA / "one_step_off_ppo_trainer.yaml").read_text())
    for key, (value, cite) in _ONE_OFF.overlay.items():
        line = int(cite.rsplit(":", 1)[1])
        assert leaves[key] == (line + 1, value), key


@pytest.mark.parametrize("fixture", ["_generated_ppo_trainer.yaml",
                                     "_generated_ppo_megatron_trainer.yaml"])
def test_a_whole_composed_config_imports(tmp_path: Path, fixture: str) -> None:
    # Every key of veRL's full config is mapped or listed with why (none is unknown).
    data = yaml.safe_load((DATA / fixture).read_text())
    data["actor_rollout_ref"]["rollout"]["name"] = "vllm"          # ??? in the file
    data["actor_rollout_ref"]["actor"]["ppo_micro_batch_size_per_gpu"] = 4
    data["actor_rollout_ref"]["rollout"]["log_prob_micro_batch_size_per_gpu"] = 4
    if "megatron" in fixture:
        data["defaults"] = ["ppo_megatron_trainer"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    imp = import_verl(path, Facts(gpu="H100", response_len_median=300, model="qwen2.5-7b"))
    assert imp.scenario["train"]["backend"] == ("megatron" if "megatron" in fixture else "fsdp")
    assert imp.scenario["train"]["critic"] is True                 # adv_estimator: gae
    leaves = _leaves(path.read_text())
    ignored = dict(imp.ignored)
    missing = [k for k in leaves if not _cited(imp, k) and k not in ignored]
    assert missing == []


def test_dapo_trace_sigma_is_the_traces() -> None:
    translate = pytest.importorskip("calibration.realruns.translate")
    _, sigma = translate.dapo_lognormal()
    assert math.isclose(sigma, DAPO_TRACE_SIGMA, abs_tol=5e-7)


# --- bad input: one error naming the key, flag or line ------------------------------------

def test_truncated_script_inside_a_quote_names_its_line(tmp_path: Path) -> None:
    text = (DATA / "run_dapo_qwen2.5_32b.sh").read_text()
    cut = text.index("trainer.logger='[\"console\"") + len("trainer.logger='[\"con")
    path = tmp_path / "cut.sh"
    path.write_text(text[:cut])
    line = text[:cut].count("\n") + 1
    with pytest.raises(ScenarioError) as err:
        import_verl(path, FACTS)
    assert err.value.field == f"{path}:{line}"
    assert "unterminated ' quote" in err.value.message


def test_truncated_script_inside_a_key_names_its_line(tmp_path: Path) -> None:
    text = (DATA / "run_qwen3-8b.sh").read_text()
    cut = text.index("actor_rollout_ref.rollout.gpu_memory_utilization") + 29
    path = tmp_path / "cut.sh"
    path.write_text(text[:cut])
    with pytest.raises(ScenarioError) as err:
        import_verl(path, FACTS)
    assert err.value.field == f"{path}:{text[:cut].count(chr(10)) + 1}"
    assert err.value.message.startswith("'actor_rollout_ref.rollout.gpu' is not a Hydra "
                                        "override")


def test_truncated_value_of_an_unknown_key_names_the_key(tmp_path: Path) -> None:
    path = _script(tmp_path, {**BASE, "actor_rollout_ref.rollout.gpu_mem": 0})
    with pytest.raises(ScenarioError) as err:
        import_verl(path, FACTS)
    assert err.value.field == "actor_rollout_ref.rollout.gpu_mem"
    assert "not a veRL config key" in err.value.message


def test_script_without_the_trainer_command(tmp_path: Path) -> None:
    text = (DATA / "run_dapo_qwen2.5_32b.sh").read_text()
    path = tmp_path / "cut.sh"
    path.write_text(text[:text.index("ray job submit")])
    with pytest.raises(ScenarioError, match="no veRL trainer command"):
        import_verl(path, FACTS)


def test_non_numeric_value_names_key_and_line(tmp_path: Path) -> None:
    path = _script(tmp_path, {**BASE, "data.train_batch_size": "lots"})
    with pytest.raises(ScenarioError) as err:
        import_verl(path, FACTS)
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1)
                if "train_batch_size" in t)
    assert err.value.line() == (f"{path}:{line}: data.train_batch_size: 'lots' is not a "
                                "whole number")


def test_unknown_model_names_the_model_key() -> None:
    # veRL's GSM8K GRPO example of deepseek-llm-7b-chat, a model not in rlsim's catalogue.
    with pytest.raises(ScenarioError) as err:
        import_verl(DATA / "run_deepseek7b_llm.sh", FACTS)
    assert err.value.field == "actor_rollout_ref.model.path"
    assert err.value.source == f"{DATA / 'run_deepseek7b_llm.sh'}:13"
    assert "--model" in err.value.message


@pytest.mark.parametrize(("facts", "flag"), [
    (Facts(response_len_median=300), "--gpu"),
    (Facts(gpu="H100"), "--response-len-median"),
    (Facts(gpu="Z9000", response_len_median=300), "--gpu"),
])
def test_missing_or_bad_facts_name_their_flag(facts: Facts, flag: str) -> None:
    with pytest.raises(ScenarioError) as err:
        import_verl(DATA / "run_qwen3-8b.sh", facts)
    assert err.value.field == flag


def test_unset_environment_variable_asks_for_the_flag(tmp_path: Path) -> None:
    path = _script(tmp_path, {**BASE, "trainer.nnodes": "$NNODES"})
    with pytest.raises(ScenarioError) as err:
        import_verl(path, FACTS)
    assert err.value.field == "--nodes" and "$NNODES" in err.value.message
    imp = import_verl(path, Facts(gpu="H100", nodes=2, response_len_median=300))
    assert imp.scenario["pools"][0]["nodes"] == 2


@pytest.mark.parametrize(("keys", "key", "text"), [
    ({_A + "ppo_mini_batch_size": 128, "data.train_batch_size": 64},
     _A + "ppo_mini_batch_size", "larger than data.train_batch_size"),
    ({_R + "tensor_model_parallel_size": 3}, _R + "tensor_model_parallel_size",
     "does not divide the 8 rollout GPUs"),
    ({_A + "ulysses_sequence_parallel_size": 3}, _A + "ulysses_sequence_parallel_size",
     "does not divide the 8 training GPUs"),
    ({_A + "ppo_micro_batch_size_per_gpu": 3}, _A + "ppo_micro_batch_size_per_gpu",
     "does not divide the 8 samples"),
    ({_A + "ppo_micro_batch_size_per_gpu": None}, _A + "ppo_micro_batch_size_per_gpu",
     "use_dynamic_bsz"),
    ({_R + "name": "hf"}, _R + "name", "vLLM and SGLang"),
    ({_R + "tensor_parallel_size": 2}, _R + "tensor_parallel_size", "not a veRL config key"),
    ({_R + "gpu_memory_utilization": 1.5}, _R + "gpu_memory_utilization", "(0, 1]"),
    ({_R + "multi_turn.enable": True}, _R + "multi_turn.enable", "multi-turn"),
])
def test_a_config_that_contradicts_itself_is_refused(tmp_path: Path, keys: dict[str, Any],
                                                     key: str, text: str) -> None:
    with pytest.raises(ScenarioError) as err:
        import_verl(_yaml(tmp_path, {**BASE, **keys}), FACTS)
    assert err.value.field == key
    assert text in err.value.message
    assert err.value.source is not None and err.value.source.startswith(str(tmp_path))


def test_megatron_strategy_needs_the_megatron_config(tmp_path: Path) -> None:
    # A script must pick veRL's megatron config, as veRL needs; a YAML's flavour follows
    # its strategy.
    keys = {**BASE, _A + "strategy": "megatron"}
    with pytest.raises(ScenarioError) as err:
        import_verl(_script(tmp_path, keys), FACTS)
    assert err.value.field == _A + "strategy"
    assert "--config-name=ppo_megatron_trainer" in err.value.message
    imp = import_verl(_yaml(tmp_path, keys), FACTS)
    assert "_generated_ppo_megatron_trainer.yaml" in imp.sources["train.tp"]


def test_rlsim_build_checks_name_the_config_key(tmp_path: Path) -> None:
    # Qwen2.5-72B's weights do not fit one H100 (rollout TP 1): rlsim's own check, its
    # error traced back to the veRL key.
    keys = {**BASE, _R + "tensor_model_parallel_size": 1}
    imp = import_verl(_yaml(tmp_path, keys), Facts(gpu="H100", response_len_median=300,
                                                   model="qwen2.5-72b"))
    with pytest.raises(ScenarioError) as err:
        check_runs(imp)
    assert err.value.field == "rollout.tp"
    assert err.value.message.endswith(f"(from {_R}tensor_model_parallel_size)")


def test_a_missing_rollout_engine_name_is_refused(tmp_path: Path) -> None:
    keys = {k: v for k, v in BASE.items() if k != _R + "name"}
    with pytest.raises(ScenarioError) as err:
        import_verl(_yaml(tmp_path, keys), FACTS)
    assert err.value.field == _R + "name" and "???" in err.value.message


@pytest.mark.parametrize(("module", "text"), [
    ("verl.experimental.fully_async_policy.fully_async_main", "fully-async"),
    ("verl.trainer.main_generation", "not a veRL trainer rlsim imports"),
])
def test_entry_points_rlsim_does_not_import(tmp_path: Path, module: str, text: str) -> None:
    with pytest.raises(ScenarioError) as err:
        import_verl(_script(tmp_path, BASE, module=module), FACTS)
    assert err.value.field == module and text in err.value.message


# --- the launch-script reader ---------------------------------------------------------------

def _parse(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "s.sh"
    path.write_text(text)
    return parse_launch_script(path).values()


def test_shell_variables_defaults_and_arithmetic(tmp_path: Path) -> None:
    got = _parse(tmp_path, """#!/bin/bash
set -xeuo pipefail   # strict mode
max_prompt_length=$((1024 * 2))
export NNODES=${NNODES:-4}
resp=${RESP-$(( (max_prompt_length + 2) / 3 ))}
name="run_${NNODES}x"; tp=2
: ${TP:=$tp}
python3 -m verl.trainer.main_ppo \\
    data.max_prompt_length=${max_prompt_length} \\
    data.max_response_length=$resp \\
    trainer.nnodes="$NNODES" \\
    trainer.experiment_name='$name' \\
    trainer.project_name="$name" \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=$TP \\
    +actor_rollout_ref.model.override_config.x=1e-6 \\
    trainer.logger='["console","wandb"]' \\
    trainer.val_before_train=False algorithm.gamma=null $@
""")
    assert got == {
        "data.max_prompt_length": 2048, "data.max_response_length": 683,
        "trainer.nnodes": 4, "trainer.experiment_name": "$name",
        "trainer.project_name": "run_4x",
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 2,
        "actor_rollout_ref.model.override_config.x": 1e-6,
        "trainer.logger": ["console", "wandb"], "trainer.val_before_train": False,
        "algorithm.gamma": None}


def test_shell_launchers_arrays_and_conditions(tmp_path: Path) -> None:
    path = tmp_path / "s.sh"
    path.write_text("""engine=vllm
if [ "$engine" = "sglang" ]; then
    tp=4
elif [[ $engine == vllm ]]; then
    tp=2
else
    tp=1
fi
[ -z "$engine" ] || mode=sync
ROLLOUT=(
    actor_rollout_ref.rollout.name=$engine   # the engine
    "actor_rollout_ref.rollout.tensor_model_parallel_size=${tp}"
)
ray job submit --address="http://x:8265" --runtime-env=env.yaml -- \\
  python3 -m recipe.dapo.main_dapo --config-name='dapo_trainer.yaml'\\
  "${ROLLOUT[@]}" actor_rollout_ref.rollout.mode=$mode 2>&1 | tee log.txt
""")
    script = parse_launch_script(path)
    assert script.module == "recipe.dapo.main_dapo"
    assert script.config_name == "dapo_trainer"
    assert script.values() == {"actor_rollout_ref.rollout.name": "vllm",
                               "actor_rollout_ref.rollout.tensor_model_parallel_size": 2,
                               "actor_rollout_ref.rollout.mode": "sync"}
    assert script.overrides["actor_rollout_ref.rollout.mode"].line == 16
    assert script.line == 14


def test_shell_unknown_values_are_kept_with_why(tmp_path: Path) -> None:
    path = tmp_path / "s.sh"
    path.write_text("NOW=$(date +%Y%m%d)\ntorchrun --nproc_per_node=8 -m verl.trainer.main_ppo"
                    " trainer.experiment_name=x_$NOW data.train_files=$HOME/d.parquet\n")
    o = parse_launch_script(path).overrides
    assert o["trainer.experiment_name"].value == "x_$(date+%Y%m%d)"
    assert "command's output" in o["trainer.experiment_name"].unresolved[0]
    assert o["data.train_files"].value == "${HOME}/d.parquet"
    assert "$HOME is not set in the script" in o["data.train_files"].unresolved[0]


@pytest.mark.parametrize(("text", "line", "message"), [
    ("X='abc\npython3 -m verl.trainer.main_ppo a=1\n", 1, "unterminated ' quote"),
    ("for i in 1 2; do\n  tp=$i\ndone\npython3 -m verl.trainer.main_ppo a=$tp\n", 1,
     "`for` loop"),
    ("if [ -f /x ]; then\n  tp=2\nfi\npython3 -m verl.trainer.main_ppo a=1\n", 1,
     "compares strings and integers only"),
    ("X=${Y^^}\npython3 -m verl.trainer.main_ppo a=1\n", 1, "${Y^^}"),
    ("python3 -m verl.trainer.main_ppo \\\n  a=1 \\\n  --bogus\n", 3, "not a Hydra override"),
    ("if [ 1 = 1 ]; then\n  x=1\n", 1, "never closed by `fi`"),
])
def test_shell_errors_name_the_line(tmp_path: Path, text: str, line: int,
                                    message: str) -> None:
    path = tmp_path / "s.sh"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        parse_launch_script(path)
    assert err.value.field == f"{path}:{line}"
    assert message in err.value.message


@pytest.mark.parametrize(("text", "value"), [
    ("1024", 1024), ("-1", -1), ("0.8", 0.8), ("1e-6", 1e-6), ("True", True),
    ("false", False), ("null", None), ("[1, 2]", [1, 2]), ("'left'", "left"),
    ("Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B"), ("", ""),
])
def test_hydra_values(text: str, value: Any) -> None:
    assert hydra_value(text) == value


# --- --set: overrides after the config's own, with Hydra's rules ---------------------------

# veRL's DAPO 7B math recipe as it was before volcengine/verl#2757 made the rollout engine a
# required key (??? in ppo_trainer.yaml): the script leaves actor_rollout_ref.rollout.name
# out, as veRL's own recipe did then.
DAPO_UNSET = DATA / "test_dapo_7b_math.sh"
NAME_SET = _R + "name=vllm"
PINNED = "veRL at volcengine/verl@b178a3cd56f5"


def _import_dapo(out: Path, *sets: str) -> list[str]:
    return ["import", "verl", str(DAPO_UNSET), "--gpu", "H100", "--response-len-median",
            "2000", "--out", str(out), *(w for s in sets for w in ("--set", s))]


def test_dapo_script_without_the_engine_imports_with_one_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    text = DAPO_UNSET.read_text()
    assert text.splitlines()[0] == ("# Source: volcengine/verl@a31a8f251faacb38404fa0af7603c"
                                    "00f64a667bb recipe/dapo/test_dapo_7b_math.sh")
    assert "rollout.name" not in text  # the user's script, unedited
    out = tmp_path / "dapo.yaml"
    code, stdout, stderr = _cli(_import_dapo(out, NAME_SET), monkeypatch, capsys)
    assert code == 0, stderr
    assert stdout.strip().endswith(f"defaults of {PINNED})")
    scenario, base = load_scenario(out)
    assert (scenario.rollout.tp, scenario.workload.samples_per_prompt) == (4, 16)
    lines = out.read_text().splitlines()
    assert f"# Overridden after the config's own keys: --set {NAME_SET}" in lines
    # The engine the --set names is the source of the rollout section, and says so.
    assert (f"rollout:  # {_R}name (--set {NAME_SET}): vllm engines (rlsim models vLLM and "
            "SGLang alike: continuous batching, paged KV cache)") in lines
    # What the script sets is cited as before, without the --set.
    assert f"  samples_per_prompt: 16  # {_R}n" in lines
    assert simulate(scenario, base).summary["steps"] == scenario.steps


def test_dapo_script_without_the_engine_fails_suggesting_the_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dapo.yaml"
    code, stdout, stderr = _cli(_import_dapo(out), monkeypatch, capsys)
    assert code == 2 and not stdout and not out.exists()
    [line] = stderr.strip().splitlines()
    assert line.startswith(f"rlsim: error: {_R}name: veRL requires it (??? in "
                           "ppo_trainer.yaml at volcengine/verl@b178a3cd56f5; before "
                           "volcengine/verl#2757 it defaulted to vllm)")
    assert line.endswith(f"pass --set {NAME_SET} (or sglang)")


def test_defaults_of_names_the_pinned_commit_of_the_default_files() -> None:
    imp = import_verl(DATA / "run_qwen3-8b.sh", FACTS)
    assert imp.defaults_of == PINNED
    commit = PINNED.rsplit("@", 1)[1]
    for name in ("_generated_ppo_trainer.yaml", "_generated_ppo_megatron_trainer.yaml",
                 "one_step_off_ppo_trainer.yaml"):
        first = (DATA / name).read_text().splitlines()[0]
        assert first.startswith(f"# Source: volcengine/verl@{commit}"), name


def _word(key: str, value: Any) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return f"{key}={text}"


@pytest.mark.parametrize(("keys", "field", "value", "source", "megatron", "facts"), ROUND_TRIPS,
                         ids=[f"{c[3]}->{c[1]}" for c in ROUND_TRIPS])
def test_round_trip_by_set(tmp_path: Path, keys: dict[str, Any], field: str, value: Any,
                           source: str, megatron: bool, facts: Facts) -> None:
    """Each mapped key given by --set (after the script's own) reaches its field, whose
    source names the --set."""
    sets = parse_sets(_word(k, v) for k, v in keys.items())
    imp = import_verl(_script(tmp_path, BASE, megatron), facts, sets)
    assert _field(imp, field) == value
    assert imp.sources[field] == f"{source} (--set {_word(source, keys[source])})"


@pytest.fixture
def job(tmp_path: Path) -> Path:
    return _script(tmp_path, BASE)


def test_set_forms_follow_hydra(job: Path) -> None:
    def imported(*words: str) -> Imported:
        return import_verl(job, FACTS, parse_sets(words))

    # ++ overrides a key the script sets; the last --set of a key wins.
    imp = imported("data.train_batch_size=32", "++data.train_batch_size=128")
    assert imp.scenario["workload"]["prompts_per_step"] == 128
    assert imp.sources["workload.prompts_per_step"] == \
        "data.train_batch_size (--set ++data.train_batch_size=128)"
    # ~ removes what the script set: veRL's default applies, and the source says why.
    imp = imported("~data.train_batch_size")
    assert imp.scenario["workload"]["prompts_per_step"] == 1024
    assert imp.sources["workload.prompts_per_step"] == (
        "data.train_batch_size (--set ~data.train_batch_size) (default: verl@b178a3cd56f5 "
        "verl/trainer/config/_generated_ppo_trainer.yaml:345)")
    # + adds a key veRL's config does not have (listed as not used); ++ does too.
    ignored = dict(imported("+trainer.my_tag=x", "++my.extra=[1,2]").ignored)
    assert ignored["trainer.my_tag"] == ("added with + (not in veRL's config): rlsim does not "
                                         "read it (--set +trainer.my_tag=x)")
    assert ignored["my.extra"].endswith("(--set ++my.extra=[1,2])")
    # key=value on a key veRL has that the script does not set, listed with why.
    ignored = dict(imported("trainer.logger=[console]").ignored)
    assert ignored["trainer.logger"].endswith("(--set trainer.logger=[console])")


def test_removing_a_section_removes_every_key_under_it() -> None:
    facts = Facts(gpu="H100", response_len_median=2000)
    sets = parse_sets([NAME_SET])
    before = dict(import_verl(DAPO_UNSET, facts, sets).ignored)
    kwargs = "reward_model.reward_kwargs"
    assert sum(k.startswith(kwargs + ".") for k in before) == 5
    after = dict(import_verl(DAPO_UNSET, facts,
                             parse_sets([NAME_SET, f"~{kwargs}"])).ignored)
    assert not any(k.startswith(kwargs) for k in after)
    assert len(after) == len(before) - 5


def test_unknown_key_by_set_is_reported_as_in_the_script(job: Path, tmp_path: Path) -> None:
    typo = _R + "nme"
    with pytest.raises(ScenarioError) as in_script:
        import_verl(_script(tmp_path, {**BASE, typo: "vllm"}), FACTS)
    with pytest.raises(ScenarioError) as by_set:
        import_verl(job, FACTS, parse_sets([f"{typo}=vllm"]))
    assert by_set.value.field == in_script.value.field == typo
    assert by_set.value.message == in_script.value.message
    assert by_set.value.source == f"--set {typo}=vllm"


@pytest.mark.parametrize(("word", "key", "text"), [
    (f"+{_R}n=3", _R + "n", "veRL's config has it already; write"),
    (f"+{_R}max_num_seqs=3", _R + "max_num_seqs", "veRL's config has it already"),
    (f"~{_R}max_num_seqs", _R + "max_num_seqs", "the config does not set it"),
    ("~bogus.key", "bogus.key", "not a veRL config key rlsim knows"),
    (f"~{_R}n=8", _R + "n", "its value is 4, not 8"),
    (f"{_R}n=abc", _R + "n", "'abc' is not a whole number"),
    (f"{_R}name=hf", _R + "name", "rlsim's engines model vLLM and SGLang"),
])
def test_set_refusals_name_the_set(job: Path, word: str, key: str, text: str) -> None:
    with pytest.raises(ScenarioError) as err:
        import_verl(job, FACTS, parse_sets([word]))
    assert (err.value.field, err.value.source) == (key, f"--set {word}")
    assert text in err.value.message


def test_set_completes_a_yaml_config(tmp_path: Path) -> None:
    path = _yaml(tmp_path, {k: v for k, v in BASE.items() if k != _R + "name"})
    imp = import_verl(path, FACTS, parse_sets([f"{_R}name=sglang"]))
    assert imp.sections["rollout"].startswith(f"{_R}name (--set {_R}name=sglang): sglang")


_DISPATCH = _M + "override_transformer_config.moe_token_dispatcher_type"


@pytest.mark.parametrize(("keys", "message"), [
    ({_DISPATCH: "flex", _M + "override_transformer_config.moe_flex_dispatcher_backend":
      "ncclep"}, "use deepep or hybridep"),
    ({_DISPATCH: "flex", _M + "override_transformer_config.moe_enable_deepep": True,
      _M + "override_transformer_config.moe_flex_dispatcher_backend": "hybridep"},
     "one flex backend"),
    ({_DISPATCH: "allgather"}, "use alltoall or flex"),
])
def test_dispatchers_rlsim_does_not_price_are_refused(tmp_path: Path, keys: dict[str, Any],
                                                      message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        import_verl(_yaml(tmp_path, {**BASE, **keys}, megatron=True), FACTS)


def test_hybridep_backend_reads_as_deepep(tmp_path: Path) -> None:
    keys = {**BASE, _DISPATCH: "flex",
            _M + "override_transformer_config.moe_flex_dispatcher_backend": "hybridep"}
    imp = import_verl(_yaml(tmp_path, keys, megatron=True), FACTS)
    assert imp.scenario["train"]["moe_dispatcher"] == "deepep"


def test_bare_flex_is_megatron_default_deepep(tmp_path: Path) -> None:
    imp = import_verl(_yaml(tmp_path, {**BASE, _DISPATCH: "flex"}, megatron=True), FACTS)
    assert imp.scenario["train"]["moe_dispatcher"] == "deepep"
    assert "default deepep" in imp.sources["train.moe_dispatcher"]


_OPT = "actor_rollout_ref.actor.optim.override_optimizer_config."


def test_megatron_cpu_optimizer_is_read(tmp_path: Path) -> None:
    keys = {**BASE, _OPT + "optimizer_cpu_offload": True,
            _OPT + "optimizer_offload_fraction": 0.5,
            _OPT + "overlap_cpu_optimizer_d2h_h2d": True}
    imp = import_verl(_yaml(tmp_path, keys, megatron=True), FACTS)
    train = imp.scenario["train"]
    assert train["optimizer_offload_fraction"] == 0.5
    assert train["overlap_cpu_optimizer_d2h_h2d"] is True
    assert imp.sources["train.optimizer_offload_fraction"].startswith(
        _OPT + "optimizer_offload_fraction")


@pytest.mark.parametrize("keys", [
    {_OPT + "optimizer_offload_fraction": 1.0},  # without optimizer_cpu_offload: unused
    {_OPT + "optimizer_cpu_offload": True},  # Megatron-Core's default fraction is 0
    {_OPT + "optimizer_cpu_offload": False, _OPT + "optimizer_offload_fraction": 1.0},
])
def test_cpu_optimizer_needs_both_keys(tmp_path: Path, keys: dict[str, Any]) -> None:
    imp = import_verl(_yaml(tmp_path, {**BASE, **keys}, megatron=True), FACTS)
    assert "optimizer_offload_fraction" not in imp.scenario["train"]


def test_cpu_optimizer_fraction_out_of_range_is_refused(tmp_path: Path) -> None:
    keys = {**BASE, _OPT + "optimizer_cpu_offload": True,
            _OPT + "optimizer_offload_fraction": 1.5}
    with pytest.raises(ScenarioError, match=r"in \[0, 1\]") as err:
        import_verl(_yaml(tmp_path, keys, megatron=True), FACTS)
    assert err.value.field == _OPT + "optimizer_offload_fraction"


def test_cpu_optimizer_keys_under_fsdp_set_nothing(tmp_path: Path) -> None:
    keys = {**BASE, _OPT + "optimizer_cpu_offload": True,
            _OPT + "optimizer_offload_fraction": 1.0}
    imp = import_verl(_yaml(tmp_path, keys), FACTS)
    assert "optimizer_offload_fraction" not in imp.scenario["train"]


@pytest.mark.parametrize(("value", "text"), [
    ("yes", "is not true or false"),
    ("${UNSET_FLAG}", "is not true or false"),  # YAML keeps an unknown interpolation
])
def test_cpu_optimizer_switch_bad_values_name_the_switch(tmp_path: Path, value: str,
                                                         text: str) -> None:
    for keys in ({_OPT + "optimizer_cpu_offload": value},
                 {_OPT + "optimizer_cpu_offload": value,
                  _OPT + "optimizer_offload_fraction": 1.0}):
        with pytest.raises(ScenarioError, match=text) as err:
            import_verl(_yaml(tmp_path, {**BASE, **keys}, megatron=True), FACTS)
        assert err.value.field == _OPT + "optimizer_cpu_offload"


def test_unresolved_cpu_optimizer_fraction_is_refused_naming_it(tmp_path: Path) -> None:
    keys = {**BASE, _OPT + "optimizer_cpu_offload": True,
            _OPT + "optimizer_offload_fraction": "${UNSET_FRAC}"}
    with pytest.raises(ScenarioError, match=r"in \[0, 1\]") as err:
        import_verl(_yaml(tmp_path, keys, megatron=True), FACTS)
    assert err.value.field == _OPT + "optimizer_offload_fraction"


@pytest.mark.parametrize("key", ["optimizer_cpu_offload", "optimizer_offload_fraction"])
def test_cpu_optimizer_keys_unset_in_a_script_say_so(tmp_path: Path, key: str) -> None:
    keys = {**BASE, "+" + _OPT + "optimizer_cpu_offload": True,
            "+" + _OPT + "optimizer_offload_fraction": 1.0}
    keys["+" + _OPT + key] = "${NOT_SET}"
    with pytest.raises(ScenarioError, match="depends on something the script does not set") \
            as err:
        import_verl(_script(tmp_path, keys, megatron=True), FACTS)
    assert err.value.field == _OPT + key
