"""The fault and recovery sections of a scenario: what fails, when, and how it comes back.

Owns the shape of `faults:` (per component kind, fail-stop or fail-slow faults given by a
rate or by explicit times) and `recovery:` (the scheme each component kind recovers with,
and the scheme's costs), with the checks that need no cost model. Fault times and draws
are made in `rlsim.faults`; the mechanisms live in the entities and `policies/recovery/`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from rlsim.config.base import Frozen
from rlsim.config.units import Bytes, Seconds


class FaultSpec(Frozen):
    """One kind of fault of one component kind: fail-stop or fail-slow, at a rate or at
    given times."""

    mode: Literal["stop", "slow", "hang"] = Field(
        default="stop",
        description="stop: the component dies (fail-stop) and its scheme recovers it; slow: "
        "it runs `factor` times slower for `duration` (fail-slow); hang (nodes only): it "
        "stops answering without dying, so the trainer's collectives notice only at "
        "recovery.node.hang_timeout_s, then it recovers as a stop.")
    mtbf: Seconds | None = Field(
        default=None, gt=0,
        description="Mean time between faults of each instance (exponential gaps), e.g. "
        "'6 h'. Engines, the trainer, links, GPUs and nodes.")
    probability: float | None = Field(
        default=None, gt=0, lt=1,
        description="Chance that one environment execution (a tool call between two turns) "
        "fails. Environments only.")
    times: list[Seconds] = Field(
        default_factory=list,
        description="Explicit fault times from the start of the run, e.g. ['120 s'].")
    targets: list[int] = Field(
        default_factory=lambda: [0],
        description="With `times`: the instance each fault hits (engine, GPU or node "
        "index), "
        "cycled over the times; default instance 0.")
    factor: float = Field(
        default=2.0, gt=1,
        description="fail-slow: how many times longer the component takes while slow.")
    duration: Seconds = Field(
        default=600.0, gt=0, description="fail-slow: how long the slowdown lasts.")

    @model_validator(mode="after")
    def _one_source(self) -> FaultSpec:
        given = [n for n, v in (("mtbf", self.mtbf), ("probability", self.probability),
                                ("times", self.times or None)) if v is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of mtbf, probability or times "
                             f"(got {', '.join(given) or 'none'})")
        if any(i < 0 for i in self.targets):
            raise ValueError("`targets` lists instance indices (>= 0)")
        return self


class FaultsConfig(Frozen):
    """Faults to inject, per component kind. They are drawn from their own random streams,
    so runs that differ only in recovery schemes see the same faults."""

    engine: list[FaultSpec] = Field(
        default_factory=list, description="Rollout engine faults (per engine).")
    env: list[FaultSpec] = Field(
        default_factory=list,
        description="Environment container faults: fail-stop with a `probability` per "
        "execution (multi-turn workloads).")
    trainer: list[FaultSpec] = Field(
        default_factory=list,
        description="Trainer node faults: a fail-stop restarts the job from its last "
        "checkpoint; a fail-slow slows every training pass (a straggler holds the "
        "collectives).")
    link: list[FaultSpec] = Field(
        default_factory=list, description="Weight-sync link faults (fail-slow only).")
    gpu: list[FaultSpec] = Field(
        default_factory=list,
        description="GPU faults, per GPU of the rollout GPUs then the training GPUs (`on` "
        "counts that way): a rollout GPU's fault hits its engine, a training GPU's the "
        "trainer.")
    node: list[FaultSpec] = Field(
        default_factory=list,
        description="Node faults, per node of the job's GPUs (the rollout GPUs' nodes, then "
        "the training GPUs' when disaggregated; each pool's gpus_per_node GPUs a node). A "
        "stop or hang takes down every role placed on the node, each recovering by its own "
        "scheme after a replacement node comes (recovery.node): its engines, and the "
        "trainer if a training rank is there. slow: every role on the node runs `factor` "
        "times slower (a straggler node). Environment and reward workers run on CPU pools "
        "in rlsim, off the GPU nodes.")

    seed: int | None = Field(
        default=None, ge=0,
        description="Seed of the fault streams alone; default the scenario's seed. Runs "
        "that differ only in it see the same workload and different faults (replicates of "
        "the fault process).")
    scale: float = Field(
        default=1.0, ge=0,
        description="Multiplies every fault rate: MTBFs are divided by it and environment "
        "probabilities multiplied (capped at 1); 0 injects no rate-based fault. Explicit "
        "times are kept. For sweeping the failure rate with one key.")

    @model_validator(mode="after")
    def _supported(self) -> FaultsConfig:
        for i, f in enumerate(self.env):
            if f.mode != "stop" or f.probability is None:
                raise ValueError(f"faults.env.{i}: environment faults are fail-stop with a "
                                 "`probability` per execution")
        for kind in ("engine", "trainer", "link", "gpu", "node"):
            for i, f in enumerate(getattr(self, kind)):
                if f.probability is not None:
                    raise ValueError(f"faults.{kind}.{i}: `probability` is for environment "
                                     "executions; give mtbf or times")
                if f.mode == "hang" and kind != "node":
                    raise ValueError(f"faults.{kind}.{i}: mode hang is for nodes "
                                     "(faults.node); use stop or slow")
        for i, f in enumerate(self.link):
            if f.mode != "slow":
                raise ValueError(f"faults.link.{i}: link faults are fail-slow (mode: slow)")
        return self

    @property
    def any(self) -> bool:
        return bool(self.engine or self.env or self.trainer or self.link or self.gpu
                    or self.node)

    def stream_seed(self, scenario_seed: int) -> int:
        """The seed the fault streams draw from."""
        return scenario_seed if self.seed is None else self.seed

    def scaled(self, spec: FaultSpec) -> FaultSpec | None:
        """`spec` at this config's scale (None: a rate scaled to nothing)."""
        if self.scale == 1.0 or spec.times:
            return spec
        if self.scale == 0.0:
            return None
        if spec.mtbf is not None:
            return spec.model_copy(update={"mtbf": spec.mtbf / self.scale})
        assert spec.probability is not None
        return spec.model_copy(update={"probability": min(1.0, spec.probability * self.scale)})


