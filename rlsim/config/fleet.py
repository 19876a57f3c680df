"""The fleet scenario schema: many RL jobs sharing a rollout pool and a train pool.

Owns the shape of a multi-job scenario file (`kind: fleet`): the pools, the cross-cluster
link, the jobs (written inline, from templates, or from an arrival trace that the loader
expands into jobs), and the fleet policy (`solo`, `colocated`, `multiplex`, `gavel`) with
RollMux's knobs. Each job reuses the single-job schema's model, rollout, train, reward and
workload sections, so a job is profiled with the same cost models as any scenario.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rlsim.config.base import Frozen
from rlsim.config.hardware import ModelSpec, lookup_model
from rlsim.config.scenario import (
    PoolConfig,
    RewardConfig,
    RolloutConfig,
    TrainConfig,
    known_model,
    unique_pools,
)
from rlsim.config.units import Bytes, BytesPerSecond, Seconds
from rlsim.config.workload import WorkloadConfig


class SwitchConfig(Frozen):
    """Measured start times of a job's phases on one node.

    A field left unset keeps rlsim's cost-model value (fleet/profile.py: `model_constants`)."""

    rollout_cold: Seconds | None = Field(
        default=None, ge=0,
        description="Cold start of the rollout phase on a node (engine start-up and the "
        "checkpoint read), e.g. '38.8 s' for Qwen2.5-7B on 8 H20 [P Weave Fig. 4].")
    rollout_warm: Seconds | None = Field(
        default=None, ge=0,
        description="Warm start of the rollout phase (weights from host DRAM), e.g. '0.9 s' "
        "[P Weave Fig. 4].")
    train_cold: Seconds | None = Field(
        default=None, ge=0,
        description="Cold start of the training phase on a node, e.g. '32.7 s' for "
        "Qwen2.5-7B on 8 H800 [P Weave Fig. 4].")
    train_warm: Seconds | None = Field(
        default=None, ge=0,
        description="Warm start of the training phase (state from host DRAM), e.g. '4.1 s' "
        "[P Weave Fig. 4].")


class HostFootprintConfig(Frozen):
    """Host DRAM a job keeps resident on each node of its pools.

    What bounds the jobs sharing a node; a field left unset keeps rlsim's cost-model value."""

    rollout: Bytes | None = Field(
        default=None, gt=0,
        description="Per rollout node, e.g. '275.7 GB' for Qwen2.5-7B on 8 H20 "
        "[P Weave Table 2].")
    train: Bytes | None = Field(
        default=None, gt=0,
        description="Per train node, e.g. '240.0 GB' for Qwen2.5-7B on 8 H800 "
        "[P Weave Table 2].")


class JobConfig(Frozen):
    """One RL job: what it trains, on how many GPUs of which pools, for how long."""

    name: str = Field(min_length=1, description="Job name, unique in the fleet.")
    arrival: Seconds = Field(default=0.0, ge=0, description="Submission time, e.g. '2 h'.")
    steps: int | None = Field(
        default=None, gt=0, description="Training iterations to run (give steps or duration).")
    duration: Seconds | None = Field(
        default=None, gt=0,
        description="Run time alone on dedicated pools (Solo-D); converted to iterations with "
        "the job's profiled mean iteration time. Give steps or duration.")
    slo: float = Field(
        default=1.5, ge=1.0,
        description="Allowed slowdown of the job's completion time against running alone on "
        "dedicated pools (Solo-D), e.g. 1.1.")
    model: str | ModelSpec = Field(description="Model: catalogue name or inline spec.")
    rollout: RolloutConfig = Field(
        description="Rollout engines: `pool` is the fleet's rollout pool, `gpus` the job's "
        "rollout GPUs (whole nodes).")
    train: TrainConfig = Field(
        description="Trainer: `pool` is the fleet's train pool, `gpus` the job's training GPUs "
        "(whole nodes).")
    reward: RewardConfig = Field(default=RewardConfig(), description="Reward computation.")
    workload: WorkloadConfig = Field(description="Prompts and lengths of each iteration.")
    switch: SwitchConfig | None = Field(
        default=None,
        description="Measured cold and warm start times per phase and node (`rollout_cold`, "
        "`rollout_warm`, `train_cold`, `train_warm`) [P Weave Fig. 4]; unset fields keep "
        "rlsim's cost-model value.")
    host_footprint: HostFootprintConfig | None = Field(
        default=None,
        description="Measured host DRAM per node while the job sleeps (`rollout`, `train`) "
        "[P Weave Table 2]; unset fields keep rlsim's cost-model value.")

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str | ModelSpec) -> str | ModelSpec:
        return known_model(value)

    @model_validator(mode="after")
    def _steps_or_duration(self) -> JobConfig:
        if (self.steps is None) == (self.duration is None):
            raise ValueError("give exactly one of steps and duration")
        return self

    @property
    def model_spec(self) -> ModelSpec:
        return self.model if isinstance(self.model, ModelSpec) else lookup_model(self.model)


