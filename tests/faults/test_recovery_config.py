"""The recovery section's role-based option (`recovery.scope`, RobustRL)."""

from __future__ import annotations

import pytest

from rlsim.config.faults import RecoveryConfig


def test_the_whole_job_restart_is_the_default() -> None:
    cfg = RecoveryConfig()
    assert cfg.scope == "job" and cfg.role_restart_s is None


def test_role_recovery_restarts_the_trainer_from_a_checkpoint_of_every_step() -> None:
    cfg = RecoveryConfig.model_validate({"scope": "role", "role_restart_s": "173 s",
                                         "trainer": {"checkpoint_every": 1}})
    assert cfg.role_restart_s == 173.0
    for every in (None, 5):
        with pytest.raises(ValueError, match="checkpoint_every: 1"):
            RecoveryConfig.model_validate({"scope": "role",
                                           "trainer": {"checkpoint_every": every}})