class EngineRecoveryConfig(Frozen):
    """How a crashed rollout engine comes back."""

    scheme: Literal["cold_restart", "shadow"] = Field(
        default="cold_restart",
        description="cold_restart: detect, start a new engine (process, weights, warm-up), "
        "re-run its in-flight requests from scratch. shadow (Belayer): a pre-started shadow "
        "sharing the weights is promoted at the next poll; in-flight requests re-prefill "
        "their logged prompt and generated tokens.")
    detect_s: Seconds = Field(
        default=10.0, ge=0,
        description="cold_restart: time to notice a dead engine (health-check timeout).")
    cold_start_s: Seconds | None = Field(
        default=None, ge=0,
        description="Full engine start (process, weight load from storage, CUDA graphs, "
        "warm-up); default the cost model's cold start of the engine.")
    poll_s: Seconds = Field(
        default=0.2, gt=0,
        description="shadow: the watcher polls the primary this often; a fault is noticed "
        "at the next poll.")
    promote_s: Seconds = Field(
        default=1.0, ge=0,
        description="shadow: from noticing the fault to the shadow serving (Belayer's "
        "heartbeat confirmation, 1 s in its code, then re-binding the server).")
    token_log_every: int = Field(
        default=256, ge=1,
        description="shadow: generated tokens are logged every this many, so a promoted "
        "shadow re-prefills an in-flight request's prompt plus its logged tokens and "
        "regenerates the rest (Belayer's router: 256).")
    shadow_memory: Bytes = Field(
        default=2 * 2**30, ge=0,
        description="shadow: GPU memory the idle shadow holds per GPU (its CUDA context and "
        "workspace; weights are shared), taken from the engine's KV cache.")


class CheckpointPolicyConfig(Frozen):
    """When an environment is checkpointed (at action boundaries only)."""

    policy: Literal["never", "always", "every_k", "adaptive"] = Field(
        default="adaptive",
        description="never; always (after every execution); every_k (after every k-th); "
        "adaptive (Belayer's adaptive risk: checkpoint when p_fail x P(the next LLM call "
        "is still running when the snapshot ends) x the work a failure would redo exceeds "
        "the snapshot's expected visible cost, once at least min_steps executions and "
        "min_work_s of work have passed since the last checkpoint).")
    k: int = Field(default=3, gt=0, description="every_k: checkpoint after every k-th "
                   "execution.")
    p_fail: float = Field(default=0.01, gt=0, le=1,
                          description="adaptive: assumed failure chance per execution.")
    min_steps: int = Field(default=4, ge=1,
                           description="adaptive: executions between checkpoints, at least.")
    min_work_s: Seconds = Field(
        default=30.0, ge=0, description="adaptive: work between checkpoints, at least.")
    weigh_by_llm: bool = Field(
        default=True,
        description="adaptive: weigh the benefit by P(the next LLM call outlasts the "
        "snapshot), as Belayer's README and the issue state the rule; false: the rule of "
        "Belayer's code, p_fail x work to redo against the expected visible cost.")


