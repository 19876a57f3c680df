"""Running a set of draws on the sweep runner, and reading what it answers.

Owns `run_draws`: a `DrawSpec` through `rlsim.sweep.run_sweep` (local process pool or
Ray; each finished run journaled as a Parquet part in `out`, or in a temporary folder
removed afterwards when no `out` is given; `resume` runs only the missing ones), then
`collect` over the finished rows. Because each row depends only on its scenario and
point, and the documents are computed from the rows in point order, the answer is the
same whatever the executor, the number of workers or the interruptions.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from rlsim.draws.spec import DrawSpec
from rlsim.draws.summary import Collected, collect
from rlsim.sweep.runner import Progress, SweepOutcome, run_sweep
from rlsim.sweep.spec import PointContext


@dataclass(frozen=True)
class DrawsOutcome:
    """The draws' rows as `Collected`, and how the run of them ended."""

    collected: Collected
    sweep: SweepOutcome


def run_draws(spec: DrawSpec, ctx: PointContext, out: Path | None = None, *,
              executor: str = "local", jobs: int | None = None, address: str | None = None,
              resume: bool = False, progress: Progress | None = None,
              allow_large: bool = False) -> DrawsOutcome:
    """Run (or resume) the draws; see the module docstring."""
    if out is None:
        with tempfile.TemporaryDirectory(prefix="rlsim-draws-") as tmp:
            return run_draws(spec, ctx, Path(tmp) / "draws", executor=executor, jobs=jobs,
                             address=address, progress=progress, allow_large=allow_large)
    outcome = run_sweep(spec, ctx, out, executor=executor, jobs=jobs, address=address,
                        resume=resume, progress=progress, max_points=max(spec.n_points, 1),
                        allow_large=allow_large)
    crashed = {f.point: f.why for f in outcome.crashed}
    return DrawsOutcome(collect(spec, ctx, outcome.table, crashed), outcome)
