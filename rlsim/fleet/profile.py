"""Job profiles: what one RL job's phases cost, from rlsim's own single-job model.

Owns turning a `JobConfig` into a `JobProfile`: the job is simulated alone with the `sync`
policy for `profile_steps` iterations (disaggregated on its rollout and train nodes: rollout
and train phase times, and when `migration_threshold` of each rollout's responses were done;
colocated on its train nodes: veRL's whole iteration), once more with every response at the
max length (RollMux's worst-case admission profile), and priced for switches (warm start
from host memory, cold start from storage), host-memory residency and the two-stage weight
sync. Jobs with the same shape share one profile (and one set of simulations).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlsim.api import simulate
from rlsim.config.fleet import CrossLinkConfig, FleetScenario, JobConfig
from rlsim.config.loading import scenario_from_dict
from rlsim.config.scenario import Scenario
from rlsim.entities.cluster import cost_models
from rlsim.trace import Recorder

ROLLOUT_PHASES = ("gen", "env", "reward")
# The single controller's per-step work sits between reward and the trainer's passes.
TRAIN_PHASES = ("controller", "ref", "train")


@dataclass(frozen=True)
class JobProfile:
    """Phase costs of one job shape, in seconds (bytes for host memory)."""

    roll_s: tuple[float, ...]
    """Rollout phase (generation, environment, reward) of each profiled iteration."""
    tail_at: tuple[float, ...]
    """Fraction of each rollout phase elapsed when the migration threshold of its responses
    were done."""
    train_s: tuple[float, ...]
    """Training phase (reference/old log-probs and the optimizer step) of each iteration."""
    coloc_s: tuple[float, ...]
    """A whole colocated iteration on the job's train nodes (veRL), switches included."""
    roll_worst_s: float
    train_worst_s: float
    sync_s: float
    """Two-stage weight sync: one copy over the cross-cluster link in parallel shards, then a
    broadcast inside the rollout cluster."""
    warm_roll_s: float
    warm_train_s: float
    cold_roll_s: float
    cold_train_s: float
    host_roll_bytes: float
    """Host DRAM one rollout node keeps for the job while it sleeps (its weight shards)."""
    host_train_bytes: float
    """Host DRAM one train node keeps (params, grads and optimizer state of its GPUs)."""
    samples: int
    tail_fraction: float = 1.0
    """Share of the rollout engines the stragglers keep after migration (1: no migration)."""
    tail_stretch: float = 1.0
    """How much slower the stragglers decode once migrated onto that share (more sequences
    per engine: each iteration reads more KV)."""

    @property
    def iter_mean_s(self) -> float:
        return float(np.mean(self.roll_s) + np.mean(self.train_s)) + self.sync_s

    @property
    def iter_worst_s(self) -> float:
        return self.roll_worst_s + self.train_worst_s + self.sync_s

    @property
    def roll_mean_s(self) -> float:
        return float(np.mean(self.roll_s))

    @property
    def train_mean_s(self) -> float:
        return float(np.mean(self.train_s))


def _shape(job: JobConfig) -> dict[str, Any]:
    return job.model_dump(mode="json", include={"model", "rollout", "train", "reward",
                                                "workload"})


def _single_job(fleet: FleetScenario, job: JobConfig, *, colocated: bool,
                worst: bool) -> dict[str, Any]:
    """The single-job scenario mapping that runs `job` alone."""
    shape = _shape(job)
    rpool = fleet.pool(job.rollout.pool).model_dump(mode="json")
    tpool = fleet.pool(job.train.pool).model_dump(mode="json")
    rnodes = (job.rollout.gpus or 0) // fleet.pool(job.rollout.pool).node_size
    tnodes = (job.train.gpus or 0) // fleet.pool(job.train.pool).node_size
    rollout = {**shape["rollout"], "gpus": None}
    train = {**shape["train"], "gpus": None}
    if colocated:
        pools = [{**tpool, "nodes": tnodes}]
        rollout["pool"] = tpool["name"]
        placement = "colocated"
    else:
        pools = [{**rpool, "nodes": rnodes}, {**tpool, "nodes": tnodes}]
        placement = "disaggregated"
    workload = dict(shape["workload"])
    reward = dict(shape["reward"])
    if worst and workload.get("agentic") is None:
        # RollMux's profiler: every response reaches the max token limit.
        workload.update(response_len={"dist": "fixed", "value": workload["max_response_len"]},
                        tasks=None, trace=None)
        reward["by_task"] = {}
    return {"name": f"{job.name}-profile", "seed": fleet.seed, "steps": fleet.profile_steps,
            "model": shape["model"], "pools": pools, "rollout": rollout, "train": train,
            "reward": reward, "workload": workload,
            "policy": {"name": "sync", "placement": placement}}


def _phase_times(rec: Recorder, steps: int, names: tuple[str, ...]) -> list[float]:
    out = [0.0] * steps
    for s in rec.spans:
        if s.track == "controller" and s.name in names:
            out[int(s.attrs["step"])] += s.t1 - s.t0
    return out


def _tail_at(rec: Recorder, roll: list[float], threshold: float) -> list[float]:
    out = [1.0] * len(roll)
    for i in rec.instants:
        if i.track == "controller" and i.name == "responses":
            lat = sorted(float(x) for x in i.attrs["latency_s"])
            step = int(i.attrs["step"])
            if lat and roll[step] > 0:
                k = min(len(lat) - 1, int(np.ceil(threshold * len(lat))) - 1)
                out[step] = min(1.0, lat[k] / roll[step])
    return out


