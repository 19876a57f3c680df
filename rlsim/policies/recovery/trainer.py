"""The trainer's recovery, and the job's: checkpoints, job restarts, a trainer restarted alone.

A fail-stop trainer fault (or a GPU fault on the training GPUs) restarts the whole job from
its last trainer checkpoint (`recovery.scope: job`): the step loop (`run_steps`, the phase
library's `StepHooks`) abandons the step in flight, every process of the job dies, and
after detection and a restart the job goes on from the step after the checkpoint (a
`start(k)` the policy gives first, e.g. a pipeline's fill); `guard` stops every phase and
side process of the abandoned step. With `recovery.scope: role` (RobustRL) the trainer
alone restarts from its per-step checkpoint while the rollouts go on, and `trainer_work`
redoes the pass the fault killed; it escalates to a job restart as RobustRL does. A slow
trainer runs `factor` times slower for the fault's duration, or is replaced as if it had
crashed after detect_s (`recovery.slow.mitigation: fail_stop`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, TypeVar, cast

import simpy

from rlsim.config.errors import ScenarioError
from rlsim.config.faults import FaultSpec, RecoveryConfig
from rlsim.entities.cluster import Cluster
from rlsim.entities.rollout import RolloutJob
from rlsim.policies.recovery.costs import restart_costs
from rlsim.policies.recovery.ledger import Ledger
from rlsim.trace import CONTROLLER

_R = TypeVar("_R")
Work = Generator[simpy.Event, Any, _R]
StepBody = Callable[[int], Generator[simpy.Event, Any, None]]


def _wait(event: simpy.Event) -> Generator[simpy.Event, Any, Any]:
    return (yield event)


class TrainerRecovery:
    """The trainer's faults and the job's step loop with its checkpoints and restarts."""

    def __init__(self, cluster: Cluster, job: RolloutJob, ledger: Ledger,
                 cfg: RecoveryConfig, cold_start_s: float) -> None:
        self.cluster = cluster
        self.job = job
        self.ledger = ledger
        self.env = cluster.env
        self.rec = cluster.recorder
        self.cfg = cfg
        self.faults = cluster.scenario.faults
        costs = restart_costs(cluster.train_cost, cluster.placement.train_gpus, cfg,
                              cold_start_s)
        self.checkpoint_write_s = costs.checkpoint_write_s
        self.job_restart_s = costs.job_restart_s
        self.role = cfg.scope == "role"
        if self.role and cluster.placement.colocated:
            raise ScenarioError(
                "recovery.scope", "role-based recovery restarts the trainer alone while the "
                "rollouts keep generating, which needs separate GPUs: set policy.placement: "
                "disaggregated, or recovery.scope: job")
        self.role_restart_s = costs.role_restart_s
        self.rollout_gpus = cluster.placement.rollout_gpus
        self.train_gpus = cluster.placement.train_gpus
        self._job_fault: simpy.Event = self.env.event()
        # the fail-slow fault in force on the trainer (its id): slowness belongs to the
        # hardware, so it outlasts restarts, and only the fault that set it ends it
        self._slow: int | None = None
        # the job's step loop (`run_steps`) and the trainer restarted alone (scope: role)
        self._step_now = 0  # the step running (or whose checkpoint is being written)
        self._resumed_at = 0  # the step the job started or last restarted at
        self._role_step = -1  # the step of the last trainer restart (a second escalates)
        self._trainer_gen = 0  # moves on at every trainer restart: its work then is void
        self._trainer_back: simpy.Event | None = None  # while the trainer restarts alone
        self._trainer_fault_t = 0.0
        self._trainer_lost_s = 0.0  # trainer work a restart voided, for its record

    @property
    def restarts_job(self) -> bool:
        """Whether the job writes trainer checkpoints or may restart (or restart its
        trainer): then its steps run one process each, a job fault stopping the one in
        flight (`run_steps`)."""
        f = self.faults
        return bool(f.trainer or f.gpu or f.node or self.cfg.trainer.checkpoint_every)

    # ------------------------------------------------------------------ faults
    def fault(self, extra_s: float = 0.0, node: int | None = None) -> None:
        """A fail-stop trainer fault now: the trainer restarts alone (scope role, from its
        checkpoint of the last step) or the whole job restarts (scope job; and, as RobustRL
        escalates, in the first step after a (re)start, at a second fault in one step, or
        while the trainer is still restarting). A node fault (`node`) waits `extra_s` more
        (a replacement node, a hang's timeout)."""
        if self.ledger.restarting:
            return
        if (self.role and self._trainer_back is None and self._step_now > self._resumed_at
                and self._role_step != self._step_now):
            self._restart_trainer(extra_s, node)
        else:
            self.fail_job("trainer", extra_s, node)

    def fail_job(self, kind: str, extra_s: float = 0.0, node: int | None = None) -> None:
        """A fault that restarts the whole job from its last checkpoint (`run_steps`)."""
        if self.ledger.restarting or self._job_fault.triggered:
            return
        attrs: dict[str, Any] = {} if node is None else {"node": node, "node_wait_s": extra_s}
        self._job_fault.succeed((self.ledger.fault(kind, 0, **attrs), self.env.now, extra_s))

    def slow(self, spec: FaultSpec) -> Generator[simpy.Event, Any, None]:
        """The trainer runs `spec.factor` times slower for `spec.duration`, or until it is
        replaced (a process)."""
        trainer = self.cluster.trainer
        if self._slow is not None:
            return
        t0 = self.env.now
        fid = self.ledger.fault("trainer", 0, "slow", factor=spec.factor)
        self._slow = fid
        trainer.slowdown = spec.factor
        scfg = self.cfg.slow
        if scfg.mitigation == "fail_stop" and scfg.detect_s < spec.duration:
            yield self.env.timeout(scfg.detect_s)
            self._slow = None  # the job (or the trainer) restarts on a healthy node
            trainer.slowdown = 1.0
            self.ledger.recovered(fid, "trainer", t0, mitigation="fail_stop")
            self.fault()
            return
        yield self.env.timeout(spec.duration)
        if self._slow == fid:
            self._slow = None
            trainer.slowdown = 1.0
        self.ledger.recovered(fid, "trainer", t0, mitigation="none")

    # ------------------------------------------------------------------ StepHooks
    def run_steps(self, steps: int, one_step: StepBody,
                  start: StepBody | None = None) -> Generator[simpy.Event, Any, None]:
        """Run `start(0)` (a policy's pipeline fill, if any), then steps 0..steps-1, with
        trainer checkpoints every `checkpoint_every` steps; a job fault abandons the step
        in flight (or the fill, or the checkpoint being written), and after detection and
        a restart the job goes on with `start(k)` and step k, k the step after its last
        checkpoint. Without checkpoints or faults that restart anything, the steps run as
        `PlainSteps` runs them."""
        ledger = self.ledger
        if not self.restarts_job:
            if start is not None:
                yield from start(0)
            for step in range(steps):
                yield from one_step(step)
                ledger.stepped()
            return
        cfg = self.cfg.trainer
        env = self.env
        step = kept = 0
        since = 0.0  # where the work a fault would lose began: a checkpoint's or restart's end
        fill = start  # the pipeline's fill, still to run before `step`
        while step < steps:
            self._step_now = step
            proc = env.process(self._step(one_step if fill is None else fill, step))
            fault = self._job_fault
            yield proc | fault
            if not fault.triggered:
                if fill is not None:
                    fill = None
                    continue
                step += 1
                ledger.stepped()
                if not (cfg.checkpoint_every and step % cfg.checkpoint_every == 0
                        and step < steps):
                    continue
                t0 = env.now
                yield self._write_checkpoint() | fault
                if not fault.triggered:
                    self.rec.span(CONTROLLER, "checkpoint", t0, env.now, step=step - 1)
                    kept, since = step, env.now
                    continue
            elif proc.is_alive:
                proc.interrupt("job restart")
            yield from self._restart_job(fault, step, kept, since)
            step, since = kept, env.now
            self._resumed_at = kept
            fill = start

    def guard(self, body: Work[_R]) -> Work[_R]:
        """A job restart stops `body` at its next event (nothing more of it runs; it
        returns None): a phase, or a side process of a step."""
        if not self.restarts_job:
            return body
        return self._until_restart(body, self.job.epoch)

    def _until_restart(self, body: Work[_R], epoch: int) -> Work[_R]:
        job = self.job
        try:
            event = next(body)
            while True:
                try:
                    value = yield event
                except simpy.Interrupt as err:
                    event = body.throw(err)
                    continue
                if epoch != job.epoch:
                    body.close()
                    return cast(_R, None)
                event = body.send(value)
        except StopIteration as stop:
            return cast(_R, stop.value)

    def trainer_work(self, work: Callable[[], Work[_R]]) -> Work[_R]:
        """The trainer's work `work()`; with scope role, held while the trainer restarts
        and run again when a trainer fault killed (or cut) it."""
        if not self.role:
            return work()
        return self._trainer_work(work)

    def _trainer_work(self, work: Callable[[], Work[_R]]) -> Work[_R]:
        while True:
            back = self._trainer_back
            if back is not None:
                yield back
            gen, t0 = self._trainer_gen, self.env.now
            result = yield from work()
            if gen == self._trainer_gen:
                return result
            # a restart voided it: what ran of it before the fault is lost work
            self._trainer_lost_s += max(0.0, self._trainer_fault_t - t0)

    # ------------------------------------------------------------------ restarts
    def _write_checkpoint(self) -> simpy.Event:
        """One trainer checkpoint write (blocking the step loop); trainer work of its own
        when the trainer may restart alone."""
        if not self.role:
            return self.env.timeout(self.checkpoint_write_s)
        return self.env.process(self._trainer_work(
            lambda: _wait(self.env.timeout(self.checkpoint_write_s))))

    def _restart_trainer(self, extra_s: float = 0.0, node: int | None = None) -> None:
        """RobustRL's trainer recovery: the trainer's processes die now (the pass in
        flight is lost), and after detection, `extra_s` (a node fault's wait) and
        `role_restart_s` it is back at its checkpoint of the last step; the rollouts go on
        meanwhile."""
        env = self.env
        t0 = env.now
        attrs: dict[str, Any] = {} if node is None else {"node": node, "node_wait_s": extra_s}
        fid = self.ledger.fault("trainer", 0, scope="role", **attrs)
        self._trainer_gen += 1
        self._trainer_fault_t = t0
        self._trainer_back = env.event()
        self._role_step = self._step_now
        self.cluster.trainer.kill()
        env.process(self._trainer_restarted(fid, t0, self.ledger.epoch, extra_s))

    def _trainer_restarted(self, fid: int, t0: float, epoch: int,
                           extra_s: float) -> Generator[simpy.Event, Any, None]:
        yield self.env.timeout(self.cfg.trainer.detect_s + extra_s + self.role_restart_s)
        if epoch != self.ledger.epoch:
            return  # the job restarted meanwhile (which closed this fault)
        back, self._trainer_back = self._trainer_back, None
        assert back is not None
        back.succeed()
        self.rec.span(CONTROLLER, "recovery", t0, self.env.now, step=self._role_step,
                      scope="role")
        lost, self._trainer_lost_s = self._trainer_lost_s, 0.0
        self.ledger.recovered(fid, "trainer", t0, scope="role", lost_work_s=lost,
                              gpus=self.train_gpus)

    def _restart_job(self, fault: simpy.Event, step: int, kept: int,
                     since: float) -> Generator[simpy.Event, Any, None]:
        """Kill the job, wait for detection and a restart, and record what was lost."""
        env = self.env
        fid, t0, extra_s = cast(tuple[int, float, float], fault.value)
        self._job_fault = env.event()
        self.ledger.restarting = True
        self.job.restart()  # every attempt still open is void: the epoch moves on
        back, self._trainer_back = self._trainer_back, None
        if back is not None:  # trainer work waiting for a trainer restart: void too
            back.succeed()
        self._role_step = -1
        self._trainer_lost_s = 0.0
        dropped = self._kill_job()
        self.rec.instant(CONTROLLER, "rollback", env.now, from_step=step, to_step=kept,
                         lost_s=t0 - since)
        yield env.timeout(self.cfg.trainer.detect_s + extra_s + self.job_restart_s)
        for engine in self.cluster.engines:
            engine.restart()
        self.ledger.restarting = False
        self.rec.span(CONTROLLER, "recovery", t0, env.now, step=step)
        gpus = self.rollout_gpus + (0 if self.cluster.placement.colocated else self.train_gpus)
        self.ledger.recovered(fid, "trainer", t0, lost_work_s=t0 - since, gpus=gpus,
                              rolled_back_steps=step - kept, dropped_requests=dropped)
        self.ledger.close_by_restart()

    @staticmethod
    def _step(one_step: StepBody, step: int) -> Generator[simpy.Event, Any, None]:
        try:
            yield from one_step(step)
        except simpy.Interrupt:
            return

    def _kill_job(self) -> int:
        """Every process of the job dies: engines lose their requests (the step that owned
        them is void), the trainer stops; returns the requests dropped."""
        dropped = 0
        for engine in self.cluster.engines:  # a down engine drops what waited for it too
            dropped += len(engine.crash())
        self.cluster.trainer.kill()
        return dropped
