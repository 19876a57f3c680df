"""The engine-point check (calibration/engine_check.py): what each metric is priced as, on
closed forms of rlsim's own iteration, and what is not compared and why."""

from __future__ import annotations

import dataclasses

import pytest

from calibration.engine_check import check, metric, predict_ms, report
from calibration.engine_points import load_points
from rlsim.config.hardware import GPUS, MODELS
from rlsim.cost.inference import InferenceCost
from rlsim.cost.profile import builtin_profile

POINTS = {p.id: p for p in load_points()}


def _cost(model: str, gpu: str, tp: int) -> InferenceCost:
    return InferenceCost(MODELS[model], GPUS[gpu], tp, builtin_profile(GPUS[gpu]))


def test_a_median_itl_is_one_decode_iteration_at_the_mean_context() -> None:
    p = POINTS["vllm-blog-fp8kv-llama31-8b-h100-c8-bf16kv"]
    cost = _cost("llama-3.1-8b", "H100", 1)
    ctx = p.input_len + p.output_len // 2
    assert predict_ms(cost, p, "itl_ms_median") == pytest.approx(
        1000 * cost.step(8, 8 * ctx).total_s, rel=1e-12)
    assert check(p).predicted_ms == pytest.approx(1000 * cost.step(8, 8 * ctx).total_s)


def test_a_serving_tpot_carries_the_interleaved_prefills() -> None:
    p = POINTS["sgl-cookbook-llama3.1-70b-c100-1000in1000out"]
    cost = _cost("llama-3.1-70b", "A100", 8)
    want = 1000 * cost.step(100, 100 * 1500, 100, 500).total_s
    assert predict_ms(cost, p, "tpot_ms_mean") == pytest.approx(want, rel=1e-12)
    assert predict_ms(cost, p, "tpot_ms_mean") > predict_ms(cost, p, "itl_ms_median")


def test_a_static_batch_pays_its_prefill_once_over_its_output() -> None:
    p = POINTS["lmdeploy-v0.1.0a1-llama2-7b-a100-tp1-bs64-128in128out"]
    cost = _cost("llama-2-7b", "A100", 1)
    prefill = cost.step(0, 0, 64 * 128, prefill_chunks=[(128, 0)] * 64).total_s
    total = prefill + 128 * cost.step(64, 64 * 192).total_s
    assert prefill < cost.prefill(64 * 128).total_s  # 64 prompts, not one of 8192 tokens
    assert metric(p) == ("output_tok_s", pytest.approx(1000 * 64 / p.values["output_tok_s"]))
    assert predict_ms(cost, p, "output_tok_s") == pytest.approx(1000 * total / 128, rel=1e-12)


def test_what_is_not_compared_says_why() -> None:
    reasons = {i: check(p).reason for i, p in POINTS.items()}
    assert "no rlsim catalogue entry" in reasons["sgl-cookbook-gpt-oss-120b-b200-c1-sharegpt"]
    assert "speculative" in reasons["trtllm-blog-dsr1-h200-min-latency-c1-mtp3"]
    assert "tensor parallelism" in reasons["vllm-blog-fp8kv-llama31-8b-b200-itl-fit"]
    unknown_gpu = dataclasses.replace(POINTS["vllm-blog-fp8kv-llama31-8b-h100-c8-bf16kv"],
                                      gpu="L20")
    assert "GPU" in check(unknown_gpu).reason


def test_the_report_counts_both_sides() -> None:
    checks = [check(p) for p in POINTS.values()]
    text = "\n".join(report(checks))
    compared = [c for c in checks if c.error is not None]
    assert len(compared) >= 20
    assert {c.point.side for c in compared} == {"calibrate", "validate"}
    assert f"{len(compared)} of {len(checks)} points compared" in text


def test_a_median_itl_of_a_static_batch_is_one_decode_step() -> None:
    # SGLang's bench_one_batch "Decode median": the prefill is one iteration, never the median
    p = POINTS["sglang-pr-33293-granite-3.1-3b-a800m-h200-bs1-cudagraph-baseline"]
    cost = _cost("granite-3.1-3b-a800m", "H200", 1)
    ctx = p.input_len + p.output_len // 2
    assert predict_ms(cost, p, "itl_ms_median") == pytest.approx(
        1000 * cost.step(1, ctx).total_s, rel=1e-12)


def test_the_sources_expert_parallelism_and_fp8_weights_are_priced() -> None:
    # SGLang's --ep without an all-to-all backend combines experts by all-reduce: ep 1
    p = POINTS["sgl-cookbook-minimax-m2.5-h100-c1-1000in1000out"]
    assert p.ep == 8
    assert check(p).predicted_ms == check(dataclasses.replace(p, ep=None)).predicted_ms
    # another engine's ep prices its all-to-all
    as_vllm = dataclasses.replace(p, engine="vllm")
    assert check(as_vllm).predicted_ms != check(dataclasses.replace(as_vllm, ep=None)).predicted_ms
    fp8 = POINTS["gpustack-qwen3-8b-fp8-h100-c4"]
    bf16 = POINTS["gpustack-qwen3-8b-bf16-h100-c4"]
    assert check(fp8).predicted_ms < check(bf16).predicted_ms  # one byte a weight


def test_unstated_engine_batches_and_dp_attention_are_not_compared() -> None:
    at_once = POINTS["gpustack-qwen3-32b-bf16-h100-sharegpt1000"]
    assert "every prompt sent at once" in check(at_once).reason
    capped = dataclasses.replace(at_once, num_prompts=at_once.concurrency + 1)
    assert check(capped).error is not None
    dp = POINTS["dstack-deepseek-r1-h200-tp8-c4-in3200-out800"]
    assert "data parallelism" in check(dp).reason