class CrossLinkConfig(Frozen):
    """The slow cross-cluster link and the rollout cluster's fabric a weight sync crosses.

    RollMux's two-stage, topology-aware sync [P Weave 5.2]: every training GPU sends a
    disjoint shard of one model copy to a rollout GPU over its own point-to-point stream,
    and the receiving GPUs pass their shards on inside the rollout cluster as they arrive
    (pipelined). The paper's "20 Gbps Ethernet link" [P Weave 6.1] is read as each GPU's
    stream: one copy of a 7B model (15.2 GB) synced 8 H800 -> 8 H20 in 0.9 s [P Weave
    Fig. 13] needs at least 135 Gb/s, which one 20 Gb/s link per node or per cluster cannot
    carry (docs/fleet.md)."""

    bandwidth_per_gpu: BytesPerSecond = Field(
        default=20e9 / 8, gt=0,
        description="Cross-cluster bandwidth of one GPU's stream, e.g. '20 Gb/s' "
        "[P Weave 6.1]; a sync uses as many parallel streams as the smaller side (train or "
        "rollout) of the job has GPUs.")
    bandwidth_per_node: BytesPerSecond | None = Field(
        default=None, gt=0,
        description="Optional cap on one node's cross-cluster traffic (all its GPUs' "
        "streams together); none: no cap. '20 Gb/s' here reproduces rlsim's earlier "
        "reading of the paper's link as one 20 Gb/s link per node.")
    fabric_bandwidth: BytesPerSecond = Field(
        default=400e9 / 8, gt=0,
        description="Per-GPU bandwidth inside the rollout cluster for the second-stage "
        "broadcast, e.g. '400 Gb/s' InfiniBand [P Weave 6.1].")
    latency: Seconds = Field(default=0.001, ge=0, description="One-way latency of the link.")


class MultiplexConfig(Frozen):
    """RollMux's co-execution groups (policies `multiplex` and `gavel`)."""

    placement: Literal["rollmux", "greedy", "random"] = Field(
        default="rollmux",
        description="Inter-group scheduler: `rollmux` (least marginal $/h among placements "
        "that keep every job's SLO and the residency limit), or the naive baselines `greedy` "
        "(the group whose nodes are least loaded, SLO unchecked) and `random` (uniformly one "
        "of the groups with room or a new group, as the paper's Random [P Weave 6.5]; SLO "
        "unchecked).")
    max_jobs_per_group: int = Field(
        default=5, gt=0, description="Most jobs in one group ([P]: |J_G| below ten; 2-5 used).")
    slo_check: Literal["worst", "worst_and_mean"] = Field(
        default="worst",
        description="Profiles the SLO check uses. `worst` is the paper's [P Weave 4.2]: every "
        "response at the max length (each turn's, for multi-turn jobs), the group's "
        "meta-iteration replayed with these worst-case phases against each job's worst-case "
        "solo iteration. `worst_and_mean` (rlsim's addition) also replays the group with "
        "each job's longest phases of a separately profiled typical run against its mean "
        "solo iteration, since a job whose real phases are much shorter than its worst case "
        "can miss its SLO against its real solo time.")
    slo_margin: float = Field(
        default=0.01, ge=0, lt=1,
        description="Under `worst_and_mean`: slowdown the typical-case check keeps in reserve "
        "below each SLO, since the run's iterations line up differently from the check's "
        "replay.")
    migration: bool = Field(
        default=True,
        description="Long-tail migration: once `migration_threshold` of a rollout's responses "
        "are done, its stragglers move to `tail_fraction` of its GPUs and the next queued "
        "rollout starts on the rest.")
    migration_threshold: float = Field(
        default=0.8, gt=0, lt=1, description="Share of responses done that triggers it [P].")
    tail_fraction: float | None = Field(
        default=None, gt=0, lt=1,
        description="Share of the job's rollout engines the stragglers keep; default: the "
        "smallest share on which they decode at most `tail_max_stretch` slower (the paper's "
        "subset size is in an unread footnote).")
    tail_max_stretch: float = Field(
        default=1.25, ge=1,
        description="With `tail_fraction` unset: how much slower the consolidated stragglers "
        "may decode (more sequences per engine read more KV per iteration).")
    migration_s: Seconds = Field(
        default=3.0, ge=0,
        description="Added to the tail for moving the stragglers (re-prefill of their tokens; "
        "RollPacker reports <= 3 s).")


