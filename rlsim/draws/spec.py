"""A set of draws as sweep points: what `rlsim run|compare|sweep --draws N` runs.

Owns `DrawSpec` (the plans, the grid, the drawn values) and `build_draw_spec`. The spec
is a `rlsim.sweep.spec.PointSpec`, so the draws go through the sweep runner: all local
cores or Ray tasks, one Parquet part per finished run (journaled), `--resume` running only
what is missing, progress with an ETA (docs/sweeps.md).

Points are grid settings (slowest) x draws x plans (fastest), one run each. A point runs
its plan's scenario with the plan's overrides, the grid setting, `unknowns={}` and the
draw's values (`draw_sets`), on the plan's own seed: every plan and grid setting sees the
same draws and the same seed (common random numbers), so a ratio's spread comes from the
unknowns and not from noise. The drawn values are stored in DIR/sweep.json, which
`--resume` compares field by field, so a resumed set of draws is the same set.
Columns: `point`, `replicate` (0), `seed`, `draw`, `plan`, the grid keys, the unknown
fields (the values each run set), `error`, then the metrics.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsim import __version__
from rlsim.config.contracts import stamped
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import file_sha256, load_scenario, named_file_digests
from rlsim.config.unknowns import Unknown, field_value
from rlsim.draws.design import (
    Dimension,
    design_dimensions,
    draw_sets,
    draw_values,
    sensitivity_design,
    touches,
)
from rlsim.sweep.spec import (
    ERROR_COLUMN,
    INDEX_COLUMNS,
    Axis,
    Point,
    PointContext,
    digits,
    make_axis,
    parse_grid,
    read_base,
)

MAX_RUNS = 10_000
"""Runs a set of draws may have (the sweep's default --max-points)."""
DRAW_COLUMNS = ("draw", "plan")
"""Index columns of a draw's row, after `point`, `replicate`, `seed`."""


@dataclass(frozen=True)
class Plan:
    """One variant every draw runs: a scenario file, its overrides and a label."""

    label: str
    scenario: Path        # resolved path
    sha256: str           # its content: resuming after an edit would mix results
    overrides: tuple[str, ...]
    seed: int             # the scenario's seed after the overrides
    files: dict[str, str] = field(default_factory=dict)
    """sha256 of each file the scenario names (`named_file_digests`): edited, the same."""


@dataclass(frozen=True)
class DrawSpec:
    """Everything that decides a set of draws' points and rows."""

    plans: tuple[Plan, ...]
    grid: tuple[Axis, ...]
    dims: tuple[Dimension, ...]           # every drawn dimension, sorted by key
    integer: frozenset[str]               # dimensions whose fields take whole numbers
    design: str                           # "lhs" or "saltelli"
    base: int                             # the Saltelli design's base rows (0: lhs)
    values: tuple[dict[str, float], ...]  # per draw: key -> value
    profile: bool                         # the framework profile's intervals are drawn
    sets: tuple[tuple[tuple[str, ...], ...], ...]  # per draw, per plan: its --set list

    random = 0  # PointSpec: every point is a setting of its own
    reps = 1

    @property
    def unknowns(self) -> dict[str, Unknown]:
        """Every drawn dimension's distribution, by key (sorted)."""
        return {d.key: d.unknown for d in self.dims}

    @property
    def fields(self) -> tuple[str, ...]:
        """The dimensions that set scenario fields (columns), not model errors."""
        return tuple(d.key for d in self.dims if d.fields)

    @property
    def keys(self) -> tuple[str, ...]:
        return (*DRAW_COLUMNS, *(a.key for a in self.grid), *self.fields)

    @property
    def settings(self) -> int:
        return math.prod(len(a.values) for a in self.grid)

    @property
    def n_points(self) -> int:
        return self.settings * len(self.values) * len(self.plans)

    def columns(self) -> list[tuple[str, str]]:
        return ([(c, "int64") for c in (*INDEX_COLUMNS, *DRAW_COLUMNS)]
                + [(a.key, a.dtype) for a in self.grid]
                + [(k, "int64" if k in self.integer else "float64") for k in self.fields]
                + [(ERROR_COLUMN, "string")])

    def to_json(self) -> dict[str, Any]:
        """DIR/sweep.json (kind "draws"): compared field by field on --resume."""
        return stamped("sweep", {
            "kind": "draws",
            "rlsim_version": __version__,
            # a plan's files only when it names some: a folder written before them resumes
            "plans": [{"label": p.label, "scenario": str(p.scenario), "sha256": p.sha256,
                       **({"files": p.files} if p.files else {}),
                       "overrides": list(p.overrides), "seed": p.seed} for p in self.plans],
            "grid": {a.key: list(a.raw) for a in self.grid},
            "unknowns": {d.key: {**d.unknown.model_dump(exclude_defaults=True),
                                 "fields": list(d.fields), "plans": sorted(d.plans)}
                         for d in self.dims},
            "design": self.design, "base": self.base, "profile": self.profile,
            "draws": len(self.values),
            "values": [list(v.values()) for v in self.values],
            "points": self.n_points,
            "keys": list(self.keys),
            "columns": [list(c) for c in self.columns()],
        })

    def index(self, pid: int) -> tuple[int, int, int]:
        """Point `pid` as (grid setting, draw, plan)."""
        setting, draw, plan = digits(pid, [self.settings, len(self.values), len(self.plans)])
        return setting, draw, plan

    def point(self, pid: int) -> Point:
        setting, draw, plan = self.index(pid)
        idx = digits(setting, [len(a.values) for a in self.grid])
        p = self.plans[plan]
        values: list[Any] = [draw, plan]
        assigns: list[str] = []
        for axis, i in zip(self.grid, idx, strict=True):
            values.append(axis.values[i])
            assigns.append(f"{axis.key}={axis.raw[i]}")
        drawn = self.values[draw]
        values += [None if plan not in d.plans else int(drawn[d.key])
                   if d.key in self.integer else drawn[d.key] for d in self.dims if d.fields]
        return Point(pid, 0, p.seed, tuple(values),
                     (*p.overrides, *assigns, "unknowns={}", *self.sets[draw][plan]), plan)

    def points(self) -> list[Point]:
        return [self.point(pid) for pid in range(self.n_points)]


def build_draw_spec(plans: list[tuple[Path, list[str], str]], n: int, *,
                    grids: list[str] | None = None, sensitivity: bool = False,
                    profile: bool = True, max_runs: int = 0) -> tuple[DrawSpec, PointContext]:
    """Check the options and read each plan's scenario once; the first plan's unknowns
    (and its profile's) are drawn for all. Bad input raises ScenarioError naming it."""
    if n < 1:
        raise ScenarioError("--draws", f"must be >= 1, got {n}")
    axes = [make_axis(*parse_grid(g)) for g in grids or []]
    loaded = [load_scenario(path, list(overrides))[0] for path, overrides, _ in plans]
    shared = set.intersection(*(set(o) for _, o, _ in plans))
    dims = design_dimensions(loaded, [[o for o in overrides if o not in shared]
                                      for _, overrides, _ in plans], profile)
    for axis in axes:
        if axis.key in DRAW_COLUMNS or any(touches(f, [f"{axis.key}="])
                                          for d in dims for f in d.fields):
            raise ScenarioError("--grid", f"{axis.key!r} is drawn (an unknown) or names a "
                                "draw's column; sweep another field, or drop its unknown")
    unknowns = {d.key: d.unknown for d in dims}
    seed = loaded[0].seed
    if sensitivity:
        base, raw = sensitivity_design(unknowns, seed, n)
    else:
        base, raw = 0, draw_values(unknowns, seed, n)

    def scenario_of(d: Dimension) -> Any:
        return loaded[min(d.plans)] if d.plans else loaded[0]

    integer = frozenset(d.key for d in dims if d.fields
                        and isinstance(field_value(scenario_of(d), d.fields[0]), int))
    values = tuple({k: float(round(v)) if k in integer else v for k, v in draw.items()}
                   for draw in raw)
    sources = [read_base(path, tuple(overrides)) for path, overrides, _ in plans]
    assignments = tuple(f"{a.key}={raw}" for a in axes for raw in a.raw)
    spec = DrawSpec(
        plans=tuple(Plan(label, path.resolve(), file_sha256(path),
                         tuple(overrides), seed_,
                         named_file_digests(data, base_dir, tuple(overrides), assignments))
                    for (path, overrides, label), (data, base_dir, seed_) in zip(
                        plans, sources, strict=True)),
        grid=tuple(axes), dims=tuple(dims), integer=integer,
        design="saltelli" if sensitivity else "lhs", base=base, values=values,
        profile=profile,
        sets=tuple(tuple(tuple(draw_sets(loaded[p], dims, v, p)) for p in range(len(plans)))
                   for v in values))
    runs, limit = spec.n_points, max_runs or MAX_RUNS
    if runs > limit:
        raise ScenarioError("--draws", f"{n} draws x {len(plans)} variants x "
                            f"{spec.settings} settings = {runs:,} runs, over the limit of "
                            f"{limit:,}; give fewer draws" + (
                                f" (or pass --max-points {runs})" if max_runs else ""))
    ctx = PointContext(sources[0][0], sources[0][1], str(plans[0][0]), spec.keys,
                       tuple((data, base_dir, str(path)) for (data, base_dir, _), (path, _, _)
                             in zip(sources[1:], plans[1:], strict=True)))
    return spec, ctx


def settings_of(spec: DrawSpec) -> list[tuple[str, ...]]:
    """Each grid setting's `key=value`s, in point order."""
    return [tuple(f"{a.key}={a.raw[i]}" for a, i in zip(spec.grid, idx, strict=True))
            for idx in itertools.product(*(range(len(a.values)) for a in spec.grid))]
