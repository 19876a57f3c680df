"""Rollout engines that span nodes: TP over the network (hierarchical all-reduce), expert
parallelism across nodes (all-to-all over the NICs), pipeline parallelism (tp x pp GPUs),
and the placement checks that name the field (docs/cost-model.md section 2, "Engines that
span nodes")."""

from __future__ import annotations

import math

import pytest
import simpy

from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import lookup_gpu, lookup_model
from rlsim.config.loading import scenario_from_dict
from rlsim.config.placement import resolve_placement
from rlsim.cost.inference import (
    NET_HOP_LATENCY_S,
    EngineOptions,
    InferenceCost,
    all_to_all_s,
    check_tp,
    hierarchical_all_to_all_s,
    hierarchical_allreduce_s,
)
from rlsim.cost.network import nvlink_one_way_bytes_per_s, ring_allreduce_s
from rlsim.cost.profile import builtin_profile
from rlsim.entities.cluster import build_cluster
from rlsim.trace import Recorder
from tests.scenarios import tiny

H100 = lookup_gpu("H100")
PROFILE = builtin_profile(H100)
NV = nvlink_one_way_bytes_per_s(H100.nvlink_bandwidth) * PROFILE.allreduce_bus_efficiency
NET = H100.network_bandwidth * PROFILE.network_efficiency
LAT = PROFILE.allreduce_latency_s


# ----------------------------------------------------------------- closed forms
def test_hierarchical_allreduce_closed_form() -> None:
    # 32 ranks, 8 per node: reduce-scatter + all-gather over NVLink, the 1/8 shard across
    # the 4 nodes over each GPU's NIC, 2 log2(4) network hops.
    s, nv, net, lat, hop = 8e6, 100e9, 40e9, 1e-5, 5e-6
    want = lat + 2 * 2 * hop + 2 * 7 / 8 * s / nv + 2 * 3 / 4 * (s / 8) / net
    assert hierarchical_allreduce_s(s, 32, 8, nv, net, lat, hop) == pytest.approx(want,
                                                                                   rel=1e-12)


def test_hierarchical_allreduce_inside_a_node_is_the_ring() -> None:
    for ranks in (2, 4, 8):
        assert hierarchical_allreduce_s(1e6, ranks, 8, NV, NET, LAT) == \
            ring_allreduce_s(1e6, ranks, NV, LAT)
    assert hierarchical_allreduce_s(1e6, 1, 8, NV, NET, LAT) == 0.0
    assert hierarchical_allreduce_s(0.0, 16, 8, NV, NET, LAT) == 0.0


def test_hierarchical_allreduce_network_term_shrinks_with_node_size() -> None:
    # The network carries 2 (N-1)/N of S/g per GPU: 16 ranks on two 8-GPU nodes send an
    # eighth of what 16 ranks on sixteen 1-GPU nodes send.
    big = hierarchical_allreduce_s(64e6, 16, 8, NV, NET, 0.0, 0.0)
    flat = hierarchical_allreduce_s(64e6, 16, 1, NV, NET, 0.0, 0.0)
    assert flat == pytest.approx(2 * 15 / 16 * 64e6 / NET)
    assert big < flat / 4


def test_hierarchical_all_to_all_closed_form() -> None:
    s, nv, net, lat, hop = 4e6, 100e9, 40e9, 1e-5, 5e-6
    # 16 ranks, 8 per node: 7/16 of the buffer over NVLink, 8/16 over the NIC, at once.
    want = lat + hop + max(7 / 16 * s / nv, 8 / 16 * s / net)
    assert hierarchical_all_to_all_s(s, 16, 8, nv, net, lat, hop) == pytest.approx(want)
    # Inside a node it is the plain all-to-all.
    assert hierarchical_all_to_all_s(s, 8, 8, nv, net, lat) == all_to_all_s(s, 8, nv, lat)


# ----------------------------------------------------------------- TP across nodes
def test_tp_across_nodes_prices_the_hierarchical_allreduce() -> None:
    model = lookup_model("llama-3.1-70b")  # dense GQA, 64 heads, 8 KV heads
    cost = InferenceCost(model, H100, 16, PROFILE)
    m = 64
    one = hierarchical_allreduce_s(m * model.hidden * 2, 16, 8, NV, NET, LAT)
    assert cost.step(m, 0).comm_s == pytest.approx(2 * model.layers * one, rel=1e-12)
    # the network hop makes each all-reduce slower than inside a node, per byte and fixed
    inside = ring_allreduce_s(m * model.hidden * 2, 8, NV, LAT)
    assert one > inside + 2 * NET_HOP_LATENCY_S


