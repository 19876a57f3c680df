"""MoE and MLA inference: distinct experts touched, all-to-all volume, expert parallelism,
router imbalance, MLA KV and attention, and the scenario's rollout switches end to end."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import MlaSpec, ModelSpec, MoeSpec, lookup_gpu, lookup_model
from rlsim.config.loading import load_scenario
from rlsim.cost import InferenceCost, builtin_profile
from rlsim.cost.inference import (
    EngineOptions,
    all_to_all_s,
    expected_distinct_experts,
)
from rlsim.cost.network import nvlink_one_way_bytes_per_s
from tests.scenarios import tiny, write

# A toy MoE: 4 layers, the first dense, 8 experts of width 256, top-2, one shared expert.
TOY = ModelSpec(name="toy-moe", layers=4, hidden=512, heads=8, kv_heads=8, ffn=1024,
                vocab=1000, moe=MoeSpec(experts=8, experts_per_token=2, expert_ffn=256,
                                        shared_experts=1, dense_layers=1))


def cost(model: ModelSpec, gpu: str = "H100", tp: int = 1, **options: object) -> InferenceCost:
    g = lookup_gpu(gpu)
    return InferenceCost(model, g, tp, builtin_profile(g),
                         options=EngineOptions(**options))  # type: ignore[arg-type]


# ----- closed forms -----

def test_distinct_experts_closed_form_on_toy_numbers() -> None:
    # E (1 - (1 - k/E)^B): 4 experts, top-1, 2 tokens -> 4 (1 - 9/16) = 1.75.
    assert expected_distinct_experts(2, 4, 1) == pytest.approx(1.75, rel=1e-15)
    assert expected_distinct_experts(1, 128, 8) == pytest.approx(8.0, rel=1e-12)
    assert expected_distinct_experts(0, 128, 8) == 0.0
    assert expected_distinct_experts(5, 6, 6) == 6.0  # top-k = E touches every expert
    assert expected_distinct_experts(4096, 128, 8) == pytest.approx(128.0, rel=1e-12)


@pytest.mark.parametrize(("experts", "top_k", "tokens"), [(4, 2, 2), (5, 2, 3), (6, 3, 2)])
def test_distinct_experts_matches_exact_enumeration(experts: int, top_k: int,
                                                    tokens: int) -> None:
    """Every token picks one of the C(E, k) expert sets uniformly: enumerate all choices."""
    sets = list(itertools.combinations(range(experts), top_k))
    total = 0
    count = 0
    for choice in itertools.product(sets, repeat=tokens):
        total += len(set().union(*choice))
        count += 1
    assert expected_distinct_experts(tokens, experts, top_k) == pytest.approx(total / count,
                                                                              rel=1e-12)


def test_all_to_all_closed_form() -> None:
    # 8 MB per rank over 4 ranks at 100 GB/s: 3/4 of it leaves, plus 10 us.
    assert all_to_all_s(8e6, 4, 100e9, 10e-6) == pytest.approx(10e-6 + 0.75 * 8e6 / 100e9)
    assert all_to_all_s(8e6, 1, 100e9, 10e-6) == 0.0
    assert all_to_all_s(0.0, 4, 100e9, 10e-6) == 0.0


def test_ep_all_to_all_volume_is_tokens_times_topk_times_hidden() -> None:
    """EP adds a dispatch and a combine per MoE layer, each moving m/ep x k x hidden x 2
    bytes per GPU, (ep-1)/ep of it over NVLink."""
    model = lookup_model("qwen3-30b-a3b")
    g = lookup_gpu("H800")
    prof = builtin_profile(g)
    tp1 = cost(model, "H800", tp=4)
    ep4 = cost(model, "H800", tp=4, ep=4)
    bw = nvlink_one_way_bytes_per_s(g.nvlink_bandwidth) * prof.allreduce_bus_efficiency
    for m in (1, 64, 1024):
        a2a = all_to_all_s(m / 4 * 8 * model.hidden * 2, 4, bw, prof.allreduce_latency_s)
        extra = ep4.step(m, 0).comm_s - tp1.step(m, 0).comm_s
        assert extra == pytest.approx(model.moe_layers * 2 * a2a, rel=1e-9)


# ----- MoE layers -----

def test_batch_one_streams_only_the_topk_experts() -> None:
    """At one token a MoE decode reads the attention, router, shared and k experts' weights,
    not all experts: the linear time sits near the active weights' streaming time."""
    model = lookup_model("qwen3-30b-a3b")
    c = cost(model, "H800")
    g = lookup_gpu("H800")
    embed = model.vocab * model.hidden  # input embedding: no GEMM
    active_bytes = (model.matmul_params - model.vocab * model.hidden) * 2
    stream_s = active_bytes / (g.hbm_bandwidth * builtin_profile(g).hbm_efficiency)
    linear = c.step(1, 0).linear_s
    assert stream_s < linear < 2 * stream_s
    all_bytes = (model.params - 2 * embed) * 2
    assert linear < 0.2 * all_bytes / g.hbm_bandwidth
    # A large batch touches every expert: the weights streamed approach all of them.
    big = c.step(1024, 0).linear_s
    assert big > all_bytes / g.hbm_bandwidth


