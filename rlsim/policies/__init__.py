"""Scheduling policies: one file each, registered in `registry`; they order and overlap the
phases in `phases`. Importing the package registers every policy shipped with rlsim."""

from __future__ import annotations

# Each module registers its policy when imported (its last line).
from rlsim.policies import asynchronous, one_off, sync, tail_batching  # noqa: F401
from rlsim.policies.phases import Phases
from rlsim.policies.registry import (
    Knob,
    PolicyCaps,
    PolicyFn,
    PolicySpec,
    get,
    register,
    specs,
    unregister,
)

__all__ = ["Knob", "Phases", "PolicyCaps", "PolicyFn", "PolicySpec", "get", "register",
           "specs", "unregister"]