def sync_s(weight_bytes: float, train_nodes: int, rollout_nodes: int,
           link: CrossLinkConfig) -> float:
    """Topology-aware sync: shards cross the slow link from every train node in parallel
    (one model copy in all), then a pipelined broadcast inside the rollout cluster."""
    lanes = max(1, min(train_nodes, rollout_nodes))
    cross = weight_bytes / (link.bandwidth_per_node * lanes)
    fabric = weight_bytes / link.fabric_bandwidth if rollout_nodes else 0.0
    return cross + fabric + 2 * link.latency


class Profiler:
    """Profiles jobs of one fleet, once per distinct shape."""

    def __init__(self, fleet: FleetScenario, base_dir: Path) -> None:
        self.fleet = fleet
        self.base = base_dir
        self.threshold = fleet.policy.multiplex.migration_threshold
        self.tail_fraction = fleet.policy.multiplex.tail_fraction
        self.max_stretch = fleet.policy.multiplex.tail_max_stretch
        self._cache: dict[str, JobProfile] = {}

    def profile(self, job: JobConfig) -> JobProfile:
        key = json.dumps(_shape(job), sort_keys=True)
        if key not in self._cache:
            self._cache[key] = self._measure(job)
        return self._cache[key]

    def _run(self, job: JobConfig, colocated: bool, worst: bool) -> tuple[Scenario, Recorder]:
        data = _single_job(self.fleet, job, colocated=colocated, worst=worst)
        scenario, base = scenario_from_dict(data, None, self.base, f"job {job.name}")
        return scenario, simulate(scenario, base).recorder

    def _measure(self, job: JobConfig) -> JobProfile:
        steps = self.fleet.profile_steps
        solo, rec = self._run(job, colocated=False, worst=False)
        roll = _phase_times(rec, steps, ROLLOUT_PHASES)
        train = _phase_times(rec, steps, TRAIN_PHASES)
        tail = _tail_at(rec, roll, self.threshold)
        _, crec = self._run(job, colocated=True, worst=False)
        coloc = _phase_times(crec, steps, ("step",))
        if job.workload.agentic is None:
            _, wrec = self._run(job, colocated=False, worst=True)
            wroll = _phase_times(wrec, steps, ROLLOUT_PHASES)
            wtrain = _phase_times(wrec, steps, TRAIN_PHASES)
        else:  # multi-turn: no single max length; the worst profiled iteration stands in
            wroll, wtrain = roll, train
        costs = cost_models(solo)  # the priced models alone: no cluster, no SimPy
        ecost, tcost = costs.engine_cost, costs.train_cost
        rpool = self.fleet.pool(job.rollout.pool)
        tpool = self.fleet.pool(job.train.pool)
        rnodes = (job.rollout.gpus or 0) // rpool.node_size
        tnodes = (job.train.gpus or 0) // tpool.node_size
        tprof = tcost.profile
        weight_bytes = tcost.weight_bytes()
        return JobProfile(
            roll_s=tuple(roll), tail_at=tuple(tail), train_s=tuple(train),
            coloc_s=tuple(coloc), roll_worst_s=max(wroll), train_worst_s=max(wtrain),
            sync_s=sync_s(weight_bytes, tnodes, rnodes, self.fleet.link),
            warm_roll_s=ecost.warm_start_s(),
            # a train node swaps the previous job's state out and this job's state in
            warm_train_s=tprof.engine_warm_start_base_s + tcost.offload_s() + tcost.reload_s(),
            cold_roll_s=ecost.cold_start_s(),
            cold_train_s=tprof.engine_cold_start_s
            + weight_bytes / tprof.checkpoint_load_bandwidth_bytes_per_s,
            host_roll_bytes=ecost.weight_bytes_per_gpu() * rpool.node_size,
            host_train_bytes=tcost.state_bytes_per_gpu() * tpool.node_size,
            samples=job.workload.prompts_per_step * job.workload.samples_per_prompt,
            **self._tail(job, ecost, costs.placement.engines, costs.kv_tokens),
        )

    def _tail(self, job: JobConfig, ecost: Any, engines: int, kv_tokens: int
              ) -> dict[str, float]:
        """Where the stragglers go at migration: `tail_fraction` of the engines, or the
        fewest engines on which they decode at most `tail_max_stretch` slower."""
        if self.tail_fraction is not None:
            kept = max(1, round(engines * self.tail_fraction))
            return {"tail_fraction": kept / engines,
                    "tail_stretch": self._stretch(job, ecost, engines, kept, kv_tokens)}
        for kept in range(1, engines):
            stretch = self._stretch(job, ecost, engines, kept, kv_tokens)
            if stretch <= self.max_stretch:
                return {"tail_fraction": kept / engines, "tail_stretch": stretch}
        return {"tail_fraction": 1.0, "tail_stretch": 1.0}

    def _stretch(self, job: JobConfig, ecost: Any, engines: int, kept: int,
                 kv_tokens: int) -> float:
        """Decode slowdown of the stragglers moved from `engines` onto `kept` engines: the
        unfinished share of the responses, each at half the max response length of context
        (a documented estimate; the profile keeps no per-request contexts)."""
        w = job.workload
        n_tail = math.ceil((1 - self.threshold) * w.prompts_per_step * w.samples_per_prompt)
        ctx = w.max_response_len / 2
        cap = max(1, min(job.rollout.max_running_seqs, int(kv_tokens // max(ctx, 1))))

        def time_s(per_engine: int) -> float:
            batch = min(cap, per_engine)
            a, b = ecost.decode_affine(batch)
            return float(math.ceil(per_engine / batch) * (a + b * batch * ctx))

        before = time_s(max(1, math.ceil(n_tail / engines)))
        return max(1.0, time_s(max(1, math.ceil(n_tail / kept))) / before)