def test_moe_layer_is_dense_layer_when_one_expert_of_full_width() -> None:
    """One routed expert of width ffn, top-1, no shared: the MoE MLP is the dense MLP plus
    the router and top-k/sum kernels."""
    dense = ModelSpec(name="d", layers=2, hidden=512, heads=8, kv_heads=8, ffn=1024, vocab=1000)
    moe = dense.model_copy(update={"name": "m", "moe": MoeSpec(experts=1, experts_per_token=1,
                                                               expert_ffn=1024)})
    cd, cm = cost(dense), cost(moe)
    for m in (1, 37, 512):
        extra = cm.step(m, 0).linear_s - cd.step(m, 0).linear_s
        router = cm._gemm.time_s(m, 1, 512)
        assert extra == pytest.approx(2 * router, rel=1e-9, abs=1e-12)


def test_router_imbalance_stretches_expert_gemms_only_under_ep() -> None:
    model = lookup_model("qwen3-30b-a3b")
    g = lookup_gpu("H800")
    prof = builtin_profile(g)
    flat = prof.model_copy(update={"router_imbalance": 1.0})
    skew = prof.model_copy(update={"router_imbalance": 2.0})
    ep = EngineOptions(ep=4)

    def linear(p: object, options: EngineOptions, m: int) -> float:
        return InferenceCost(model, g, 4, p, options=options).step(m, 0).linear_s  # type: ignore[arg-type]

    for m in (256, 2048):
        assert linear(skew, ep, m) > linear(flat, ep, m)
        assert linear(skew, EngineOptions(), m) == linear(flat, EngineOptions(), m)


def test_moe_decode_stays_affine_and_weights_count_every_expert() -> None:
    c = cost(TOY, tp=2, ep=2)
    a_s, b_s = c.decode_affine(33)
    assert c.step(33, 98_765).total_s == pytest.approx(a_s + b_s * 98_765, rel=1e-12)
    assert c.weight_bytes_per_gpu() == TOY.params * 2 / 2
    # Layer identity: step = layers x layer_step_s + the once-per-iteration parts.
    once = c.step(33, 1000).total_s - TOY.layers * c.layer_step_s(33, 1000)
    assert 0 < once < c.step(33, 1000).total_s


def test_eager_counts_moe_kernels() -> None:
    eager = cost(TOY, tp=2, ep=2, cuda_graphs=False)
    launch = eager.profile.eager_launch_s
    attn = 2 + 2 + 1 + 1 + 1  # QKV+O, norms, rotary, KV write, all-reduce
    dense_mlp = 3 + 1
    moe_mlp = 7 + 1 + 2 + 3  # routed path, all-reduce, dispatch+combine, shared expert
    kernels = 4 * attn + 1 * dense_mlp + 3 * moe_mlp + 4 + 4  # + iteration + attention
    assert eager.eager_overhead_s(True, False) == pytest.approx(launch * kernels, rel=1e-12)


# ----- MLA -----

def test_mla_kv_is_the_latent_replicated_on_every_rank() -> None:
    model = lookup_model("deepseek-v3")
    for tp in (4, 8):
        c = cost(model, "H200", tp=tp, dtype="fp8")
        assert c.kv_bytes_per_token_per_gpu == model.layers * (512 + 64) * 2
    c8 = cost(model, "H200", tp=8, dtype="fp8", kv_cache_dtype="fp8")
    assert c8.kv_bytes_per_token_per_gpu == model.layers * (512 + 64)


