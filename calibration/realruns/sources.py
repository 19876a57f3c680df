"""Where every value the translator did not read off a record comes from, with its citation.

Owns the public configs behind the real runs: NeMo-RL's performance recipes (resolved
through their `defaults:` chain to grpo_math_1B.yaml), veRL's one-step-off-policy launch
scripts and generated trainer defaults, vLLM's batch defaults, and the map from Hugging Face
model names to rlsim catalogue names. Nothing here is chosen to fit a measured time: each
value is the framework's own setting for that run, cited `file:line` at the commit the
record's source points to (docs/validation.md, "Public real runs", lists them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Cited:
    """A value and where it is written (file:line in the repository named by its table)."""

    value: Any
    source: str


NEMO_RL = "NVIDIA-NeMo/RL@7ea279abfbeb698b092856d0dab61e7cf39bc909 examples/configs/"
VERL = "volcengine/verl@b178a3cd56f58b2d502255daba591e92833930a7 "
NEMO_RL_RECIPE_DIR = "recipes/llm/performance/"
VLLM_BATCH_DEFAULTS = ("vllm-project/vllm vllm/engine/arg_utils.py EngineArgs."
                       "get_batch_defaults: GPUs with >= 70 GiB that are not A100, LLM class")



def nemo_rl_path(source: str) -> str:
    """A NeMo-RL source of the recipe table as a path under examples/configs/ (code under
    nemo_rl/ as a path from the repository root)."""
    if source.startswith("nemo_rl/"):
        return "../../" + source
    return source if source.startswith("grpo_math_1B") else NEMO_RL_RECIPE_DIR + source


# NeMo-RL drives vLLM through its offline LLM class and sets neither max_num_seqs nor
# max_num_batched_tokens (grpo_math_1B.yaml vllm_cfg), so vLLM's own defaults apply:
# 1024 sequences and 16384 batched tokens on an H100-class GPU.
NEMO_RL_VLLM = {
    "max_num_seqs": Cited(1024, VLLM_BATCH_DEFAULTS),
    "max_num_batched_tokens": Cited(16384, VLLM_BATCH_DEFAULTS),
}

# Each NeMo-RL performance recipe a record's notes name, every key resolved through its
# `defaults:` chain (generated from the repository at NEMO_RL's commit; paths under
# examples/configs/, recipes in recipes/llm/performance/). Keys: prompts
# (grpo.num_prompts_per_step), generations (num_generations_per_prompt), max_total
# (policy.max_total_sequence_length: prompt + response), train_tp/pp/cp/ep
# (policy.megatron_cfg.*_parallel_size), recompute (megatron_cfg.activation_checkpointing),
# rollout_tp and gpu_mem (generation.vllm_cfg), colocated and gen_nodes
# (generation.colocated), async and age (grpo.async_grpo.enabled,
# max_trajectory_age_steps), kl (loss_fn.reference_policy_kl_penalty), force_on_policy
# (loss_fn.force_on_policy_ratio: when true NeMo-RL skips the prev-logprob pass,
# nemo_rl/algorithms/grpo.py:2493-2509), gpn and nodes (cluster).
NEMO_RL_RECIPES: dict[str, dict[str, Cited]] = {
    "grpo-llama3.1-8b-instruct-2n8g.yaml": {
        "prompts": Cited(64, "grpo-llama3.1-8b-instruct-2n8g.yaml:3"),
        "generations": Cited(32, "grpo-llama3.1-8b-instruct-2n8g.yaml:4"),
        "max_total": Cited(4096, "grpo-llama3.1-8b-instruct-2n8g.yaml:18"),
        "train_tp": Cited(1, "grpo_math_1B.yaml:216"),
        "train_pp": Cited(2, "grpo-llama3.1-8b-instruct-2n8g.yaml:25"),
        "train_cp": Cited(1, "grpo_math_1B.yaml:222"),
        "train_ep": Cited(1, "grpo_math_1B.yaml:218"),
        "recompute": Cited(True, "grpo-llama3.1-8b-instruct-2n8g.yaml:26"),
        "rollout_tp": Cited(1, "grpo_math_1B.yaml:416"),
        "gpu_mem": Cited(0.6, "grpo_math_1B.yaml:419"),
        "colocated": Cited(True, "grpo_math_1B.yaml:439"),
        "async": Cited(False, "grpo_math_1B.yaml:57"),
        "age": Cited(1, "grpo_math_1B.yaml:59"),
        "kl": Cited(0.01, "grpo_math_1B.yaml:80"),
        "force_on_policy": Cited(True, "grpo-llama3.1-8b-instruct-2n8g.yaml:8"),
        "gpn": Cited(8, "grpo-llama3.1-8b-instruct-2n8g.yaml:54"),
        "nodes": Cited(2, "grpo-llama3.1-8b-instruct-2n8g.yaml:55"),
    },
    "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml": {
        "prompts": Cited(64, "grpo-llama3.1-8b-instruct-2n8g.yaml:3"),
        "generations": Cited(32, "grpo-llama3.1-8b-instruct-2n8g.yaml:4"),
        "max_total": Cited(4096, "grpo-llama3.1-8b-instruct-2n8g.yaml:18"),
        "train_tp": Cited(1, "grpo_math_1B.yaml:216"),
        "train_pp": Cited(1, "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml:15"),
        "train_cp": Cited(1, "grpo_math_1B.yaml:222"),
        "train_ep": Cited(1, "grpo_math_1B.yaml:218"),
        "recompute": Cited(True, "grpo-llama3.1-8b-instruct-2n8g.yaml:26"),
        "rollout_tp": Cited(1, "grpo_math_1B.yaml:416"),
        "gpu_mem": Cited(0.8, "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml:24"),
        "colocated": Cited(False, "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml:18"),
        "gen_nodes": Cited(1, "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml:20"),
        "async": Cited(True, "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml:4"),
        "age": Cited(1, "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml:5"),
        "kl": Cited(0.01, "grpo_math_1B.yaml:80"),
        "force_on_policy": Cited(True, "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml:9"),
        "gpn": Cited(8, "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml:30"),
        "nodes": Cited(2, "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml:31"),
    },
    "grpo-qwen3-32b-4n8g.yaml": {
        "prompts": Cited(64, "grpo-qwen3-32b-4n8g.yaml:3"),
        "generations": Cited(32, "grpo-qwen3-32b-4n8g.yaml:4"),
        "max_total": Cited(4096, "grpo-qwen3-32b-4n8g.yaml:15"),
        "train_tp": Cited(4, "grpo-qwen3-32b-4n8g.yaml:24"),
        "train_pp": Cited(4, "grpo-qwen3-32b-4n8g.yaml:25"),
        "train_cp": Cited(1, "grpo_math_1B.yaml:222"),
        "train_ep": Cited(1, "grpo_math_1B.yaml:218"),
        "recompute": Cited(False, "grpo_math_1B.yaml:188"),
        "rollout_tp": Cited(4, "grpo-qwen3-32b-4n8g.yaml:35"),
        "gpu_mem": Cited(0.6, "grpo_math_1B.yaml:419"),
        "colocated": Cited(True, "grpo_math_1B.yaml:439"),
        "async": Cited(False, "grpo_math_1B.yaml:57"),
        "age": Cited(1, "grpo_math_1B.yaml:59"),
        "kl": Cited(0.01, "grpo_math_1B.yaml:80"),
        "force_on_policy": Cited(True, "grpo-qwen3-32b-4n8g.yaml:6"),
        "gpn": Cited(8, "grpo-qwen3-32b-4n8g.yaml:44"),
        "nodes": Cited(4, "grpo-qwen3-32b-4n8g.yaml:45"),
    },
    "grpo-qwen3-32b-8n8g-async-1off.yaml": {
        "prompts": Cited(64, "grpo-qwen3-32b-4n8g.yaml:3"),
        "generations": Cited(32, "grpo-qwen3-32b-4n8g.yaml:4"),
        "max_total": Cited(4096, "grpo-qwen3-32b-4n8g.yaml:15"),
        "train_tp": Cited(4, "grpo-qwen3-32b-8n8g-async-1off.yaml:15"),
        "train_pp": Cited(4, "grpo-qwen3-32b-8n8g-async-1off.yaml:16"),
        "train_cp": Cited(1, "grpo_math_1B.yaml:222"),
        "train_ep": Cited(1, "grpo_math_1B.yaml:218"),
        "recompute": Cited(False, "grpo_math_1B.yaml:188"),
        "rollout_tp": Cited(4, "grpo-qwen3-32b-8n8g-async-1off.yaml:26"),
        "gpu_mem": Cited(0.8, "grpo-qwen3-32b-8n8g-async-1off.yaml:27"),
        "colocated": Cited(False, "grpo-qwen3-32b-8n8g-async-1off.yaml:20"),
        "gen_nodes": Cited(4, "grpo-qwen3-32b-8n8g-async-1off.yaml:22"),
        "async": Cited(True, "grpo-qwen3-32b-8n8g-async-1off.yaml:4"),
        "age": Cited(1, "grpo-qwen3-32b-8n8g-async-1off.yaml:5"),
        "kl": Cited(0.01, "grpo_math_1B.yaml:80"),
        "force_on_policy": Cited(True, "grpo-qwen3-32b-8n8g-async-1off.yaml:9"),
        "gpn": Cited(8, "grpo-qwen3-32b-8n8g-async-1off.yaml:33"),
        "nodes": Cited(8, "grpo-qwen3-32b-8n8g-async-1off.yaml:34"),
    },
    "grpo-qwen3-30ba3b-4n8g.yaml": {
        "prompts": Cited(64, "grpo-qwen3-30ba3b-4n8g.yaml:3"),
        "generations": Cited(32, "grpo-qwen3-30ba3b-4n8g.yaml:4"),
        "max_total": Cited(4096, "grpo-qwen3-30ba3b-4n8g.yaml:15"),
        "train_tp": Cited(1, "grpo-qwen3-30ba3b-4n8g.yaml:26"),
        "train_pp": Cited(1, "grpo-qwen3-30ba3b-4n8g.yaml:27"),
        "train_cp": Cited(1, "grpo_math_1B.yaml:222"),
        "train_ep": Cited(8, "grpo-qwen3-30ba3b-4n8g.yaml:28"),
        "recompute": Cited(False, "grpo_math_1B.yaml:188"),
        "rollout_tp": Cited(2, "grpo-qwen3-30ba3b-4n8g.yaml:41"),
        "gpu_mem": Cited(0.6, "grpo_math_1B.yaml:419"),
        "colocated": Cited(True, "grpo_math_1B.yaml:439"),
        "async": Cited(False, "grpo_math_1B.yaml:57"),
        "age": Cited(1, "grpo_math_1B.yaml:59"),
        "kl": Cited(0.01, "grpo_math_1B.yaml:80"),
        "force_on_policy": Cited(True, "grpo-qwen3-30ba3b-4n8g.yaml:6"),
        "gpn": Cited(8, "grpo-qwen3-30ba3b-4n8g.yaml:54"),
        "nodes": Cited(4, "grpo-qwen3-30ba3b-4n8g.yaml:55"),
    },
    "grpo-qwen3-30ba3b-4n8g-async-1off.yaml": {
        "prompts": Cited(64, "grpo-qwen3-30ba3b-4n8g.yaml:3"),
        "generations": Cited(32, "grpo-qwen3-30ba3b-4n8g.yaml:4"),
        "max_total": Cited(4096, "grpo-qwen3-30ba3b-4n8g.yaml:15"),
        "train_tp": Cited(1, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:15"),
        "train_pp": Cited(2, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:16"),
        "train_cp": Cited(1, "grpo_math_1B.yaml:222"),
        "train_ep": Cited(8, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:17"),
        "recompute": Cited(False, "grpo_math_1B.yaml:188"),
        "rollout_tp": Cited(2, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:27"),
        "gpu_mem": Cited(0.8, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:28"),
        "colocated": Cited(False, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:21"),
        "gen_nodes": Cited(2, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:23"),
        "async": Cited(True, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:4"),
        "age": Cited(1, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:5"),
        "kl": Cited(0.01, "grpo_math_1B.yaml:80"),
        "force_on_policy": Cited(True, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:9"),
        "gpn": Cited(8, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:34"),
        "nodes": Cited(4, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:35"),
    },
    "grpo-qwen3-30ba3b-24n8g-async-8off.yaml": {
        "prompts": Cited(64, "grpo-qwen3-30ba3b-4n8g.yaml:3"),
        "generations": Cited(32, "grpo-qwen3-30ba3b-4n8g.yaml:4"),
        "max_total": Cited(4096, "grpo-qwen3-30ba3b-4n8g.yaml:15"),
        "train_tp": Cited(1, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:15"),
        "train_pp": Cited(1, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:16"),
        "train_cp": Cited(1, "grpo_math_1B.yaml:222"),
        "train_ep": Cited(8, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:17"),
        "recompute": Cited(False, "grpo_math_1B.yaml:188"),
        "rollout_tp": Cited(2, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:27"),
        "gpu_mem": Cited(0.8, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:28"),
        "colocated": Cited(False, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:21"),
        "gen_nodes": Cited(8, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:23"),
        "async": Cited(True, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:4"),
        "age": Cited(8, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:5"),
        "kl": Cited(0.01, "grpo_math_1B.yaml:80"),
        "force_on_policy": Cited(False, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:9"),
        "gpn": Cited(8, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:34"),
        "nodes": Cited(24, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:35"),
    },
    "grpo-deepseek-v3-32n8g.yaml": {
        "prompts": Cited(32, "grpo-deepseek-v3-32n8g.yaml:3"),
        "generations": Cited(16, "grpo-deepseek-v3-32n8g.yaml:4"),
        "max_total": Cited(1536, "grpo-deepseek-v3-32n8g.yaml:17"),
        "train_tp": Cited(1, "grpo_math_1B.yaml:216"),
        "train_pp": Cited(16, "grpo-deepseek-v3-32n8g.yaml:26"),
        "train_cp": Cited(1, "grpo_math_1B.yaml:222"),
        "train_ep": Cited(16, "grpo-deepseek-v3-32n8g.yaml:27"),
        "recompute": Cited(True, "grpo-deepseek-v3-32n8g.yaml:28"),
        "rollout_tp": Cited(32, "grpo-deepseek-v3-32n8g.yaml:48"),
        "gpu_mem": Cited(0.6, "grpo_math_1B.yaml:419"),
        "colocated": Cited(True, "grpo_math_1B.yaml:439"),
        "async": Cited(False, "grpo_math_1B.yaml:57"),
        "age": Cited(1, "grpo_math_1B.yaml:59"),
        "kl": Cited(0.01, "grpo_math_1B.yaml:80"),
        "force_on_policy": Cited(True, "grpo-deepseek-v3-32n8g.yaml:10"),
        "gpn": Cited(8, "grpo-deepseek-v3-32n8g.yaml:65"),
        "nodes": Cited(32, "grpo-deepseek-v3-32n8g.yaml:66"),
    },
    "grpo-qwen3-235b-16n8g.yaml": {
        "prompts": Cited(16, "grpo-qwen3-235b-16n8g.yaml:3"),
        "generations": Cited(32, "grpo-qwen3-235b-16n8g.yaml:4"),
        "max_total": Cited(8192, "grpo-qwen3-235b-16n8g.yaml:19"),
        "train_tp": Cited(2, "grpo-qwen3-235b-16n8g.yaml:28"),
        "train_pp": Cited(8, "grpo-qwen3-235b-16n8g.yaml:30"),
        "train_cp": Cited(2, "grpo-qwen3-235b-16n8g.yaml:31"),
        "train_ep": Cited(16, "grpo-qwen3-235b-16n8g.yaml:32"),
        "recompute": Cited(True, "grpo-qwen3-235b-16n8g.yaml:33"),
        "rollout_tp": Cited(16, "grpo-qwen3-235b-16n8g.yaml:50"),
        "gpu_mem": Cited(0.6, "grpo_math_1B.yaml:419"),
        "colocated": Cited(True, "grpo_math_1B.yaml:439"),
        "async": Cited(False, "grpo_math_1B.yaml:57"),
        "age": Cited(1, "grpo_math_1B.yaml:59"),
        "kl": Cited(0.01, "grpo_math_1B.yaml:80"),
        "force_on_policy": Cited(True, "grpo-qwen3-235b-16n8g.yaml:10"),
        "gpn": Cited(8, "grpo-qwen3-235b-16n8g.yaml:64"),
        "nodes": Cited(16, "grpo-qwen3-235b-16n8g.yaml:65"),
    },
}
# Recipes that inherit another (their `defaults:`) and override a few keys.
NEMO_RL_RECIPES["grpo-deepseek-v3-64n8g.yaml"] = {
    **NEMO_RL_RECIPES["grpo-deepseek-v3-32n8g.yaml"],
    "train_ep": Cited(32, "grpo-deepseek-v3-64n8g.yaml:10"),
    "nodes": Cited(64, "grpo-deepseek-v3-64n8g.yaml:12"),
}
NEMO_RL_RECIPES["grpo-qwen3-235b-32n8g.yaml"] = {
    **NEMO_RL_RECIPES["grpo-qwen3-235b-16n8g.yaml"],
    "nodes": Cited(32, "grpo-qwen3-235b-32n8g.yaml:9"),
}

# veRL's one-step-off-policy launch scripts (verl/experimental/one_step_off_policy/shell/),
# the companions of the README's table that the records name; keyed by (backend, layout).
# veRL trainer defaults: verl/trainer/config/_generated_ppo_trainer.yaml.
_VERL_DEFAULTS = "verl/trainer/config/_generated_ppo_trainer.yaml"
_OSO = "verl/experimental/one_step_off_policy/shell/dapo_7b_math_"
VERL_SCRIPTS: dict[tuple[str, str], dict[str, Cited]] = {
    ("fsdp2", "colocate"): {
        "max_prompt": Cited(2048, f"{_OSO}fsdp2_colocate.sh:17"),
        "rollout_tp": Cited(2, f"{_OSO}fsdp2_colocate.sh:53"),
        "gpu_mem": Cited(0.80, f"{_OSO}fsdp2_colocate.sh:98"),
        "max_batched": Cited(2048 + 8192, f"{_OSO}fsdp2_colocate.sh:101 (prompt + response)"),
        "kl": Cited(False, f"{_OSO}fsdp2_colocate.sh:9,11 (use_kl_in_reward, use_kl_loss)"),
        "recompute": Cited(True, f"{_OSO}fsdp2_colocate.sh:87"),
        "offload": Cited(True, f"{_OSO}fsdp2_colocate.sh:52"),
        "use_dynamic_bsz": Cited(True, f"{_OSO}fsdp2_colocate.sh:49"),
        "use_remove_padding": Cited(True, f"{_OSO}fsdp2_colocate.sh:78"),
        "ppo_max_token_len_per_gpu": Cited((2048 + 8192) * 2, f"{_OSO}fsdp2_colocate.sh:50"),
    },
    ("megatron", "colocate"): {
        "max_prompt": Cited(2048, f"{_OSO}megatron_colocate.sh:17"),
        "rollout_tp": Cited(2, f"{_OSO}megatron_colocate.sh:54"),
        "train_tp": Cited(2, f"{_OSO}megatron_colocate.sh:55"),
        "train_pp": Cited(2, f"{_OSO}megatron_colocate.sh:56"),
        "gpu_mem": Cited(0.80, f"{_OSO}megatron_colocate.sh:104"),
        "max_batched": Cited(2048 + 8192, f"{_OSO}megatron_colocate.sh:107 (prompt + response)"),
        "kl": Cited(False, f"{_OSO}megatron_colocate.sh:9,11 (use_kl_in_reward, use_kl_loss)"),
        "offload": Cited(True, f"{_OSO}megatron_colocate.sh:53"),
    },
    ("fsdp2", "4_12"): {
        "max_prompt": Cited(2048, f"{_OSO}fsdp2_4_12.sh:17"),
        "rollout_tp": Cited(2, f"{_OSO}fsdp2_4_12.sh:60"),
        "rollout_gpus": Cited(2 * 2, f"{_OSO}fsdp2_4_12.sh:33,36 (NNODES x n_gpus_rollout)"),
        "gpu_mem": Cited(0.80, f"{_OSO}fsdp2_4_12.sh:103"),
        "max_batched": Cited(2048 + 8192, f"{_OSO}fsdp2_4_12.sh:106 (prompt + response)"),
        "kl": Cited(False, f"{_OSO}fsdp2_4_12.sh:9,11 (use_kl_in_reward, use_kl_loss)"),
        "recompute": Cited(True, f"{_VERL_DEFAULTS}:304 (enable_gradient_checkpointing)"),
        "offload": Cited(False, f"{_OSO}fsdp2_4_12.sh:59 (actor_offload)"),
        "use_dynamic_bsz": Cited(True, f"{_OSO}fsdp2_4_12.sh:55"),
        "use_remove_padding": Cited(True, f"{_OSO}fsdp2_4_12.sh:83"),
    },
    ("megatron", "4_12"): {
        "max_prompt": Cited(2048, f"{_OSO}megatron_4_12.sh:17"),
        "rollout_tp": Cited(2, f"{_OSO}megatron_4_12.sh:59"),
        "rollout_gpus": Cited(2 * 2, f"{_OSO}megatron_4_12.sh:34,37 (NNODES x n_gpus_rollout)"),
        "train_tp": Cited(2, f"{_OSO}megatron_4_12.sh:60"),
        "train_pp": Cited(2, f"{_OSO}megatron_4_12.sh:61"),
        "gpu_mem": Cited(0.80, f"{_OSO}megatron_4_12.sh:110"),
        "max_batched": Cited(2048 + 8192, f"{_OSO}megatron_4_12.sh:113 (prompt + response)"),
        "kl": Cited(False, f"{_OSO}megatron_4_12.sh:9,11 (use_kl_in_reward, use_kl_loss)"),
        "offload": Cited(False, f"{_OSO}megatron_4_12.sh:58 (actor_offload)"),
    },
}

# The one-step-off README's runs were made with the veRL of the recipe's first commit
# (503ea75f5, 2025-07-16): the scripts set no enforce_eager, and veRL's rollout default was
# true until #2956 (2025-08-08, released in v0.6.0): vLLM ran eager.
_OSO_EAGER = Cited(True, "volcengine/verl@503ea75f5 verl/trainer/config/_generated_ppo_"
                         "trainer.yaml:88 (rollout.enforce_eager true when the README's runs "
                         "were made; the recipe's scripts do not set it)")
# Its engines also ran veRL's rollout.max_num_seqs of that day, 1024 (256 since #4280,
# 2026-01-24).
_OSO_SEQS = Cited(1024, "volcengine/verl@503ea75f5 verl/trainer/config/_generated_ppo_"
                        "trainer.yaml:93 (rollout.max_num_seqs when the README's runs were "
                        "made; the scripts do not set it)")
for _script in VERL_SCRIPTS.values():
    _script["enforce_eager"] = _OSO_EAGER
    _script["max_num_seqs"] = _OSO_SEQS

# veRL's fully_async launch scripts (verl/experimental/fully_async_policy/shell/), the
# companions of docs/advance/fully_async.md's 7B table (16:16, 32:32, 64:64 rollout:trainer
# GPUs); one per split, identical but for NNODES_ROLLOUT / NNODES_TRAIN (lines 64-65).
# Megatron's hybrid CPU optimizer in veRL runs whose records state `optimizer_offload` by
# quoting `optimizer_cpu_offload=True`: that key is Megatron-Core's CPU optimizer
# (train.optimizer_offload_fraction), not veRL's megatron.optimizer_offload. Per record: the
# share on the CPU, whether its copies overlap, and veRL's own optimizer_offload.
VERL_CPU_OPTIMIZER: dict[str, dict[str, Cited]] = {
    "verl-dpsk-doc-deepseek-v3-grpo-96xH20-megatron": {
        "optimizer_offload_fraction": Cited(1.0, f"{VERL}docs/perf/dpsk.md:42 (96 GPUs: "
                                                 "OFFLOAD_FRACTION 1.)"),
        "optimizer_offload": Cited(False, f"{VERL}docs/perf/dpsk.md:42 (96 GPUs: "
                                          "OFFLOAD_OPTIM False)"),
        "overlap_cpu_optimizer_d2h_h2d": Cited(
            True, "volcengine/verl@e2e4c35ecb6ede3e3fb23fafc44061bf31b54f37 "
                  "examples/grpo_trainer/run_deepseek671b_math_megatron_96gb.sh:114"),
    },
}

# vLLM's engine loop where a run's own log shows it (rollout.vllm_v0): the play-verl runs on
# vLLM 0.8.3 set VLLM_ATTENTION_BACKEND=XFORMERS, which V1 does not support, so their 0.5B
# runs fell back to V0, run eager, so without async output processing (the next log line:
# "Since, enforce-eager is enabled, async output processor cannot be used"); their 7B
# runs' workers are V1's (vllm.v1.worker.gpu_worker.Worker).
_PLAYVERL = "dingxianzhong/play-verl@7716a615fc4b68961f2bb7716c9aadcd65ca28d2 logs/"
VLLM_V0: dict[str, Cited] = {
    "playverl-log-qwen2.5-0.5b-grpo-gsm8k-8xH100": Cited(
        True, f"{_PLAYVERL}verl_grpo_qwen2.5b_8gpu.log:264-265 (\"Falling back to V0\"; "
               "\"async output processor cannot be used\")"),
    "playverl-log-qwen2.5-0.5b-ppo-gsm8k-8xH100": Cited(
        True, f"{_PLAYVERL}verl_ppo_qwen2.5b_8gpu.log:247-248 (\"Falling back to V0\"; "
               "\"async output processor cannot be used\")"),
    "playverl-log-qwen2-7b-ppo-gsm8k-min-8xH100": Cited(
        False, f"{_PLAYVERL}verl_qwen2_7b_min.log:285 (vllm.v1.worker.gpu_worker.Worker)"),
    "playverl-log-qwen2-7b-ppo-gsm8k-recommended-8xH100": Cited(
        False, f"{_PLAYVERL}verl_qwen2_7b_recommended.log:283 "
               "(vllm.v1.worker.gpu_worker.Worker)"),
}

_FA = "verl/experimental/fully_async_policy/shell/dapo_7b_math_fsdp2_"
FA_RESPONSE_CAP = 1024 * 28


def _fully_async_script(split: str, nodes: int) -> dict[str, Cited]:
    f = f"{_FA}{split}.sh"
    return {
        "max_prompt": Cited(2048, f"{f}:38"),
        "rollout_tp": Cited(4, f"{f}:59,121 (gen_tp)"),
        "rollout_gpus": Cited(nodes * 8, f"{f}:64,66 (NNODES_ROLLOUT x NGPUS_PER_NODE)"),
        "gpu_mem": Cited(0.80, f"{f}:120"),
        "max_batched": Cited(2048 + FA_RESPONSE_CAP, f"{f}:123 (prompt + response)"),
        "kl": Cited(False, f"{f}:29,31 (use_kl_in_reward, use_kl_loss)"),
        "recompute": Cited(True, f"{_VERL_DEFAULTS}:304 (enable_gradient_checkpointing)"),
        "offload": Cited(False, f"{f}:58 (actor_offload)"),
        "use_dynamic_bsz": Cited(True, f"{f}:54"),
        "use_remove_padding": Cited(True, f"{f}:100"),
        # fully_async.md's runs were made at the recipe's first commit (b25bb7d4f,
        # 2025-10-17), whose veRL ran rollout.max_num_seqs 1024 (the scripts do not set it)
        "max_num_seqs": Cited(1024, "volcengine/verl@b25bb7d4f verl/trainer/config/"
                                    "_generated_ppo_trainer.yaml:183"),
        # The trainer takes the rollout's log-probs: no old-log-prob pass (the doc's '\').
        "old_logprob": Cited(False, f"{f}:162 (async_training.use_rollout_log_probs=True)"),
    }


# The doc's colocated sync rows name no script. Estimate, stated as such: the fully_async
# scripts' settings (same doc, model, lengths and data) with what colocation changes taken
# from the one-step-off colocate script (actor offload on).
_FA_COLOCATE = {k: v for k, v in _fully_async_script("16_16", 2).items()
                if k not in ("rollout_gpus", "offload", "old_logprob")}
_FA_COLOCATE["offload"] = Cited(True, f"{_OSO}fsdp2_colocate.sh:52 (offload; no colocate "
                                      "script for fully_async.md's sync rows: estimate)")
VERL_SCRIPTS.update({
    ("fsdp2", "fa_colocate"): _FA_COLOCATE,
    ("fsdp2", "fa_16_16"): _fully_async_script("16_16", 2),
    ("fsdp2", "fa_32_32"): _fully_async_script("32_32", 4),
    ("fsdp2", "fa_64_64"): _fully_async_script("64_64", 8),
})

# veRL defaults that changed between releases: name -> ((first release, value), ...),
# newest first; a record that states its veRL version takes that release's default, one
# that does not takes veRL at VERL's (VERL_COMMON). Each value cites the file and line at
# the release tag.
VERL_RELEASE_DEFAULTS: dict[str, tuple[tuple[tuple[int, int, int], Cited], ...]] = {
    "enforce_eager": (
        ((0, 6, 0), Cited(False, "volcengine/verl@v0.6.0 verl/trainer/config/_generated_ppo_"
                                 "trainer.yaml:174 (rollout.enforce_eager; #2956)")),
        ((0, 0, 0), Cited(True, "volcengine/verl@v0.5.0 verl/trainer/config/_generated_ppo_"
                                "trainer.yaml:88 (rollout.enforce_eager, true up to v0.5.x)")),
    ),
    # 256 since #4280 (2026-01-24), after v0.7.0: a later release is taken to have it
    "max_num_seqs": (
        ((0, 7, 1), Cited(256, f"{VERL}{_VERL_DEFAULTS}:212 (rollout.max_num_seqs; #4280)")),
        ((0, 0, 0), Cited(1024, "volcengine/verl@v0.7.0 verl/trainer/config/_generated_ppo_"
                                "trainer.yaml:209; v0.5.0 :93 (rollout.max_num_seqs, 1024 up "
                                "to v0.7.0)")),
    ),
    "use_remove_padding": (
        ((0, 7, 0), Cited(True, "volcengine/verl@v0.7.0 verl/trainer/config/_generated_ppo_"
                                "trainer.yaml:296 (model.use_remove_padding)")),
        ((0, 0, 0), Cited(False, "volcengine/verl@v0.6.0 verl/trainer/config/model/hf_model."
                                 "yaml:40; v0.5.0 verl/trainer/config/ppo_trainer.yaml:68 "
                                 "(model.use_remove_padding, false up to v0.6.x)")),
    ),
}


# Hugging Face name -> rlsim catalogue name, only where the architecture is the same
# (config.json: layers, hidden, heads, kv heads, ffn, vocab). A name not here, or whose
# catalogue entry rlsim does not have yet, is reported "model missing", never guessed.
MODEL_NAMES: dict[str, Cited] = {
    # Qwen2.5-Math-7B has Qwen2.5-7B's architecture (28 layers, hidden 3584, 28/4 heads,
    # ffn 18944, vocab 152064); its config's 4096-token context is overridden by the veRL
    # scripts (override_config.max_position_embeddings=32768, fsdp2_colocate.sh:79).
    "Qwen/Qwen2.5-Math-7B": Cited("qwen2.5-7b", "huggingface.co/Qwen/Qwen2.5-Math-7B config.json"),
    "Qwen/Qwen2.5-0.5B-Instruct": Cited("qwen2.5-0.5b", "same architecture as the base model"),
    "Qwen/Qwen2.5-3B-Instruct": Cited("qwen2.5-3b", "same architecture as the base model"),
    "Qwen/Qwen2.5-3B": Cited("qwen2.5-3b", "rlsim catalogue"),
    "meta-llama/Llama-3.1-8B-Instruct": Cited("llama-3.1-8b", "same architecture as the base"),
    "Qwen/Qwen3-8B": Cited("qwen3-8b", "rlsim catalogue"),
    "Qwen/Qwen3-14B": Cited("qwen3-14b", "rlsim catalogue"),
    "Qwen/Qwen3-32B": Cited("qwen3-32b", "rlsim catalogue"),
    # MoE models: catalogue names of issue 19's Helper A; "model missing" until they exist.
    "Qwen/Qwen3-30B-A3B": Cited("qwen3-30b-a3b", "issue 19 catalogue"),
    "Qwen/Qwen3-235B-A22B": Cited("qwen3-235b-a22b", "issue 19 catalogue"),
    # The BF16 export of DeepSeek-V3-0324 (same architecture as DeepSeek-V3).
    "unsloth/DeepSeek-V3-0324-BF16": Cited("deepseek-v3", "issue 19 catalogue"),
}

# ---------------------------------------------------------------- round 2 of issue 19
# The framework-layer fields (trainer backend and batching, engine switches, weight-sync
# scheme) for the same runs; same commits, same rule: the run's own config, cited.

# NeMo-RL's trainer batching per recipe (paths as in NEMO_RL_RECIPES): backend
# (policy.megatron_cfg.enabled with dtensor_cfg.enabled false: Megatron-Core; DTensor would
# be FSDP2-like), train_gbs (policy.train_global_batch_size, samples per optimizer step),
# train_mbs (train_micro_batch_size) and logprob_mbs (logprob_batch_size): with sequence
# packing on (NEMO_RL_COMMON) a micro-batch packs max_total_sequence_length x mbs tokens.
NEMO_RL_BATCHING: dict[str, dict[str, Cited]] = {
    "grpo-llama3.1-8b-instruct-2n8g.yaml": {
        "backend": Cited("megatron", "grpo-llama3.1-8b-instruct-2n8g.yaml:21,23"),
        "train_gbs": Cited(2048, "grpo-llama3.1-8b-instruct-2n8g.yaml:13"),
        "train_mbs": Cited(1, "grpo-llama3.1-8b-instruct-2n8g.yaml:16"),
        "logprob_mbs": Cited(2, "grpo-llama3.1-8b-instruct-2n8g.yaml:17"),
    },
    "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml": {
        "backend": Cited("megatron", "grpo-llama3.1-8b-instruct-2n8g.yaml:21,23"),
        "train_gbs": Cited(2048, "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml:13"),
        "train_mbs": Cited(1, "grpo-llama3.1-8b-instruct-2n8g.yaml:16"),
        "logprob_mbs": Cited(2, "grpo-llama3.1-8b-instruct-2n8g.yaml:17"),
    },
    "grpo-qwen3-32b-4n8g.yaml": {
        "backend": Cited("megatron", "grpo-qwen3-32b-4n8g.yaml:17,22"),
        "train_gbs": Cited(2048, "grpo-qwen3-32b-4n8g.yaml:12"),
        "train_mbs": Cited(1, "grpo-qwen3-32b-4n8g.yaml:13"),
        "logprob_mbs": Cited(4, "grpo-qwen3-32b-4n8g.yaml:14"),
    },
    "grpo-qwen3-32b-8n8g-async-1off.yaml": {
        "backend": Cited("megatron", "grpo-qwen3-32b-4n8g.yaml:17,22"),
        "train_gbs": Cited(2048, "grpo-qwen3-32b-8n8g-async-1off.yaml:13"),
        "train_mbs": Cited(1, "grpo-qwen3-32b-4n8g.yaml:13"),
        "logprob_mbs": Cited(4, "grpo-qwen3-32b-4n8g.yaml:14"),
    },
    "grpo-qwen3-30ba3b-4n8g.yaml": {
        "backend": Cited("megatron", "grpo-qwen3-30ba3b-4n8g.yaml:19,24"),
        "train_gbs": Cited(2048, "grpo-qwen3-30ba3b-4n8g.yaml:12"),
        "train_mbs": Cited(1, "grpo-qwen3-30ba3b-4n8g.yaml:13"),
        "logprob_mbs": Cited(2, "grpo-qwen3-30ba3b-4n8g.yaml:14"),
    },
    "grpo-qwen3-30ba3b-4n8g-async-1off.yaml": {
        "backend": Cited("megatron", "grpo-qwen3-30ba3b-4n8g.yaml:19,24"),
        "train_gbs": Cited(2048, "grpo-qwen3-30ba3b-4n8g-async-1off.yaml:13"),
        "train_mbs": Cited(1, "grpo-qwen3-30ba3b-4n8g.yaml:13"),
        "logprob_mbs": Cited(2, "grpo-qwen3-30ba3b-4n8g.yaml:14"),
    },
    "grpo-qwen3-30ba3b-24n8g-async-8off.yaml": {
        "backend": Cited("megatron", "grpo-qwen3-30ba3b-4n8g.yaml:19,24"),
        "train_gbs": Cited(512, "grpo-qwen3-30ba3b-24n8g-async-8off.yaml:13"),
        "train_mbs": Cited(1, "grpo-qwen3-30ba3b-4n8g.yaml:13"),
        "logprob_mbs": Cited(2, "grpo-qwen3-30ba3b-4n8g.yaml:14"),
    },
    "grpo-deepseek-v3-32n8g.yaml": {
        "backend": Cited("megatron", "grpo-deepseek-v3-32n8g.yaml:22,24"),
        "train_gbs": Cited(512, "grpo_math_1B.yaml:132"),
        "train_mbs": Cited(1, "grpo-deepseek-v3-32n8g.yaml:15"),
        "logprob_mbs": Cited(1, "grpo-deepseek-v3-32n8g.yaml:16"),
    },
    "grpo-deepseek-v3-64n8g.yaml": {
        "backend": Cited("megatron", "grpo-deepseek-v3-32n8g.yaml:22,24"),
        "train_gbs": Cited(512, "grpo_math_1B.yaml:132"),
        "train_mbs": Cited(1, "grpo-deepseek-v3-32n8g.yaml:15"),
        "logprob_mbs": Cited(1, "grpo-deepseek-v3-32n8g.yaml:16"),
    },
    "grpo-qwen3-235b-16n8g.yaml": {
        "backend": Cited("megatron", "grpo-qwen3-235b-16n8g.yaml:24,26"),
        "train_gbs": Cited(512, "grpo_math_1B.yaml:132"),
        "train_mbs": Cited(1, "grpo-qwen3-235b-16n8g.yaml:17"),
        "logprob_mbs": Cited(1, "grpo-qwen3-235b-16n8g.yaml:18"),
    },
    "grpo-qwen3-235b-32n8g.yaml": {
        "backend": Cited("megatron", "grpo-qwen3-235b-16n8g.yaml:24,26"),
        "train_gbs": Cited(512, "grpo_math_1B.yaml:132"),
        "train_mbs": Cited(1, "grpo-qwen3-235b-16n8g.yaml:17"),
        "logprob_mbs": Cited(1, "grpo-qwen3-235b-16n8g.yaml:18"),
    },
}

# NeMo-RL settings no performance recipe overrides (grpo_math_1B.yaml at NEMO_RL's commit,
# and the code that reads them).
NEMO_RL_COMMON: dict[str, Cited] = {
    # force_on_policy_ratio's default, and the check that it needs one optimizer step per
    # RL step (train_global_batch_size == prompts x generations).
    "force_on_policy_default": Cited(False, "grpo_math_1B.yaml:103"),
    "force_on_policy_check": Cited(True, "nemo_rl/algorithms/grpo.py:700-706"),
    "sequence_packing": Cited(True, "grpo_math_1B.yaml:332 (policy.sequence_packing.enabled; "
                                    "train_mb_tokens = max_total_sequence_length x "
                                    "train_micro_batch_size, :333-334)"),
    "dynamic_batching": Cited(False, "grpo_math_1B.yaml:326"),
    # activation_checkpointing true -> recompute_granularity "full" (grpo_math_1B.yaml:209),
    # method uniform, 1 layer per checkpoint (nemo_rl/models/megatron/setup.py:1071-1076).
    "recompute_granularity": Cited("full", "grpo_math_1B.yaml:209; "
                                           "nemo_rl/models/megatron/setup.py:1071-1076"),
    "enforce_eager": Cited(False, "grpo_math_1B.yaml:424 (vllm_cfg.enforce_eager)"),
    "precision": Cited("bf16", "grpo_math_1B.yaml:137,413 (policy.precision bfloat16)"),
    "kv_cache_dtype": Cited("auto", "grpo_math_1B.yaml:414"),
    "rollout_ep": Cited(1, "grpo_math_1B.yaml:418 (vllm_cfg.expert_parallel_size)"),
    "sleep_level": Cited(1, "nemo_rl/models/generation/vllm/vllm_worker.py:1309 "
                            "(llm.sleep(level=1))"),
    # Colocated refit: CUDA-IPC buckets of 0.3 x the trainer's free GPU memory at refit
    # time (nemo_rl/algorithms/grpo.py:2356-2364), a run-time figure rlsim cannot know.
    "colocated_refit": Cited("bucketed", "nemo_rl/algorithms/grpo.py:2354-2385 "
                                         "(stream_weights_via_ipc_zmq)"),
    # The refit's sender: every training rank exports every full tensor through
    # Megatron-Bridge (PP broadcast, TP / EP all-gathers) and, colocated, hands its buffer
    # to the vLLM worker on its own GPU by CUDA IPC, export and load overlapped by two
    # buffers (rlsim weight_sync.framework nemo_rl, docs/cost-model.md).
    "refit_framework": Cited("nemo_rl", "nemo_rl/models/policy/workers/"
                                        "megatron_policy_worker.py:2350 (export_hf_weights); "
                                        "nemo_rl/models/policy/utils.py:361-377 (ping-pong)"),
    # One ping-pong buffer is 0.3 x free memory / 2 at refit time (grpo.py:2361,
    # utils.py:377); the one measured figure is DeepSeek-V3's on H100, 1.65 GiB (utils.py:453).
    "colocated_bucket_bytes": Cited(int(1.65 * 2**30), "nemo_rl/models/policy/utils.py:453 "
                                    "(DeepSeek-V3 on H100: a 1.65 GiB buffer; 0.3 x free "
                                    "memory / 2, grpo.py:2361, utils.py:377)"),
    # Disaggregated refit: NCCL packed broadcast in buckets of min(0.02 x GPU memory, 5 GiB).
    "collective_refit": Cited("bucketed", "nemo_rl/algorithms/grpo.py:2396-2399; "
                                          "nemo_rl/utils/packed_tensor.py:24-30"),
    "collective_bucket_fraction": Cited(0.02, "nemo_rl/utils/packed_tensor.py:25"),
    "collective_bucket_max_bytes": Cited(5 * 2**30, "nemo_rl/utils/packed_tensor.py:30"),
}

# veRL's one-step-off scripts again, the framework-layer knobs (same keys as VERL_SCRIPTS).
VERL_BATCHING: dict[tuple[str, str], dict[str, Cited]] = {
    ("fsdp2", "colocate"): {
        "backend": Cited("fsdp2", f"{_OSO}fsdp2_colocate.sh:71"),
        "cp": Cited(4, f"{_OSO}fsdp2_colocate.sh:54,97 (ulysses_sequence_parallel_size)"),
        "mini": Cited(32, f"{_OSO}fsdp2_colocate.sh:27,91"),
        "max_token_len": Cited((2048 + 8192) * 2, f"{_OSO}fsdp2_colocate.sh:50,83"),
        "log_prob_max_token_len": Cited((2048 + 8192) * 3, f"{_OSO}fsdp2_colocate.sh:51,85"),
        "fsdp_size": Cited(2, f"{_OSO}fsdp2_colocate.sh:55,113"),
        "param_offload": Cited(True, f"{_OSO}fsdp2_colocate.sh:52,92"),
        "optimizer_offload": Cited(True, f"{_OSO}fsdp2_colocate.sh:52,93"),
        "recompute": Cited("full", f"{_OSO}fsdp2_colocate.sh:87 "
                                   "(enable_gradient_checkpointing)"),
    },
    ("megatron", "colocate"): {
        "backend": Cited("megatron", f"{_OSO}megatron_colocate.sh:80"),
        "mini": Cited(32, f"{_OSO}megatron_colocate.sh:27,95"),
        "micro": Cited(2, f"{_OSO}megatron_colocate.sh:88 (dynamic bsz commented out, :58-64)"),
        "log_prob_micro": Cited(4, f"{_OSO}megatron_colocate.sh:90"),
        "param_offload": Cited(True, f"{_OSO}megatron_colocate.sh:53,96"),
        "optimizer_offload": Cited(True, f"{_OSO}megatron_colocate.sh:53,97"),
        "grad_offload": Cited(True, f"{_OSO}megatron_colocate.sh:53,98"),
        "recompute": Cited("none", "verl/trainer/config/_generated_ppo_megatron_trainer.yaml:48 "
                                   "(override_transformer_config.recompute_granularity: null)"),
    },
    ("fsdp2", "4_12"): {
        "backend": Cited("fsdp2", f"{_OSO}fsdp2_4_12.sh:76"),
        "cp": Cited(4, f"{_OSO}fsdp2_4_12.sh:61,102 (ulysses_sequence_parallel_size)"),
        "mini": Cited(32, f"{_OSO}fsdp2_4_12.sh:27,96"),
        "max_token_len": Cited((2048 + 8192) * 2, f"{_OSO}fsdp2_4_12.sh:56,89"),
        "log_prob_max_token_len": Cited((2048 + 8192) * 3, f"{_OSO}fsdp2_4_12.sh:57,91"),
        "fsdp_size": Cited(2, f"{_OSO}fsdp2_4_12.sh:62,118"),
        "param_offload": Cited(False, f"{_OSO}fsdp2_4_12.sh:59,97"),
        "optimizer_offload": Cited(False, f"{_OSO}fsdp2_4_12.sh:59,98"),
        "recompute": Cited("full", f"{_VERL_DEFAULTS}:304 (enable_gradient_checkpointing)"),
    },
    ("megatron", "4_12"): {
        "backend": Cited("megatron", f"{_OSO}megatron_4_12.sh:85"),
        "mini": Cited(32, f"{_OSO}megatron_4_12.sh:27,101"),
        "micro": Cited(2, f"{_OSO}megatron_4_12.sh:94 (dynamic bsz commented out, :63-69)"),
        "log_prob_micro": Cited(4, f"{_OSO}megatron_4_12.sh:96"),
        "param_offload": Cited(False, f"{_OSO}megatron_4_12.sh:58,102"),
        "optimizer_offload": Cited(False, f"{_OSO}megatron_4_12.sh:58,103"),
        "grad_offload": Cited(False, f"{_OSO}megatron_4_12.sh:58,104"),
        "recompute": Cited("none", "verl/trainer/config/_generated_ppo_megatron_trainer.yaml:48 "
                                   "(override_transformer_config.recompute_granularity: null)"),
    },
}

def _fully_async_batching(split: str, offload: bool, where: str) -> dict[str, Cited]:
    f = f"{_FA}{split}.sh"
    return {
        "backend": Cited("fsdp2", f"{f}:93 (actor.strategy)"),
        "cp": Cited(4, f"{f}:60,119 (ulysses_sequence_parallel_size)"),
        "mini": Cited(32, f"{f}:71,113"),
        "max_token_len": Cited((2048 + FA_RESPONSE_CAP) * 2, f"{f}:55,106"),
        "log_prob_max_token_len": Cited((2048 + FA_RESPONSE_CAP) * 3, f"{f}:56,107"),
        "fsdp_size": Cited(8, f"{f}:61,134"),
        "param_offload": Cited(offload, where),
        "optimizer_offload": Cited(offload, where),
        "recompute": Cited("full", f"{_VERL_DEFAULTS}:304 (enable_gradient_checkpointing)"),
    }


VERL_BATCHING.update({
    ("fsdp2", "fa_colocate"): _fully_async_batching(
        "16_16", True, f"{_OSO}fsdp2_colocate.sh:52 (no colocate script for fully_async.md's "
                       "sync rows: estimate)"),
    **{("fsdp2", f"fa_{s}"): _fully_async_batching(s, False, f"{_FA}{s}.sh:58,114-115")
       for s in ("16_16", "32_32", "64_64")},
})

# veRL engine and weight-sync defaults (same for the FSDP and Megatron generated configs).
VERL_COMMON: dict[str, Cited] = {
    "enforce_eager": Cited(False, f"{_VERL_DEFAULTS}:203 (rollout.enforce_eager)"),
    "precision": Cited("bf16", f"{_VERL_DEFAULTS}:200 (rollout.dtype bfloat16)"),
    "kv_cache_dtype": Cited("auto", "not set by veRL: vLLM's EngineArgs.kv_cache_dtype "
                                    "default 'auto'"),
    "rollout_ep": Cited(1, f"{_VERL_DEFAULTS}:208 (rollout.expert_parallel_size)"),
    "ppo_epochs": Cited(1, f"{_VERL_DEFAULTS}:79"),
    "use_remove_padding": Cited(True, f"{_VERL_DEFAULTS}:306 (model.use_remove_padding)"),
    "max_num_seqs": Cited(256, f"{_VERL_DEFAULTS}:212 (actor_rollout_ref.rollout.max_num_seqs)"),
    # Colocated (hybrid engine): bucketed, update_weights_bucket_megabytes 2048.
    "bucketed": Cited("bucketed", "verl/workers/rollout/vllm_rollout/vllm_rollout.py:156"),
    "bucket_bytes": Cited(2048 * 2**20, f"{_VERL_DEFAULTS}:265 "
                                        "(checkpoint_engine.update_weights_bucket_megabytes)"),
    # Hybrid engine sleeps its vLLM at level 2 (async server, the default rollout.mode).
    "sleep_level": Cited(2, "verl/workers/rollout/vllm_rollout/vllm_async_server.py:567-569; "
                            f"{_VERL_DEFAULTS}:194 (rollout.mode async)"),
    # One-step-off: one NCCL broadcast per tensor from rank 0 (fsdp_workers.py:88-101,
    # megatron_workers.py:85-99).
    "broadcast": Cited("broadcast", "verl/experimental/one_step_off_policy/fsdp_workers.py:"
                                    "88-101, megatron_workers.py:85-99"),
}
