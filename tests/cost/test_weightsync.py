"""Weight movement against closed forms: tensor counts, buckets, resharded bytes, the
host-store pipeline, each scheme's parts, the colocated switch, and a whole scenario."""

from __future__ import annotations

import math

import pytest

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import ModelSpec, MoeSpec, lookup_model
from rlsim.config.loading import scenario_from_dict
from rlsim.cost.weightsync import (
    DEFAULT_CONSTANTS,
    INDEX_BYTES,
    bucket_count,
    bytes_per_engine_rank,
    controller_s,
    gather_bytes_per_rank,
    pipeline_s,
    switch_cost,
    sync_cost,
    tensor_count,
)
from tests.scenarios import tiny

C = DEFAULT_CONSTANTS
DENSE = ModelSpec(name="toy", layers=4, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=1000,
                  tied_embeddings=False, gated_mlp=True)


def test_tensor_count_dense_moe_and_mla():
    # per layer q, k, v, o + 2 norms + gate, up, down; then embedding, final norm, LM head
    assert tensor_count(DENSE) == 4 * 9 + 3
    moe = DENSE.model_copy(update={"moe": MoeSpec(experts=8, experts_per_token=2,
                                                  expert_ffn=32, shared_experts=1,
                                                  dense_layers=1)})
    # 1 dense layer (9) + 3 MoE layers of 6 + router + (8 + 1) experts x 3
    assert tensor_count(moe) == 9 + 3 * (6 + 1 + 9 * 3) + 3
    # Qwen3-30B-A3B: 48 x (6 + 1 + 128 x 3) + 3; its HF checkpoint has 18,867 (q/k norms)
    assert tensor_count(lookup_model("qwen3-30b-a3b")) == 48 * 391 + 3
    mla = lookup_model("deepseek-v3")
    assert mla.mla is not None and mla.moe is not None
    per = 7 + 2
    assert tensor_count(mla) == (mla.moe.dense_layers * (per + 3)
                                 + mla.moe_layers * (per + 1 + (256 + 1) * 3)
                                 + (2 if mla.tied_embeddings else 3))


def test_bucket_count_is_the_ceiling():
    assert bucket_count(10.0, 4.0) == 3
    assert bucket_count(8.0, 4.0) == 2
    assert bucket_count(0.0, 4.0) == 1
    with pytest.raises(ValueError, match="bucket_bytes"):
        bucket_count(1.0, 0.0)
    with pytest.raises(ValueError, match="size_bytes"):
        bucket_count(-1.0, 4.0)


def test_bytes_per_engine_rank_after_resharding():
    assert bytes_per_engine_rank(8e9, 4, resharded=True) == 2e9
    assert bytes_per_engine_rank(8e9, 4, resharded=False) == 8e9  # a broadcast: full tensors
    with pytest.raises(ValueError, match="rollout_tp"):
        bytes_per_engine_rank(8e9, 0, True)
    assert gather_bytes_per_rank(8e9, 4) == 6e9
    assert gather_bytes_per_rank(8e9, 1) == 0.0


def test_host_store_pipeline_is_max_of_stages_plus_fill():
    # 5 buckets through stages of 1, 3, 2 s: 5 * 3 + (1 + 2)
    assert pipeline_s((1.0, 3.0, 2.0), 5) == pytest.approx(18.0)
    assert pipeline_s((1.0, 3.0, 2.0), 1) == pytest.approx(6.0)  # one bucket: no overlap
    assert pipeline_s((1.0, 3.0, 2.0), 0) == 0.0
    with pytest.raises(ValueError, match="stage"):
        pipeline_s((1.0, -1.0), 2)


def _parts(scheme, **kw):
    w = DENSE.weight_bytes()
    args = dict(model=DENSE, weight_bytes=w, scheme=scheme, rollout_tp=2, train_shards=4,
                gather_bandwidth_bytes_per_s=1e9, collective_latency_s=1e-5,
                bucket_bytes=w / 3.5, pcie_bytes_per_s=2e9, network_bytes_per_s=1e9)
    args.update(kw)
    return w, sync_cost(**args)


def test_each_scheme_closed_form():
    n = tensor_count(DENSE)
    w, b = _parts("broadcast")
    gather = 0.75 * w / 1e9 + n * 1e-5 + n * C.gather_per_tensor_s
    assert b.gather_s == pytest.approx(gather)
    assert b.fixed_s == pytest.approx(n * C.per_tensor_s)
    assert b.load_s == pytest.approx(n * C.load_per_tensor_s)
    assert b.link_bytes == w  # every engine rank receives the full tensors
    assert b.total_s(1e9, 0.5) == pytest.approx(gather + b.fixed_s + b.load_s + 0.5 + w / 1e9)
    _, k = _parts("bucketed")
    assert k.buckets == 4 and k.fixed_s == pytest.approx(4 * C.per_bucket_s)
    assert k.link_bytes == w and k.gather_s == pytest.approx(gather)
    _, d = _parts("delta", delta_fraction=0.1)
    sent = 0.1 * (w + INDEX_BYTES * DENSE.params)  # value + int32 index per changed element
    assert d.link_bytes == pytest.approx(sent)
    assert d.buckets == math.ceil(sent / (w / 3.5))
    _, h = _parts("host_store")
    per_bucket = w / 4
    stages = (per_bucket / 4 / 2e9, per_bucket / 2 / 1e9, per_bucket / 2 / 2e9)
    assert h.link_bytes == 0.0
    assert h.pipeline_s == pytest.approx(4 * max(stages) + sum(stages) - max(stages))
    _, link = _parts("link")
    assert link.link_bytes == w and link.fixed_total_s == 0.0


