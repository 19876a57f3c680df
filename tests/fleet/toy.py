"""Toy fleets for the fleet tests: jobs with hand-set phase profiles (no single-job runs)."""

from __future__ import annotations

from typing import Any

from rlsim.config.fleet import FleetScenario
from rlsim.fleet import FleetResult, simulate_fleet
from rlsim.fleet.profile import JobProfile

GIB = 2.0**30


def profile(roll: float | tuple[float, ...], train: float | tuple[float, ...], *,
            sync: float = 0.0, warm_roll: float = 0.0, warm_train: float = 0.0,
            cold_roll: float = 0.0, cold_train: float = 0.0, worst: float = 1.0,
            host_gib: float = 100.0, tail_at: float = 1.0, tail_fraction: float = 1.0,
            tail_stretch: float = 1.0, samples: int = 8) -> JobProfile:
    """A profile with the given phase seconds (a tuple: one per profiled iteration); the
    worst case is `worst` times the longest phase."""
    rolls = roll if isinstance(roll, tuple) else (roll,)
    trains = train if isinstance(train, tuple) else (train,)
    return JobProfile(
        roll_s=rolls, tail_at=(tail_at,) * len(rolls), train_s=trains,
        coloc_s=tuple(r + t for r, t in zip(rolls, trains, strict=True)),
        roll_worst_s=worst * max(rolls), train_worst_s=worst * max(trains), sync_s=sync,
        warm_roll_s=warm_roll, warm_train_s=warm_train, cold_roll_s=cold_roll,
        cold_train_s=cold_train, host_roll_bytes=host_gib * GIB,
        host_train_bytes=host_gib * GIB, samples=samples, tail_fraction=tail_fraction,
        tail_stretch=tail_stretch, tail_at_worst=tail_at,
        # the typical run `worst_and_mean` replays: the same phases as the run's here
        adm_roll_s=rolls, adm_train_s=trains, adm_tail_at=(tail_at,) * len(rolls))


def job(name: str, *, roll_nodes: int = 1, train_nodes: int = 1, slo: float = 1.5,
        steps: int = 10, arrival: float = 0.0) -> dict[str, Any]:
    return {"name": name, "model": "qwen2.5-0.5b", "slo": slo, "steps": steps,
            "arrival": arrival,
            "rollout": {"pool": "r", "gpus": 8 * roll_nodes},
            "train": {"pool": "t", "gpus": 8 * train_nodes},
            "workload": {"prompts_per_step": 1, "samples_per_prompt": 8,
                         "response_len": {"dist": "fixed", "value": 16},
                         "max_response_len": 16}}


def fleet(jobs: list[dict[str, Any]], policy: str = "multiplex", *, nodes: int = 8,
          host_gib: float = 1024.0, faults: list[dict[str, Any]] | None = None,
          **multiplex: Any) -> FleetScenario:
    return FleetScenario.model_validate({
        "kind": "fleet", "name": "toy",
        "pools": [{"name": "r", "gpu": "H20", "nodes": nodes, "host_memory": host_gib * GIB},
                  {"name": "t", "gpu": "H800", "nodes": nodes,
                   "host_memory": host_gib * GIB}],
        "policy": {"name": policy, "multiplex": multiplex},
        "jobs": jobs,
        "faults": faults or [],
    })


def run(scenario: FleetScenario, profiles: dict[str, JobProfile]) -> FleetResult:
    return simulate_fleet(scenario, profiles=profiles)


def node_spans(result: FleetResult) -> dict[str, list[tuple[float, float, str, str]]]:
    """Per node track: (t0, t1, job, name) of the spans that hold the node."""
    out: dict[str, list[tuple[float, float, str, str]]] = {}
    for s in result.recorder.spans:
        if s.track.startswith("node.") and s.name != "tail":
            out.setdefault(s.track, []).append((s.t0, s.t1, str(s.attrs["job"]), s.name))
    return out