class FleetPolicyConfig(Frozen):
    """How the fleet shares its GPUs."""

    name: Literal["solo", "colocated", "multiplex", "gavel"] = Field(
        default="multiplex",
        description="`solo` (Solo-D: each job on dedicated rollout and train nodes), "
        "`colocated` (veRL: each job alone on train-pool nodes, rollout and training "
        "time-shared), `multiplex` (RollMux: co-execution groups, phases interleaved), "
        "`gavel` (groups as multiplex, but a job holds all its nodes for a whole iteration: "
        "job-level GPU sharing without phase interleaving).")
    multiplex: MultiplexConfig = Field(
        default=MultiplexConfig(), description="Group scheduling knobs.")


class JobTraceConfig(Frozen):
    """A job-arrival trace: one row per job (CSV or Parquet)."""

    path: str = Field(
        description="File relative to the scenario. Columns: `name`, `arrival_s`, `template` "
        "(a key of `templates`), `slo`, `steps` or `duration_h`, and any dotted job field "
        "as an override, e.g. `workload.max_response_len`, `rollout.gpus`, `model`.")


class JobCrashConfig(Frozen):
    """A job that crashes: it loses the iteration in progress, gives back its nodes, and
    is submitted again later as a new arrival with the iterations it had left."""

    job: str = Field(description="Name of the job that crashes.")
    at: Seconds = Field(ge=0, description="When it crashes, e.g. '2180 s'.")
    resubmit_after: Seconds = Field(
        default=0.0, ge=0,
        description="Delay before it is submitted again (the paper's example: 2300 s).")


class FleetScenario(Frozen):
    """Many RL jobs on a shared rollout pool and train pool."""

    kind: Literal["fleet"] = Field(description="Marks a multi-job scenario: `fleet`.")
    name: str = Field(default="fleet", description="Scenario name shown in reports.")
    description: str = Field(default="", description="Free text: what the scenario models.")
    seed: int = Field(default=0, ge=0, description="Root seed of every random stream.")
    pools: list[PoolConfig] = Field(
        min_length=1,
        description="GPU pools (e.g. H20 rollout nodes, H800 train nodes); `nodes` caps what "
        "can be allocated at once, `host_memory` bounds the jobs resident on a node.")
    link: CrossLinkConfig = Field(default=CrossLinkConfig(), description="Weight-sync path.")
    policy: FleetPolicyConfig = Field(default=FleetPolicyConfig(), description="Fleet policy.")
    profile_steps: int = Field(
        default=8, gt=0,
        description="Iterations each distinct job shape is simulated alone (single-job sync "
        "model, a seed stream of its own) for the run: each of its iterations is one of "
        "these, drawn at random. Admission never sees them: it profiles the worst case "
        "(and, under `worst_and_mean`, a typical run) separately.")
    templates: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Named partial jobs that `jobs[].template` and trace rows start from (in "
        "the file: a mapping, or the path of a YAML file holding one).")
    jobs: list[JobConfig] = Field(
        min_length=1, description="The jobs (a `trace` is expanded into this list on load).")
    faults: list[JobCrashConfig] = Field(
        default_factory=list, description="Job crashes to inject (RollMux: a crashed job "
        "re-enters as a new arrival).")

    @field_validator("pools")
    @classmethod
    def _unique_pools(cls, pools: list[PoolConfig]) -> list[PoolConfig]:
        return unique_pools(pools)

    @model_validator(mode="after")
    def _jobs_fit_pools(self) -> FleetScenario:
        names = [j.name for j in self.jobs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"jobs: job names must be unique; repeated: {', '.join(dupes[:5])}")
        known = set(names)
        for i, fault in enumerate(self.faults):
            if fault.job not in known:
                raise ValueError(f"faults.{i}.job: no job named {fault.job!r}")
        pools = {p.name: p for p in self.pools}
        for i, job in enumerate(self.jobs):
            for role in ("rollout", "train"):
                section = getattr(job, role)
                pool = pools.get(section.pool)
                if pool is None:
                    raise ValueError(f"jobs.{i}.{role}.pool: no pool named {section.pool!r}; "
                                     f"pools: {', '.join(pools)}")
                gpus = section.gpus
                if gpus is None or gpus % pool.node_size:
                    raise ValueError(f"jobs.{i}.{role}.gpus: give whole nodes of "
                                     f"{pool.node_size} GPUs (got {gpus})")
                if gpus // pool.node_size > pool.nodes:
                    raise ValueError(f"jobs.{i}.{role}.gpus: {gpus} GPUs exceed pool "
                                     f"{pool.name!r} ({pool.gpus} GPUs)")
            if job.rollout.pool == job.train.pool:
                raise ValueError(f"jobs.{i}: rollout and train pools must differ (the fleet "
                                 "models a rollout cluster and a train cluster)")
        return self

    def pool(self, name: str) -> PoolConfig:
        for p in self.pools:
            if p.name == name:
                return p
        raise KeyError(name)

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
