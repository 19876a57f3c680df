"""The fitted framework knobs (`framework:`): each moves exactly its own part of a step by
its closed form, the defaults change nothing, and out-of-range values name their field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import simpy

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import load_scenario
from rlsim.config.scenario import Scenario
from rlsim.cost.training import TrainCost
from rlsim.entities.cluster import build_cluster
from rlsim.trace import CONTROLLER, Recorder
from tests.scenarios import tiny, write


def _scenario(framework: dict[str, Any] | None = None, **changes: Any) -> Scenario:
    data = tiny(steps=3, **changes)
    if framework is not None:
        data["framework"] = framework
    return Scenario.model_validate(data)


def _train_cost(framework: dict[str, Any] | None = None, **changes: Any) -> TrainCost:
    # A 7B model on 8 GPUs at TP 2: a trainer whose passes are mostly GPU compute.
    base = {"model": "qwen2.5-7b", "pools__0__nodes": 1, "train__tp": 2, "rollout__tp": 2}
    sc = _scenario(framework, **{**base, **changes})
    return build_cluster(sc, simpy.Environment(), Recorder("phase")).train_cost


def _spans(sc: Scenario, name: str) -> dict[int, float]:
    rec = simulate(sc).recorder
    return {int(s.attrs["step"]): s.t1 - s.t0 for s in rec.spans
            if s.track == CONTROLLER and s.name == name}


LENGTHS = [300, 1200, 4000, 800, 2500, 150, 3600, 900] * 8  # 64 samples of a step


def test_defaults_change_nothing() -> None:
    plain = simulate(_scenario()).summary
    explicit = simulate(_scenario({"train_speed": 1.0, "rollout_speed": 1.0,
                                   "micro_batch_overhead": None,
                                   "weight_sync_overhead": 0, "step_overhead": 0})).summary
    for key in ("phase_time_s", "step_time_s", "throughput"):
        assert plain[key] == explicit[key]


def test_train_speed_divides_the_compute_of_a_train_pass() -> None:
    one, two = _train_cost(), _train_cost({"train_speed": 2.0})
    a = one.train_step(sum(LENGTHS), lengths=LENGTHS, prompts=8)
    b = two.train_step(sum(LENGTHS), lengths=LENGTHS, prompts=8)
    assert a.compute_s > 0
    assert b.compute_s == pytest.approx(a.compute_s / 2, rel=1e-12)
    # Communication, the optimizer update, offloads and the fixed per-micro-batch cost stay.
    assert b.comm_s == pytest.approx(a.comm_s, rel=1e-12)
    assert b.optimizer_s == a.optimizer_s
    assert b.offload_s == a.offload_s
    assert b.micro_batches == a.micro_batches
    assert b.overhead_s - b.host_wait_s == pytest.approx(a.overhead_s - a.host_wait_s)


def test_train_speed_divides_the_flops_of_whole_step_mfu_passes() -> None:
    one = _train_cost(**{"train__mfu": 0.4})
    half = _train_cost({"train_speed": 0.5}, **{"train__mfu": 0.4})
    overhead = one.profile.forward_overhead_s
    fwd1 = one.forward_s(sum(LENGTHS), lengths=LENGTHS)
    fwd_half = half.forward_s(sum(LENGTHS), lengths=LENGTHS)
    assert fwd_half - overhead == pytest.approx(2 * (fwd1 - overhead), rel=1e-12)
    step1 = one.train_step(sum(LENGTHS), 1000.0)
    step_half = half.train_step(sum(LENGTHS), 1000.0)
    assert step_half.compute_s == pytest.approx(2 * step1.compute_s, rel=1e-12)
    assert step_half.optimizer_s == step1.optimizer_s


def test_train_speed_carries_over_to_another_gpu_count() -> None:
    two = _train_cost({"train_speed": 2.0, "micro_batch_overhead": 0.05})
    assert two.with_gpus(4).speed == 2.0
    assert two.with_gpus(4).micro_batch_overhead_s == 0.05


def test_micro_batch_overhead_replaces_the_backends() -> None:
    cost = _train_cost({"micro_batch_overhead": "50 ms"})
    step = cost.train_step(sum(LENGTHS), lengths=LENGTHS, prompts=8)
    assert step.micro_batches > 0
    assert step.overhead_s - step.host_wait_s == pytest.approx(0.05 * step.micro_batches)
    plain = _train_cost().train_step(sum(LENGTHS), lengths=LENGTHS, prompts=8)
    assert cost.backend is not None
    assert plain.overhead_s - plain.host_wait_s == pytest.approx(
        cost.backend.micro_batch_overhead_s * plain.micro_batches)


def test_rollout_speed_halves_the_gen_phase() -> None:
    # Rule rewards after gen, no per-request overhead: a step's gen phase is engine time only.
    one = _spans(_scenario(), "gen")
    two = _spans(_scenario({"rollout_speed": 2.0}), "gen")
    assert one.keys() == two.keys() and len(one) == 3
    for step, seconds in one.items():
        assert seconds > 0
        assert two[step] == pytest.approx(seconds / 2, rel=1e-9)


def test_rollout_speed_leaves_the_trainer_alone() -> None:
    one = _spans(_scenario(), "train")
    two = _spans(_scenario({"rollout_speed": 3.0}), "train")
    assert one.keys() == two.keys()
    for step in one:  # durations at other absolute times: equal up to rounding
        assert two[step] == pytest.approx(one[step], rel=1e-9)


def test_step_overhead_adds_to_every_controller_phase() -> None:
    one = _scenario()
    five = _scenario({"step_overhead": "5 s"})
    c1, c5 = _spans(one, "controller"), _spans(five, "controller")
    assert c1.keys() == c5.keys() and len(c1) == 3
    for step in c1:
        assert c5[step] == pytest.approx(c1[step] + 5.0, abs=1e-9)
    s1, s5 = _spans(one, "step"), _spans(five, "step")
    for step in s1:  # sync: the controller is on the step's critical path
        assert s5[step] == pytest.approx(s1[step] + 5.0, abs=1e-9)


def test_step_overhead_applies_with_the_controller_disabled() -> None:
    off = _spans(_scenario({"step_overhead": 2.0}, controller={"enabled": False}),
                 "controller")
    assert all(v == pytest.approx(2.0) for v in off.values())


def test_weight_sync_overhead_adds_to_every_sync() -> None:
    w0 = _spans(_scenario(), "weight_sync")
    w3 = _spans(_scenario({"weight_sync_overhead": 3.0}), "weight_sync")
    assert w0.keys() == w3.keys() and len(w0) == 3
    for step in w0:
        assert w3[step] == pytest.approx(w0[step] + 3.0, abs=1e-9)
    # Nothing else moves (durations at other absolute times: equal up to rounding).
    g0 = _spans(_scenario(), "gen")
    g3 = _spans(_scenario({"weight_sync_overhead": 3.0}), "gen")
    for step in g0:
        assert g3[step] == pytest.approx(g0[step], rel=1e-9)


@pytest.mark.parametrize(("key", "value"), [
    ("train_speed", 5), ("train_speed", 0.01), ("rollout_speed", 0), ("rollout_speed", 4.5),
    ("micro_batch_overhead", -0.1), ("micro_batch_overhead", "20 s"),
    ("weight_sync_overhead", -1), ("step_overhead", "2 h"), ("step_overhead", "x"),
])
def test_out_of_range_knobs_name_their_field(tmp_path: Path, key: str,
                                              value: object) -> None:
    data = tiny()
    data["framework"] = {key: value}
    with pytest.raises(ScenarioError) as err:
        load_scenario(write(tmp_path, data))
    assert err.value.field == f"framework.{key}"


def test_unknown_knob_is_refused(tmp_path: Path) -> None:
    data = tiny()
    data["framework"] = {"train_sped": 2}
    with pytest.raises(ScenarioError) as err:
        load_scenario(write(tmp_path, data))
    assert err.value.field == "framework.train_sped"


def _switch_seconds(sc: Scenario) -> dict[int, float]:
    """Each step's colocated switches, both directions, summed."""
    out: dict[int, float] = {}
    for s in simulate(sc).recorder.spans:
        if s.track == CONTROLLER and s.name == "switch":
            out[int(s.attrs["step"])] = out.get(int(s.attrs["step"]), 0.0) + s.t1 - s.t0
    return out


