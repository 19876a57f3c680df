"""What every component's recovery shares: the fault records, the stall bound, the epoch.

`Ledger` is written by each component module (engines, environments, trainer and job,
link) and read by the coordinator (`recovery.coordinator`); it imports none of them, so
they can all import it.

- **Records.** `fault` opens a fault (a `fault` instant on the `faults` track, with an id)
  and `recovered` closes it with what it cost (a `recovered` instant), so nothing is
  dropped silently; a job restart closes every fail-stop fault still open
  (`close_by_restart`: what they hit is void). A fail-slow fault stays open until its own
  slowdown ends.
- **The stall bound** (`faults.bounds`, docs/faults.md "Bounds"): when no step has finished
  for `FaultEstimate.stall_s` of simulated time, the next fault drawn (`drawn`) stops the
  run with a `ScenarioError` naming the spec that drew the most. It is checked on the fault
  path only (a comparison per fault drawn), so a run pays nothing for it between faults,
  and it adds no event to the simulation.
- **The job's state that gates recovery**: its epoch (work of an older epoch is void) and
  whether a job restart is under way (a fault then changes nothing).
"""

from __future__ import annotations

import math
from typing import Any

from rlsim.config.errors import ScenarioError
from rlsim.config.limits import format_duration
from rlsim.entities.cluster import Cluster
from rlsim.entities.rollout import RolloutJob
from rlsim.faults.bounds import STALL_STEPS, FaultEstimate

TRACK = "faults"


class Ledger:
    """The fault records of one run, its stall bound and the job's epoch."""

    def __init__(self, cluster: Cluster, job: RolloutJob,
                 bounds: FaultEstimate | None = None) -> None:
        self.env = cluster.env
        self.rec = cluster.recorder
        self.faults = cluster.scenario.faults
        self.job = job
        self.restarting = False  # a job restart is under way (`trainer.TrainerRecovery`)
        self._ids = 0
        self._open: dict[int, tuple[str, str, float]] = {}  # open faults: kind, mode, t
        # the stall bound: no step finished for stall_s stops the run at the next fault drawn
        self.stall_s = bounds.stall_s if bounds is not None else math.inf
        self._factor = bounds.slow_factor if bounds is not None else 1.0
        self._stepped = 0.0  # when the last step finished (or the run started)
        self._drawn: dict[str, int] = {}  # faults drawn per spec field, since the start
        # the fault drawn last (numbered from 1): every component it takes down records it
        # as its `cause`, so one GPU fault of a colocated job (engine and trainer) counts once
        self._cause = 0

    @property
    def epoch(self) -> int:
        """Moves on at every job restart (`RolloutJob.restart`, which only recovery calls):
        work of an older epoch is void."""
        return self.job.epoch

    # ------------------------------------------------------------------ records
    def fault(self, kind: str, target: int | str, mode: str = "stop", **attrs: Any) -> int:
        """Record a fault; returns its id for the record that closes it."""
        self._ids += 1
        self.rec.instant(TRACK, "fault", self.env.now, id=self._ids, kind=kind,
                         target=str(target), mode=mode, cause=self._cause, **attrs)
        self._open[self._ids] = (kind, mode, self.env.now)
        return self._ids

    def recovered(self, fid: int, kind: str, since: float, **attrs: Any) -> None:
        """Close fault `fid`: the component (or trajectory) is back where the fault found
        it, `recovery_s` after the fault."""
        if self._open.pop(fid, None) is None:
            return  # already closed (by a job restart)
        self.rec.instant(TRACK, "recovered", self.env.now, id=fid, kind=kind,
                         recovery_s=self.env.now - since, **attrs)

    def close_by_restart(self) -> None:
        """A job restart recovers every fail-stop fault still open: what they hit is void."""
        for fid, (kind, mode, t0) in sorted(self._open.items()):
            if mode == "stop":
                self.recovered(fid, kind, t0, by="job_restart")

    # ------------------------------------------------------------------ stall bound
    def drawn(self, field: str) -> None:
        """A fault of the spec at `field` was drawn now: count it, and stop the run if no
        step has finished within the stall bound (docs/faults.md, "Bounds")."""
        self._drawn[field] = self._drawn.get(field, 0) + 1
        self._cause += 1
        if self.env.now - self._stepped > self.stall_s:
            raise self._stalled()

    def stepped(self) -> None:
        """A step finished: the stall bound is at least STALL_STEPS of this one."""
        now = self.env.now
        self.stall_s = max(self.stall_s, STALL_STEPS * self._factor * (now - self._stepped))
        self._stepped = now

    def _stalled(self) -> ScenarioError:
        field = max(self._drawn, key=lambda k: self._drawn[k])
        what = field.rsplit(".", 1)[1]
        fix = {"mtbf": "raise its MTBF", "probability": "lower its probability",
               "times": "spread its times out"}[what]
        if self.faults.scale != 1.0 and what != "times":
            fix += " or lower faults.scale"
        return ScenarioError(field, (
            f"no step finished in {format_duration(self.env.now - self._stepped)} of "
            f"simulated time ({self._ids:,} faults so far, {self._drawn[field]:,} drawn from "
            f"this spec): faults come faster than a step can finish between them; {fix} "
            f"(the stall bound is {format_duration(self.stall_s)}: docs/faults.md, 'Bounds')"))
