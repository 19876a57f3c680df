"""One sweep point, run where a worker runs it: validate, simulate, flatten to a row.

Owns the row a point becomes: `point`, `replicate`, `seed`, one column per swept key,
`error` (None, or the one-line ScenarioError of an invalid point, whose metrics are then
absent), and the run summary flattened to dotted numeric columns (`step_time_s.mean`,
`gpu_util.cluster`, ...). Wall-clock figures (`wall_s`) and non-numeric leaves are left
out so that a row depends only on the scenario and the point: the same spec gives the same
rows on any executor. A metric whose name is also a swept key (`steps`) is left out too:
the key's column already holds it.

Workers get the `PointContext` once (the scenario mapping as read from its file) and then
only small `Point`s, so a point costs one validation (~1 ms) plus its simulation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.prepare import PreparedJob, prepare
from rlsim.sweep.spec import ERROR_COLUMN, Point, PointContext

# Summary leaves that measure this machine rather than the simulated cluster.
WALL_CLOCK = frozenset({"wall_s"})


@dataclass(frozen=True)
class PointResult:
    """A finished point: its row and the seconds it took (for the progress ETA only).

    `failure` is set (one line) when the point raised an internal error rather than a
    ScenarioError: such a point is not stored (so `--resume` runs it again once fixed),
    and the sweep goes on with the others and then exits 1 listing it.
    """

    row: dict[str, Any]
    seconds: float
    failure: str | None = None


def validate(ctx: PointContext, point: Point) -> PreparedJob:
    """The point's job (its overrides applied) through the prepare step every run goes
    through (rlsim/prepare.py; the run-size limits are the sweep's own, `check_size`), or
    the ScenarioError that stops it."""
    data, base_dir, source = ctx.scenario_of(point.plan)
    scenario, base = scenario_from_dict(data, list(point.overrides), base_dir, source)
    return prepare(scenario, base)


def error_line(err: ScenarioError) -> str:
    """The error as one line, without the scenario path (the same for every point)."""
    return ScenarioError(err.field, err.message).line().replace("\n", " ")


def failure_line(err: BaseException) -> str:
    """An internal error as one line: its type and the first line of its message."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def run_point(ctx: PointContext, point: Point) -> PointResult:
    """Simulate one point; an invalid point becomes a row with `error` set, a point that
    raises anything else a result with `failure` set."""
    t0 = time.perf_counter()
    row: dict[str, Any] = {"point": point.id, "replicate": point.replicate, "seed": point.seed}
    row.update(zip(ctx.keys, point.values, strict=True))
    row[ERROR_COLUMN] = None
    try:
        job = validate(ctx, point)
        if job.scenario.horizon is not None:
            from rlsim.horizon import simulate_horizon

            summary = simulate_horizon(job).summary
        else:
            summary = simulate(job).summary
    except ScenarioError as err:
        row[ERROR_COLUMN] = error_line(err)
    except Exception as err:  # a bug or a resource limit: report it, keep the sweep going
        return PointResult(row, time.perf_counter() - t0, failure_line(err))
    else:
        taken = set(row)
        row.update((k, v) for k, v in flatten_metrics(summary).items() if k not in taken)
    return PointResult(row, time.perf_counter() - t0)


def flatten_metrics(summary: dict[str, Any]) -> dict[str, int | float]:
    """Numeric leaves as dotted names; ints stay ints, floats stay floats (bools dropped)."""
    out: dict[str, int | float] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}{key}.", value)
            return
        name = prefix[:-1]
        if name in WALL_CLOCK or isinstance(node, bool | np.bool_):
            return
        if isinstance(node, int | np.integer):
            out[name] = int(node)
        elif isinstance(node, float | np.floating):
            out[name] = float(node)

    walk("", summary)
    return out
