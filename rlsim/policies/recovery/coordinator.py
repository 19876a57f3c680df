"""The coordinator of a run's recovery: `Recovery`, the plug-in `api.simulate` attaches.

It builds the shared `Ledger` and one recovery per component kind (`EngineRecovery`,
`EnvRecovery`, `TrainerRecovery`, `LinkRecovery`), starts one fault injector per fault
spec and instance, and routes each fault drawn to the component it hits (a GPU's fault to
the engine of its GPUs or to the trainer). It plugs them into the run: the job's fault
hooks factory (every multi-turn sample's environment faults) and the phase library's
`StepHooks` (the job's step loop, guarded phases and trainer work, all the trainer's).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Protocol, TypeVar

import simpy

from rlsim.config.faults import FaultSpec
from rlsim.entities.cluster import Cluster
from rlsim.entities.rollout import RolloutJob
from rlsim.faults import fault_times
from rlsim.faults.bounds import FaultEstimate
from rlsim.faults.spares import SparePool
from rlsim.policies.recovery.engines import EngineRecovery
from rlsim.policies.recovery.environments import EnvRecovery
from rlsim.policies.recovery.ledger import Ledger
from rlsim.policies.recovery.links import LinkRecovery
from rlsim.policies.recovery.trainer import StepBody, TrainerRecovery, Work

_R = TypeVar("_R")


class Wiring(Protocol):
    """What recovery acts on: the cluster and the job's rollouts (`Phases` has both)."""

    cluster: Cluster
    job: RolloutJob


class Recovery:
    """The faults of one run and the schemes that recover from them."""

    def __init__(self, ph: Wiring, bounds: FaultEstimate | None = None) -> None:
        c = ph.cluster
        self.cluster = c
        self.env = c.env
        self.faults = c.scenario.faults
        self.seed = self.faults.stream_seed(c.scenario.seed)
        cfg = c.scenario.recovery
        self.ledger = Ledger(c, ph.job, bounds)
        self.engines = EngineRecovery(c, self.ledger, cfg)
        self.envs = EnvRecovery(c, self.ledger, cfg, bounds)
        self.trainer = TrainerRecovery(c, ph.job, self.ledger, cfg, self.engines.cold_start_s)
        self.links = LinkRecovery(c, self.ledger)
        self.spares = SparePool(cfg.node)
        # every multi-turn sample's environment steps go through its fault hooks
        ph.job.faults = self.envs.trajectory_faults
        self._start_injectors()

    # ------------------------------------------------------------------ StepHooks
    def run_steps(self, steps: int, one_step: StepBody,
                  start: StepBody | None = None) -> Generator[simpy.Event, Any, None]:
        """The job's steps, with its checkpoints and restarts (`TrainerRecovery`)."""
        return self.trainer.run_steps(steps, one_step, start)

    def guard(self, body: Work[_R]) -> Work[_R]:
        """`body`, stopped by a job restart (`TrainerRecovery.guard`)."""
        return self.trainer.guard(body)

    def trainer_work(self, work: Callable[[], Work[_R]]) -> Work[_R]:
        """The trainer's work, redone after a trainer restart (`TrainerRecovery`)."""
        return self.trainer.trainer_work(work)

    # ------------------------------------------------------------------ injection
    def _start_injectors(self) -> None:
        # every explicit target names an instance that exists: the prepare step checked it
        # (rlsim/prepare.py), with the instance counts this uses (`Placement.instances`)
        f = self.faults
        placement = self.cluster.placement
        for kind, specs in (("engine", f.engine), ("trainer", f.trainer), ("link", f.link),
                            ("gpu", f.gpu), ("node", f.node)):
            for si, spec in enumerate(specs):
                for i in range(placement.instances(kind)):
                    self.env.process(self._inject(spec, kind, si, i))

    def _inject(self, spec: FaultSpec, kind: str, si: int,
                instance: int) -> Generator[simpy.Event, Any, None]:
        scaled = self.faults.scaled(spec)
        if scaled is None:
            return
        field = f"faults.{kind}.{si}.{'times' if spec.times else 'mtbf'}"
        for t in fault_times(scaled, kind, si, instance, self.seed):
            if t > self.env.now:
                yield self.env.timeout(t - self.env.now)
            self.ledger.drawn(field)
            self._hit(spec, kind, instance)

    def _hit(self, spec: FaultSpec, kind: str, instance: int) -> None:
        """One fault of `spec` on `instance` of `kind` now (a GPU's lands on its engine or
        on the trainer, a node's on every role placed there)."""
        if kind == "node":
            self._hit_node(spec, instance)
            return
        if kind == "gpu":
            placement = self.cluster.placement
            role, index = placement.gpu_role(instance)  # the engine that owns it, or a rank
            if role == "engine":
                self._hit(spec, "engine", index)
                if placement.colocated:
                    self._hit(spec, "trainer", 0)
            else:
                self._hit(spec, "trainer", 0)
            return
        if kind == "engine":
            if spec.mode == "stop":
                self.engines.crash(instance)
            else:
                self.env.process(self.engines.slow(instance, spec))
        elif kind == "trainer":
            if spec.mode == "stop":
                self.trainer.fault()
            else:
                self.env.process(self.trainer.slow(spec))
        elif kind == "link":
            self.env.process(self.links.slow(spec))

    def _hit_node(self, spec: FaultSpec, node: int) -> None:
        """Node `node` fails: its engines and (with a training rank there) the trainer.
        A stop or hang waits for a replacement node (`SparePool`) before each role's own
        recovery, a hang also for the trainer's collective timeout; slow slows them all."""
        placement = self.cluster.placement
        engines: list[int] = []
        trainer = False
        for gpu in placement.node_gpus(node):
            role, index = placement.gpu_role(gpu)
            if role == "engine":
                if index not in engines:
                    engines.append(index)
                trainer = trainer or placement.colocated
            else:
                trainer = True
        if spec.mode == "slow":
            for i in engines:
                self.env.process(self.engines.slow(i, spec))
            if trainer:
                self.env.process(self.trainer.slow(spec))
            return
        if self.ledger.restarting:
            return  # the job is restarting: it comes back on healthy nodes
        wait_s = self.spares.take(self.env.now)
        cfg = self.cluster.scenario.recovery
        for i in engines:
            self.engines.crash(i, extra_s=wait_s, node=node)
        if trainer:
            hang_s = (max(0.0, cfg.node.hang_timeout_s - cfg.trainer.detect_s)
                      if spec.mode == "hang" else 0.0)
            self.trainer.fault(extra_s=wait_s + hang_s, node=node)
