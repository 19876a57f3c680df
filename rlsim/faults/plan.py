"""Fault times and draws from the run's fault streams.

A component instance's faults come from a stream keyed by its kind, the fault spec's index
and the instance, and an environment execution's from one keyed by the execution itself
(step, sample, turn, attempt): nothing a recovery scheme changes (how often a trajectory
is replayed, when an engine is back) moves another fault.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rlsim.config.faults import FaultSpec
from rlsim.config.streams import rng

KINDS = ("engine", "env", "trainer", "link", "gpu", "node")  # stream keys: append only


def fault_times(spec: FaultSpec, kind: str, spec_index: int, instance: int,
                seed: int) -> Iterator[float]:
    """Times (seconds from the start) at which `spec` hits `instance`, in order: its
    explicit times for this instance, or exponential gaps of mean `mtbf` (endless)."""
    if spec.times:
        ons = [spec.targets[i % len(spec.targets)] for i in range(len(spec.times))]
        yield from sorted(t for t, on in zip(spec.times, ons, strict=True) if on == instance)
        return
    assert spec.mtbf is not None  # FaultSpec allows mtbf or times for timed kinds
    gen = rng(seed, "faults", KINDS.index(kind), spec_index, instance)
    t = 0.0
    while True:
        t += float(gen.exponential(spec.mtbf))
        yield t


def env_exec_fault(specs: Sequence[FaultSpec], seed: int, step: int, sample: int, turn: int,
                   attempt: int) -> float | None:
    """Whether the `attempt`-th run of execution `turn` of sample `sample` of step `step`
    fails, as the share of the execution done when it does (None: it does not fail)."""
    first: float | None = None
    for i, spec in enumerate(specs):
        assert spec.probability is not None
        u, share = rng(seed, "faults-env", i, step, sample, turn, attempt).random(2)
        if u < spec.probability and (first is None or share < first):
            first = float(share)
    return first
