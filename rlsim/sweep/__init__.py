"""Parameter sweeps: one scenario over a grid (and random points) of field values.

`rlsim sweep SCENARIO --grid key=v1,v2 ... [--random N --range key=lo:hi ...] [--reps R]
--out DIR` runs every point through `rlsim.api.simulate` in parallel and streams one row per
point into a Parquet dataset that an interrupted sweep resumes (docs/sweeps.md).

Modules, one job each:
- `spec`: options -> `SweepSpec` -> `Point`s in a stable order, each with its seed
  (replicate 0: the scenario's seed; r > 0: SeedSequence([seed, r]); common random numbers
  across the points of a replicate).
- `worker`: one point -> one row (validate, simulate, flatten the summary).
- `store`: DIR/sweep.json and DIR/results/part-NNNNNN.parquet, one file per point, each
  renamed into place by the single writer; read with
  `pyarrow.parquet.read_table(DIR / "results")`.
- `executors`: a local process pool (fork on Linux; workers die with the main process) or
  Ray tasks; a point that raises is yielded as a failure, the others go on.
- `runner`: `run_sweep`: check (options, size limits), open the store, run what is left,
  stop cleanly on Ctrl-C, write DIR/status.json (complete or partial).
- `display`: progress with an ETA (time-based), the closing summary (best per metric, ties
  as ties, fault sweeps by goodput) and the failed points, on stderr.
"""

from rlsim.sweep.executors import EXECUTORS, check_executor
from rlsim.sweep.runner import SweepOutcome, run_sweep
from rlsim.sweep.spec import Point, PointContext, SweepSpec, build_spec, replicate_seed
from rlsim.sweep.store import read_results

__all__ = ["EXECUTORS", "Point", "PointContext", "SweepOutcome", "SweepSpec", "build_spec",
           "check_executor", "read_results", "replicate_seed", "run_sweep"]
