"""The policy registry: each policy's name bound to the function that runs it.

Owns `PolicySpec` (a policy's capabilities and its function) and `register`, `unregister`,
`get`, `specs`. A policy is one function `run(phases, workload)` (a SimPy process that
decides when to launch, which samples to keep, abort or drop, and when to train) plus one
`register(PolicySpec(caps, run))` call; docs/design.md, "Adding a policy", shows a toy.

The capabilities (`PolicyCaps`) live in `rlsim.config.policy_caps`, not here: scenario
validation and the reports read them, and neither may import the simulator (rlsim.config
is the lowest import layer; rlsim.report sits beside rlsim.policies). `register` declares a
plug-in's capabilities there and binds its function here; a policy shipped with rlsim
already has its row there, and its module's one `register` line binds it. `PolicyCaps`
and `Knob` are re-exported, so a plug-in imports all it needs from `rlsim.policies`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import simpy

from rlsim.config import policy_caps
from rlsim.config.policy_caps import Knob, PolicyCaps
from rlsim.policies.phases import Phases
from rlsim.workload import Workload

PolicyFn = Callable[[Phases, Workload], Generator[simpy.Event, Any, None]]
"""A policy: the controller process of one run over its phases and workload."""


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """A policy: what it supports (`caps`: name, doc, placements, off-policy, multi-turn,
    fault kinds, job restarts, fleets, search space) and the function that runs it."""

    caps: PolicyCaps
    run: PolicyFn

    @property
    def name(self) -> str:
        return self.caps.name

    @property
    def doc(self) -> str:
        return self.caps.doc


_bound: dict[str, PolicySpec] = {}


def register(spec: PolicySpec) -> None:
    """Make `spec.name` a policy that scenarios may name: its capabilities are checked when
    a scenario is loaded, its function runs the simulation. Once per name."""
    name = spec.name
    known = policy_caps.lookup(name)
    if known is not None and known is not spec.caps:
        raise ValueError(f"policy {name!r} is already registered with other capabilities "
                         "(rlsim list policies); pick another name")
    if name in _bound:
        raise ValueError(f"policy {name!r} is already registered")
    if known is None:
        policy_caps.declare(spec.caps)
    _bound[name] = spec


def unregister(name: str) -> None:
    """Undo `register` for a plug-in policy (a test's toy), capabilities included."""
    if any(c.name == name for c in policy_caps.BUILTIN):
        raise ValueError(f"policy {name!r} ships with rlsim and stays registered")
    del _bound[name]
    policy_caps.withdraw(name)


def get(name: str) -> PolicySpec:
    """The registered policy `name` (KeyError naming the registered ones if none)."""
    spec = _bound.get(name)
    if spec is None:
        raise KeyError(f"no registered policy {name!r}; registered: {', '.join(_bound)}")
    return spec


def specs() -> tuple[PolicySpec, ...]:
    """Every registered policy: the shipped ones in their documented order, then plug-ins
    in the order registered."""
    return tuple(_bound[c.name] for c in policy_caps.declared() if c.name in _bound)


__all__ = ["Knob", "PolicyCaps", "PolicyFn", "PolicySpec", "get", "register", "specs",
           "unregister"]