def test_mla_decode_attention_slope() -> None:
    """Decode attention per KV token and layer: max(latent bytes / HBM, absorbed FLOPs /
    peak), FLOPs = 2 x heads/tp x (kv_lora + rope + kv_lora)."""
    model = lookup_model("deepseek-v3")
    g = lookup_gpu("H200")
    prof = builtin_profile(g)
    c = cost(model, "H200", tp=8, dtype="fp8")
    mem = 576 * 2 / (g.hbm_bandwidth * prof.decode_attention_hbm_efficiency)
    flops = 2 * 16 * (512 + 64 + 512) / (g.bf16_tflops * 1e12
                                         * prof.decode_attention_flops_efficiency)
    assert c.decode_affine(8)[1] == pytest.approx(model.layers * max(mem, flops), rel=1e-12)


def test_mla_toy_projections_priced() -> None:
    mla = ModelSpec(name="mla", layers=2, hidden=512, heads=8, kv_heads=8, ffn=1024,
                    vocab=1000, mla=MlaSpec(q_lora_rank=128, kv_lora_rank=64,
                                            qk_nope_head_dim=32, qk_rope_head_dim=16,
                                            v_head_dim=32))
    c = cost(mla)
    g = c._gemm.time_s
    m = 100
    mlp = g(m, 2048, 512) + c._act.time_s(m * 3 * 1024 * 2) + g(m, 512, 1024)
    projections = (g(m, 128, 512) + g(m, 8 * 48, 128) + g(m, 64 + 16, 512)
                   + g(m, 8 * 64, 64) + g(m, 512, 8 * 32))
    assert c.step(m, 0).linear_s == pytest.approx(2 * (projections + mlp), rel=1e-12)


# ----- bad input -----

@pytest.mark.parametrize(("model", "tp", "ep", "match"), [
    (lookup_model("qwen3-30b-a3b"), 4, 8, "ep=8 must divide the engine's 4 GPUs"),
    (ModelSpec(name="six", layers=2, hidden=512, heads=8, kv_heads=8, ffn=1024, vocab=1000,
               moe=MoeSpec(experts=6, experts_per_token=2, expert_ffn=256)),
     4, 4, "ep=4 must divide six's 6 routed experts"),
])
def test_ep_must_divide_gpus_and_experts(model: ModelSpec, tp: int, ep: int,
                                         match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cost(model, tp=tp, ep=ep)


# ----- scenario end to end -----

def _run(tmp_path: Path, **changes: object) -> float:
    scenario, _ = load_scenario(write(tmp_path, tiny(**changes)))
    return float(simulate(scenario, tmp_path).summary["phase_time_s"]["gen"])


def test_scenario_switches_move_generation_time(tmp_path: Path) -> None:
    base = _run(tmp_path, model="qwen2.5-7b")
    assert _run(tmp_path, model="qwen2.5-7b",
                rollout={"pool": "cluster", "tp": 1, "cuda_graphs": False}) > base
    # A 7B model streams 15 GB of weights per decode step: FP8 halves that. (On the 0.5B
    # tiny model FP8 gains nothing: its steps are kernel-launch bound, and the activation
    # quantization adds kernels.)
    assert _run(tmp_path, model="qwen2.5-7b",
                rollout={"pool": "cluster", "tp": 1, "dtype": "fp8",
                         "kv_cache_dtype": "fp8"}) < base


@pytest.mark.parametrize(("rollout", "pool_gpu", "field"), [
    ({"pool": "cluster", "tp": 1, "dtype": "fp8"}, "A100", "rollout.dtype"),
    ({"pool": "cluster", "tp": 1, "ep": 2}, "H100", "rollout.ep"),
])
def test_scenario_bad_options_name_the_field(tmp_path: Path, rollout: dict[str, object],
                                             pool_gpu: str, field: str) -> None:
    scenario, _ = load_scenario(write(tmp_path, tiny(
        rollout=rollout, pools=[{"name": "cluster", "gpu": pool_gpu, "nodes": 1}])))
    with pytest.raises(ScenarioError) as err:
        simulate(scenario, tmp_path)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_moe_scenario_runs(tmp_path: Path) -> None:
    gen = _run(tmp_path, model="qwen3-30b-a3b",
               pools=[{"name": "cluster", "gpu": "H100", "nodes": 4}],
               rollout={"pool": "cluster", "tp": 2, "ep": 2, "dtype": "fp8"},
               train={"pool": "cluster", "tp": 8, "ep": 8})
    assert math.isfinite(gen) and gen > 0
