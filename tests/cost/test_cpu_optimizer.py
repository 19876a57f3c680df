"""Megatron's hybrid CPU optimizer (train.optimizer_offload_fraction): the offloaded share of
each GPU's optimizer state lives in host memory and the CPU steps it, every process of a host
at once (docs/cost-model.md section 3, "Hybrid CPU optimizer")."""

from __future__ import annotations

import pytest

from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.cost.job import cost_models
from rlsim.cost.training import TrainCost
from tests.scenarios import tiny

LENGTHS = [2048] * 32


def _sc(fraction: float = 0.0, overlap: bool = False, nodes: int = 1, per_node: int = 8,
        gpu: str = "H100", **train: object) -> dict:
    sc = tiny(model="qwen2.5-7b")
    sc["pools"][0].update(gpu=gpu, nodes=nodes, gpus_per_node=per_node)
    sc["train"].update(backend="megatron", tp=2, optimizer_offload_fraction=fraction,
                       overlap_cpu_optimizer_d2h_h2d=overlap)
    sc["train"].update(train)
    sc["rollout"]["tp"] = sc["train"]["tp"]
    return sc


def _cost(sc: dict) -> TrainCost:
    return cost_models(scenario_from_dict(sc)[0]).train_cost


def _opt_s(sc: dict) -> float:
    return _cost(sc).train_step(sum(LENGTHS), lengths=LENGTHS).optimizer_s


def test_no_offload_is_the_gpu_adam_step() -> None:
    cost = _cost(_sc())
    p = cost.profile
    params = cost.model.params / cost.gpus
    gpu_s = params * p.train_optimizer_bytes_per_param / (
        cost.gpu.hbm_bandwidth * p.hbm_efficiency)
    assert _opt_s(_sc()) == pytest.approx(gpu_s, rel=1e-12)


def test_full_offload_closed_form_with_host_sharing() -> None:
    # 8 processes on one host step at once: each at min(per-process rate, node rate / 8).
    cost = _cost(_sc(1.0))
    p = cost.profile
    params = cost.model.params / 8
    rate = min(p.cpu_adam_params_per_s, p.cpu_adam_node_params_per_s / 8)
    copy_s = 8.0 * params / (cost.gpu.pcie_bandwidth * p.pcie_efficiency)
    assert _opt_s(_sc(1.0)) == pytest.approx(params / rate + copy_s, rel=1e-12)
    # Overlapped copies: the longer of the step and the copies.
    assert _opt_s(_sc(1.0, overlap=True)) == pytest.approx(max(params / rate, copy_s),
                                                            rel=1e-12)


def test_fewer_processes_per_host_step_faster_up_to_the_process_rate() -> None:
    # One GPU on each of eight hosts: the host's whole rate exceeds one process's own,
    # which then bounds it.
    cost = _cost(_sc(1.0, nodes=8, per_node=1, tp=1))
    p = cost.profile
    assert cost.host_gpus == 1
    params = cost.model.params / 8
    rate = p.cpu_adam_params_per_s
    assert rate < p.cpu_adam_node_params_per_s
    expected = params / rate + 8.0 * params / (cost.gpu.pcie_bandwidth * p.pcie_efficiency)
    assert cost.cpu_optimizer_s(params) == pytest.approx(expected, rel=1e-12)


def test_cpu_step_scales_with_the_fraction_and_is_slower_than_the_gpu() -> None:
    gpu_only, half, full = (_opt_s(_sc(f)) for f in (0.0, 0.5, 1.0))
    assert gpu_only < half < full
    # Linear in the fraction: half the GPU step plus half the full CPU step.
    assert half == pytest.approx(0.5 * gpu_only + 0.5 * full, rel=1e-9)


def test_gb200_tray_is_the_host_not_the_rack() -> None:
    # Trays of 4 share one NVLink domain of 64 GPUs but each tray has its own CPUs.
    cost = _cost(_sc(1.0, nodes=4, per_node=4, gpu="GB200"))
    assert cost.gpu.gpus_per_node == 64 and cost.host_gpus == 4


def test_offloaded_share_leaves_the_gpu_and_lands_on_the_host() -> None:
    base = cost_models(scenario_from_dict(_sc())[0])
    half = cost_models(scenario_from_dict(_sc(0.5))[0])
    opt_bytes = base.train_cost.model.params / 8 * 12.0  # Megatron: fp32 master + m + v
    assert (base.memory.train_resident_bytes_per_gpu
            - half.memory.train_resident_bytes_per_gpu) == pytest.approx(0.5 * opt_bytes)
    # Its own state never moves in a colocated switch, nor around a pass with
    # optimizer_offload.
    assert half.train_cost.offload_s() < base.train_cost.offload_s()
    moved = _cost(_sc(0.5, optimizer_offload=True)).pass_offload_s(train=True)
    assert moved == pytest.approx(0.5 * _cost(_sc(optimizer_offload=True)).pass_offload_s(
        train=True), rel=1e-12)


def test_fraction_outside_megatron_is_refused() -> None:
    sc = _sc(1.0)
    sc["train"].update(backend="fsdp", tp=1)
    with pytest.raises(ScenarioError, match="optimizer_offload_fraction") as err:
        scenario_from_dict(sc)
    assert "use backend megatron" in str(err.value)
    with pytest.raises(ScenarioError, match="optimizer_offload_fraction"):
        scenario_from_dict(_sc(1.5))


def test_the_busiest_pipeline_stage_sets_the_cpu_step() -> None:
    # 28 layers over pp 8: the busiest stage holds ceil(28/8) = 4 layers, 8/7 of the mean.
    sc = _sc(1.0, nodes=2, tp=1, pp=8)
    cost = _cost(sc)
    busiest = cost.model.params * (4 / 28) * 8 / 16
    gpu_s = 0.0 * busiest  # the whole optimizer is on the CPU
    assert _opt_s(sc) == pytest.approx(gpu_s + cost.cpu_optimizer_s(busiest), rel=1e-12)
    assert busiest == pytest.approx(cost.model.params / 16 * 8 / 7)


def test_mfu_and_a_lone_overlap_are_refused() -> None:
    with pytest.raises(ScenarioError, match=r"drop train\.mfu"):
        scenario_from_dict(_sc(0.5, mfu=0.4))
    with pytest.raises(ScenarioError, match="overlap_cpu_optimizer_d2h_h2d"):
        scenario_from_dict(_sc(0.0, overlap=True))