class EnvRecoveryConfig(Frozen):
    """How a trajectory whose environment container died comes back."""

    scheme: Literal["restart", "checkpoint"] = Field(
        default="restart",
        description="restart: a new container from the base image, then the trajectory "
        "runs again from its first turn (LLM turns included). checkpoint: restore the last "
        "full checkpoint (process + file-system snapshot) and redo the turns after it.")
    restart_s: Seconds | None = Field(
        default=None, ge=0,
        description="Starting a new container from the base image; default the "
        "trajectory's own environment reset (what starting it cost the first time).")
    sandbox_bytes: Bytes = Field(
        default=2 * 2**30, ge=0,
        description="Size of a sandbox's file system and process state, for the "
        "calibrated snapshot model (the rollout pool profile's sandbox_* constants).")
    sandbox_files: int = Field(
        default=50_000, ge=0, description="Files in a sandbox's tree, for the same model.")
    checkpoint_s: Seconds | None = Field(
        default=None, ge=0,
        description="checkpoint: taking one snapshot (process + file system); default the "
        "calibrated model of sandbox_bytes and sandbox_files. It runs while the next LLM "
        "call does; only the part past that call's response delays the trajectory.")
    restore_s: Seconds | None = Field(
        default=None, ge=0,
        description="checkpoint: restoring a snapshot into a new container; default the "
        "calibrated model of sandbox_bytes and sandbox_files.")
    checkpoints: CheckpointPolicyConfig = Field(
        default=CheckpointPolicyConfig(), description="When to checkpoint.")


class TrainerRecoveryConfig(Frozen):
    """Checkpointing of the trainer and restart of the job after a trainer fault."""

    checkpoint_every: int | None = Field(
        default=None, gt=0,
        description="Steps between trainer checkpoints (one is written after every "
        "checkpoint_every-th step); none: no checkpoints, so a trainer fault restarts the "
        "job from its first step.")
    checkpoint_write_s: Seconds | None = Field(
        default=None, ge=0,
        description="Blocking time of one checkpoint write; default the trainer state over "
        "`storage_bandwidth`.")
    storage_bandwidth: float = Field(
        default=5e9, gt=0,
        description="Bytes per second the job's checkpoints are written and read at, for "
        "the defaults of checkpoint_write_s and restart_s.")
    detect_s: Seconds = Field(default=30.0, ge=0,
                              description="Time to notice a dead trainer node.")
    restart_s: Seconds | None = Field(
        default=None, ge=0,
        description="Restarting the job after a trainer fault (new processes, checkpoint "
        "read, engines started cold); default the checkpoint read plus an engine cold "
        "start.")


class SlowRecoveryConfig(Frozen):
    """What happens once a fail-slow component is noticed."""

    detect_s: Seconds = Field(
        default=60.0, ge=0, description="Time from a slowdown's onset until it is noticed.")
    mitigation: Literal["none", "rebalance", "fail_stop"] = Field(
        default="none",
        description="none: live with it; rebalance: a slow engine's waiting requests move "
        "to the other engines and it takes no new ones until it recovers; fail_stop: a slow "
        "engine is treated as crashed (its recovery scheme replaces it).")


class NodeRecoveryConfig(Frozen):
    """What a node fault waits for before its roles can recover: noticing a hang, and a
    replacement node (a spare, or the failed node back from repair)."""

    hang_timeout_s: Seconds = Field(
        default=600.0, gt=0,
        description="A hung node is noticed when the trainer's collective times out, this "
        "long after the hang (in place of trainer.detect_s): 600 s is PyTorch's default "
        "process-group timeout and veRL's nccl_timeout. A hung node's engines are noticed "
        "by their own health check (engine.detect_s).")
    spares: int | None = Field(
        default=None, ge=0,
        description="Spare nodes standing by; none: always one (the node is replaced after "
        "swap_s). With a count, a failed node goes to repair and rejoins the spares "
        "repair_s later; a fault finding no spare waits for the next repaired node.")
    swap_s: Seconds = Field(
        default=0.0, ge=0,
        description="Bringing a spare node into the job (the scheduler's hand-over), on top "
        "of each role's own restart.")
    repair_s: Seconds | None = Field(
        default=None, gt=0,
        description="How long a failed node takes to come back as a spare (repair or "
        "replacement). Needed with a spare count.")

    @model_validator(mode="after")
    def _repair_with_spares(self) -> NodeRecoveryConfig:
        if self.spares is not None and self.repair_s is None:
            raise ValueError("recovery.node.spares: a limited spare pool needs "
                             "recovery.node.repair_s (when a failed node is back)")
        return self


