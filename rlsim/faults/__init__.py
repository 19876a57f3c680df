"""Fault injection: when components fail, and when environments are checkpointed.

SimPy-free and entity-free: `plan` draws fault times and environment-execution faults from
the run's own fault streams (so two runs that differ only in recovery schemes see the same
faults); `checkpoint` decides at an action boundary whether to snapshot an environment.
The mechanisms that act on the entities live in `rlsim.policies.recovery`.
"""

from rlsim.faults.checkpoint import take_checkpoint
from rlsim.faults.plan import KINDS, env_exec_fault, fault_times

__all__ = ["KINDS", "env_exec_fault", "fault_times", "take_checkpoint"]
