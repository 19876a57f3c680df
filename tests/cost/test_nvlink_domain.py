"""NVLink domains that span nodes: a GB200 NVL72 rack joins its 4-GPU compute trays over
NVLink, so a pool of trays keeps its collectives, TP and engines on NVLink up to 72 GPUs,
while host memory stays per tray (docs/cost-model.md, "NVLink domains")."""

from __future__ import annotations

import pytest

from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import lookup_gpu
from rlsim.config.loading import scenario_from_dict
from rlsim.config.placement import resolve_placement
from rlsim.config.scenario import PoolConfig
from rlsim.cost.job import cost_models, node_gpu
from tests.scenarios import tiny


def _pool(gpu: str, nodes: int, per_node: int) -> PoolConfig:
    return PoolConfig(name="p", gpu=gpu, nodes=nodes, gpus_per_node=per_node)


def test_domain_is_the_node_without_a_wider_domain() -> None:
    assert _pool("H100", 4, 8).nvlink_domain == 8
    assert node_gpu(_pool("H100", 4, 4)).gpus_per_node == 4


def test_gb200_trays_share_the_rack() -> None:
    trays = _pool("GB200", 4, 4)
    # A power-of-two count of whole trays inside the rack's 72 GPUs: 16 trays, 64 GPUs, so
    # power-of-two groups on consecutive GPUs never straddle two racks.
    assert trays.node_size == 4 and trays.nvlink_domain == 64
    assert node_gpu(trays).gpus_per_node == 64
    assert _pool("GB200", 2, 16).nvlink_domain == 64
    assert _pool("GB200", 2, 36).nvlink_domain == 72
    # The rack as one node (the catalogue's default) is its own domain.
    assert _pool("GB200", 2, 72).nvlink_domain == 72
    # A node larger than the domain is the user's statement, kept.
    assert _pool("GB200", 1, 144).nvlink_domain == 144


def _moe_sc(gpu: object, nodes: int, per_node: int) -> dict:
    sc = tiny(model="qwen3-30b-a3b")
    sc["pools"][0].update(gpu=gpu, nodes=nodes, gpus_per_node=per_node)
    sc["train"].update(backend="megatron", ep=16)
    return sc


def _train_s(sc: dict) -> float:
    cost = cost_models(scenario_from_dict(sc)[0]).train_cost
    return cost.train_step(64 * 4096, lengths=[4096] * 64).total_s


def test_ep_over_gb200_trays_runs_at_nvlink_speed() -> None:
    # 16 GPUs as four trays of one NVL72 rack price as one 16-GPU NVLink node; the same
    # GPUs with the rack's NVLink taken away (four separate 4-GPU hosts) pay the network.
    trays = _train_s(_moe_sc("GB200", 4, 4))
    one_node = _train_s(_moe_sc("GB200", 1, 16))
    assert trays == pytest.approx(one_node, rel=1e-12)
    spec = lookup_gpu("GB200").model_dump()
    spec.update(name="GB200-no-nvl72", nvlink_domain_gpus=None)
    assert _train_s(_moe_sc(spec, 4, 4)) > 1.5 * trays


def test_engines_larger_than_the_rack_span_whole_domains() -> None:
    # 32 trays (128 GPUs): an engine of tp 8 x pp 16 covers two 64-GPU domains whole.
    sc = tiny(rollout__tp=8, rollout__pp=16, train__tp=8)
    sc["pools"][0].update(gpu="GB200", nodes=32, gpus_per_node=4)
    resolve_placement(scenario_from_dict(sc)[0])


def test_tp_across_trays_is_placed_inside_the_rack() -> None:
    sc = tiny(rollout__tp=8, train__tp=8)
    sc["pools"][0].update(gpu="GB200", nodes=4, gpus_per_node=4)
    resolve_placement(scenario_from_dict(sc)[0])  # TP 8 over two trays: one NVLink domain
    sc["pools"][0].update(gpu="H100")
    with pytest.raises(ScenarioError, match="TP 8"):
        resolve_placement(scenario_from_dict(sc)[0])
