"""The job-level fault process over a job's whole span (`horizon:`), and its closed forms.

SimPy-free. Owns `JobModel` (what the detailed simulation measured, `rlsim.horizon`: the
steady step times, the first step's extra time after a (re)start, the checkpoint write, and
per class of fault its rate and what one costs), `run_job`, which draws one replicate of
the fault process over the span and returns what the job did (`JobRun`), and the closed
forms it is checked against (`young_interval_s`, `daly_interval_s`, `renewal_ettr`).

The process (docs/faults.md, "Horizon"):
- The job runs steps back to back, each a draw from the steady steps (a bootstrap from the
  detailed run, on the replicate's own stream), and writes a checkpoint (blocking,
  `checkpoint_write_s`) after every `checkpoint_every`-th step, except after the last of
  a step-count horizon. The first step after a (re)start takes `first_step_extra_s` more
  (a pipeline's fill, cold caches: the detailed run's first step over its steady mean).
- Faults of each class arrive as a Poisson process (its instances over their MTBF).
  A restarting class (a fault that restarts the job: the trainer's, a training GPU's or
  node's, any GPU's or node's when colocated) loses the work since the last checkpoint
  write ended, and the job is down for `down_s` (detection, a hang's timeout, the
  restart) plus, for a node, the wait for a replacement (`SparePool`); it resumes at that
  checkpoint. A penalty class (the job goes on: a rollout node's engines, a slow node, the
  trainer restarted alone) delays the job by a cost drawn from `penalties_s`, the costs the
  detailed simulation measured with one such fault at different points of a step.
- As in the detailed simulation, a fault that arrives while the job is down changes
  nothing (what it hits restarts with the job). Penalty costs are taken as additive: two
  penalty faults within one measured window are not modelled together.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rlsim.config.faults import NodeRecoveryConfig
from rlsim.faults.spares import SparePool


@dataclass(frozen=True)
class FaultClass:
    """Faults that cost the job alike: a spec's instances that restart the job, or those
    that delay it."""

    name: str                  # e.g. "faults.node.0 (training nodes)"
    rate_per_s: float          # all its instances together
    restarts: bool             # restarts the job from its last checkpoint
    down_s: float = 0.0        # restarting: detection (or a hang's timeout) + restart
    node: bool = False         # restarting: waits for a replacement node
    penalties_s: tuple[float, ...] = ()  # penalty: measured delays, drawn uniformly


@dataclass(frozen=True)
class JobModel:
    """A job as the horizon runs it (seconds)."""

    step_s: tuple[float, ...]      # steady step times (inter-completion), bootstrapped
    first_step_extra_s: float      # a (re)start's first step over a steady one
    checkpoint_every: int | None   # steps between checkpoints; None: none
    checkpoint_write_s: float
    classes: tuple[FaultClass, ...]
    node_recovery: NodeRecoveryConfig = field(default_factory=NodeRecoveryConfig)

    @property
    def mean_step_s(self) -> float:
        return float(np.mean(self.step_s))

    @property
    def restart_rate_per_s(self) -> float:
        return sum(c.rate_per_s for c in self.classes if c.restarts)


@dataclass
class JobRun:
    """What one replicate of the job did."""

    wall_s: float = 0.0          # the span, or how long the steps took
    steps: int = 0               # steps trained (checkpointed or not, at the end)
    restarts: int = 0            # faults that restarted the job
    penalties: int = 0           # faults that delayed it
    ignored: int = 0             # faults while the job was down
    lost_work_s: float = 0.0     # work voided by restarts (since the last checkpoint)
    down_s: float = 0.0          # detection, node waits and restarts
    node_wait_s: float = 0.0     # of it, waiting for replacement nodes
    penalty_s: float = 0.0       # delays of penalty faults
    restart_extra_s: float = 0.0  # first steps after restarts, over a steady step
    checkpoint_s: float = 0.0    # checkpoint writes that completed


class _Attempt:
    """The job running from checkpoint `k` (steps from the start of the step stream),
    started at `base` with `over` seconds of overhead before its first step counts.
    Relative step m (1-based) ends at base + over + S[k+m] - S[k] + ((m-1) // c) writes."""

    def __init__(self, cum: np.ndarray, every: int | None, write_s: float, limit: int,
                 final_write: bool) -> None:
        self.cum, self.c, self.w = cum, every, write_s
        self.limit = limit           # steps in the stream (or the horizon's step count)
        self.final_write = final_write  # a checkpoint after the last step of the stream
        self.k, self.base, self.over = 0, 0.0, 0.0

    def step_end(self, m: int) -> float:
        writes = (m - 1) // self.c if self.c and m > 0 else 0
        return self.base + self.over + float(self.cum[self.k + m] - self.cum[self.k]) \
            + writes * self.w

    def checkpoint_end(self, j: int) -> float:
        assert self.c is not None
        return self.step_end(j * self.c) + self.w

    def steps_by(self, t: float) -> int:
        """Relative steps finished by time t."""
        return _last_by(self.step_end, self.limit - self.k, t)

    def checkpoints_by(self, t: float) -> int:
        """Checkpoints written by time t (none after the last step of a step horizon)."""
        if not self.c:
            return 0
        most = (self.limit - self.k) // self.c
        if not self.final_write and most * self.c == self.limit - self.k:
            most -= 1
        return _last_by(self.checkpoint_end, max(0, most), t)


def _last_by(end: Callable[[int], float], most: int, t: float) -> int:
    """The largest n in [0, most] with end(n) <= t (`end` increasing; end(0) counts as
    met): a bisection."""
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if end(mid) <= t:
            lo = mid
        else:
            hi = mid - 1
    return lo


def run_job(model: JobModel, rng: np.random.Generator, span_s: float | None = None,
            steps: int | None = None) -> JobRun:
    """One replicate: the job over `span_s` seconds, or until it has trained `steps`."""
    assert (span_s is None) != (steps is None)
    out = JobRun()
    step_s = np.asarray(model.step_s, dtype=float)
    if steps is not None:
        n = steps
    else:
        assert span_s is not None
        n = int(span_s / max(float(step_s.min()), 1e-9)) + 2
    cum = np.concatenate(([0.0], np.cumsum(rng.choice(step_s, size=n))))
    job = _Attempt(cum, model.checkpoint_every, model.checkpoint_write_s, n,
                   final_write=steps is None)
    job.over = model.first_step_extra_s
    classes = [c for c in model.classes if c.rate_per_s > 0]
    rates = np.asarray([c.rate_per_s for c in classes])
    total = float(rates.sum())
    pick = rates / total if total > 0 else rates
    spares = SparePool(model.node_recovery)
    up_at = 0.0  # the job is down until then
    t_fault = 0.0
    while True:
        t_fault += float(rng.exponential(1.0 / total)) if total > 0 else math.inf
        if steps is not None:
            finish = job.step_end(steps - job.k)
            if finish <= t_fault:
                out.wall_s, out.steps = finish, steps
                out.checkpoint_s += job.checkpoints_by(finish) * job.w
                break
        elif t_fault >= span_s:  # type: ignore[operator]
            done = job.steps_by(span_s)  # type: ignore[arg-type]
            out.wall_s, out.steps = float(span_s), job.k + done  # type: ignore[arg-type]
            out.checkpoint_s += job.checkpoints_by(span_s) * job.w  # type: ignore[arg-type]
            break
        # drawn for every fault, so that runs differing only in checkpoints or restarts
        # see the same faults (common random numbers)
        cls = classes[int(rng.choice(len(classes), p=pick))]
        draw = float(rng.random())
        if t_fault < up_at:
            out.ignored += 1
            continue
        j = job.checkpoints_by(t_fault)
        if j:  # rebase on the last checkpoint written: what a fault rolls back to
            base = job.checkpoint_end(j)
            out.checkpoint_s += j * job.w
            job.k += j * (job.c or 0)
            job.base, job.over = base, 0.0
        if cls.restarts:
            out.restarts += 1
            out.lost_work_s += t_fault - job.base
            wait = spares.take(t_fault) if cls.node else 0.0
            out.node_wait_s += wait
            out.down_s += cls.down_s + wait
            up_at = t_fault + cls.down_s + wait
            job.base, job.over = up_at, model.first_step_extra_s
            out.restart_extra_s += model.first_step_extra_s
        else:
            out.penalties += 1
            delay = (float(cls.penalties_s[int(draw * len(cls.penalties_s))])
                     if cls.penalties_s else 0.0)
            out.penalty_s += delay
            job.over += delay
    return out


# ---------------------------------------------------------------------- closed forms

def young_interval_s(write_s: float, mtbf_s: float) -> float:
    """Young's checkpoint interval, sqrt(2 x write x MTBF) (work between checkpoints)."""
    return math.sqrt(2.0 * write_s * mtbf_s)


def daly_interval_s(write_s: float, mtbf_s: float) -> float:
    """Daly's higher-order interval (Daly 2006, eq. 37): for write < 2 MTBF,
    sqrt(2 d M) [1 + (d / 2M)^1/2 / 3 + (d / 2M) / 9] - d; else M."""
    if write_s >= 2.0 * mtbf_s:
        return mtbf_s
    x = write_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * write_s * mtbf_s) * (1 + math.sqrt(x) / 3 + x / 9) - write_s


def renewal_ettr(work_s: float, write_s: float, down_s: float, mtbf_s: float) -> float:
    """The expected share of wall time spent on kept work, from the exact renewal argument
    (Daly 2006) for exponential faults: a segment of `work_s` plus its write takes
    (M + R)(e^((work + write)/M) - 1) in expectation. Daly's R term is M e^(R/M) - M,
    with faults during the restart restarting it; here, as in the detailed simulation,
    a fault during the restart changes nothing, which makes it R."""
    return work_s / ((mtbf_s + down_s) * math.expm1((work_s + write_s) / mtbf_s))
