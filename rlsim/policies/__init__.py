"""Scheduling policies: one file each; they order and overlap the phases in `phases`."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy

from rlsim.policies.asynchronous import run_async
from rlsim.policies.one_off import run_one_off
from rlsim.policies.phases import Phases
from rlsim.policies.sync import run_sync
from rlsim.policies.tail_batching import run_tail_batching
from rlsim.workload import Workload

PolicyFn = Callable[[Phases, Workload], Generator[simpy.Event, Any, None]]

POLICIES: dict[str, tuple[PolicyFn, str]] = {
    "sync": (run_sync, "on-policy, phases in sequence; colocated (veRL) or disaggregated "
                       "(Solo-D)"),
    "one_off": (run_one_off, "one-step off-policy: train step k while step k+1 generates "
                             "(disaggregated)"),
    "tail_batching": (run_tail_batching, "RollPacker: over-provisioned short rounds, long "
                                         "rounds of the prompts they left unfinished"),
    "async": (run_async, "ROLL Flash: rollout runs up to alpha steps ahead of training "
                         "(disaggregated), per-sample queue scheduling, partial rollout"),
}

__all__ = ["POLICIES", "Phases", "PolicyFn"]
