"""Mixture-of-experts and multi-head latent attention in `ModelSpec`, FP8 peaks in `GpuSpec`:
parameter counts against the published totals, KV bytes per token, closed forms on toy
models, bad input naming the field, and a MoE model file."""

from __future__ import annotations

import pytest
import yaml
from pydantic import ValidationError

from rlsim.config.hardware import (
    GPUS,
    MODELS,
    MlaSpec,
    ModelFileError,
    ModelSpec,
    MoeSpec,
    load_model_file,
)

# Published totals (model cards): Qwen3-30B-A3B 30.5B / 3.3B activated, Qwen3-235B-A22B
# 235B / 22B, DeepSeek-V3 671B / 37B (main model; its MTP module is 14B more).
PUBLISHED = {
    "qwen3-30b-a3b": (30.5e9, 3.3e9),
    "qwen3-235b-a22b": (235e9, 22e9),
    "deepseek-v3": (671e9, 37e9),
}

# Models whose cards give only a rounded or name-level active count: the total is held
# to 2%; rlsim's active count (matmul weights plus the input embedding a token reads) sits
# above the name's figure, by the amounts docs/models.md explains.
PUBLISHED_TOTAL = {
    # name: (published total, name's active figure, rlsim's active within 1%)
    "granite-3.1-3b-a800m": (3.3e9, 0.8e9, 0.883e9),
    "minimax-m2.5": (229e9, 10e9, 11.03e9),
    "glm-4.7-flash": (30e9, 3e9, 3.897e9),
}

TOY = {"name": "toy", "layers": 4, "hidden": 64, "heads": 4, "kv_heads": 2, "ffn": 256,
       "vocab": 1000}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_moe_parameter_counts_match_the_published_totals(name: str) -> None:
    total, active = PUBLISHED[name]
    model = MODELS[name]
    assert model.params == pytest.approx(total, rel=0.02)
    assert model.active_params == pytest.approx(active, rel=0.02)
    assert model.weight_bytes(2) == 2 * model.params  # memory holds every expert


@pytest.mark.parametrize("name", sorted(PUBLISHED_TOTAL))
def test_engine_point_models_match_their_published_totals(name: str) -> None:
    total, named_active, active = PUBLISHED_TOTAL[name]
    model = MODELS[name]
    assert model.params == pytest.approx(total, rel=0.02)
    assert model.active_params == pytest.approx(active, rel=0.01)
    assert named_active < model.active_params < 1.35 * named_active


def test_glm_4_7_flash_is_mla_with_one_dense_layer() -> None:
    model = MODELS["glm-4.7-flash"]
    assert (model.moe_layers, model.dense_layers) == (46, 1)
    assert model.kv_elements_per_token_layer == 512 + 64  # the MLA latent and rope key
    assert model.dim_head == 192 + 64


def test_deepseek_v3_activated_excludes_the_input_embedding() -> None:
    # DeepSeek's weight notes: 36.6B activated "including 0.9B for the output head", i.e. the
    # matmul parameters (the input embedding is a lookup, not a matmul).
    model = MODELS["deepseek-v3"]
    assert model.matmul_params == pytest.approx(36.6e9, rel=0.005)
    assert model.active_params - model.matmul_params == model.vocab * model.hidden + model.hidden


def test_deepseek_v3_structure() -> None:
    model = MODELS["deepseek-v3"]
    assert (model.moe_layers, model.dense_layers) == (58, 3)
    assert model.expert_params == 3 * 7168 * 2048
    assert model.expert_bytes(1) == 3 * 7168 * 2048  # FP8 weights: one byte each
    assert model.dim_head == 128 + 64  # query/key head width: nope + rope


def test_mla_kv_bytes_per_token_is_latent_plus_rope_key() -> None:
    model = MODELS["deepseek-v3"]
    assert model.kv_elements_per_token_layer == 512 + 64
    assert model.kv_bytes_per_token(2) == 61 * (512 + 64) * 2
    assert model.kv_bytes_per_token(1) == 61 * (512 + 64)  # an FP8 KV cache


def test_gqa_kv_bytes_per_token() -> None:
    model = MODELS["qwen3-30b-a3b"]  # 4 KV heads of 128
    assert model.kv_bytes_per_token(2) == 2 * 48 * 4 * 128 * 2
    assert MODELS["qwen3-235b-a22b"].kv_bytes_per_token(2) == 2 * 94 * 4 * 128 * 2


def test_moe_closed_form_on_a_toy_model() -> None:
    moe = MoeSpec(experts=8, experts_per_token=2, expert_ffn=32, shared_experts=1,
                  shared_expert_ffn=48, dense_layers=1)
    model = ModelSpec(**TOY, moe=moe)
    dense = ModelSpec(**TOY)
    h = 64
    attn = h * (64 + 2 * 32) + 64 * h  # q, k, v (2 KV heads of 16), o
    expert = 3 * h * 32
    shared = 3 * h * 48
    router = h * 8
    moe_layer = attn + router + 8 * expert + shared + 2 * h
    moe_active = attn + router + 2 * expert + shared + 2 * h
    embed = 2 * 1000 * h
    assert model.attn_params == attn
    assert model.expert_params == expert
    assert model.layer_params == dense.layer_params == attn + 3 * h * 256 + 2 * h
    assert model.params == dense.layer_params + 3 * moe_layer + embed + h
    assert model.active_params == dense.layer_params + 3 * moe_active + embed + h
    assert model.matmul_params == dense.layer_params + 3 * moe_active + 1000 * h
    assert model.moe_layers == 3


