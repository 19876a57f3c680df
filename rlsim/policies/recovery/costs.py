"""What a job's checkpoints and restarts cost, from the recovery config or its defaults.

Shared by the detailed simulation's recoveries (`trainer`, `engines`) and the job-level
horizon (`rlsim.horizon`), so both price a restart alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlsim.config.faults import RecoveryConfig
from rlsim.cost.inference import InferenceCost
from rlsim.cost.training import TrainCost


@dataclass(frozen=True)
class RestartCosts:
    """What the trainer's checkpoints and restarts cost a job (seconds)."""

    checkpoint_write_s: float  # one blocking checkpoint write
    job_restart_s: float       # the whole job back after a fault is noticed
    role_restart_s: float      # the trainer alone back (scope role)


def checkpoint_bytes(train_cost: TrainCost) -> float:
    """What one trainer checkpoint holds: every parameter once with its optimizer state
    (the backend's bytes per parameter; gradients are not saved), however many
    data-parallel replicas hold them; without a backend, the profile's trainer state per
    parameter."""
    b = train_cost.backend
    per_param = (b.param_bytes + b.optimizer_bytes if b is not None
                 else train_cost.profile.train_state_bytes_per_param)
    return train_cost.model.params * per_param


def restart_costs(train_cost: TrainCost, train_gpus: int, cfg: RecoveryConfig,
                  cold_start_s: float) -> RestartCosts:
    """The recovery config's costs, or their defaults: the checkpoint (`checkpoint_bytes`)
    over the storage bandwidth for a write or a read, plus an engine cold start for a
    job restart."""
    tcfg = cfg.trainer
    io_s = checkpoint_bytes(train_cost) / tcfg.storage_bandwidth
    return RestartCosts(
        tcfg.checkpoint_write_s if tcfg.checkpoint_write_s is not None else io_s,
        tcfg.restart_s if tcfg.restart_s is not None else io_s + cold_start_s,
        cfg.role_restart_s if cfg.role_restart_s is not None else io_s)


def engine_cold_start_s(engine_cost: InferenceCost, cfg: RecoveryConfig) -> float:
    """A rollout engine's full start: the recovery config's, or the cost model's."""
    given = cfg.engine.cold_start_s
    return given if given is not None else engine_cost.cold_start_s()
