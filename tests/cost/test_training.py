"""TrainCost without a backend (whole-step MFU path: `train.mfu`, `train.backend: profile`):
FLOPs-over-MFU compute, bubble, exposed DP traffic, optimizer, state moves. The per-kernel
path of each backend is tested in test_backends.py."""

from __future__ import annotations

import pytest

from rlsim.config.hardware import lookup_gpu, lookup_model
from rlsim.cost import TrainCost, builtin_profile
from rlsim.cost.training import TrainBatching

H800 = lookup_gpu("H800")
PROF = builtin_profile(H800)


def trainer(model: str = "qwen2.5-7b", gpus: int = 16, tp: int = 2, pp: int = 1, cp: int = 1,
            **kw: object) -> TrainCost:
    return TrainCost(lookup_model(model), H800, gpus, tp, pp, cp, PROF, **kw)  # type: ignore[arg-type]


def test_dp_and_divisibility() -> None:
    assert trainer(gpus=32, tp=2, pp=2, cp=2).dp == 4
    with pytest.raises(ValueError, match="not divisible"):
        trainer(gpus=12, tp=4, pp=2)
    with pytest.raises(ValueError, match="tp"):
        trainer(gpus=16, tp=16)


def test_train_step_scales_linearly_with_tokens() -> None:
    t = trainer()
    small, big = t.train_step(2_000_000), t.train_step(4_000_000)
    assert big.compute_s == pytest.approx(2 * small.compute_s, rel=1e-12)
    assert big.total_s / small.total_s == pytest.approx(2.0, rel=0.05)


def test_compute_matches_flops_over_mfu() -> None:
    model = lookup_model("qwen2.5-7b")
    t = trainer(seq_tokens=4096)
    tokens = 1_000_000
    attn = 6 * model.layers * model.q_dim * 4096  # fwd+bwd causal attention FLOPs per token
    flops = (6 * model.matmul_params + attn) * tokens * 4 / 3
    expect = flops / (PROF.train_mfu * H800.bf16_tflops * 1e12 * 16)
    assert t.train_step(tokens).compute_s == pytest.approx(expect, rel=1e-12)
    no_rc = trainer(seq_tokens=4096, recompute_activations=False)
    assert no_rc.train_step(tokens).compute_s == pytest.approx(expect * 3 / 4, rel=1e-12)
    # A forward-only pass is a third of the step's compute without recomputation.
    assert no_rc.forward_s(tokens) == pytest.approx(no_rc.train_step(tokens).compute_s / 3)


def test_pipeline_bubble() -> None:
    t = trainer(gpus=32, tp=2, pp=4, micro_batch_tokens=16384)  # dp = 4
    tokens = 4 * 16384 * 8  # 8 micro-batches per pipeline
    s = t.train_step(tokens)
    assert s.bubble_s == pytest.approx(s.compute_s * 3 / 8)
    assert s.bubble_s / (s.compute_s + s.bubble_s) == pytest.approx(3 / (8 + 4 - 1))
    assert trainer(pp=1).train_step(tokens).bubble_s == 0.0


def test_dp_traffic_uses_network_across_nodes() -> None:
    inside = trainer(gpus=8, tp=2)  # dp=4 inside one node: NVLink
    across = trainer(gpus=16, tp=2)  # dp=8 spans two nodes: 400 Gb/s network
    assert across.dp_comm_s() > 3 * inside.dp_comm_s() > 0
    assert trainer(gpus=2, tp=2).dp_comm_s() == 0.0
    # Only the part compute does not hide is charged, never more than the traffic itself.
    s = across.train_step(10_000)
    assert 0 <= s.comm_s <= across.dp_comm_s()
    assert across.train_step(10**8).comm_s == pytest.approx(
        across.dp_comm_s() * (1 - PROF.train_comm_overlap_fraction))


def test_state_offload_reload() -> None:
    t = trainer(gpus=16)
    model = lookup_model("qwen2.5-7b")
    assert t.state_bytes_per_gpu() == pytest.approx(model.params * 16 / 16)
    assert t.offload_s() == pytest.approx(
        t.state_bytes_per_gpu() / (H800.pcie_bandwidth * PROF.pcie_efficiency))
    assert t.reload_s() == t.offload_s()
    assert t.train_step(10**6).optimizer_s > 0


def test_a_framework_s_slow_state_copies_apply_on_pcie_hosts_only() -> None:
    """NeMo-RL's copies into pageable memory (NVIDIA-NeMo/RL issue 3976: the optimizer's
    per-tensor copies at 1.8 GB/s, a large buffer at 16.1 GB/s) price a colocated switch's
    state offload on a PCIe host: optimizer bytes at one rate, the parameter and gradient
    buffers at the other. A coherent NVLink-C2C host (GB200) and a framework without such
    rates keep the link."""
    from rlsim.config.hardware import lookup_gpu as gpu_named
    from rlsim.cost.backends import lookup_backend
    from rlsim.cost.training import TrainBatching
    from rlsim.cost.weightsync import FRAMEWORK_CONSTANTS

    model = lookup_model("qwen2.5-7b")
    c = FRAMEWORK_CONSTANTS["nemo_rl"]
    rates = (c.optimizer_copy_bytes_per_s, c.buffer_copy_bytes_per_s)
    assert rates == (1.8e9, 16.1e9)
    verl = FRAMEWORK_CONSTANTS["verl"]
    assert (verl.optimizer_copy_bytes_per_s, verl.buffer_copy_bytes_per_s) == (None, None)
    megatron = lookup_backend("megatron")
    for name, slow in (("H100", True), ("GB200", False)):
        gpu = gpu_named(name)
        prof = builtin_profile(gpu)
        kw = {"backend": megatron, "batching": TrainBatching(recompute="full")}
        link_cost = TrainCost(model, gpu, 16, 2, 1, 1, prof, **kw)  # type: ignore[arg-type]
        nemo = TrainCost(model, gpu, 16, 2, 1, 1, prof, host_copy_bytes_per_s=rates,
                         **kw)  # type: ignore[arg-type]
        resident = nemo.resident_state_bytes_per_gpu()
        optimizer = model.params / 16 * megatron.optimizer_bytes
        link = gpu.pcie_bandwidth * prof.pcie_efficiency
        expect = (optimizer / 1.8e9 + (resident - optimizer) / 16.1e9 if slow
                  else resident / link)
        assert nemo.offload_s() == pytest.approx(expect, rel=1e-12)
        assert nemo.reload_s() == nemo.offload_s()
        assert (nemo.offload_s() > 5 * link_cost.offload_s()) is slow
    with pytest.raises(ValueError, match="host_copy_bytes_per_s"):
        TrainCost(model, H800, 16, 2, 1, 1, PROF, host_copy_bytes_per_s=(0.0, None))


