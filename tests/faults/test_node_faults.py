"""Node faults (faults.node, recovery.node): which roles a node takes down, what they wait
for (a replacement node from the spare pool, a hang's timeout), fail-slow nodes, and the
count of one fault as one whatever the placement."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlsim.api import RunResult, simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.faults import NodeRecoveryConfig
from rlsim.config.loading import scenario_from_dict
from rlsim.config.placement import resolve_placement
from rlsim.faults.spares import SparePool
from tests.scenarios import tiny

TWO_NODES = {"pools": [{"name": "cluster", "gpu": "H100", "nodes": 2, "gpus_per_node": 4}]}


def run(data: dict[str, Any]) -> RunResult:
    scenario, base = scenario_from_dict(data)
    return simulate(scenario, base)


def records(result: RunResult, name: str) -> list[dict[str, Any]]:
    return [dict(i.attrs, t=i.t) for i in result.recorder.instants
            if i.track == "faults" and i.name == name]


def spans(result: RunResult, name: str) -> list[tuple[float, float]]:
    return [(s.t0, s.t1) for s in result.recorder.spans if s.name == name]


# ------------------------------------------------------------------ placement

def test_nodes_are_the_rollout_gpus_then_the_training_gpus() -> None:
    dis = tiny(**TWO_NODES, policy={"name": "sync", "placement": "disaggregated"},
               rollout={"pool": "cluster", "gpus": 6, "tp": 2},
               train={"pool": "cluster", "gpus": 2, "tp": 1})
    place = resolve_placement(scenario_from_dict(dis)[0])
    # 6 rollout GPUs take two nodes (the second half full), the 2 training GPUs a third
    assert place.nodes == 3 and place.instances("node") == 3
    assert [list(place.node_gpus(n)) for n in range(3)] == [[0, 1, 2, 3], [4, 5], [6, 7]]
    col = resolve_placement(scenario_from_dict(tiny(**TWO_NODES))[0])
    assert col.nodes == 2 and list(col.node_gpus(1)) == [4, 5, 6, 7]
    with pytest.raises(IndexError):
        col.node_gpus(2)


# ------------------------------------------------------------------ spare pool

def test_spare_pool_waits_for_the_next_repaired_node() -> None:
    unlimited = SparePool(NodeRecoveryConfig(swap_s=60))
    assert [unlimited.take(t) for t in (0, 1, 2)] == [60, 60, 60]
    pool = SparePool(NodeRecoveryConfig(spares=1, swap_s=10, repair_s=1000))
    assert pool.take(0) == 10          # the spare
    assert pool.take(100) == 900 + 10  # none free: the first failed node, back at 1,000
    assert pool.take(5000) == 10       # the second is back at 1,100: a spare again
    none = SparePool(NodeRecoveryConfig(spares=0, repair_s=500))
    assert none.take(0) == 500         # no spare at all: its own repair


# ------------------------------------------------------------------ detailed simulation

def _node_fault(mode: str = "stop", t: float = 5.0, **recovery: Any) -> dict[str, Any]:
    return tiny(**TWO_NODES, steps=3,
                faults={"node": [{"times": [f"{t} s"], "targets": [1], "mode": mode}]},
                recovery={"trainer": {"checkpoint_every": 1, "detect_s": 30,
                                      "restart_s": 100}, **recovery})


def test_a_node_fault_takes_down_every_role_on_it_once() -> None:
    result = run(_node_fault())
    hits = records(result, "fault")
    # colocated: node 1 holds engines 4-7 and training ranks 4-7
    assert sorted((f["kind"], f["target"]) for f in hits) == [
        ("engine", "4"), ("engine", "5"), ("engine", "6"), ("engine", "7"), ("trainer", "0")]
    assert len({f["cause"] for f in hits}) == 1 and all(f["node"] == 1 for f in hits)
    faults = result.summary["faults"]
    assert (faults["injected"], faults["hits"], faults["open"]) == (1, 5, 0)
    (rec,) = [r for r in records(result, "recovered") if r["kind"] == "trainer"]
    assert rec["recovery_s"] == pytest.approx(30 + 100)  # detection + restart


def test_a_hang_is_noticed_at_the_collective_timeout_and_waits_for_a_spare() -> None:
    stop = run(_node_fault())
    hang = run(_node_fault("hang", node={"hang_timeout_s": 600, "swap_s": 45}))
    rec = {r["kind"]: r["recovery_s"] for r in records(hang, "recovered")}
    # the timeout replaces the trainer's 30 s detection; the spare's hand-over is added
    assert rec["trainer"] == pytest.approx(600 + 45 + 100)
    assert hang.summary["sim_time_s"] == pytest.approx(
        stop.summary["sim_time_s"] + (600 - 30) + 45, rel=1e-9)


def test_a_disaggregated_rollout_node_fault_restarts_its_engines_not_the_job() -> None:
    data = _node_fault(node={"swap_s": 20}, engine={"detect_s": 10, "cold_start_s": 50})
    data["policy"] = {"name": "sync", "placement": "disaggregated"}
    data["rollout"] = {"pool": "cluster", "gpus": 4, "tp": 1}
    data["train"] = {"pool": "cluster", "gpus": 4, "tp": 1}
    data["faults"]["node"][0]["targets"] = [0]
    result = run(data)
    hits = records(result, "fault")
    assert sorted(f["kind"] for f in hits) == ["engine"] * 4
    assert all(r["recovery_s"] == pytest.approx(10 + 20 + 50)
               for r in records(result, "recovered"))
    assert not spans(result, "rollback")


def test_a_slow_node_slows_its_roles_for_the_duration() -> None:
    plain = run(tiny(**TWO_NODES, steps=3))
    result = run(tiny(**TWO_NODES, steps=3, faults={"node": [{
        "times": ["0 s"], "targets": [0], "mode": "slow", "factor": 3, "duration": "1 h"}]}))
    assert {f["mode"] for f in records(result, "fault")} == {"slow"}
    assert result.summary["sim_time_s"] > 1.5 * plain.summary["sim_time_s"]


@pytest.mark.parametrize(("changes", "field", "message"), [
    ({"faults": {"gpu": [{"mtbf": "1 h", "mode": "hang"}]}}, "faults", "hang is for nodes"),
    ({"recovery": {"node": {"spares": 2}}}, "recovery", "repair_s"),
    ({"faults": {"node": [{"times": ["1 s"], "targets": [5]}]}}, "faults.node.0.targets",
     "2 nodes"),
])
def test_bad_node_input_names_the_field(changes: dict[str, Any], field: str,
                                        message: str) -> None:
    with pytest.raises((ScenarioError, ValueError), match=message) as err:
        run(tiny(**TWO_NODES, **changes))
    if isinstance(err.value, ScenarioError):
        assert err.value.field.startswith(field)


# ------------------------------------------------------------------ one fault counts once

@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(colocated=st.booleans(), tp=st.sampled_from([1, 2]), rollout_gpus=st.sampled_from([2, 4]),
       gpu=st.integers(0, 7), share=st.floats(0.05, 0.95), node=st.booleans())
def test_one_fault_counts_once_in_every_placement(colocated: bool, tp: int,
                                                   rollout_gpus: int, gpu: int, share: float,
                                                   node: bool) -> None:
    """One GPU (or node) fault is one fault injected, however many roles it takes down:
    both colocated roles fail and recover; a disaggregated GPU takes one role."""
    if colocated:
        layout = {"policy": {"name": "sync", "placement": "colocated"},
                  "rollout": {"pool": "cluster", "tp": tp}, "train": {"pool": "cluster", "tp": 1}}
    else:
        layout = {"policy": {"name": "sync", "placement": "disaggregated"},
                  "rollout": {"pool": "cluster", "gpus": rollout_gpus, "tp": tp},
                  "train": {"pool": "cluster", "gpus": 8 - rollout_gpus, "tp": 1}}
    plain = run(tiny(**TWO_NODES, steps=2, **layout))
    t = share * plain.summary["step_time_s"]["mean"]
    kind, target = ("node", gpu % 2) if node else ("gpu", gpu)
    result = run(tiny(**TWO_NODES, steps=2, **layout,
                      faults={kind: [{"times": [f"{t} s"], "targets": [target]}]}))
    faults = result.summary["faults"]
    hits = records(result, "fault")
    assert faults["injected"] == 1 and len({f["cause"] for f in hits}) == 1
    assert faults["hits"] == len(hits) >= 1 and faults["open"] == 0
    kinds = sorted(f["kind"] for f in hits)
    if not node:
        assert kinds == (["engine", "trainer"] if colocated
                         else ["engine"] if gpu < rollout_gpus else ["trainer"])
    assert len(records(result, "recovered")) == len(hits)


def test_faults_seed_changes_the_faults_not_the_workload() -> None:
    def run_with(**faults: Any) -> RunResult:
        return run(tiny(**TWO_NODES, steps=3, faults={"gpu": [{"mtbf": "2 min"}], **faults},
                        recovery={"trainer": {"checkpoint_every": 1}}))

    a, b, c = run_with(), run_with(seed=0), run_with(seed=5)
    times = [[f["t"] for f in records(r, "fault")] for r in (a, b, c)]
    assert times[0] == times[1] != times[2]  # seed 0 is the scenario's own
    quiet = run(tiny(**TWO_NODES, steps=3, faults={"seed": 5}))
    assert quiet.summary["step_time_s"] == run(tiny(**TWO_NODES, steps=3)).summary["step_time_s"]
