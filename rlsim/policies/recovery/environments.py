"""Environments' recovery: the environment faults and checkpoints of multi-turn samples.

An environment step (an execution) fails part-way with the fault stream's chance
(`faults.env`); its sample comes back by the environment scheme (`recovery.env.scheme`): a
new container and the trajectory again from its first turn (`restart`), or the last
snapshot restored and the turns after it redone (`checkpoint`), snapshots taken by the
checkpoint policies of `faults.checkpoint`. `EnvRecovery` holds what the samples of a run
share (the costs of a snapshot and a restore, the LLM calls the adaptive policy looks back
on) and makes each multi-turn sample's fault hooks, a `TrajectoryFaults`, through the
job's factory (`RolloutJob.faults`), whatever policy launched the sample.
"""

from __future__ import annotations

from collections import deque

from rlsim.config.errors import ScenarioError
from rlsim.config.faults import RecoveryConfig
from rlsim.entities.cluster import Cluster
from rlsim.entities.rollout import Rollout
from rlsim.faults import env_exec_fault, take_checkpoint
from rlsim.faults.bounds import MAX_ATTEMPTS, FaultEstimate
from rlsim.policies.recovery.ledger import TRACK, Ledger

LLM_WINDOW = 256  # LLM call durations the adaptive checkpoint policy looks back on


class EnvRecovery:
    """What the environment faults of one run's samples share."""

    def __init__(self, cluster: Cluster, ledger: Ledger, cfg: RecoveryConfig,
                 bounds: FaultEstimate | None = None) -> None:
        self.cluster = cluster
        self.ledger = ledger
        self.env = cluster.env
        self.cfg = cfg.env
        self.seed = cluster.scenario.faults.stream_seed(cluster.scenario.seed)
        faults = cluster.scenario.faults
        profile = cluster.engine_cost.profile
        env_cfg = self.cfg
        self.checkpoint_s = (env_cfg.checkpoint_s if env_cfg.checkpoint_s is not None
                             else profile.sandbox_checkpoint_s(env_cfg.sandbox_bytes,
                                                               env_cfg.sandbox_files))
        self.restore_s = (env_cfg.restore_s if env_cfg.restore_s is not None
                          else profile.sandbox_restore_s(env_cfg.sandbox_bytes,
                                                         env_cfg.sandbox_files))
        self.llm_calls_s: deque[float] = deque(maxlen=LLM_WINDOW)
        self.specs = [x for x in (faults.scaled(f) for f in faults.env) if x is not None]
        # an environment fault is drawn from every env spec at once: credit the likeliest
        self.field = (bounds.driver("env") if bounds is not None else None) \
            or "faults.env.0.probability"

    def trajectory_faults(self, rollout: Rollout, key: tuple[int, int]) -> TrajectoryFaults:
        """The fault hooks of one multi-turn sample (`entities.rollout.FaultHooksFactory`)."""
        return TrajectoryFaults(self, rollout, key)