def test_switch_overhead_adds_to_every_switch_back_to_rollout() -> None:
    one, six = _scenario(), _scenario({"switch_overhead": "6 s"})
    w0, w6 = _switch_seconds(one), _switch_seconds(six)
    assert w0.keys() == w6.keys() and len(w0) == 3
    for step in w0:  # one switch back to rollout per step
        assert w6[step] == pytest.approx(w0[step] + 6.0, abs=1e-9)
    s1, s6 = _spans(one, "step"), _spans(six, "step")
    for step in s1:  # sync, colocated: the switch is on the step's critical path
        assert s6[step] == pytest.approx(s1[step] + 6.0, abs=1e-9)


# The tiny scenario with rollout and training on pools of their own.
APART: dict[str, Any] = {
    "pools": [{"name": "r", "gpu": "H100", "nodes": 1}, {"name": "t", "gpu": "H100", "nodes": 1}],
    "rollout__pool": "r", "train__pool": "t", "policy__placement": "disaggregated"}


def test_switch_overhead_costs_a_dedicated_placement_nothing() -> None:
    s0 = _spans(_scenario(None, **APART), "step")
    s6 = _spans(_scenario({"switch_overhead": 6.0}, **APART), "step")
    assert s0 == pytest.approx(s6, abs=1e-9)


@pytest.mark.parametrize("placement", ["colocated", "disaggregated"])
def test_update_overhead_adds_to_every_actor_update(placement: str) -> None:
    apart = {} if placement == "colocated" else APART
    one, two = _scenario(None, **apart), _scenario({"update_overhead": "2 s"}, **apart)
    t0, t2 = _spans(one, "train"), _spans(two, "train")
    assert t0.keys() == t2.keys() and len(t0) == 3
    for step in t0:
        assert t2[step] == pytest.approx(t0[step] + 2.0, abs=1e-9)
    # the log-prob passes do not pay it
    r0, r2 = _spans(one, "ref"), _spans(two, "ref")
    for step in r0:
        assert r2[step] == pytest.approx(r0[step], rel=1e-9)
