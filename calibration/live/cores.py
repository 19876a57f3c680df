"""Which CPU core each process of the live job runs on, and pinning to it.

The live job stands for a cluster: the trainer process is the training GPUs, the rollout
process the rollout GPUs, and the environment and reward workers the CPU hosts beside them.
Left to the scheduler on a shared machine, the processes migrate between cores and queue
behind each other and behind neighbours, so one run's phases differ from the next run's by
more than the simulator's error. `Placement` gives each role its own core (`os.sched_setaffinity`),
and the calibration times the engine on the rollout core and the trainer on the trainer core,
so what the profile measured is what the job runs on.

The helpers (environment and reward workers, and the `cat` commands they run) stand for the
CPU hosts of a cluster, which never slow a GPU. With three or more cores they get the cores
left over. With two there is no core to spare: they may run on both, but only on CPU time
the trainer and the engine leave idle (`SCHED_IDLE`), so the two "devices" run as they would
alone and what the helpers' CPU costs the job shows up as environment latency (measured from
the rollout process's request to the worker's answer, `envpool.EnvWorkers`), which the
recorded rollouts carry and the simulator replays. Left on the trainer's core at normal
priority they took 30-40 ms of its CPU per step in one_off and async (~1 ms per `cat`, a few
tens of commands per step), a slowdown of the trainer the simulator cannot know about.

Pinning is per thread on Linux: a process pins its calling thread and every thread and
child it starts afterwards inherits that set, so a process spawned inside `pinned(cores)`
runs on `cores` from its first instruction.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    """The core(s) of each role of the live job."""

    trainer: frozenset[int]
    rollout: frozenset[int]
    helpers: frozenset[int]
    helpers_idle: bool = False  # the helpers share the devices' cores: idle priority

    def describe(self) -> str:
        def cores(s: frozenset[int]) -> str:
            return ",".join(str(c) for c in sorted(s))

        return (f"trainer on core {cores(self.trainer)}, rollout engine on core "
                f"{cores(self.rollout)}, environment and reward workers on core(s) "
                f"{cores(self.helpers)}"
                + (" in the time the others leave idle (SCHED_IDLE)" if self.helpers_idle
                   else ""))


def can_pin() -> bool:
    return hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")


def placement(available: set[int] | None = None) -> Placement | None:
    """The placement on the cores this process may use (`available`, default its own
    affinity); None where pinning is unsupported or fewer than two cores are available
    (with one core every role shares it anyway)."""
    if available is None:
        if not can_pin():
            return None
        available = os.sched_getaffinity(0)
    cores = sorted(available)
    if len(cores) < 2:
        return None
    trainer, rollout, rest = cores[0], cores[1], cores[2:]
    if rest:
        return Placement(frozenset({trainer}), frozenset({rollout}), frozenset(rest))
    return Placement(frozenset({trainer}), frozenset({rollout}), frozenset({trainer, rollout}),
                     helpers_idle=True)


def become_helper(idle: bool) -> None:
    """Called first in a helper process: with `idle`, it (and what it starts) runs only on
    CPU time no other process wants (SCHED_IDLE, where the OS has it)."""
    if idle and hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_IDLE"):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def pin(cores: frozenset[int] | None) -> None:
    """Pin the calling thread (and what it starts from now on) to `cores`; None: no-op."""
    if cores is not None and can_pin():
        os.sched_setaffinity(0, cores)


@contextlib.contextmanager
def pinned(cores: frozenset[int] | None) -> Iterator[None]:
    """Run the block (and start processes in it) on `cores`, then restore the affinity."""
    if cores is None or not can_pin():
        yield
        return
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, saved)
