"""The per-kernel training step of each backend (issue 19): packing, closed forms, inputs.

One test per closed form of docs/cost-model.md section 3: packing vs padding token counts,
the 1F1B bubble fraction, the PCIe offload round trip, the TP all-reduce volume, the CP ring
exchange, the EP all-to-all volume, FSDP's per-micro-batch and Megatron's per-step DP
traffic; then the batching knobs (mini-batches, recompute, log-prob micro-batches) and bad
input.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from rlsim.config.hardware import lookup_gpu, lookup_model
from rlsim.config.scenario import TrainConfig
from rlsim.cost import builtin_profile
from rlsim.cost.backends import (
    BACKENDS,
    FSDP,
    FSDP2,
    HF_LLAMA_HOST_OPS,
    MEGATRON,
    HostOps,
    balance_over_ranks,
    lookup_backend,
    mini_batches,
    pack_dynamic,
    pack_fixed,
    packed_rows,
    pad_to_multiple,
    split_even,
)
from rlsim.cost.errors import KnobError
from rlsim.cost.inference import NET_HOP_LATENCY_S
from rlsim.cost.network import nvlink_one_way_bytes_per_s, ring_reduce_scatter_s
from rlsim.cost.training import TrainBatching, TrainCost

H800 = lookup_gpu("H800")
PROF = builtin_profile(H800)
QWEN7 = lookup_model("qwen2.5-7b")
NVLINK_BW = nvlink_one_way_bytes_per_s(H800.nvlink_bandwidth) * PROF.allreduce_bus_efficiency
NET_BW = H800.network_bandwidth * PROF.network_efficiency
PCIE_BW = H800.pcie_bandwidth * PROF.pcie_efficiency
LAT = PROF.allreduce_latency_s


def cost(gpus: int = 8, tp: int = 1, pp: int = 1, cp: int = 1, backend=MEGATRON,
         model=QWEN7, **batching: object) -> TrainCost:
    return TrainCost(model, H800, gpus, tp, pp, cp, PROF, backend=backend,
                     batching=TrainBatching(**batching))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- packing

def test_packing_vs_padding_token_counts() -> None:
    lengths = [100, 300, 50, 400, 200]
    dyn = pack_dynamic(lengths, 500)
    assert dyn == [[100, 300, 50], [400], [200]]  # next-fit in order, up to the cap
    assert sum(map(sum, dyn)) == sum(lengths) == 1050  # packing: no padding
    fixed = pack_fixed(lengths, 2)
    assert fixed == [[300, 300], [400, 400], [200]]
    assert sum(map(sum, fixed)) == 1600  # each padded to its micro-batch's longest
    assert pack_dynamic([900, 10], 500) == [[900], [10]]  # longer than the cap: alone
    assert pack_fixed(lengths, 2, pad=False) == [[100, 300], [50, 400], [200]]  # packed
    # The step prices what it computes: padded micro-batches cost more than packed ones
    # (FSDP pads fixed micro-batches; Megatron packs them, THD, like dynamic batching).
    skewed = [8000, 200, 200, 200] * 16
    padded = cost(backend=FSDP, micro_batch_size=4).train_step(
        sum(skewed), lengths=skewed).compute_s
    packed = cost(backend=FSDP, max_tokens=8600).train_step(sum(skewed), lengths=skewed).compute_s
    assert padded > 2 * packed
    mega_fixed = cost(micro_batch_size=4).train_step(sum(skewed), lengths=skewed).compute_s
    mega_dyn = cost(max_tokens=8600).train_step(sum(skewed), lengths=skewed).compute_s
    assert mega_fixed == pytest.approx(mega_dyn)  # same micro-batches, no padding


def test_megatron_packed_alignment() -> None:
    # veRL preprocess_packed_seqs: each packed sequence is padded to a multiple of
    # tp * 2 cp (cp > 1) or tp. A 1001-token sequence at tp 2, cp 1 trains as 1002 tokens;
    # at tp 4, cp 2 (align 16) as 1008: the same cost as sequences of exactly those lengths.
    # The GPU side (compute + communication): a one-sequence micro-batch this small is
    # host-bound, and the host's time does not depend on the tokens.
    def gpu_s(t: TrainCost, n: int) -> float:
        step = t.train_step(n, lengths=[n])
        return step.compute_s + step.comm_s

    t2 = cost(gpus=2, tp=2, micro_batch_size=1)
    assert gpu_s(t2, 1001) == pytest.approx(gpu_s(t2, 1002))
    t8 = cost(gpus=8, tp=4, cp=2, micro_batch_size=1)
    assert gpu_s(t8, 1001) == pytest.approx(gpu_s(t8, 1008))
    assert gpu_s(t8, 1009) > gpu_s(t8, 1008)


def _balance_reference(lengths: list[int], ranks: int) -> list[list[int]]:
    """The dealing rule as first written (heapq of (load, rank) pairs, a key function)."""
    import heapq

    picked: list[list[int]] = [[] for _ in range(ranks)]
    heap = [(0, r) for r in range(ranks)]
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        load, r = heapq.heappop(heap)
        picked[r].append(i)
        heapq.heappush(heap, (load + lengths[i], r))
    return [[lengths[i] for i in sorted(idx)] for idx in picked]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=40), max_size=300),
       st.integers(min_value=1, max_value=40))
def test_balance_matches_the_rule(lengths: list[int], ranks: int) -> None:
    # Small lengths: many ties, in the loads and in the lengths.
    assert balance_over_ranks(lengths, ranks) == _balance_reference(lengths, ranks)


def test_ranks_splits_and_mini_batches() -> None:
    assert balance_over_ranks([5, 4, 3, 3, 2, 1], 2) == [[5, 3, 1], [4, 3, 2]]
    assert [sum(r) for r in balance_over_ranks([5, 4, 3, 3, 2, 1], 2)] == [9, 9]
    assert split_even(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert mini_batches(512, 32) == 16 and mini_batches(33, 32) == 2
    assert mini_batches(None, 32) == mini_batches(512, None) == 1
    assert pad_to_multiple(5, 4) == 8 and pad_to_multiple(8, 4) == 8 and pad_to_multiple(5, 1) == 5


# ----------------------------------------------------------------------------- closed forms

def test_pipeline_bubble_fraction() -> None:
    # dp = 1, 8 fixed micro-batches of one sample on 4 stages: bubble = (p-1)/(m+p-1).
    t = cost(gpus=4, pp=4, micro_batch_size=1)
    lengths = [1000] * 8
    s = t.train_step(sum(lengths), lengths=lengths)
    assert s.micro_batches == 8
    pipelined = s.compute_s + s.comm_s + s.overhead_s + s.bubble_s
    assert s.bubble_s / pipelined == pytest.approx(3 / (8 + 4 - 1), rel=1e-12)
    assert cost(gpus=1).train_step(8000, lengths=lengths).bubble_s == 0.0


def test_offload_round_trip() -> None:
    p = QWEN7.params
    t = cost(gpus=8, backend=FSDP, param_offload=True, grad_offload=True,
             optimizer_offload=True)
    # FSDP: fp32 params (4 B), fp32 grads (4 B), Adam m, v (8 B), all over 8 GPUs; each
    # pass loads and offloads: 2 * bytes / (pcie * efficiency).
    assert t.pass_offload_s(train=True) == pytest.approx(2 * p * 16 / 8 / PCIE_BW, rel=1e-12)
    assert t.pass_offload_s(train=False) == pytest.approx(2 * p * 4 / 8 / PCIE_BW, rel=1e-12)
    lengths = [512] * 16
    assert t.train_step(sum(lengths), lengths=lengths).offload_s == t.pass_offload_s(True)
    # Megatron: bf16 params over TP x PP only (the distributed optimizer shards the rest).
    m = cost(gpus=8, tp=2, param_offload=True)
    assert m.pass_offload_s(train=False) == pytest.approx(2 * p * 2 / 2 / PCIE_BW, rel=1e-12)
    assert cost().pass_offload_s(train=True) == 0.0
    with_off = m.forward_s(sum(lengths), lengths=lengths)
    without = cost(gpus=8, tp=2).forward_s(sum(lengths), lengths=lengths)
    assert with_off - without == pytest.approx(m.pass_offload_s(False), rel=1e-9)


def test_tp_allreduce_volume() -> None:
    t = cost(gpus=8, tp=4)
    m = 4096
    size = m * QWEN7.hidden * 2  # m tokens x hidden x bf16
    one = LAT + 2 * (4 - 1) / 4 * size / NVLINK_BW  # ring all-reduce
    assert t.tp_comm_s(m) == pytest.approx(2 * QWEN7.layers * one, rel=1e-12)
    assert cost(gpus=8, tp=1).tp_comm_s(m) == 0.0


def test_cp_ring_exchange_and_waste() -> None:
    t = cost(gpus=8, tp=2, cp=4)
    m = 2048
    kv = m * 2 * QWEN7.kv_dim / 2 * 2  # K and V of m tokens, kv heads over tp, bf16
    ring = QWEN7.layers * (4 - 1) * (LAT + kv / NVLINK_BW)
    assert t.cp_comm_s(m, 0.0, backward=False) == pytest.approx(ring, rel=1e-12)
    assert t.cp_comm_s(m, 0.0, backward=True) == pytest.approx(2 * ring, rel=1e-12)
    # Overlapped with the layer's attention: only the excess shows.
    assert t.cp_comm_s(m, ring / 4, backward=False) == pytest.approx(ring * 3 / 4, rel=1e-12)
    assert t.cp_comm_s(m, 10 * ring, backward=False) == 0.0
    # Short sequences: each is padded to 2*cp chunks and still pays cp-1 ring steps a layer.
    short = [3] * 64
    padded = [pad_to_multiple(s, 8) for s in short]
    assert sum(padded) == 512 > sum(short)
    s_cp = t.train_step(sum(short), lengths=short)
    s_no = cost(gpus=8, tp=2).train_step(sum(short), lengths=short)
    assert s_cp.comm_s > s_no.comm_s


def test_ep_alltoall_volume() -> None:
    moe = lookup_model("qwen3-30b-a3b")
    assert moe.moe is not None
    t = cost(gpus=16, backend=MEGATRON, model=moe, ep=8)
    m = 4096
    vol = m * moe.moe.experts_per_token * moe.hidden * 2 * (8 - 1) / 8
    assert t.ep_alltoall_bytes(m) == pytest.approx(vol, rel=1e-12)
    one = LAT + vol * MEGATRON.router_imbalance / NVLINK_BW  # ep = 8: inside a node
    assert t.ep_comm_s(m) == pytest.approx(2 * moe.moe_layers * one, rel=1e-12)
    assert cost(gpus=16, model=moe).ep_alltoall_bytes(m) == 0.0  # ep = 1: no exchange
    # EP 16 spans two nodes of 8: the node's 7/16 over NVLink while 8/16 leave on the NIC,
    # at once (the engines' hierarchical all-to-all); not every byte at the NIC's rate.
    t16 = cost(gpus=16, backend=MEGATRON, model=moe, ep=16)
    buf = m * moe.moe.experts_per_token * moe.hidden * 2 * MEGATRON.router_imbalance
    one16 = LAT + NET_HOP_LATENCY_S + max(7 / 16 * buf / NVLINK_BW, 8 / 16 * buf / NET_BW)
    assert t16.ep_comm_s(m) == pytest.approx(2 * moe.moe_layers * one16, rel=1e-12)
    assert t16.ep_comm_s(m) < 2 * moe.moe_layers * (LAT + buf * 15 / 16 / NET_BW)
    # DeepEP / HybridEP: one copy per GPU and per remote node holding any of the token's 8
    # experts (128 experts spread evenly), both links at once.
    dedup = cost(gpus=16, backend=MEGATRON, model=moe, ep=16, moe_dispatcher="deepep")
    tok = m * moe.hidden * 2 * MEGATRON.router_imbalance
    gpu_hit = 1 - math.comb(128 - 8, 8) / math.comb(128, 8)  # 8 experts per GPU
    node_hit = 1 - math.comb(128 - 64, 8) / math.comb(128, 8)  # 64 per node
    one_d = LAT + NET_HOP_LATENCY_S + max(15 * gpu_hit * tok / NVLINK_BW,
                                          1 * node_hit * tok / NET_BW)
    assert dedup.ep_comm_s(m) == pytest.approx(2 * moe.moe_layers * one_d, rel=1e-12)
    assert node_hit > 0.99  # about one InfiniBand copy per token, where alltoall sends ~4
    assert dedup.ep_comm_s(m) < t16.ep_comm_s(m) / 2
    # Inside one node only the NVLink term is left (8 ranks, 16 experts each).
    in_node = cost(gpus=16, backend=MEGATRON, model=moe, ep=8, moe_dispatcher="deepep")
    hit8 = 1 - math.comb(128 - 16, 8) / math.comb(128, 8)
    assert in_node.ep_comm_s(m) == pytest.approx(
        2 * moe.moe_layers * (LAT + 7 * hit8 * tok / NVLINK_BW), rel=1e-12)
    with pytest.raises(ValueError, match="moe_dispatcher"):
        TrainBatching(moe_dispatcher="allgather")
    # With TP, sequence parallelism leaves m/tp tokens per GPU at the router (folding).
    t2 = cost(gpus=16, tp=2, backend=MEGATRON, model=moe, ep=8)
    assert t2.ep_alltoall_bytes(m) == pytest.approx(vol / 2, rel=1e-12)
    # Memory: all experts, over EP; the optimizer over every GPU.
    experts = moe.moe_layers * moe.moe.experts * moe.expert_params
    expect = ((moe.params - experts) + experts / 8) * 6 + moe.params / 16 * 12
    assert t.state_bytes_per_gpu() == pytest.approx(expect, rel=1e-12)
    # Compute from active parameters: the MoE model's GEMMs cost far less than a dense
    # model of all its parameters would.
    lengths = [2048] * 32
    assert t.train_step(sum(lengths), lengths=lengths).compute_s < cost(
        gpus=16).train_step(sum(lengths), lengths=lengths).compute_s


def test_fsdp_traffic_per_micro_batch() -> None:
    b = replace(FSDP, dp_overlap_fraction=0.0)
    t = cost(gpus=16, backend=b, max_tokens=4096)
    p = QWEN7.params
    # Parameters all-gathered (bf16) for the forward and again for the backward, gradients
    # reduce-scattered (fp32) after it, over all 16 GPUs (two nodes: the network).
    per_mb = 3 * QWEN7.layers * LAT + 15 / 16 * p * (2 + 2 + 4) / NET_BW
    lengths = [2048] * 64  # 4 per rank -> 2 micro-batches of 4096 tokens per rank
    s = t.train_step(sum(lengths), lengths=lengths)
    assert s.comm_s == pytest.approx(2 * per_mb, rel=1e-9)
    # Half the token cap, twice the micro-batches, twice the traffic.
    s2 = cost(gpus=16, backend=b, max_tokens=2048).train_step(sum(lengths), lengths=lengths)
    assert s2.comm_s == pytest.approx(4 * per_mb, rel=1e-9)
    # The default overlap hides part of it behind each micro-batch's compute.
    assert cost(gpus=16, backend=FSDP, max_tokens=4096).train_step(
        sum(lengths), lengths=lengths).comm_s < s.comm_s


def test_hsdp_gathers_inside_the_shard_group_and_all_reduces_over_replicas() -> None:
    # veRL fsdp_size 8 on 16 GPUs (two nodes): a (2, 8) mesh. Each micro-batch gathers and
    # reduce-scatters inside the node (NVLink), then all-reduces this GPU's 1/8 of the
    # fp32 gradients with its one replica across the network.
    b = replace(FSDP, dp_overlap_fraction=0.0)
    t = cost(gpus=16, backend=b, max_tokens=4096, fsdp_size=8)
    p, L = QWEN7.params, QWEN7.layers
    per_mb = (3 * L * LAT + 7 / 8 * p * (2 + 2 + 4) / NVLINK_BW
              + L * LAT + 2 * (2 - 1) / 2 * (p / 8 * 4) / NET_BW)
    lengths = [2048] * 64  # 2 micro-batches of 4096 tokens per rank
    s = t.train_step(sum(lengths), lengths=lengths)
    assert s.comm_s == pytest.approx(2 * per_mb, rel=1e-9)
    # A log-prob forward gathers only: no gradients, no replica all-reduce.
    assert t._fsdp_comm_s(False) == pytest.approx(L * LAT + 7 / 8 * p * 2 / NVLINK_BW,
                                                  rel=1e-12)
    # The state is sharded over 8 GPUs, not 16: twice the bytes per GPU.
    assert t.state_bytes_per_gpu() == pytest.approx(p * 16 / 8, rel=1e-12)
    assert cost(gpus=16, backend=b).state_bytes_per_gpu() == pytest.approx(p * 16 / 16)
    # fsdp_size 1: plain DDP, the whole gradient all-reduced across the 16 replicas.
    ddp = cost(gpus=16, backend=b, fsdp_size=1)
    assert ddp._fsdp_comm_s(True) == pytest.approx(
        L * LAT + 2 * 15 / 16 * p * 4 / NET_BW, rel=1e-12)


def test_fsdp_size_at_or_above_the_gpus_is_plain_fsdp() -> None:
    lengths = [2048] * 64
    plain = cost(gpus=16, backend=FSDP, max_tokens=4096).train_step(
        sum(lengths), lengths=lengths)
    for size in (16, 32):
        same = cost(gpus=16, backend=FSDP, max_tokens=4096, fsdp_size=size)
        assert same.train_step(sum(lengths), lengths=lengths) == plain


def test_fsdp_size_errors_name_the_field() -> None:
    with pytest.raises(KnobError, match="fsdp_size=3 must divide the 16"):
        cost(gpus=16, backend=FSDP, fsdp_size=3)
    with pytest.raises(KnobError, match="fsdp_size"):
        cost(gpus=16, backend=MEGATRON, fsdp_size=8)
    with pytest.raises(ValidationError, match=r"train\.fsdp_size: shards an FSDP trainer"):
        TrainConfig(pool="p", backend="megatron", fsdp_size=8)
    with pytest.raises(ValidationError, match=r"train\.fsdp_size: a shard group"):
        TrainConfig(pool="p", backend="fsdp2", fsdp_size=0)
    assert TrainConfig(pool="p", backend="fsdp2", fsdp_size=-1).fsdp_size == -1


def test_megatron_dp_traffic_per_optimizer_step() -> None:
    t = cost(gpus=16, ppo_mini_batch_size=4)
    p = QWEN7.params
    # bf16 gradient reduce-scatter + bf16 parameter all-gather over 16 ranks (two nodes),
    # nothing overlapped (megatron-core defaults), once per optimizer step.
    per_step = ring_reduce_scatter_s(p * (2 + 2), 16, NET_BW, 2 * LAT)
    lengths = [1024] * 128
    s = t.train_step(sum(lengths), lengths=lengths, prompts=16)
    assert s.optimizer_steps == 4
    assert s.comm_s == pytest.approx(4 * per_step, rel=1e-9)


# ----------------------------------------------------------------------------- knobs

def test_mini_batches_and_epochs() -> None:
    t = cost(gpus=8, ppo_mini_batch_size=16, ppo_epochs=2)
    lengths = [700] * (64 * 4)
    s = t.train_step(sum(lengths), lengths=lengths, prompts=64)
    assert s.optimizer_steps == 8
    one = cost(gpus=8).train_step(sum(lengths), lengths=lengths, prompts=64)
    assert one.optimizer_steps == 1
    assert s.optimizer_s == pytest.approx(8 * one.optimizer_s, rel=1e-12)
    assert s.compute_s == pytest.approx(2 * one.compute_s, rel=0.05)  # two epochs


def test_recompute_modes() -> None:
    lengths = [4096] * 8
    tok = sum(lengths)
    none, sel, full = (cost(gpus=1, recompute=r, max_tokens=8192).train_step(
        tok, lengths=lengths) for r in ("none", "selective", "full"))
    assert none.compute_s < sel.compute_s < full.compute_s
    # Full recomputation runs each micro-batch's forward again, less the LM head's (the
    # head and its log-softmax are not checkpointed): 4 micro-batches of 8192 tokens.
    base = cost(gpus=1, max_tokens=8192)
    fwd = base.forward_s(tok, lengths=lengths)
    fwd_compute = fwd - 4 * MEGATRON.micro_batch_overhead_s
    head = 4 * base._head_fwd_s(8192)
    assert 0 < head < 0.2 * fwd_compute
    assert full.compute_s - none.compute_s == pytest.approx(fwd_compute - head, rel=1e-9)
    # The default follows the old boolean: recompute_activations=True is full.
    legacy = TrainCost(QWEN7, H800, 1, 1, 1, 1, PROF, recompute_activations=False,
                       backend=MEGATRON)
    assert legacy.batching.recompute == "none"


@pytest.mark.parametrize("backend", [MEGATRON, FSDP])
def test_recompute_reruns_the_layers_not_the_head(backend) -> None:
    """What full recomputation adds to a micro-batch is linear in the layer count through 0:
    each decoder layer's forward once more, and nothing for the LM head (measured on an
    H200: reports/rl-shapes.md)."""
    def added(layers: int) -> float:
        t = TrainCost(QWEN7.model_copy(update={"layers": layers}), H800, 1, 1, 1, 1, PROF, True,
                      backend=backend, batching=TrainBatching(recompute="full"))
        return t.micro_batch_s([8192], True, "full") - t.micro_batch_s([8192], True, "none")
    assert added(8) == pytest.approx(2 * added(4), rel=1e-9)
    assert added(4) > 0


def test_log_prob_micro_batches() -> None:
    lengths = [1000] * 64
    tok = sum(lengths)
    big = cost(gpus=8, log_prob_max_tokens=64_000)
    small = cost(gpus=8, log_prob_micro_batch_size=1)
    # One sample per micro-batch: 8 per rank instead of 1, 7 more fixed costs at least.
    assert small.forward_s(tok, lengths=lengths) - big.forward_s(tok, lengths=lengths) > (
        7 * MEGATRON.micro_batch_overhead_s)
    # The training pass does not use them.
    assert small.train_step(tok, lengths=lengths).total_s == big.train_step(
        tok, lengths=lengths).total_s
    assert big.forward_s(0) == 0.0


def test_deterministic_and_lengths_default() -> None:
    t = cost(gpus=8, ppo_mini_batch_size=8)
    lengths = [100 + 37 * i % 900 for i in range(200)]
    a = t.train_step(sum(lengths), lengths=lengths, prompts=25)
    assert a == t.train_step(sum(lengths), lengths=lengths, prompts=25)
    # Without lengths: sequences of seq_tokens.
    assert t.train_step(4096 * 10, 4096) == t.train_step(4096 * 10, lengths=[4096] * 10)
    assert t.grad_s(4096 * 10, 4096) < t.train_step(4096 * 10, 4096).total_s


def test_from_config_defaults_to_the_kernel_path() -> None:
    base = TrainConfig(pool="p")
    t = TrainCost.from_config(QWEN7, H800, 8, base, PROF)
    assert t.backend is MEGATRON and t.batching.recompute == "full"
    mfu = TrainCost.from_config(QWEN7, H800, 8, base.model_copy(update={"mfu": 0.2}), PROF)
    assert mfu.backend is None and mfu.profile.train_mfu == 0.2
    prof = TrainCost.from_config(QWEN7, H800, 8, base.model_copy(update={"backend": "profile"}),
                                 PROF)
    assert prof.backend is None and prof.profile.train_mfu == PROF.train_mfu
    cfg = TrainConfig(pool="p", backend="fsdp2", cp=2, max_token_len_per_gpu=1000,
                      log_prob_max_token_len_per_gpu=3000, recompute="selective")
    f = TrainCost.from_config(QWEN7, H800, 8, cfg, PROF)
    assert f.backend is BACKENDS["fsdp2"]
    assert (f.batching.max_tokens, f.batching.log_prob_max_tokens) == (2000, 6000)  # x cp


def test_bad_input() -> None:
    with pytest.raises(ValidationError, match=r"train\.tp / train\.pp: backend fsdp"):
        TrainConfig(pool="p", backend="fsdp", tp=2)
    with pytest.raises(ValidationError, match=r"train\.ep"):
        TrainConfig(pool="p", backend="fsdp2", ep=2)
    with pytest.raises(ValidationError, match=r"train\.pad_to_multiple_of: .*"
                       r"micro_batch_size_per_gpu"):
        TrainConfig(pool="p", pad_to_multiple_of=256)
    with pytest.raises(ValueError, match="needs an MoE model"):
        cost(gpus=8, ep=2)
    with pytest.raises(ValueError, match="must divide tp\\*cp\\*dp"):
        cost(gpus=8, tp=4, model=lookup_model("qwen3-30b-a3b"), ep=16)
    with pytest.raises(ValueError, match="no tensor or pipeline"):
        cost(gpus=8, tp=2, backend=FSDP)
    with pytest.raises(ValueError, match="micro_batch_size must be >= 1"):
        TrainBatching(micro_batch_size=0)
    with pytest.raises(ValueError, match="recompute"):
        TrainBatching(recompute="some")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="megatron, fsdp, fsdp2"):
        lookup_backend("deepspeed")
    with pytest.raises(ValueError, match="lengths must be >= 0"):
        cost().train_step(10, lengths=[-1, 11])


# ----------------------------------------------------------------------------- host-bound

def test_host_ops_closed_form() -> None:
    # host = ops * op_s + kernels * launch_s; a train micro-batch records the forward
    # (autograd_op_s), runs the backward (backward_op_s) and, under full recompute, records
    # the forward again; the head once per micro-batch.
    h = HostOps(forward_ops=10, forward_kernels=6, grad_forward_ops=11, grad_forward_kernels=6,
                backward_ops=20, backward_kernels=12, head_forward_ops=3,
                head_forward_kernels=2, head_backward_ops=4, head_backward_kernels=3,
                op_s=1e-6, autograd_op_s=2e-6, backward_op_s=3e-6, launch_s=5e-6)
    assert h.forward_s(4) == pytest.approx((4 * 10 + 3) * 1e-6 + (4 * 6 + 2) * 5e-6)
    assert h.train_s(4, False) == pytest.approx(
        (4 * 11 + 3) * 2e-6 + (4 * 20 + 4) * 3e-6 + (4 * 18 + 5) * 5e-6)
    assert h.train_s(4, True) == pytest.approx(
        (4 * 22 + 3) * 2e-6 + (4 * 20 + 4) * 3e-6 + (4 * 24 + 5) * 5e-6)
    # The built-in set (host_overhead.py on an H200 machine) on a 28-layer model: a train
    # micro-batch with full recompute takes the host ~84 ms whatever its tokens.
    layers = QWEN7.layers
    t = cost(micro_batch_size=1)
    assert t.host_s(True, "full") == pytest.approx(HF_LLAMA_HOST_OPS.train_s(layers, True))
    assert 0.07 < t.host_s(True, "full") < 0.1
    assert t.host_s(False) == pytest.approx(HF_LLAMA_HOST_OPS.forward_s(layers))
    assert cost(backend=replace(MEGATRON, host_ops=None)).host_s(True, "full") == 0.0


def test_host_bound_and_gpu_bound_micro_batches() -> None:
    # A micro-batch takes max(GPU, host): the GPU waits host - GPU when the host is slower
    # (small micro-batches), nothing when the GPU is (large ones).
    t = cost(gpus=1, micro_batch_size=1)
    host = t.host_s(True, "full")
    small = t.train_step(64, lengths=[64])
    assert small.compute_s + small.comm_s < host
    assert small.host_wait_s == pytest.approx(host - small.compute_s - small.comm_s)
    assert small.overhead_s == pytest.approx(MEGATRON.micro_batch_overhead_s
                                             + small.host_wait_s)
    big = t.train_step(16384, lengths=[16384])
    assert big.compute_s > host
    assert big.host_wait_s == 0.0
    assert big.overhead_s == pytest.approx(MEGATRON.micro_batch_overhead_s)
    # Host-bound micro-batches hardly follow the tokens: 4x the tokens, same step time.
    s256 = t.train_step(256, lengths=[256])
    assert s256.total_s == pytest.approx(small.total_s, rel=1e-9)
    # Without the host term both are priced by their kernels alone.
    off = cost(gpus=1, micro_batch_size=1, backend=replace(MEGATRON, host_ops=None))
    assert off.train_step(64, lengths=[64]).total_s == pytest.approx(
        small.total_s - small.host_wait_s)


def test_host_wait_per_stage_and_forward_pass() -> None:
    # With pp stages each host issues L/pp layers: the wait per stage is host/pp - GPU/pp.
    t1 = cost(gpus=1, micro_batch_size=1)
    t2 = cost(gpus=2, pp=2, micro_batch_size=1)
    one, two = t1.train_step(64, lengths=[64]), t2.train_step(64, lengths=[64])
    assert two.host_wait_s == pytest.approx(one.host_wait_s / 2)
    # The log-prob pass (no_grad) pays its own, smaller, host time.
    fwd_host = t1.host_s(False)
    assert fwd_host < t1.host_s(True, "none") < t1.host_s(True, "full")
    gpu_fwd = cost(gpus=1, micro_batch_size=1,
                   backend=replace(MEGATRON, host_ops=None)).forward_s(64, lengths=[64])
    assert t1.forward_s(64, lengths=[64]) == pytest.approx(
        max(gpu_fwd - MEGATRON.micro_batch_overhead_s, fwd_host)
        + MEGATRON.micro_batch_overhead_s)


def test_host_ops_bad_input() -> None:
    with pytest.raises(ValueError, match=r"HostOps\.launch_s"):
        replace(HF_LLAMA_HOST_OPS, launch_s=-1e-6)
    with pytest.raises(ValueError, match=r"HostOps\.backward_ops"):
        replace(HF_LLAMA_HOST_OPS, backward_ops=-1)


def test_uneven_pipeline_stages_and_folded_expert_parallelism() -> None:
    """Megatron allows uneven first/last stages: DeepSeek-V3's 61 layers on 16 stages run at
    the pace (and memory) of a 4-layer stage. MoE parallel folding (expert TP 1): EP spans
    the tp*cp*dp ranks, so Qwen3-235B at tp 2, cp 2, dp 4 takes ep 16 (NeMo-RL's recipe)."""
    ds = lookup_model("deepseek-v3")
    assert ds.moe is not None
    t = cost(gpus=256, pp=16, model=ds, ep=16)
    assert t.stage_fraction == pytest.approx(4 / 61, rel=1e-12)
    experts = ds.moe_layers * ds.moe.experts * ds.expert_params
    expect = ((ds.params - experts) * 4 / 61 + experts * 4 / 61 / 16) * 6 + ds.params / 256 * 12
    assert t.state_bytes_per_gpu() == pytest.approx(expect, rel=1e-12)
    # pp dividing the layers: exactly 1/pp per stage, as before
    assert cost(gpus=8, pp=4).stage_fraction == pytest.approx(1 / 4, rel=1e-12)
    q = lookup_model("qwen3-235b-a22b")
    folded = cost(gpus=128, tp=2, pp=8, cp=2, model=q, ep=16)
    assert folded.dp == 4 and folded.ep == 16
    lengths = [1024] * 64
    assert folded.train_step(sum(lengths), lengths=lengths).total_s > 0
    with pytest.raises(ValueError, match="exceeds the model's 28 layers"):
        cost(gpus=32, pp=32)


# ----------------------------------------------------------------------------- issue 19, N:
# eager elementwise traffic and the attention backward's efficiency per backend


def test_eager_traffic_closed_forms() -> None:
    from rlsim.cost.backends import ElementwiseTraffic

    t = ElementwiseTraffic(hidden=2, kv_dim=3, ffn=5, head_vocab=7, head_hidden=11, kernels=4,
                           bwd_hidden=13, bwd_kv_dim=17, bwd_ffn=19, bwd_head_vocab=23,
                           bwd_head_hidden=29, bwd_kernels=6)
    assert t.layer_bytes_per_token(10, 100, 1000, backward=False) == 2 * 10 + 3 * 100 + 5000
    assert t.layer_bytes_per_token(10, 100, 1000, backward=True) == 130 + 1700 + 19000
    assert t.head_bytes_per_token(1000, 10, backward=False) == 7000 + 110
    assert t.head_bytes_per_token(1000, 10, backward=True) == 23000 + 290
    with pytest.raises(ValueError, match=r"ElementwiseTraffic\.ffn"):
        replace(t, ffn=-1.0)


def test_eager_elementwise_is_counted_bytes_over_hbm() -> None:
    """FSDP (eager HF model): per layer e(m * counted bytes) plus a launch per further kernel,
    and the head's; the fused path (Megatron) keeps backward = 2x forward."""
    from rlsim.cost.backends import HF_LLAMA_EAGER_TRAFFIC as T
    from rlsim.cost.kernels import ElementwiseModel

    assert FSDP.elementwise_traffic is T and MEGATRON.elementwise_traffic is None
    e = ElementwiseModel(H800, PROF).time_s
    m = 4096
    for backward, kernels in ((False, T.kernels), (True, T.bwd_kernels)):
        layer = T.layer_bytes_per_token(QWEN7.hidden, QWEN7.kv_dim, QWEN7.ffn, backward)
        head = T.head_bytes_per_token(QWEN7.vocab, QWEN7.hidden, backward)
        want = QWEN7.layers * (e(m * layer) + (kernels - 1) * PROF.elementwise_launch_s) + e(
            m * head)
        got = cost(backend=FSDP)._elementwise(m, backward)
        assert got == pytest.approx(want, rel=1e-12)
    fused = cost(backend=MEGATRON)
    assert fused._elementwise(m, True) == pytest.approx(2 * fused._elementwise(m, False))
    # Eager moves several times the fused kernels' bytes (RMSNorm through fp32, rotate_half,
    # repeat_kv copies, autograd's per-op backward).
    assert cost(backend=FSDP)._elementwise(m, True) > 3 * fused._elementwise(m, True)


def test_attention_backward_runs_at_the_backends_efficiency() -> None:
    pairs = 1e8
    peak = H800.bf16_tflops * 1e12
    flops_b = 4.0 * QWEN7.q_dim * pairs * QWEN7.layers * 2.5
    fixed = QWEN7.layers * PROF.attention_fixed_s
    assert FSDP.attention_bwd_flops_efficiency == 0.32
    got = cost(backend=FSDP)._attention_s(pairs, backward=True)
    assert got == pytest.approx(flops_b / (peak * 0.32) + fixed, rel=1e-12)
    # None (Megatron: cuDNN's attention): the profile's efficiency, forward and backward.
    meg = cost(backend=MEGATRON)._attention_s(pairs, backward=True)
    assert meg == pytest.approx(flops_b / (peak * PROF.attention_flops_efficiency) + fixed,
                                rel=1e-12)
    fwd = cost(backend=FSDP)._attention_s(pairs, backward=False)
    assert fwd == pytest.approx(flops_b / 2.5 / (peak * PROF.attention_flops_efficiency)
                                + fixed, rel=1e-12)
    with pytest.raises(ValueError, match="attention_bwd_flops_efficiency"):
        replace(FSDP, attention_bwd_flops_efficiency=1.5)


def test_log_prob_pad_to_prices_every_sample_at_the_padded_length() -> None:
    """ROLL's inference workers without packing pad each sample to sequence_length: the
    forward costs what the same count of full-length samples costs; training is unchanged."""
    lengths = [300, 1200, 4000, 800]
    padded = cost(log_prob_micro_batch_size=2, log_prob_pad_to=4096)
    full = cost(log_prob_micro_batch_size=2)
    assert padded.forward_s(sum(lengths), lengths=lengths) == pytest.approx(
        full.forward_s(4 * 4096, lengths=[4096] * 4), rel=1e-12)
    assert padded.forward_s(sum(lengths), lengths=lengths) > full.forward_s(
        sum(lengths), lengths=lengths)
    assert padded.train_step(sum(lengths), lengths=lengths).total_s == pytest.approx(
        full.train_step(sum(lengths), lengths=lengths).total_s, rel=1e-12)
    with pytest.raises(ValueError, match="log_prob_pad_to must be >= 1"):
        TrainBatching(log_prob_pad_to=0)


def test_ref_pad_to_pads_the_reference_pass_alone() -> None:
    """ROLL's reference worker (no use_remove_padding) runs the batch padded to
    sequence_length while the actor's old-log-prob pass keeps its own lengths."""
    lengths = [300, 1200, 4000, 800]
    padded = cost(log_prob_micro_batch_size=2, ref_pad_to=4096)
    plain = cost(log_prob_micro_batch_size=2)
    n = sum(lengths)
    assert padded.forward_s(n, lengths=lengths, reference=True) == pytest.approx(
        plain.forward_s(4 * 4096, lengths=[4096] * 4), rel=1e-12)
    assert padded.forward_s(n, lengths=lengths) == pytest.approx(
        plain.forward_s(n, lengths=lengths), rel=1e-12)
    # ref_pad_to overrides log_prob_pad_to for the reference pass only
    both = cost(log_prob_micro_batch_size=2, log_prob_pad_to=4096, ref_pad_to=8192)
    assert both.forward_s(n, lengths=lengths, reference=True) == pytest.approx(
        plain.forward_s(4 * 8192, lengths=[8192] * 4), rel=1e-12)
    assert both.forward_s(n, lengths=lengths) == pytest.approx(
        plain.forward_s(4 * 4096, lengths=[4096] * 4), rel=1e-12)


def test_pad_to_pads_every_pass() -> None:
    """ROLL without packing trains the batch as generated: train and log-prob passes
    cost what full-length samples cost; log_prob_pad_to overrides it for log-probs."""
    lengths = [300, 1200, 4000, 800]
    n = sum(lengths)
    padded = cost(micro_batch_size=1, pad_to=4096)
    plain = cost(micro_batch_size=1)
    full = [4096] * 4
    assert padded.train_step(n, lengths=lengths).total_s == pytest.approx(
        plain.train_step(4 * 4096, lengths=full).total_s, rel=1e-12)
    assert padded.grad_s(n, lengths=lengths) == pytest.approx(
        plain.grad_s(4 * 4096, lengths=full), rel=1e-12)
    assert padded.forward_s(n, lengths=lengths, reference=True) == pytest.approx(
        plain.forward_s(4 * 4096, lengths=full), rel=1e-12)
    own = cost(micro_batch_size=1, pad_to=4096, log_prob_pad_to=2048)
    assert own.forward_s(n, lengths=lengths) == pytest.approx(
        plain.forward_s(n, lengths=[2048, 2048, 4000, 2048]), rel=1e-12)


def test_pad_to_multiple_rounds_each_micro_batch_up() -> None:
    """ROLL's Megatron use_remove_padding: a micro-batch is cut to its longest sample
    rounded up to lcm(multiple, TP/CP alignment); every sample in it costs that length."""
    lengths = [100, 300, 50, 400, 200]
    assert pack_fixed(lengths, 2, pad=False, multiple=256) == [
        [512, 512], [512, 512], [256]]
    assert pack_fixed(lengths, 1, multiple=2048) == [[2048]] * 5
    with pytest.raises(ValueError, match="multiple must be >= 1"):
        pack_fixed(lengths, 2, multiple=0)
    # cp 2, tp 2: alignment 8, lcm(8, 2048) = 2048; one sample of 850 costs one of 2048
    rounded = cost(gpus=4, tp=2, cp=2, micro_batch_size=1, pad_to_multiple_of=2048)
    plain = cost(gpus=4, tp=2, cp=2, micro_batch_size=1)
    assert rounded.train_step(850, lengths=[850]).total_s == pytest.approx(
        plain.train_step(2048, lengths=[2048]).total_s, rel=1e-12)
    # The padding is GPU work (both micro-batches are short enough for the host to pace
    # them, so the step totals can tie).
    assert rounded.train_step(850, lengths=[850]).compute_s > plain.train_step(
        850, lengths=[850]).compute_s
    # tp 3 with multiple 256: lcm(3, 256) = 768
    assert cost(gpus=3, tp=3, micro_batch_size=1, pad_to_multiple_of=256)._pad_multiple() == 768


def test_a_colocated_switch_does_not_move_what_the_offload_flags_already_move() -> None:
    """The switch offloads and reloads only the state the offload flags leave on the GPU;
    with every flag on, the passes move it all and the switch moves nothing."""
    base = cost(gpus=8, tp=2)
    full = base.state_bytes_per_gpu()
    assert base.resident_state_bytes_per_gpu() == pytest.approx(full, rel=1e-12)
    opt = cost(gpus=8, tp=2, optimizer_offload=True)
    assert opt.resident_state_bytes_per_gpu() == pytest.approx(
        full - QWEN7.params / 8 * MEGATRON.optimizer_bytes, rel=1e-12)
    everything = cost(gpus=8, tp=2, param_offload=True, grad_offload=True,
                      optimizer_offload=True)
    assert everything.resident_state_bytes_per_gpu() == pytest.approx(0.0, abs=1e-3)
    assert everything.offload_s() == pytest.approx(0.0, abs=1e-12)


def test_trainer_layout_errors_name_their_field(tmp_path) -> None:
    """A trainer layout rlsim refuses names the `train` knob to change."""
    import simpy
    import yaml

    from rlsim.config.errors import ScenarioError
    from rlsim.config.loading import load_scenario
    from rlsim.entities.cluster import build_cluster
    from rlsim.trace import Recorder

    data = {"name": "t", "model": "qwen3-30b-a3b", "steps": 1,
            "pools": [{"name": "c", "gpu": "H100", "nodes": 2}],
            "rollout": {"pool": "c", "tp": 2}, "train": {"pool": "c", "tp": 2, "ep": 64},
            "workload": {"prompts_per_step": 2, "samples_per_prompt": 2,
                         "max_prompt_len": 64, "max_response_len": 64,
                         "response_len": {"dist": "lognormal", "median": 32, "sigma": 0.5}}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    scenario, _ = load_scenario(path)
    with pytest.raises(ScenarioError, match=r"train\.ep"):
        build_cluster(scenario, simpy.Environment(), Recorder())


def test_scenario_dispatcher_reaches_the_trainer() -> None:
    from rlsim.config.errors import ScenarioError
    from rlsim.config.loading import scenario_from_dict
    from rlsim.cost.job import cost_models
    from tests.scenarios import tiny

    sc = tiny(model="qwen3-30b-a3b")
    sc["pools"][0].update(nodes=2)
    sc["train"].update(backend="megatron", ep=16, moe_dispatcher="deepep")
    deepep = cost_models(scenario_from_dict(sc)[0]).train_cost
    assert deepep.batching.moe_dispatcher == "deepep"
    sc["train"]["moe_dispatcher"] = "alltoall"
    alltoall = cost_models(scenario_from_dict(sc)[0]).train_cost
    assert deepep.ep_comm_s(4096) < alltoall.ep_comm_s(4096)
    sc["train"]["moe_dispatcher"] = "allgather"
    with pytest.raises(ScenarioError, match="moe_dispatcher"):
        scenario_from_dict(sc)


def test_dtensor_tp_under_fsdp2() -> None:
    # NeMo-RL's DTensor path: each GPU holds 1/tp of every weight and FSDP shards that over
    # the gpus/tp data-parallel ranks, tp apart. Memory per GPU is FSDP's (params / gpus);
    # each micro-batch gathers 1/tp of the weights over those ranks, and the layers add TP's
    # activation all-reduces.
    llama = lookup_model("llama-3.1-70b")
    tp8 = cost(gpus=64, tp=8, backend=FSDP2, model=llama)
    tp1 = cost(gpus=64, tp=1, backend=FSDP2, model=llama)
    assert tp8.state_bytes_per_gpu() == pytest.approx(tp1.state_bytes_per_gpu(), rel=1e-12)
    g, per = 8, FSDP2.gather_bytes_per_param
    want = llama.layers * LAT + (g - 1) / g * llama.params / 8 * per / NET_BW  # spans nodes
    assert tp8._fsdp_comm_s(False) == pytest.approx(want, rel=1e-12)
    assert tp8._fsdp_comm_s(False) < tp1._fsdp_comm_s(False)
    assert tp8.tp_comm_s(4096) > 0.0 and tp1.tp_comm_s(4096) == 0.0
    # TP 1 is FSDP's arithmetic, unchanged.
    g1 = 64
    want1 = llama.layers * LAT + (g1 - 1) / g1 * llama.params * per / NET_BW
    assert tp1._fsdp_comm_s(False) == pytest.approx(want1, rel=1e-12)
    with pytest.raises(ValueError, match="no tensor or pipeline"):
        cost(gpus=64, tp=8, pp=2, backend=FSDP2, model=llama)
    with pytest.raises(ValueError, match="fsdp_size"):
        cost(gpus=64, tp=8, backend=FSDP2, model=llama, fsdp_size=16)
    assert TrainConfig(pool="p", backend="fsdp2", tp=8).tp == 8
    with pytest.raises(ValidationError, match=r"train\.fsdp_size"):
        TrainConfig(pool="p", backend="fsdp2", tp=8, fsdp_size=16)
    with pytest.raises(ValidationError, match=r"no pipeline"):
        TrainConfig(pool="p", backend="fsdp2", pp=2)


def test_packed_rows_first_fit_decreasing() -> None:
    # Sorted 5 4 3 2 1 into rows 5 wide: 5 | 4+1 | 3+2.
    assert packed_rows([5, 3, 2, 4, 1]) == (3, 5)
    assert packed_rows([4, 4, 4]) == (3, 4)
    assert packed_rows([8, 1, 1, 1, 1, 1, 1, 1, 1]) == (2, 8)  # one long sample, a row of 1s
    assert packed_rows([7]) == (1, 7)
    assert packed_rows([]) == (0, 0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 64), min_size=1, max_size=80))
def test_packed_rows_hold_every_sample_and_waste_under_half_a_row_each(
        lengths: list[int]) -> None:
    rows, width = packed_rows(lengths)
    assert width == max(lengths)
    assert sum(lengths) <= rows * width  # every sample fits
    assert rows <= len(lengths)
    # First fit: no two rows are each at most half full, so the rows hold more than half
    # of (rows - 1) widths.
    assert 2 * sum(lengths) > (rows - 1) * width


def test_pack_rows_is_for_the_whole_step_mfu_path() -> None:
    assert TrainConfig(pool="t", backend="profile", pack_rows=True).pack_rows
    assert TrainConfig(pool="t", mfu=0.3, pack_rows=True).pack_rows
    with pytest.raises(ValidationError, match=r"train\.pack_rows: .*backend megatron"):
        TrainConfig(pool="t", pack_rows=True)