def test_one_training_shard_gathers_nothing_but_still_converts():
    _, b = _parts("bucketed", train_shards=1)
    assert b.gather_s == pytest.approx(tensor_count(DENSE) * C.gather_per_tensor_s)


@pytest.mark.parametrize(("kw", "match"), [
    ({"scheme": "rsync"}, "weight_sync.scheme"),
    ({"scheme": "delta"}, "delta_fraction"),
    ({"scheme": "delta", "delta_fraction": 1.5}, "delta_fraction"),
    ({"scheme": "host_store", "pcie_bytes_per_s": None}, "host_store"),
    ({"weight_bytes": -1.0}, "weight_bytes"),
    ({"gather_bandwidth_bytes_per_s": 0.0}, "gather_bandwidth"),
])
def test_bad_sync_input_names_the_field(kw, match):
    with pytest.raises(ValueError, match=match):
        _parts(kw.pop("scheme", "bucketed"), **kw)


def test_switch_terms():
    to_train = switch_cost("train", 8e9, 2e10, trainer_state_s=3.0, wake_s=1.5)
    assert to_train.engine_weights_s == pytest.approx(0.4)  # weights out over PCIe
    assert to_train.engine_wake_s == 0.0 and to_train.total_s == pytest.approx(3.4)
    back = switch_cost("rollout", 8e9, 2e10, trainer_state_s=3.0, wake_s=1.5)
    assert back.total_s == pytest.approx(0.4 + 3.0 + 1.5)
    discard = switch_cost("rollout", 8e9, 2e10, 3.0, 1.5, sleep_level=2)
    assert discard.engine_weights_s == 0.0 and discard.total_s == pytest.approx(4.5)
    with pytest.raises(ValueError, match="switch target"):
        switch_cost("sleep", 8e9, 2e10, 3.0, 1.5)
    with pytest.raises(ValueError, match="engine_sleep_level"):
        switch_cost("train", 8e9, 2e10, 3.0, 1.5, sleep_level=3)


def test_controller_closed_form_and_bad_input():
    assert controller_s(1000, 0.5, 1e-4) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="tokens"):
        controller_s(-1, 0.5, 1e-4)


def test_scenario_delta_without_fraction_is_rejected():
    with pytest.raises(ScenarioError, match=r"weight_sync\.delta_fraction is required"):
        scenario_from_dict(tiny(weight_sync={"scheme": "delta"}))


def _spans(result, name):
    return [s for s in result.recorder.spans if s.track == "controller" and s.name == name]


@pytest.mark.parametrize("level", [1, 2])
def test_colocated_switch_and_sync_cost_what_the_formulas_say(level):
    import simpy

    from rlsim.cost.weightsync import layout_sync_cost
    from rlsim.entities.cluster import build_cluster
    from rlsim.trace import Recorder

    scenario, base = scenario_from_dict(tiny(weight_sync={"engine_sleep_level": level}))
    result = simulate(scenario, base)
    cluster = build_cluster(scenario, simpy.Environment(), Recorder())
    train, engine = cluster.train_cost, cluster.engine_cost
    prof, gpu = engine.profile, engine.gpu
    pcie = gpu.pcie_bandwidth * prof.pcie_efficiency
    weights_s = engine.weight_bytes_per_gpu() / pcie if level == 1 else 0.0
    switches = _spans(result, "switch")
    assert len(switches) == 2 * scenario.steps
    for span in switches:
        if span.attrs["to"] == "train":
            expect = weights_s + train.reload_s()
        else:
            expect = train.offload_s() + weights_s + prof.engine_warm_start_base_s
        assert span.t1 - span.t0 == pytest.approx(expect, rel=1e-9)
        assert span.attrs["engine_weights_s"] == pytest.approx(weights_s)
    cost = layout_sync_cost(train, engine, cluster.weight_bytes, "bucketed")
    nvlink = gpu.nvlink_bandwidth / 2 * prof.allreduce_bus_efficiency  # one node: all local
    syncs = _spans(result, "weight_sync")
    assert len(syncs) == scenario.steps
    for span in syncs:
        assert span.attrs["scheme"] == "bucketed"
        assert span.attrs["buckets"] == cost.buckets
        assert span.t1 - span.t0 == pytest.approx(
            cost.total_s(nvlink, scenario.link.latency), rel=1e-9)


def test_link_scheme_keeps_the_line_rate_sync():
    """scheme link: the weight bytes over the (per-engine) link and nothing else."""
    scenario, base = scenario_from_dict(tiny(weight_sync={"scheme": "link"},
                                             link={"bandwidth": "100 GB/s"}))
    result = simulate(scenario, base)
    w = scenario.model_spec.weight_bytes()
    for span in _spans(result, "weight_sync"):
        assert span.t1 - span.t0 == pytest.approx(w / 100e9 + scenario.link.latency)