def test_tp_across_nodes_halves_the_weights_per_gpu() -> None:
    model = lookup_model("llama-3.1-70b")
    tp8, tp16 = (InferenceCost(model, H100, tp, PROFILE) for tp in (8, 16))
    assert tp16.weight_bytes_per_gpu() == pytest.approx(tp8.weight_bytes_per_gpu() / 2)
    # more room for KV (half the weights), but 8 KV heads over 16 ranks replicate: each
    # GPU still stores one KV head per token, so the tokens do not double
    assert tp8.kv_capacity_tokens(0.9) < tp16.kv_capacity_tokens(0.9) \
        < 2 * tp8.kv_capacity_tokens(0.9)


def test_check_tp_accepts_whole_nodes_and_refuses_part_nodes() -> None:
    model = lookup_model("llama-3.1-70b")
    check_tp(model, H100, 16)
    check_tp(model, H100, 64)  # 8 nodes, 64 heads
    six = H100.model_copy(update={"gpus_per_node": 6})
    with pytest.raises(ValueError, match="whole number of nodes") as err:
        check_tp(model, six, 8)
    assert str(err.value).startswith("tp=8")


# ----------------------------------------------------------------- expert parallelism
def test_ep_across_nodes_prices_the_all_to_all_over_the_network() -> None:
    model = lookup_model("qwen3-235b-a22b")
    ep1 = InferenceCost(model, H100, 16, PROFILE)
    ep16 = InferenceCost(model, H100, 16, PROFILE, options=EngineOptions(ep=16))
    m = 256
    k, h = model.moe.experts_per_token, model.hidden  # type: ignore[union-attr]
    a2a = hierarchical_all_to_all_s(m / 16 * k * h * 2, 16, 8, NV, NET, LAT)
    # the MoE layers' comm differs by exactly the dispatch + combine
    diff = ep16.step(m, 0).comm_s - ep1.step(m, 0).comm_s
    assert diff == pytest.approx(model.moe_layers * 2 * a2a, rel=1e-9)


# ----------------------------------------------------------------- pipeline parallelism
def test_pp_splits_weights_and_kv_layers() -> None:
    model = lookup_model("qwen2.5-7b")  # 28 layers
    one = InferenceCost(model, H100, 2, PROFILE)
    pp = InferenceCost(model, H100, 2, PROFILE, options=EngineOptions(pp=3))
    assert pp.gpus == 6
    assert pp.weight_bytes_per_gpu() == pytest.approx(one.weight_bytes_per_gpu() / 3)
    # the fullest stage holds ceil(28/3) = 10 layers' KV per token
    assert pp.kv_bytes_per_token_per_gpu == one.kv_bytes_per_token_per_gpu / 28 * 10


