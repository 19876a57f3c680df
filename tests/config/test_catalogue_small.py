"""The small dense catalogue models public RL runs train (Qwen3 0.6B-4B, Qwen2-7B, Qwen2.5-Math,
the DeepSeek-R1 Qwen distills, Llama 3.2): parameter counts from each architecture against
the published totals, and each model reached by its Hugging Face id through the importers'
resolver."""

from __future__ import annotations

import pytest

from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import MODELS, ModelSpec
from rlsim.importers.base import resolve_model

# Published totals and, where the card states it, the non-embedding count. Qwen3: the model
# cards ("Number of Parameters: 0.6B / 1.7B / 4.0B", non-embedding 0.44B / 1.4B / 3.6B).
# Qwen2-7B: its card's table (7.6B, 6.5B non-embedding). Llama 3.2: Meta's card (1.23B, 3.21B).
# The DeepSeek-R1 distills' names say 1.5B / 7B; the checkpoints hold 1.78B / 7.62B (Hugging
# Face's safetensors totals) because the 1.5B distill unties the embedding Qwen2.5-Math-1.5B
# ties, so the totals are the figures to hold. Qwen2.5-Math's cards state no count; their
# base models' cards (base_model: Qwen2.5-1.5B / Qwen2.5-7B, same tensors) say 1.54B / 7.61B
# (1.31B / 6.53B non-embedding), and the Math checkpoints' BF16 sizes (2.9 GiB, 14.2 GiB)
# agree.
PUBLISHED: dict[str, tuple[float, float | None]] = {
    "qwen3-0.6b": (0.6e9, 0.44e9),
    "qwen3-1.7b": (1.7e9, 1.4e9),
    "qwen3-4b": (4.0e9, 3.6e9),
    "qwen2-7b": (7.6e9, 6.5e9),
    "qwen2.5-math-1.5b": (1.54e9, 1.31e9),
    "qwen2.5-math-7b": (7.61e9, 6.53e9),
    "deepseek-r1-distill-qwen-1.5b": (1.78e9, None),
    "deepseek-r1-distill-qwen-7b": (7.62e9, None),
    "llama-3.2-1b": (1.23e9, None),
    "llama-3.2-3b": (3.21e9, None),
}

# Hugging Face ids (and the variants runs name) -> catalogue name.
HF_IDS = {
    "Qwen/Qwen3-0.6B": "qwen3-0.6b",
    "Qwen/Qwen3-1.7B": "qwen3-1.7b",
    "Qwen/Qwen3-4B": "qwen3-4b",
    "Qwen/Qwen2-7B": "qwen2-7b",
    "Qwen/Qwen2.5-Math-1.5B": "qwen2.5-math-1.5b",
    "Qwen/Qwen2.5-Math-7B": "qwen2.5-math-7b",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": "deepseek-r1-distill-qwen-1.5b",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": "deepseek-r1-distill-qwen-7b",
    "meta-llama/Llama-3.2-1B": "llama-3.2-1b",
    "meta-llama/Llama-3.2-1B-Instruct": "llama-3.2-1b",
    "meta-llama/Llama-3.2-3B-Instruct": "llama-3.2-3b",
    "/data/ckpt/Qwen3-4B/": "qwen3-4b",  # a local checkpoint directory
}


def _embedding_params(model: ModelSpec) -> int:
    return model.vocab * model.hidden * (1 if model.tied_embeddings else 2)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_count_matches_the_published_total(name: str) -> None:
    total, _ = PUBLISHED[name]
    model = MODELS[name]
    assert model.params == pytest.approx(total, rel=0.03)
    assert model.active_params == model.params  # dense
    assert model.weight_bytes(2) == 2 * model.params


@pytest.mark.parametrize("name", sorted(n for n, (_, non_emb) in PUBLISHED.items() if non_emb))
def test_non_embedding_count_matches_the_card(name: str) -> None:
    # Separates the tied from the untied count: the embedding of a 150k vocabulary is 8-25 %
    # of these models.
    non_embedding = PUBLISHED[name][1]
    model = MODELS[name]
    assert model.params - _embedding_params(model) == pytest.approx(non_embedding, rel=0.03)


def test_distill_unties_what_qwen2_5_math_1_5b_ties() -> None:
    math, distill = MODELS["qwen2.5-math-1.5b"], MODELS["deepseek-r1-distill-qwen-1.5b"]
    assert distill.params - math.params == math.vocab * math.hidden  # one more 151936 x 1536
    assert distill.kv_bytes_per_token() == math.kv_bytes_per_token()


def test_contexts_are_the_configs_max_position_embeddings() -> None:
    expect = {"qwen3-0.6b": 40960, "qwen3-1.7b": 40960, "qwen3-4b": 40960, "qwen2-7b": 131072,
              "qwen2.5-math-1.5b": 4096, "qwen2.5-math-7b": 4096,
              "deepseek-r1-distill-qwen-1.5b": 131072, "deepseek-r1-distill-qwen-7b": 131072,
              "llama-3.2-1b": 131072, "llama-3.2-3b": 131072}
    assert {name: MODELS[name].max_context for name in expect} == expect


def test_kv_bytes_per_token() -> None:
    # 2 (K, V) x layers x kv_heads x head_dim x 2 bytes
    assert MODELS["qwen3-4b"].kv_bytes_per_token() == 2 * 36 * 8 * 128 * 2
    assert MODELS["llama-3.2-1b"].kv_bytes_per_token() == 2 * 16 * 8 * 64 * 2
    assert MODELS["deepseek-r1-distill-qwen-7b"].kv_bytes_per_token() == 2 * 28 * 4 * 128 * 2


@pytest.mark.parametrize(("hf_id", "name"), sorted(HF_IDS.items()))
def test_resolves_by_hugging_face_id(hf_id: str, name: str) -> None:
    assert resolve_model(hf_id, "actor_rollout_ref.model.path") == name


def test_a_different_architecture_is_not_folded_into_a_catalogue_name() -> None:
    # Qwen3-4B-Instruct-2507 has a 262,144-token context (and another rope base): not qwen3-4b.
    with pytest.raises(ScenarioError) as err:
        resolve_model("Qwen/Qwen3-4B-Instruct-2507", "actor_rollout_ref.model.path")
    assert err.value.field == "actor_rollout_ref.model.path"
