"""The cost-model pieces calibration needs: per-layer costs, the profile's dtype, the CPU BLAS
structure (GEMV rows, weight passes, per-row packing), warm caches, block-causal attention,
sandboxes."""

from __future__ import annotations

import pytest

from rlsim.config.hardware import lookup_gpu, lookup_model
from rlsim.cost import InferenceCost, TrainCost, builtin_profile
from rlsim.cost.kernels import ElementwiseModel, GemmModel, cache_resident_fraction
from rlsim.cost.profile import Profile

H100 = lookup_gpu("H100")
PROF = builtin_profile(H100)
QWEN7 = lookup_model("qwen2.5-7b")


@pytest.mark.parametrize("tp", [1, 2])
def test_step_is_layers_times_layer_step_plus_once_per_iteration_parts(tp: int) -> None:
    cost = InferenceCost(QWEN7, H100, tp, PROF)
    layers = QWEN7.layers
    # Prefill only: the rest is the embedding gather, the final norm, the LM head row that
    # samples the first token, and the overhead.
    ew = ElementwiseModel(H100, PROF)
    gemm = GemmModel(H100, PROF, 2)
    vocab = -(-QWEN7.vocab // tp)
    lm_head = gemm.time_s(1, vocab, QWEN7.hidden) + ew.time_s(vocab * (2 + 4))
    norm = ElementwiseModel(H100, PROF, PROF.norm_hbm_efficiency, PROF.norm_launch_s)
    for tokens in (1, 100, 4096):
        rest = (ew.time_s(tokens * 2 * QWEN7.hidden * 2)
                + norm.time_s(tokens * 4 * QWEN7.hidden * 2) + PROF.decode_overhead_s
                + lm_head)
        total = cost.step(0, 0, tokens).total_s
        assert total == pytest.approx(layers * cost.layer_step_s(0, 0, tokens) + rest, rel=1e-12)
    # With decodes the once-per-iteration part (LM head too) does not depend on the KV read.
    parts = {cost.step(16, kv, 64, 100).total_s - layers * cost.layer_step_s(16, kv, 64, 100)
             for kv in (0, 1000, 10**6)}
    assert max(parts) - min(parts) < 1e-12
    assert cost.step(16, 5000).attention_s == pytest.approx(
        layers * cost.decode_attention_s(16, 5000), rel=1e-12)
    assert cost.prefill(512, 300).attention_s == pytest.approx(
        layers * cost.prefill_attention_s(512, 300), rel=1e-12)
    assert cost.layer_step_s(0, 0) == 0.0
    with pytest.raises(ValueError, match="kv_tokens"):
        cost.layer_step_s(1, -1)


def test_dtype_defaults_to_the_profile() -> None:
    fp32 = PROF.model_copy(update={"dtype_bytes": 4})
    assert InferenceCost(QWEN7, H100, 1, fp32).dtype_bytes == 4
    assert InferenceCost(QWEN7, H100, 1, fp32, dtype_bytes=2).dtype_bytes == 2
    assert InferenceCost(QWEN7, H100, 1, PROF).dtype_bytes == 2
    assert InferenceCost(QWEN7, H100, 1, fp32).kv_bytes_per_token_per_gpu == \
        2 * InferenceCost(QWEN7, H100, 1, PROF).kv_bytes_per_token_per_gpu
    t = TrainCost(QWEN7, H100, 8, 1, 1, 1, fp32)
    assert t.dtype_bytes == 4
    assert t.weight_bytes() == QWEN7.weight_bytes(4)
    assert TrainCost(QWEN7, H100, 8, 1, 1, 1, fp32, dtype_bytes=2).dtype_bytes == 2
    # The GEMM model streams 4-byte weights: a memory-bound GEMV takes about twice as long.
    g2, g4 = GemmModel(H100, PROF), GemmModel(H100, fp32)
    assert g4.time_s(1, 8192, 8192) > 1.8 * g2.time_s(1, 8192, 8192)


def _cpu_like(**update: object) -> Profile:
    base = PROF.model_copy(update={"gemm_tiles": ((1, 64), (8, 64), (64, 64)),
                                   "gemm_splitk_min_k": 1 << 30, "kernel_launch_s": 5e-6})
    return base.model_copy(update=update)


def test_gemv_rows_stream_the_weights_once_per_row() -> None:
    prof = _cpu_like(gemm_gemv_max_rows=3)
    g = GemmModel(H100, prof)
    one = g.time_s(1, 4096, 4096) - prof.kernel_launch_s
    assert g.time_s(3, 4096, 4096) == pytest.approx(3 * one + prof.kernel_launch_s)
    # From 4 rows on it is one GEMM again (cheaper than four GEMVs here).
    assert g.time_s(4, 4096, 4096) < 4 * one
    # Without the GEMV path, the same profile runs 3 rows as one GEMM.
    plain = GemmModel(H100, _cpu_like())
    assert plain.time_s(3, 4096, 4096) < g.time_s(3, 4096, 4096)


def test_weight_passes_scale_the_weight_stream() -> None:
    g1, g3 = GemmModel(H100, _cpu_like()), GemmModel(H100, _cpu_like(gemm_weight_passes=3.0))
    # A memory-bound GEMM (weights >> activations) takes about 3x as long.
    ratio = (g3.time_s(16, 8192, 8192) - 5e-6) / (g1.time_s(16, 8192, 8192) - 5e-6)
    assert 2.5 < ratio <= 3.0


def test_pack_row_cost_is_per_weight_row_and_spares_gemv_rows() -> None:
    # Neutral by default (every built-in GPU profile): exactly the same times.
    assert PROF.gemm_pack_row_elems == 0.0
    zero = GemmModel(H100, _cpu_like(gemm_pack_row_elems=0.0))
    base = GemmModel(H100, _cpu_like())
    assert zero.time_s(16, 8192, 8192) == base.time_s(16, 8192, 8192)
    # A memory-bound blocked GEMM pays `gemm_pack_row_elems` extra elements per weight row
    # (output column), whatever K: short rows cost more per element than long ones.
    prof = _cpu_like(gemm_pack_row_elems=4096.0, gemm_gemv_max_rows=3, gemm_overlap_exponent=50.0)
    packed, plain = GemmModel(H100, prof), GemmModel(H100, prof.model_copy(
        update={"gemm_pack_row_elems": 0.0}))
    for n, k in ((8192, 1024), (8192, 8192)):
        extra = packed.time_s(16, n, k) - plain.time_s(16, n, k)
        assert extra == pytest.approx(4096.0 * n * prof.dtype_bytes
                                      / (H100.hbm_bandwidth * prof.hbm_efficiency), rel=0.05)
    # GEMV rows stream the weights as they are: no packing.
    assert packed.time_s(3, 8192, 1024) == plain.time_s(3, 8192, 1024)


def test_warm_cache_only_helps_what_fits() -> None:
    assert cache_resident_fraction(1e6, 0.0) == 0.0
    assert cache_resident_fraction(1e6, 8e6) > 0.99
    assert cache_resident_fraction(64e6, 8e6) < 0.01
    assert cache_resident_fraction(8e6, 8e6) == pytest.approx(0.5)
    cold = _cpu_like()
    warm = _cpu_like(cache_bytes=8e6, cache_speedup=4.0)
    assert GemmModel(H100, cold).time_s(1, 1024, 1024, warm_cache=True) == \
        GemmModel(H100, cold).time_s(1, 1024, 1024)
    g = GemmModel(H100, warm)
    launch = warm.kernel_launch_s
    assert g.time_s(1, 1024, 1024, warm_cache=True) - launch < 0.5 * (
        g.time_s(1, 1024, 1024) - launch)
    assert g.time_s(1, 16384, 16384, warm_cache=True) == pytest.approx(
        g.time_s(1, 16384, 16384), rel=1e-3)
    ew = ElementwiseModel(H100, warm)
    assert ew.time_s(1e5, warm_cache=True) < ew.time_s(1e5)
    # The simulator's own costs are always cold: the cache constants change nothing there.
    assert InferenceCost(QWEN7, H100, 1, warm).step(8, 8000).total_s == \
        InferenceCost(QWEN7, H100, 1, cold).step(8, 8000).total_s
    cost = InferenceCost(QWEN7, H100, 1, warm)
    assert cost.decode_attention_s(1, 100, warm_cache=True) <= cost.decode_attention_s(1, 100)


def test_block_causal_prefill_pairs() -> None:
    exact = InferenceCost(QWEN7, H100, 1, PROF)
    # 32-row query blocks over 512-key blocks: a 100-token chunk computes the full square.
    blocked = InferenceCost(QWEN7, H100, 1, PROF.model_copy(update={
        "attention_q_block_tiers": ((0, 32), (768, 256)), "attention_kv_block_tokens": 512}))
    assert exact._prefill_pairs(100, 0) == 100 * 101 / 2
    assert blocked._prefill_pairs(100, 0) == 100 * 100
    # Long chunks skip the key blocks beyond each query block: about the causal half.
    t = 4096
    assert t * t / 2 < blocked._prefill_pairs(t, 0) < 0.7 * t * t
    assert blocked._prefill_pairs(256, 1000) <= 256 * 1256
    assert blocked.prefill_attention_s(t) > exact.prefill_attention_s(t)
    assert PROF.model_copy(update={"attention_q_block_tiers": ((0, 32), (768, 256))}) \
        .attention_q_block(1000) == 256


def test_per_kind_elementwise_and_attention_fallbacks() -> None:
    assert PROF.decode_attention_hbm_efficiency == PROF.hbm_efficiency
    assert PROF.attention_fixed_s == PROF.kernel_launch_s
    assert PROF.decode_attention_fixed_s == PROF.kernel_launch_s
    assert PROF.decode_attention_flops_efficiency == PROF.attention_flops_efficiency
    slow_norm = PROF.model_copy(update={"norm_hbm_efficiency": 0.05, "norm_launch_s": 1e-4})
    assert InferenceCost(QWEN7, H100, 1, slow_norm).step(0, 0, 512).other_s > \
        InferenceCost(QWEN7, H100, 1, PROF).step(0, 0, 512).other_s
    overhead = PROF.model_copy(update={"layer_overhead_s": 1e-4})
    assert InferenceCost(QWEN7, H100, 1, overhead).step(1, 10).other_s == pytest.approx(
        InferenceCost(QWEN7, H100, 1, PROF).step(1, 10).other_s + QWEN7.layers * 1e-4)


def test_sandbox_times() -> None:
    p = PROF
    assert p.sandbox_checkpoint_s(0, 0) == p.sandbox_checkpoint_base_s
    assert p.sandbox_checkpoint_s(1e9, 1000) == pytest.approx(
        p.sandbox_checkpoint_base_s + 1e9 / p.sandbox_checkpoint_bandwidth_bytes_per_s
        + 1000 * p.sandbox_checkpoint_per_file_s)
    assert p.sandbox_restore_s(1e9, 1000) > p.sandbox_restore_s(1e6, 10)
