"""calibration/training_check.py: the per-kernel trainer against published pre-training step
times (docs/validation.md, "Trainer against published throughput"): the check's arithmetic
on one configuration, and the validation band the Megatron rows hold."""

from __future__ import annotations

import pytest

from calibration.training_check import PUBLISHED, Published, check, train_cost


def _row(label: str) -> Published:
    return next(p for p in PUBLISHED if p.label == label)


def test_arithmetic_of_one_configuration() -> None:
    p = _row("Llama-3.1-8B NeMo 24.09")
    # 128 sequences of 8192 tokens in 12.91 s on 8 GPUs (the source: 81,222 tokens/s).
    assert p.tokens_per_s_per_gpu * p.gpus == pytest.approx(81222, rel=1e-3)
    cost = train_cost(p)
    assert (cost.dp, cost.cp, cost.batching.micro_batch_size) == (4, 2, 1)
    row = check(p)
    step = cost.train_step(128 * 8192, lengths=[8192] * 128)
    assert row.rlsim_step_s == pytest.approx(step.total_s, rel=1e-12)
    assert row.ratio == pytest.approx(step.total_s / 12.91, rel=1e-12)
    assert row.compute_s + row.comm_s + row.bubble_s + row.other_s == pytest.approx(
        row.rlsim_step_s, rel=1e-12)


def test_overrides_of_a_row_reach_the_trainer() -> None:
    p = _row("Llama-3.1-8B torchtitan FSDP + compile")
    cost = train_cost(p)
    assert cost.gpu.hbm_bandwidth == 2.4e12
    assert cost.backend is not None and cost.backend.elementwise_traffic is None
    eager = train_cost(_row("Llama-3.1-8B torchtitan FSDP"))
    assert eager.backend is not None and eager.backend.elementwise_traffic is not None


@pytest.mark.parametrize("p", [p for p in PUBLISHED if p.backend == "megatron"],
                         ids=lambda p: p.label)
def test_megatron_rows_within_the_validation_band(p: Published) -> None:
    # Validation only (nothing fitted to these rows): rlsim's step within 20% of NeMo's.
    assert 0.8 < check(p).ratio < 1.2


def test_moe_rows_reach_the_trainer_with_their_expert_parallelism() -> None:
    from calibration.training_check import MOE_PUBLISHED
    natural, forced = MOE_PUBLISHED[0], MOE_PUBLISHED[1]
    cost = train_cost(natural)
    assert cost.batching.ep == 16 and cost.backend is not None
    assert cost.backend.router_imbalance > 1.0  # the backend's: natural routing
    balanced = train_cost(forced)
    assert balanced.backend is not None and balanced.backend.router_imbalance == 1.0
    # Forced balance prices the busiest rank's experts and all-to-all at the mean: faster.
    assert check(forced).rlsim_step_s < check(natural).rlsim_step_s
    # The rows ran HybridEP: priced with the deduplicating dispatcher, whose exchange
    # across the two nodes costs less than alltoall's top-k copies.
    assert cost.batching.moe_dispatcher == "deepep"
    from dataclasses import replace
    plain = check(replace(natural, moe_dispatcher="alltoall"))
    assert check(natural).comm_s < plain.comm_s / 2


def test_moe_layer_bench_prices_the_moe_block_alone() -> None:
    from calibration.training_check import MOE_LAYER, _one_layer_s, moe_layer_s
    by = {(b.model.name, b.tokens_per_rank, b.moe_dispatcher): b for b in MOE_LAYER}
    b = by[("qwen3-30b-a3b", 4096, "alltoall")]
    dense = b.model.model_copy(update={"moe": None, "ffn": 1})
    # the MoE layer less the same layer with a one-wide dense MLP: attention cancels
    assert moe_layer_s(b) == pytest.approx(
        _one_layer_s(b.model, b, 8) - _one_layer_s(dense, b, 1), rel=1e-12)
    assert 0 < moe_layer_s(b) < _one_layer_s(b.model, b, 8)
    # more tokens a rank cost more; deepep's deduplicated exchange costs less than top-k
    # copies at the same tokens
    assert moe_layer_s(b) < moe_layer_s(by[("qwen3-30b-a3b", 16384, "alltoall")])
    assert moe_layer_s(by[("qwen3-30b-a3b", 4096, "deepep")]) < moe_layer_s(b)