def test_pp_iteration_is_a_micro_batch_pass() -> None:
    # pp=2 x tp=4 inside a node: the round runs each layer at ceil(B/2) tokens (each stage
    # serves both micro-batches), reads half the KV per micro-batch, and adds one NVLink send
    # of hidden + residual between the stages.
    model = lookup_model("qwen2.5-7b")
    single = InferenceCost(model, H100, 4, PROFILE)
    pp = InferenceCost(model, H100, 4, PROFILE, options=EngineOptions(pp=2))
    b, kv = 64, 64 * 1000
    got, half = pp.step(b, kv), single.step(b // 2, kv // 2)
    assert got.linear_s == half.linear_s
    send = LAT + 2 * (b // 2) * model.hidden * 2 / NV
    assert got.comm_s == pytest.approx(half.comm_s + send, rel=1e-12)
    assert got.attention_s == pytest.approx(half.attention_s, rel=1e-12)
    assert got.overhead_s == single.step(b, kv).overhead_s


def test_pp_step_is_affine_in_kv_tokens() -> None:
    model = lookup_model("qwen2.5-7b")
    pp = InferenceCost(model, H100, 2, PROFILE, options=EngineOptions(pp=4))
    for batch in (1, 7, 64, 300):
        a, b = pp.decode_affine(batch)
        for kv in (0, 1000, 123_457):
            assert pp.step(batch, kv).total_s == pytest.approx(a + b * kv, rel=1e-12,
                                                              abs=1e-15)


def test_pp_across_nodes_sends_over_the_network() -> None:
    # tp 8 x pp 2 = two nodes: the one stage boundary is a node boundary.
    model = lookup_model("llama-3.1-70b")
    cost = InferenceCost(model, H100, 8, PROFILE, options=EngineOptions(pp=2))
    inside = InferenceCost(model, H100, 4, PROFILE, options=EngineOptions(pp=2))
    m = 32
    size = 2 * m * model.hidden * 2
    assert cost._pp_sends_s(m) == pytest.approx(LAT + NET_HOP_LATENCY_S + size / NET)
    assert inside._pp_sends_s(m) == pytest.approx(LAT + size / NV)


@pytest.mark.parametrize(("pp", "match"), [(0, "positive"), (29, "layers")])
def test_pp_bad_values(pp: int, match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        InferenceCost(lookup_model("qwen2.5-7b"), H100, 1, PROFILE,
                      options=EngineOptions(pp=pp))
    assert str(err.value).startswith("pp")


def test_pp_engine_must_fill_whole_nodes() -> None:
    with pytest.raises(ValueError, match="whole nodes"):
        InferenceCost(lookup_model("qwen2.5-7b"), H100, 4, PROFILE,
                      options=EngineOptions(pp=3))


# ----------------------------------------------------------------- placement
def _placement(**changes: object):
    scenario, _ = scenario_from_dict(tiny(**changes))
    return resolve_placement(scenario)


def test_placement_engines_of_tp_x_pp() -> None:
    p = _placement(model="llama-3.1-70b", pools__0__nodes=4, rollout__tp=8, rollout__pp=2)
    assert (p.rollout_gpus, p.engines) == (32, 2)
    p = _placement(model="llama-3.1-70b", pools__0__nodes=4, rollout__tp=16)
    assert p.engines == 2


@pytest.mark.parametrize(("changes", "field", "match"), [
    ({"pools__0__nodes": 2, "rollout__tp": 12}, "rollout.tp", "power of two"),
    ({"pools__0__nodes": 2, "rollout__tp": 4, "rollout__pp": 3}, "rollout.pp",
     "whole number of nodes"),
    ({"pools__0__nodes": 3, "rollout__tp": 16}, "rollout.tp", "multiple of the engine"),
    ({"pools__0__nodes": 3, "rollout__tp": 8, "rollout__pp": 2}, "rollout.pp",
     "multiple of the engine"),
    ({"pools__0__nodes": 2, "pools__0__gpus_per_node": 6, "rollout__tp": 8}, "rollout.tp",
     "whole number of nodes"),
])
def test_placement_refuses_engines_that_do_not_tile(changes: dict[str, object], field: str,
                                                    match: str) -> None:
    with pytest.raises(ScenarioError, match=match) as err:
        _placement(model="llama-3.1-70b", **changes)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_cluster_builds_multinode_engines() -> None:
    scenario, _ = scenario_from_dict(tiny(model="llama-3.1-70b", pools__0__nodes=4,
                                          rollout__tp=8, rollout__pp=2, train__tp=8))
    cluster = build_cluster(scenario, simpy.Environment(), Recorder("phase"))
    assert len(cluster.engines) == 2
    assert all(e.gpus == 16 for e in cluster.engines)
    assert cluster.engine_cost.pp == 2
    assert math.isclose(cluster.engine_cost.weight_bytes_per_gpu(),
                        cluster.engine_cost.weight_bytes() / 16)


def test_cluster_names_rollout_pp_for_too_many_stages() -> None:
    scenario, _ = scenario_from_dict(tiny(pools__0__nodes=4, rollout__tp=1,
                                          rollout__pp=32))  # qwen2.5-0.5b has 24 layers
    with pytest.raises(ScenarioError) as err:
        build_cluster(scenario, simpy.Environment(), Recorder("phase"))
    assert err.value.field == "rollout.pp"