def test_rollpacker_share_is_plausible() -> None:
    """Qwen2.5-14B on 32 H800, 1024 samples of ~4k tokens: a train step of minutes, not hours."""
    t = trainer("qwen2.5-14b", gpus=32, tp=2, pp=2, cp=2)
    step = t.train_step(1024 * 4096).total_s
    assert 30 < step < 600


def test_fixed_overheads_and_forward_mfu() -> None:
    model = lookup_model("qwen2.5-7b")
    prof = PROF.model_copy(update={"train_mfu": 0.3, "train_step_overhead_s": 0.5,
                                   "forward_mfu": 0.45, "forward_overhead_s": 0.2})
    t = TrainCost(model, H800, 16, 2, 1, 1, prof, recompute_activations=False)
    tokens, seq = 1_000_000, 2048
    fwd_flops = (2 * model.matmul_params + 2 * model.layers * model.q_dim * seq) * tokens
    peak = H800.bf16_tflops * 1e12 * 16
    s = t.train_step(tokens, seq)
    assert s.compute_s == pytest.approx(3 * fwd_flops / (0.3 * peak), rel=1e-12)
    assert s.overhead_s == 0.5
    assert s.total_s == pytest.approx(
        s.compute_s + s.bubble_s + s.comm_s + s.optimizer_s + 0.5, rel=1e-12)
    d = s.as_dict()
    # offload_s (issue 19: PCIe round trips of param/grad/optimizer offload) is 0 here.
    assert list(d) == ["compute_s", "bubble_s", "comm_s", "optimizer_s", "overhead_s",
                       "offload_s", "total_s"]
    assert d["offload_s"] == 0.0
    assert d["total_s"] == pytest.approx(sum(v for k, v in d.items() if k != "total_s"))
    assert t.forward_s(tokens, seq) == pytest.approx(fwd_flops / (0.45 * peak) + 0.2,
                                                     rel=1e-12)
    assert t.forward_s(0) == 0.0
    # Unset forward MFU: the training MFU; defaults: no fixed overheads.
    unset = TrainCost(model, H800, 16, 2, 1, 1, prof.model_copy(update={"forward_mfu": None}),
                      recompute_activations=False)
    assert unset.forward_s(tokens, seq) == pytest.approx(fwd_flops / (0.3 * peak) + 0.2,
                                                         rel=1e-12)
    assert PROF.forward_mfu is None and PROF.forward_pass_mfu == PROF.train_mfu
    assert PROF.train_step_overhead_s == PROF.forward_overhead_s == 0.0
    assert trainer().train_step(tokens).overhead_s == 0.0


def test_packed_rows_price_every_position_of_the_busiest_rank() -> None:
    model = lookup_model("qwen2.5-7b")
    prof = PROF.model_copy(update={"train_mfu": 0.3, "forward_mfu": 0.45,
                                   "forward_overhead_s": 0.0})
    lengths = [5000, 3000, 2000, 4000, 1000]  # rows 5000 | 4000+1000 | 3000+2000

    def cost(gpus: int, pack: bool) -> TrainCost:
        return TrainCost(model, H800, gpus, 1, 1, 1, prof, recompute_activations=False,
                         batching=TrainBatching(recompute="none", pack_rows=pack))

    def fwd_flops(tokens: float, seq: float) -> float:
        return (2 * model.matmul_params + 2 * model.layers * model.q_dim * seq) * tokens

    one = cost(1, True)
    peak = H800.bf16_tflops * 1e12
    # 3 rows of 5000 positions, attention dense over each row.
    packed = fwd_flops(3 * 5000, 5000)
    assert one.train_step(15000, 1.0, lengths).compute_s == pytest.approx(
        3 * packed / (0.3 * peak), rel=1e-12)
    assert one.forward_s(15000, 1.0, lengths) == pytest.approx(packed / (0.45 * peak),
                                                              rel=1e-12)
    # Without lengths, or without pack_rows, the samples' own tokens.
    assert one.train_step(15000, 3000).compute_s == pytest.approx(
        cost(1, False).train_step(15000, 3000, lengths).compute_s, rel=1e-12)
    # Two ranks, dealt as the per-kernel path deals them (balance_over_ranks): [5000, 2000,
    # 1000] packs into 2 rows of 5000 and [3000, 4000] into 2 rows of 4000; the step waits
    # for the first, priced on both GPUs.
    two = cost(2, True)
    assert two.train_step(15000, 1.0, lengths).compute_s == pytest.approx(
        3 * fwd_flops(2 * 5000, 5000) / (0.3 * peak), rel=1e-12)