def test_shared_expert_width_defaults_to_the_routed_one() -> None:
    assert MoeSpec(experts=4, experts_per_token=1, expert_ffn=32,
                   shared_experts=2).shared_ffn == 32


def test_dense_models_keep_their_counts() -> None:
    model = MODELS["qwen2.5-7b"]
    assert model.moe is None and model.mla is None
    assert model.active_params == model.params
    assert (model.moe_layers, model.expert_params, model.expert_bytes()) == (0, 0, 0.0)
    assert model.matmul_params == model.layers * model.layer_params + model.vocab * model.hidden
    assert model.kv_bytes_per_token() == 2 * 28 * 4 * 128 * 2


def test_mla_closed_form_on_a_toy_model() -> None:
    mla = MlaSpec(q_lora_rank=16, kv_lora_rank=8, qk_nope_head_dim=6, qk_rope_head_dim=2,
                  v_head_dim=4)
    model = ModelSpec(**{**TOY, "kv_heads": 4}, mla=mla)
    h, n = 64, 4
    q = h * 16 + 16 + 16 * n * 8
    kv = h * (8 + 2) + 8 + 8 * n * (6 + 4)
    o = n * 4 * h
    assert model.attn_params == q + kv + o
    assert model.kv_bytes_per_token(2) == 4 * (8 + 2) * 2
    no_q_lora = ModelSpec(**{**TOY, "kv_heads": 4},
                          mla=mla.model_copy(update={"q_lora_rank": None}))
    assert no_q_lora.attn_params == h * n * 8 + kv + o


@pytest.mark.parametrize(("moe", "field"), [
    ({"experts": 4, "experts_per_token": 5, "expert_ffn": 8}, "moe.experts_per_token"),
    ({"experts": 4, "experts_per_token": 1, "expert_ffn": 8, "dense_layers": 5},
     "moe.dense_layers"),
    ({"experts": 0, "experts_per_token": 1, "expert_ffn": 8}, "experts"),
    ({"experts": 4, "experts_per_token": 1, "expert_ffn": 8, "shared_experts": -1},
     "shared_experts"),
    ({"experts": 4, "experts_per_token": 1, "expert_ffn": 8, "capacity": 2}, "capacity"),
])
def test_bad_moe_names_the_field(moe: dict, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        ModelSpec(**TOY, moe=moe)
    assert field in str(err.value)


MLA = {"q_lora_rank": 16, "kv_lora_rank": 8, "qk_nope_head_dim": 6, "qk_rope_head_dim": 2,
       "v_head_dim": 4}


@pytest.mark.parametrize(("arch", "needle"), [
    ({"kv_heads": 2}, "with mla, kv_heads (2) must equal heads (4)"),
    ({"kv_heads": 4, "head_dim": 16}, "mla.qk_nope_head_dim + mla.qk_rope_head_dim (8)"),
    ({"kv_heads": 4, "mla": {**MLA, "kv_lora_rank": 0}}, "kv_lora_rank"),
])
def test_bad_mla_names_the_field(arch: dict, needle: str) -> None:
    with pytest.raises(ValidationError) as err:
        ModelSpec(**{**TOY, "mla": MLA, **arch})
    assert needle in str(err.value)


def test_moe_model_file_loads(tmp_path) -> None:
    arch = {"layers": 48, "hidden": 2048, "heads": 32, "kv_heads": 4, "head_dim": 128,
            "ffn": 6144, "vocab": 151936, "max_context": 40960,
            "moe": {"experts": 128, "experts_per_token": 8, "expert_ffn": 768}}
    path = tmp_path / "qwen3-30b-a3b.model.yaml"
    path.write_text(yaml.safe_dump(arch))
    spec = load_model_file(str(path))
    assert spec.moe == MODELS["qwen3-30b-a3b"].moe
    assert spec.params == MODELS["qwen3-30b-a3b"].params


def test_mla_model_file_errors_name_the_file_and_field(tmp_path) -> None:
    arch = {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 4, "ffn": 128, "vocab": 100,
            "mla": {**MLA, "kv_rank": 8}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(arch))
    with pytest.raises(ModelFileError, match=r"bad\.yaml.*mla\.kv_rank: unknown field"):
        load_model_file(str(path))
    arch = {**arch, "mla": MLA, "moe": {"experts": 2, "experts_per_token": 3, "expert_ffn": 8}}
    path.write_text(yaml.safe_dump(arch))
    with pytest.raises(ModelFileError, match=r"moe: moe\.experts_per_token \(3\) must be at most"):
        load_model_file(str(path))


def test_fp8_peaks_are_dense_and_absent_on_a100() -> None:
    assert GPUS["A100"].fp8_tflops is None
    for name in ("H100", "H800", "H200", "H20", "B200", "GB200", "MI300X"):
        gpu = GPUS[name]
        assert gpu.fp8_tflops == pytest.approx(2 * gpu.bf16_tflops, rel=0.001), name
    assert GPUS["H100"].fp8_tflops == 1979  # datasheet 3,958 with sparsity / 2


def test_new_gpus() -> None:
    b200, gb200, mi300x = GPUS["B200"], GPUS["GB200"], GPUS["MI300X"]
    assert b200.hbm == 183359 * 2**20 and b200.sm_count == 148 and b200.gpus_per_node == 8
    assert gb200.hbm == 189471 * 2**20 and gb200.sm_count == 152
    assert gb200.gpus_per_node == 72  # the NVL72 rack is one NVLink domain
    assert mi300x.hbm == 205822885888 and mi300x.sm_count == 304
    for gpu in (b200, gb200):
        assert gpu.nvlink_bandwidth == 1.8e12 and gpu.hbm_bandwidth == 8e12
