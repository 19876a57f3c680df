"""InferenceCost: affine decode, attention/comm structure, KV capacity, start-up times."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.config.hardware import GpuSpec, lookup_gpu, lookup_model
from rlsim.cost import InferenceCost, StepCost, builtin_profile
from rlsim.cost.inference import EngineOptions

ENGINES = [
    ("H100", "llama-2-7b", 1), ("H800", "qwen2.5-7b", 1), ("H800", "qwen2.5-7b", 4),
    ("H800", "qwen2.5-3b", 8),
    ("H20", "qwen2.5-32b", 2), ("A100", "llama-3-70b", 8), ("H200", "qwen3-8b", 4),
]


def engine(gpu: str, model: str, tp: int) -> InferenceCost:
    g = lookup_gpu(gpu)
    return InferenceCost(lookup_model(model), g, tp, builtin_profile(g))


COSTS = [engine(*e) for e in ENGINES]


@settings(max_examples=300, deadline=None)
@given(idx=st.integers(0, len(COSTS) - 1), batch=st.integers(0, 4096),
       kv=st.integers(0, 10**9))
def test_decode_affine_is_exact(idx: int, batch: int, kv: int) -> None:
    cost = COSTS[idx]
    a_s, b_s = cost.decode_affine(batch)
    total = cost.step(batch, kv).total_s
    assert total == pytest.approx(a_s + b_s * kv, rel=1e-12, abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(idx=st.integers(0, len(COSTS) - 1), batch=st.integers(1, 2048),
       k1=st.integers(0, 10**8), k2=st.integers(0, 10**8))
def test_decode_step_is_a_line_in_kv_tokens(idx: int, batch: int, k1: int, k2: int) -> None:
    cost = COSTS[idx]
    t1, t2 = cost.step(batch, k1).total_s, cost.step(batch, k2).total_s
    _, b_s = cost.decode_affine(batch)
    assert t2 - t1 == pytest.approx(b_s * (k2 - k1), rel=1e-9, abs=1e-12)


def test_decode_attention_scales_with_kv_tokens() -> None:
    cost = engine("H800", "qwen2.5-7b", 1)
    base = cost.step(64, 0).attention_s
    one = cost.step(64, 64 * 1000).attention_s - base
    two = cost.step(64, 64 * 2000).attention_s - base
    assert one > 0
    assert two == pytest.approx(2 * one, rel=1e-12)
    # Memory-bound: 64k tokens of KV at 57,344 B/token within 50-100% of HBM bandwidth.
    gpu = lookup_gpu("H800")
    kv_bytes = 64 * 1000 * lookup_model("qwen2.5-7b").kv_bytes_per_token()
    assert kv_bytes / gpu.hbm_bandwidth < one < 2 * kv_bytes / gpu.hbm_bandwidth


def test_tp_allreduce_zero_at_tp1_and_positive_above() -> None:
    assert engine("H100", "qwen2.5-7b", 1).step(32, 32_000, 512).comm_s == 0.0
    assert engine("H100", "qwen2.5-7b", 2).step(32, 32_000, 512).comm_s > 0.0
    # More bytes, more time: a 4096-token prefill all-reduces more than one decode token.
    c = engine("H100", "qwen2.5-7b", 4)
    assert c.prefill(4096).comm_s > c.step(1, 100).comm_s > 0.0


def test_overhead_is_fixed_and_nonzero() -> None:
    c = engine("H100", "qwen2.5-7b", 1)
    prof = builtin_profile(lookup_gpu("H100"))
    assert prof.decode_overhead_s > 0
    assert c.step(1, 10).overhead_s == c.step(512, 10**6, 2048).overhead_s
    assert c.prefill(100).overhead_s == prof.decode_overhead_s


def test_step_parts_and_dict() -> None:
    c = engine("H100", "qwen2.5-7b", 1)
    s = c.step(16, 16 * 500, 256, 100)
    assert isinstance(s, StepCost)
    d = s.as_dict()
    assert list(d) == ["linear_s", "attention_s", "other_s", "comm_s", "overhead_s", "total_s"]
    assert d["total_s"] == pytest.approx(sum(v for k, v in d.items() if k != "total_s"))
    assert all(v >= 0 for v in d.values())
    assert c.step(0, 0).total_s == 0.0
    # Linear layers see decodes and prefill tokens together.
    assert s.linear_s == c.linear_s(16 + 256)
    # Prefill with context costs more attention than without.
    assert c.prefill(512, 4096).attention_s > c.prefill(512).attention_s
    assert c.prefill(512).total_s == c.step(0, 0, 512).total_s
    # The LM head runs only for sequences that emit a token.
    assert c.step(8, 0).other_s > c.step(0, 0, 8).other_s


def test_step_rejects_negative_counts() -> None:
    c = engine("H100", "qwen2.5-7b", 1)
    with pytest.raises(ValueError, match="kv_tokens"):
        c.step(1, -1)


# Other catalogue models: sane, monotone linear layers (shapes the fit never saw).
OTHER = [("qwen2.5-7b", 1), ("qwen2.5-7b", 4), ("qwen2.5-32b", 2), ("qwen2.5-32b", 4),
         ("llama-3-70b", 8), ("qwen3-32b", 8)]


@pytest.mark.parametrize("gpu_name", ["H100", "A100", "H200", "H20"])
@pytest.mark.parametrize(("model_name", "tp"), OTHER)
def test_linear_monotone_and_sane_on_other_models(gpu_name: str, model_name: str,
                                                   tp: int) -> None:
    gpu = lookup_gpu(gpu_name)
    model = lookup_model(model_name)
    cost = InferenceCost(model, gpu, tp, builtin_profile(gpu))
    tokens = [*range(1, 4097), *range(4104, 8193, 8)]
    values = [cost.linear_s(n) for n in tokens]
    assert all(b >= a for a, b in itertools.pairwise(values)), "not monotone"
    by_tokens = dict(zip(tokens, values, strict=True))
    weight_bytes = model.layers * (model.layer_params - 2 * model.hidden) * 2 / tp
    flops_per_token = 2 * weight_bytes / 2
    peak = gpu.bf16_tflops * 1e12
    for n in (1, 64, 512, 4096, 8192):
        t = by_tokens[n]
        roofline = max(weight_bytes / gpu.hbm_bandwidth, n * flops_per_token / peak)
        assert t >= roofline  # never faster than the hardware allows
        assert t <= 4 * roofline  # and not absurdly slow
    # Large batches run at 50-95% of the tensor-core peak.
    frac = 8192 * flops_per_token / peak / values[-1]
    assert 0.5 < frac < 0.95


def test_kv_heads_replicate_when_fewer_than_tp() -> None:
    # qwen2.5-3b has 2 KV heads: one per GPU at TP 2, replicated at TP 4 and 8.
    per_gpu = {tp: engine("H800", "qwen2.5-3b", tp).kv_bytes_per_token_per_gpu
               for tp in (1, 2, 4, 8)}
    assert per_gpu[1] == 2 * per_gpu[2]
    assert per_gpu[2] == per_gpu[4] == per_gpu[8]


def test_kv_capacity_qwen7b_h800() -> None:
    c = engine("H800", "qwen2.5-7b", 1)
    cap = c.kv_capacity_tokens(0.9)
    # (81559 MiB x 0.9 - 15.2 GB weights - 3 GiB reserve) / 57,344 B per token.
    model, gpu = lookup_model("qwen2.5-7b"), lookup_gpu("H800")
    expect = (0.9 * gpu.hbm - model.weight_bytes() - 3 * 2**30) / model.kv_bytes_per_token()
    assert cap == math.floor(expect)
    assert 9.5e5 < cap < 1.1e6
    # More TP, more memory for KV in total.
    assert engine("H800", "qwen2.5-7b", 2).kv_capacity_tokens(0.9) > 2 * cap
    # 8B models with 8 KV heads x 32-36 layers (128-144 KiB per token) hold 3.5-4.5e5 tokens.
    for name in ("llama-3-8b", "qwen3-8b"):
        assert 3.5e5 < engine("H800", name, 1).kv_capacity_tokens(0.9) < 4.5e5


def test_kv_capacity_nonpositive_when_weights_do_not_fit() -> None:
    assert engine("H100", "llama-2-70b", 1).kv_capacity_tokens(0.9) <= 0
    assert engine("H100", "llama-2-70b", 4).kv_capacity_tokens(0.9) > 0
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        engine("H100", "qwen2.5-7b", 1).kv_capacity_tokens(1.5)


def test_start_up_times() -> None:
    c = engine("H20", "qwen2.5-7b", 1)
    gpu = lookup_gpu("H20")
    prof = builtin_profile(gpu)
    w = lookup_model("qwen2.5-7b").weight_bytes()
    assert c.weight_reload_s() == pytest.approx(w / (gpu.pcie_bandwidth * prof.pcie_efficiency))
    assert engine("H20", "qwen2.5-7b", 2).weight_reload_s() == pytest.approx(
        c.weight_reload_s() / 2)
    assert c.warm_start_s() == pytest.approx(prof.engine_warm_start_base_s + c.weight_reload_s())
    # Cold starts of 3B-32B models land in the 80-135 s range reported by RollMux/Belayer.
    for name in ("qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b"):
        cold = engine("H20", name, 2).cold_start_s()
        assert 80 <= cold <= 135, (name, cold)
    assert c.cold_start_s() / c.warm_start_s() > 30


def test_custom_gpu_uses_generic_profile() -> None:
    gpu = GpuSpec(name="B200ish", bf16_tflops=2250, hbm="192 GB", hbm_bandwidth="8 TB/s",
                  nvlink_bandwidth="1800 GB/s", pcie_bandwidth="64 GB/s", sm_count=148,
                  usd_per_gpu_hour=6.0)
    prof = builtin_profile(gpu)
    assert prof.gpu == "generic"
    cost = InferenceCost(lookup_model("qwen2.5-7b"), gpu, 1, prof)
    assert 0 < cost.step(64, 64_000).total_s < 0.1


def test_prefill_chunks_price_each_sequence_separately():
    from rlsim.config.hardware import lookup_gpu, lookup_model
    from rlsim.cost.inference import InferenceCost
    from rlsim.cost.profile import builtin_profile

    gpu = lookup_gpu("H100")
    cost = InferenceCost(lookup_model("qwen2.5-7b"), gpu, 1, builtin_profile(gpu))
    one_seq = cost.step(0, 0, 64 * 128)
    chunks = cost.step(0, 0, 64 * 128, 0, [(128, 0)] * 64)
    # same linear work, far less attention: 64 short causal squares, not one long one
    assert chunks.linear_s == one_seq.linear_s
    assert chunks.attention_s < one_seq.attention_s / 2
    # one varlen kernel: more than one 128-token prefill, less than 64 separate launches
    single = cost.step(0, 0, 128).attention_s
    assert single < chunks.attention_s < 64 * single


# ----- per-sequence iteration overhead -----

PER_SEQ = builtin_profile(lookup_gpu("H800")).model_copy(
    update={"decode_overhead_s": 1e-3, "decode_overhead_per_seq_s": 2e-5})


def per_seq_engine(tp: int = 1) -> InferenceCost:
    return InferenceCost(lookup_model("qwen2.5-7b"), lookup_gpu("H800"), tp, PER_SEQ)


def test_overhead_grows_with_the_sequences_in_the_iteration() -> None:
    c = per_seq_engine()
    a, b = 1e-3, 2e-5
    assert c.step(16, 16 * 500).overhead_s == pytest.approx(a + 16 * b, rel=1e-12)
    # A prefill without chunks is one prefilling sequence.
    assert c.step(0, 0, 512).overhead_s == pytest.approx(a + b, rel=1e-12)
    assert c.prefill(512, 100).overhead_s == pytest.approx(a + b, rel=1e-12)
    assert c.step(8, 8000, 512, 100).overhead_s == pytest.approx(a + 9 * b, rel=1e-12)
    # With chunks, each chunk that runs is one sequence (a zero-token chunk does not run).
    chunks = [(100, 0), (200, 50), (0, 10), (212, 0)]
    assert c.step(4, 4000, 512, 0, chunks).overhead_s == pytest.approx(a + 7 * b, rel=1e-12)
    assert c.step(0, 0, 512, 0, [(512, 0)]).overhead_s == pytest.approx(a + b, rel=1e-12)
    assert c.step(0, 0).total_s == 0.0
    # Nothing but the overhead changes.
    plain = InferenceCost(c.model, c.gpu, 1, PER_SEQ.model_copy(
        update={"decode_overhead_per_seq_s": 0.0}))
    for args in ((16, 8000), (0, 0, 512), (4, 4000, 512, 0, chunks)):
        s, p = c.step(*args), plain.step(*args)
        assert (s.linear_s, s.attention_s, s.other_s, s.comm_s) == (
            p.linear_s, p.attention_s, p.other_s, p.comm_s)
        assert p.overhead_s == a


@settings(max_examples=100, deadline=None)
@given(tp=st.sampled_from([1, 4]), batch=st.integers(0, 4096), kv=st.integers(0, 10**9))
def test_decode_affine_is_exact_with_per_seq_overhead(tp: int, batch: int, kv: int) -> None:
    c = per_seq_engine(tp)
    a_s, b_s = c.decode_affine(batch)
    assert c.step(batch, kv).total_s == pytest.approx(a_s + b_s * kv, rel=1e-12, abs=1e-15)
    if batch:
        base = InferenceCost(c.model, c.gpu, tp, PER_SEQ.model_copy(
            update={"decode_overhead_per_seq_s": 0.0})).decode_affine(batch)
        assert a_s == pytest.approx(base[0] + 2e-5 * batch, rel=1e-12)
        assert b_s == base[1]


# ----- engine options: defaults unchanged, eager launches, FP8 -----

# Values of `step(...).total_s` and `kv_capacity_tokens(0.9)` before the engine options
# existed (issue 19): at the default options a dense engine must give exactly these.
BEFORE_OPTIONS = {
    ("H800", "qwen2.5-7b", 1): ((0.007446127402009746, 0.009298993812175093,
                                 0.04030192848763978, 0.0905907512136823), 1020447),
    ("H100", "llama-3-8b", 2): ((0.0072221087902753, 0.009046314840124471,
                                 0.037958458246197146, 0.06207280498131234), 1002765),
    ("A100", "qwen2.5-32b", 4): ((0.017302255434971447, 0.02245260223591137,
                                  0.1157296813073511, 0.36180013149763035), 880530),
    ("H200", "qwen3-8b", 8): ((0.005613985514532481, 0.006226851625540961,
                               0.015180540820724576, 0.03368468095508119), 7075218),
}


@pytest.mark.parametrize("key", sorted(BEFORE_OPTIONS))
def test_default_options_leave_dense_engines_unchanged(key: tuple[str, str, int]) -> None:
    totals, kv = BEFORE_OPTIONS[key]
    g = lookup_gpu(key[0])
    for options in (None, EngineOptions()):
        c = InferenceCost(lookup_model(key[1]), g, key[2], builtin_profile(g), options=options)
        steps = [c.step(1, 100), c.step(64, 64000), c.step(256, 1_000_000, 512, 1000),
                 c.prefill(4096)]
        assert [st.total_s for st in steps] == list(totals)
        assert c.kv_capacity_tokens(0.9) == kv


def test_eager_adds_one_dispatch_per_kernel() -> None:
    """Eager: eager_launch_s x (kernels per layer x layers + 4 per iteration + one attention
    kernel per layer and kind); a dense GQA layer at TP 1 has 9 kernels outside attention:
    QKV, output, 2 norms, rotary, KV write, gate/up, activation, down."""
    g = lookup_gpu("H800")
    prof = builtin_profile(g)
    model = lookup_model("qwen2.5-7b")  # 28 layers
    graphs = InferenceCost(model, g, 1, prof)
    eager = InferenceCost(model, g, 1, prof, options=EngineOptions(cuda_graphs=False))
    launch = prof.eager_launch_s
    per_layer = 2 + 2 + 1 + 1 + 3  # QKV+O, norms, rotary, KV write, MLP (attention apart)
    decode_kernels = 28 * (per_layer + 1) + 4
    diff = eager.step(8, 8000).total_s - graphs.step(8, 8000).total_s
    assert diff == pytest.approx(launch * decode_kernels, rel=1e-12)
    mixed = eager.step(8, 8000, 512, 0).total_s - graphs.step(8, 8000, 512, 0).total_s
    assert mixed == pytest.approx(launch * (decode_kernels + 28), rel=1e-12)
    assert graphs.eager_overhead_s(True, True) == 0.0
    # TP adds the two all-reduces per layer; FP8 a quantization kernel per GEMM.
    tp2 = InferenceCost(model, g, 2, prof, options=EngineOptions(cuda_graphs=False))
    assert tp2.eager_overhead_s(True, False) == pytest.approx(
        launch * (decode_kernels + 2 * 28), rel=1e-12)
    fp8 = InferenceCost(model, g, 1, prof, options=EngineOptions(cuda_graphs=False, dtype="fp8"))
    assert fp8.eager_overhead_s(True, False) == pytest.approx(
        launch * (decode_kernels + 4 * 28), rel=1e-12)
    # Still affine in the KV tokens read (the engine's closed-form decode).
    a_s, b_s = eager.decode_affine(64)
    assert eager.step(64, 123_456).total_s == pytest.approx(a_s + b_s * 123_456, rel=1e-12)


def test_eager_calibration_point() -> None:
    """The calibration source: Llama-3.1-8B on one H100 decodes in 8.4 ms eager and 5.1 ms
    with CUDA graphs (docs/cost-model.md); eager_launch_s x 324 kernels gives the 3.3 ms."""
    g = lookup_gpu("H100")
    c = InferenceCost(lookup_model("llama-3.1-8b"), g, 1, builtin_profile(g),
                      options=EngineOptions(cuda_graphs=False))
    assert c.eager_overhead_s(True, False) == pytest.approx(3.3e-3, rel=0.05)


def test_fp8_weights_halve_weight_memory_and_streaming() -> None:
    g = lookup_gpu("H800")
    prof = builtin_profile(g)
    model = lookup_model("qwen2.5-7b")
    bf16 = InferenceCost(model, g, 1, prof)
    fp8 = InferenceCost(model, g, 1, prof, options=EngineOptions(dtype="fp8"))
    embed = model.vocab * model.hidden * 2  # untied embedding + LM head stay BF16
    assert fp8.weight_bytes() == (model.params - embed) + 2 * embed
    assert fp8.weight_bytes_per_gpu() < 0.6 * bf16.weight_bytes_per_gpu()
    assert fp8.kv_capacity_tokens(0.9) > bf16.kv_capacity_tokens(0.9)
    assert fp8.kv_bytes_per_token_per_gpu == bf16.kv_bytes_per_token_per_gpu
    # Decode at batch 1 streams weights: the layers' linear time roughly halves.
    ratio = fp8.step(1, 0).linear_s / bf16.step(1, 0).linear_s
    assert 0.45 < ratio < 0.65
    # A large prefill is compute-bound: FP8 runs at twice the peak (plus the quantization).
    ratio = fp8.prefill(8192).linear_s / bf16.prefill(8192).linear_s
    assert 0.45 < ratio < 0.7
    assert fp8.cold_start_s() < bf16.cold_start_s()


def test_fp8_kv_cache_doubles_capacity_and_halves_kv_reads() -> None:
    g = lookup_gpu("H800")
    prof = builtin_profile(g)
    model = lookup_model("qwen2.5-7b")
    auto = InferenceCost(model, g, 1, prof)
    fp8 = InferenceCost(model, g, 1, prof, options=EngineOptions(kv_cache_dtype="fp8"))
    assert fp8.kv_bytes_per_token_per_gpu == auto.kv_bytes_per_token_per_gpu / 2
    free = g.hbm * 0.9 - auto.weight_bytes_per_gpu() - prof.engine_memory_reserve_bytes
    assert fp8.kv_capacity_tokens(0.9) == int(free // (auto.kv_bytes_per_token_per_gpu / 2))
    assert fp8.decode_affine(64)[1] == pytest.approx(auto.decode_affine(64)[1] / 2, rel=1e-12)
    assert fp8.step(64, 0).linear_s == auto.step(64, 0).linear_s


@pytest.mark.parametrize(("options", "match"), [
    (EngineOptions(dtype="fp8"), "dtype fp8 needs FP8 tensor cores and A100"),
    (EngineOptions(ep=2), "ep=2 needs a mixture-of-experts model"),
    (EngineOptions(ep=0), "ep must be a positive integer"),
])
def test_bad_options_name_the_field(options: EngineOptions, match: str) -> None:
    g = lookup_gpu("A100")
    with pytest.raises(ValueError, match=match) as err:
        InferenceCost(lookup_model("qwen2.5-7b"), g, 2, builtin_profile(g), options=options)
    assert "\n" not in str(err.value)


def test_vllm_v0_loop_adds_its_cost_per_sequence_of_every_iteration() -> None:
    """vLLM's V0 engine loop (rollout.vllm_v0): v0_decode_overhead_per_seq_s (RFC #6801's
    ~20 ms at 200 sequences) for each sequence an iteration runs, decodes and prefilling
    sequences alike; nothing else moves, and the decode step stays affine in KV tokens."""
    g = lookup_gpu("H100")
    prof = builtin_profile(g)
    assert prof.v0_decode_overhead_per_seq_s == pytest.approx(90e-6)
    model = lookup_model("qwen2.5-7b")
    v1 = InferenceCost(model, g, 1, prof)
    v0 = InferenceCost(model, g, 1, prof, options=EngineOptions(vllm_v0=True))
    per_seq = prof.v0_decode_overhead_per_seq_s
    for decodes, kv in ((1, 500), (64, 64 * 700), (256, 256 * 2000)):
        diff = v0.step(decodes, kv).total_s - v1.step(decodes, kv).total_s
        assert diff == pytest.approx(per_seq * decodes, rel=1e-9)
    # a prefilling sequence counts once, as in the engine loop
    mixed = v0.step(8, 8000, 512, 0).total_s - v1.step(8, 8000, 512, 0).total_s
    assert mixed == pytest.approx(per_seq * 9, rel=1e-9)
    a, b = v0.decode_affine(32)
    assert v0.step(32, 32 * 1000).total_s == pytest.approx(a + b * 32 * 1000, rel=1e-12)
    assert v0.step(32, 0).linear_s == v1.step(32, 0).linear_s


def test_rollout_vllm_v0_reaches_the_engine() -> None:
    from rlsim.config.loading import scenario_from_dict
    from rlsim.cost.job import cost_models
    from tests.scenarios import tiny

    on = cost_models(scenario_from_dict(tiny(rollout__vllm_v0=True))[0]).engine_cost
    off = cost_models(scenario_from_dict(tiny())[0]).engine_cost
    assert on.options.vllm_v0 and not off.options.vllm_v0
    assert on.step(16, 16 * 400).total_s > off.step(16, 16 * 400).total_s


def test_vllm_v0_loop_cost_in_a_pipelined_engine() -> None:
    # pp 2: every running sequence still passes through the loop once an iteration.
    g = lookup_gpu("H100")
    prof = builtin_profile(g)
    model = lookup_model("qwen2.5-7b")
    v1 = InferenceCost(model, g, 1, prof, options=EngineOptions(pp=2))
    v0 = InferenceCost(model, g, 1, prof, options=EngineOptions(pp=2, vllm_v0=True))
    diff = v0.step(64, 64 * 800).overhead_s - v1.step(64, 64 * 800).overhead_s
    assert diff == pytest.approx(prof.v0_decode_overhead_per_seq_s * 64, rel=1e-9)