class RecoveryConfig(Frozen):
    """Recovery scheme per component kind."""

    engine: EngineRecoveryConfig = Field(default=EngineRecoveryConfig(),
                                         description="Rollout engines.")
    env: EnvRecoveryConfig = Field(default=EnvRecoveryConfig(),
                                   description="Environment containers.")
    trainer: TrainerRecoveryConfig = Field(default=TrainerRecoveryConfig(),
                                           description="Trainer.")
    slow: SlowRecoveryConfig = Field(default=SlowRecoveryConfig(),
                                     description="Fail-slow components.")
    node: NodeRecoveryConfig = Field(default=NodeRecoveryConfig(),
                                     description="Node faults: hang detection, spares.")
    scope: Literal["job", "role"] = Field(
        default="job",
        description="job: a trainer fault restarts the whole job from its last checkpoint "
        "(ByteRobust's in-place restart, the baseline RobustRL compares with), and a crashed "
        "engine's requests wait for it to come back (engine.scheme). role (RobustRL): only "
        "the failed role recovers. A trainer fault restarts the trainer alone from its "
        "per-step checkpoint (needs trainer.checkpoint_every: 1), noticed after "
        "trainer.detect_s and back role_restart_s later, while the rollouts keep generating; "
        "the trainer pass it killed runs again and a weight send it cut is sent again, point "
        "to point. A fault in the first step after a (re)start, or a second one in the same "
        "step, still restarts the job. A crashed engine (cold_restart) is isolated: once "
        "noticed (engine.detect_s) its turns in flight go to the live engines, generated "
        "again from their start, while it is replaced (engine.cold_start_s). Needs "
        "policy.placement: disaggregated.")
    role_restart_s: Seconds | None = Field(
        default=None, ge=0,
        description="scope role: restarting the trainer alone (trainer processes killed and "
        "started again on a warm standby, its checkpoint loaded, the rollouts' weight pulls "
        "reconnected); default the checkpoint read (the trainer state over "
        "trainer.storage_bandwidth).")

    @model_validator(mode="after")
    def _role_needs_step_checkpoints(self) -> RecoveryConfig:
        if self.scope == "role" and self.trainer.checkpoint_every != 1:
            raise ValueError("recovery.scope: role restarts the trainer alone from its "
                             "checkpoint of the last step; set "
                             "recovery.trainer.checkpoint_every: 1")
        return self


class HorizonConfig(Frozen):
    """The job's whole span at its fault rates (`rlsim.horizon`): the detailed simulation
    gives the steady step, what one fault that does not restart the job costs, and the
    checkpoint and restart costs; a job-level fault process runs over the span on them."""

    span: Seconds | None = Field(
        default=None, gt=0,
        description="Wall-clock span of the job, e.g. '30 d'; or give `steps`.")
    steps: int | None = Field(
        default=None, gt=0,
        description="Steps the job must finish (the span is how long that takes).")
    replicates: int = Field(
        default=20, ge=2, le=10_000,
        description="Draws of the fault process: the intervals are over these.")
    penalty_runs: int = Field(
        default=8, ge=1, le=100,
        description="Detailed runs per kind of fault that does not restart the job (a "
        "rollout node, a slow node), each with one fault at a different point of the first "
        "steady steps: what such a fault costs is drawn from them.")

    @model_validator(mode="before")
    @classmethod
    def _scalar_is_a_span(cls, data: Any) -> Any:
        # `horizon: 30 d` reads as `horizon: {span: 30 d}`
        if isinstance(data, str | int | float) and not isinstance(data, bool):
            return {"span": data}
        return data

    @model_validator(mode="after")
    def _one_length(self) -> HorizonConfig:
        if (self.span is None) == (self.steps is None):
            raise ValueError("give horizon.span (e.g. '30 d') or horizon.steps, not both")
        return self