class TrajectoryFaults:
    """The environment faults and checkpoints of one multi-turn sample: the fault hooks of
    its `Rollout` (which owns its turns and context).

    Turn i runs on the sample's engine; then execution i (the environment step after it)
    on the env pool. An execution fails with the fault stream's chance; the sample then
    comes back by its environment scheme: a new container and every turn again (LLM turns
    included), or the last snapshot restored and the turns after it. Snapshots are taken
    at action boundaries (an execution has returned) while the next LLM call runs; the
    next execution waits for the snapshot to end. The LLM context and the environment
    always resume from the same turn (the rollout checks its context when it finishes).
    A new attempt of the sample (a policy restarted it: stale, reissued) starts from a
    fresh container, so its snapshots start over; an older attempt's executions lapse.
    Each run of an execution draws its own fault, over every attempt of the sample.
    """

    __slots__ = ("attempt", "attempts", "envs", "execs_since", "key", "open", "r",
                 "snapshot", "snapshot_ready", "work_since_s")

    def __init__(self, envs: EnvRecovery, rollout: Rollout, key: tuple[int, int]) -> None:
        self.envs = envs
        self.r = rollout
        self.key = key  # (step, place in the batch): its fault draws' key
        self.attempt = 0  # the sample's attempt the state below belongs to
        self.snapshot: int | None = None  # the turn the last snapshot resumes at
        self.snapshot_ready = 0.0  # when the snapshot in progress ends
        self.attempts: dict[int, int] = {}  # execution -> runs so far
        self.execs_since = 0
        self.work_since_s = 0.0
        self.open: list[tuple[int, int, float]] = []  # faults being recovered: (id, exec, t)

    def _current(self, rollout: Rollout) -> None:
        """A new attempt of the sample: a fresh container, no snapshot yet."""
        if rollout.attempt != self.attempt:
            self.attempt = rollout.attempt
            self.snapshot = None
            self.snapshot_ready = 0.0
            self.execs_since = 0
            self.work_since_s = 0.0

    # -------------------------------------------------------------- hooks
    def turn_done(self, rollout: Rollout, llm_s: float) -> None:
        self._current(rollout)
        self.envs.llm_calls_s.append(llm_s)
        self.work_since_s += llm_s

    def env_step(self, rollout: Rollout) -> None:
        self._current(rollout)
        env = self.envs.env
        now = env.now
        wait = self.snapshot_ready - now  # a snapshot still being taken holds the env
        if wait > 0:
            self.envs.ledger.rec.instant(TRACK, "checkpoint_wait", now, wait_s=wait)
            attempt = rollout.attempt
            env.timeout(wait).callbacks.append(lambda _e: self._execute(attempt))
        else:
            self._execute(rollout.attempt)

    # -------------------------------------------------------------- executions
    def _execute(self, attempt: int) -> None:
        r = self.r
        if attempt != r.attempt or not r.alive:
            return
        envs = self.envs
        i = r.turn
        now = envs.env.now
        still = []
        for fid, target, t0 in self.open:  # back where a fault struck: recovered
            if i >= target:
                envs.ledger.recovered(fid, "env", t0, execution=target)
            else:
                still.append((fid, target, t0))
        self.open = still
        runs = self.attempts.get(i, 0)
        if runs >= MAX_ATTEMPTS:
            raise ScenarioError(
                "faults.env", f"trajectory {self.key[1]} of step {self.key[0]} ran its "
                f"execution {i} {MAX_ATTEMPTS} times without getting past it; the failure "
                "probability is too high for its length (lower it, or recover from "
                "checkpoints)")
        self.attempts[i] = runs + 1
        assert r.turns is not None
        env_s = r.turns[i].env_s
        share = env_exec_fault(envs.specs, envs.seed, self.key[0], self.key[1], i, runs)
        pool = envs.cluster.env_pool
        if share is None:
            pool.run_then(env_s, self._executed, (attempt, env_s))
        else:
            pool.run_then(env_s * share, self._failed, (attempt, now, env_s * share))

    def _executed(self, job: tuple[int, float]) -> None:
        attempt, env_s = job
        r = self.r
        if attempt != r.attempt or not r.alive:
            return
        envs = self.envs
        self.work_since_s += env_s
        self.execs_since += 1
        cfg = envs.cfg
        if cfg.scheme == "checkpoint" and take_checkpoint(
                cfg.checkpoints, self.execs_since, self.work_since_s, envs.checkpoint_s,
                envs.llm_calls_s):
            now = envs.env.now
            self.snapshot = r.turn + 1
            self.snapshot_ready = now + envs.checkpoint_s
            self.execs_since = 0
            self.work_since_s = 0.0
            envs.ledger.rec.instant(TRACK, "checkpoint", now, duration_s=envs.checkpoint_s,
                                    turn=r.turn + 1)
        r.step_done()

    def _failed(self, job: tuple[int, float, float]) -> None:
        attempt, t_start, done_s = job
        r = self.r
        if attempt != r.attempt or not r.alive:
            return
        envs = self.envs
        i = r.turn
        assert r.turns is not None
        resume = (self.snapshot if self.snapshot is not None
                  and envs.cfg.scheme == "checkpoint" else 0)
        # the LLM turns from `resume` to i run again, and the executions between them
        lost_tokens = sum(t.response_tokens for t in r.turns[resume:i + 1])
        lost_env_s = sum(t.env_s for t in r.turns[resume:i]) + done_s
        envs.ledger.drawn(envs.field)
        fid = envs.ledger.fault("env", f"{self.key[0]}/{self.key[1]}", execution=i,
                                resume_turn=resume, lost_tokens=lost_tokens,
                                lost_env_s=lost_env_s)
        self.open.append((fid, i, t_start + done_s))
        self.snapshot_ready = 0.0
        self.execs_since = 0
        self.work_since_s = 0.0
        if resume == 0:
            self.snapshot = None
            restart = envs.cfg.restart_s if envs.cfg.restart_s is not None else r.reset_s
            r.rewind(0, restart)
        else:
            r.rewind(resume, envs.restore_s)
