"""What a sweep is: its options, the points they expand to, and each point's seed.

Owns turning `--grid key=v1,v2`, `--random N --range key=lo:hi` and `--reps R` into a
`SweepSpec` and expanding it into `Point`s in one stable order: the Cartesian product of the
grids (first grid slowest), then the random points, then the replicates (fastest). A point's
id is its index in that order, so a spec always numbers its points the same way.

Values are YAML scalars, read exactly as `--set` reads them (`2` is an int, `0.5` a float,
`sync` a string); a point applies `key=value` after the sweep's `--set` overrides, so a point
of replicate 0 is the same run as `rlsim run SCENARIO --set ... --set key=value`.

Seeds (common random numbers): replicate 0 runs on the scenario's own seed; replicate r > 0
on `SeedSequence([scenario seed, r]).generate_state(1, uint64)[0] >> 1` (63 bits, so it fits
an int64 column). Every point of one replicate shares its seed, so the workload's prompts,
lengths and latencies are the same across the points being compared and differences come
from the swept values. Random points draw each key from its own named stream
(`rlsim.config.streams.rng(seed, "sweep.random." + key)`), uniform in [lo, hi] (integers,
both ends included, when both bounds are integers): the same spec always gives the same
points, which is what lets `--resume` regenerate them.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import yaml

from rlsim import __version__
from rlsim.config.contracts import stamped
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import (
    apply_override,
    file_sha256,
    load_scenario,
    named_file_digests,
    split_overrides,
)
from rlsim.config.scenario import Scenario
from rlsim.config.streams import rng

# Columns every row has before the swept keys; `error` follows the keys.
INDEX_COLUMNS = ("point", "replicate", "seed")
ERROR_COLUMN = "error"
_RESERVED = (*INDEX_COLUMNS, ERROR_COLUMN)
_MAX_INT64 = 2**63 - 1


@dataclass(frozen=True)
class Axis:
    """One swept key: its grid values as typed (raw) and as column values."""

    key: str
    raw: tuple[str, ...]
    values: tuple[Any, ...]
    dtype: str  # column type: int64 | float64 | bool | string


@dataclass(frozen=True)
class Range:
    """One randomly drawn key: uniform in [lo, hi]; integers when both bounds are."""

    key: str
    lo: int | float
    hi: int | float

    @property
    def dtype(self) -> str:
        return "int64" if isinstance(self.lo, int) and isinstance(self.hi, int) else "float64"


@dataclass(frozen=True)
class Point:
    """One run of the sweep: its id, replicate, seed, swept values and overrides."""

    id: int
    replicate: int
    seed: int
    values: tuple[Any, ...]      # one column value per swept key, in key order
    overrides: tuple[str, ...]   # the sweep's --set, then key=value per key, then seed=N
    plan: int = 0                # which of the context's scenarios it runs (draws' variants)


@dataclass(frozen=True)
class PointContext:
    """What every worker needs once: the scenario mapping and where its paths resolve."""

    data: dict[str, Any]      # the scenario file as read (overrides are per point)
    base_dir: Path
    source: str               # the scenario path as given, for error messages
    keys: tuple[str, ...]     # swept keys, in column order
    # Further scenarios, as (data, base_dir, source): plan p >= 1 runs others[p - 1] (the
    # variants of `rlsim compare --draws`, which may come from other files).
    others: tuple[tuple[dict[str, Any], Path, str], ...] = ()

    def scenario_of(self, plan: int) -> tuple[dict[str, Any], Path, str]:
        """The scenario mapping, base folder and source that a point of `plan` runs."""
        return (self.data, self.base_dir, self.source) if plan == 0 else self.others[plan - 1]


class PointSpec(Protocol):
    """What the sweep runner needs of a spec: `SweepSpec`, or the draws' `DrawSpec`.
    Points are numbered 0..n_points-1; a "setting" is `max(random, 1) * reps` consecutive
    points of the same size (what `runner.check_size` samples)."""

    @property
    def keys(self) -> tuple[str, ...]: ...

    @property
    def n_points(self) -> int: ...

    @property
    def random(self) -> int: ...

    @property
    def reps(self) -> int: ...

    def columns(self) -> list[tuple[str, str]]: ...

    def to_json(self) -> dict[str, Any]: ...

    def points(self) -> list[Point]: ...

    def point(self, pid: int) -> Point: ...


@dataclass(frozen=True)
class SweepSpec:
    """Everything that decides a sweep's points and rows (not how they are executed)."""

    scenario: Path               # resolved path of the scenario file
    scenario_sha256: str         # its content: resuming after an edit would mix results
    overrides: tuple[str, ...]   # --set, applied before the swept values
    grid: tuple[Axis, ...]
    random: int                  # random points per grid point (0: none)
    ranges: tuple[Range, ...]
    reps: int
    seed: int                    # the scenario's seed after --set: replicate 0's seed
    files: dict[str, str] = field(default_factory=dict)
    """sha256 of each file the scenario names (`named_file_digests`): edited, the same."""

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(a.key for a in self.grid) + tuple(r.key for r in self.ranges)

    @property
    def n_points(self) -> int:
        return math.prod(len(a.values) for a in self.grid) * max(self.random, 1) * self.reps

    def columns(self) -> list[tuple[str, str]]:
        """The row's fixed columns and their types; metric columns follow them."""
        return ([(c, "int64") for c in INDEX_COLUMNS]
                + [(a.key, a.dtype) for a in self.grid]
                + [(r.key, r.dtype) for r in self.ranges]
                + [(ERROR_COLUMN, "string")])

    def to_json(self) -> dict[str, Any]:
        """sweep.json: the spec as the user gave it, compared field by field on --resume."""
        return stamped("sweep", {
            "rlsim_version": __version__,
            "scenario": str(self.scenario),
            "scenario_sha256": self.scenario_sha256,
            # only when it names files: a sweep folder written before this field resumes
            **({"files": self.files} if self.files else {}),
            "overrides": list(self.overrides),
            "grid": {a.key: list(a.raw) for a in self.grid},
            "random": self.random,
            "ranges": {r.key: [r.lo, r.hi] for r in self.ranges},
            "reps": self.reps,
            "seed": self.seed,
            "points": self.n_points,
            "keys": list(self.keys),
            # Column types: tells `--range k=1:2` (ints) from `k=1:2.0` (floats) on resume.
            "columns": [list(c) for c in self.columns()],
        })

    def points(self) -> list[Point]:
        """All points in expansion order (grids, then random points, then replicates)."""
        drawn = [random_values(r, self.random, self.seed) for r in self.ranges]
        seeds = [replicate_seed(self.seed, rep) for rep in range(self.reps)]
        combos = itertools.product(*(range(len(a.values)) for a in self.grid),
                                   range(max(self.random, 1)), range(self.reps))
        return [self._point(pid, combo, drawn, seeds[combo[-1]])
                for pid, combo in enumerate(combos)]

    def point(self, pid: int) -> Point:
        """Point `pid` alone, without expanding the others: what sizing a sweep too large
        to expand needs. Random values are drawn up to its random index."""
        combo = digits(pid, [len(a.values) for a in self.grid]
                       + [max(self.random, 1), self.reps])
        drawn = [random_values(r, combo[-2] + 1, self.seed) for r in self.ranges]
        return self._point(pid, tuple(combo), drawn, replicate_seed(self.seed, combo[-1]))

    def _point(self, pid: int, combo: tuple[int, ...], drawn: list[list[int | float]],
               seed: int) -> Point:
        *grid_idx, rand_idx, rep = combo
        values: list[Any] = []
        assigns: list[str] = []
        for axis, i in zip(self.grid, grid_idx, strict=True):
            values.append(axis.values[i])
            assigns.append(f"{axis.key}={axis.raw[i]}")
        for r, column in zip(self.ranges, drawn, strict=True):
            values.append(column[rand_idx])
            assigns.append(f"{r.key}={yaml_number(column[rand_idx])}")
        return Point(pid, rep, seed, tuple(values),
                     (*self.overrides, *assigns, f"seed={seed}"))


def digits(index: int, sizes: list[int]) -> list[int]:
    """`index` in the mixed radix `sizes` (the first slowest): a point's position in each
    of the product's factors."""
    out: list[int] = []
    for n in reversed(sizes):
        index, i = divmod(index, n)
        out.append(i)
    return out[::-1]


def replicate_seed(scenario_seed: int, replicate: int) -> int:
    """Replicate 0: the scenario's seed; r > 0: a 63-bit seed from SeedSequence([seed, r])."""
    if replicate == 0:
        return scenario_seed
    state = np.random.SeedSequence([scenario_seed, replicate]).generate_state(1, np.uint64)
    return int(state[0]) >> 1


def random_values(r: Range, n: int, seed: int) -> list[int | float]:
    """`n` uniform draws for one key from its own stream (adding a key shifts no other)."""
    gen = rng(seed, f"sweep.random.{r.key}")
    if r.dtype == "int64":
        return [int(v) for v in gen.integers(int(r.lo), int(r.hi), size=n, endpoint=True)]
    return [float(v) for v in gen.uniform(float(r.lo), float(r.hi), size=n)]


def yaml_number(value: int | float) -> str:
    """A number as text that YAML reads back as the same number (PyYAML needs '1.0e-05')."""
    text = repr(value)
    if isinstance(value, float) and "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def parse_grid(text: str) -> tuple[str, tuple[str, ...]]:
    """'key=v1,v2,...' -> (key, raw values); commas inside brackets or quotes stay."""
    key, raw = _split_assignment(text, "--grid", "key=v1,v2,... e.g. rollout.tp=1,2,4")
    # split_overrides drops empty items; an empty item outside quotes is a typo to report.
    quoted = re.search(r"[\"'\[{]", raw)
    if not raw.strip() or (not quoted and re.search(r"^\s*,|,\s*,|,\s*$", raw)):
        raise ScenarioError("--grid", f"empty value in {text!r}; give key=v1,v2,...")
    try:
        values = split_overrides(raw)
    except ScenarioError as err:
        raise ScenarioError("--grid", err.message) from None
    return key, tuple(values)


def parse_range(text: str) -> Range:
    """'key=lo:hi' -> Range; bounds are numbers with lo <= hi."""
    key, raw = _split_assignment(text, "--range", "key=lo:hi e.g. workload.prompts_per_step=64:256")
    parts = raw.split(":")
    if len(parts) != 2:
        raise ScenarioError("--range", f"expected key=lo:hi, got {text!r}")
    bounds = [_yaml_scalar(p) for p in parts]
    for b, p in zip(bounds, parts, strict=True):
        if isinstance(b, bool) or not isinstance(b, int | float) or not math.isfinite(b):
            raise ScenarioError("--range", f"bound {p.strip()!r} in {text!r} is not a finite "
                                "number; give key=lo:hi with numbers")
    lo, hi = bounds
    if lo > hi:
        raise ScenarioError("--range", f"lo > hi in {text!r}; give key=lo:hi with lo <= hi")
    return Range(key, lo, hi)


def _split_assignment(text: str, option: str, usage: str) -> tuple[str, str]:
    if "=" not in text:
        raise ScenarioError(option, f"expected {usage}, got {text!r}")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key or any(not part.strip() for part in key.split(".")):
        raise ScenarioError(option, f"bad key {key!r} in {text!r}: use a dotted scenario path "
                            "like rollout.tp")
    if key in _RESERVED:
        fix = ("use --reps for replicates, or --set seed=N for another base seed"
               if key == "seed" else "it names a result column, not a scenario field")
        raise ScenarioError(option, f"cannot sweep {key!r}: {fix}")
    return key, raw


def _yaml_scalar(raw: str) -> Any:
    """A value as `--set` reads it (rlsim.config.loading.apply_override)."""
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        return raw
    if isinstance(value, str):
        # YAML 1.1 reads 5e-1 and 1e-5 as strings; pydantic (and so `--set`) takes them as
        # numbers, and a sweep over learning-rate-like values must too.
        try:
            number = float(value)
        except ValueError:
            return value
        if math.isfinite(number) and value.strip().lower() not in ("inf", "nan", "infinity"):
            return number
    return value


def make_axis(key: str, raw: tuple[str, ...]) -> Axis:
    """Type one grid column: int64, float64 (ints and floats mixed), bool, else string."""
    parsed = [_yaml_scalar(r) for r in raw]
    present = [p for p in parsed if p is not None]
    if present and all(isinstance(p, bool) for p in present):
        return Axis(key, raw, tuple(parsed), "bool")
    if present and all(isinstance(p, int) and not isinstance(p, bool) for p in present) \
            and all(-_MAX_INT64 - 1 <= p <= _MAX_INT64 for p in present):
        return Axis(key, raw, tuple(parsed), "int64")
    if present and all(isinstance(p, int | float) and not isinstance(p, bool) for p in present):
        return Axis(key, raw, tuple(None if p is None else float(p) for p in parsed), "float64")
    # Anything else (names, lists, mixed kinds) is a string column holding what was typed.
    values = tuple(None if p is None else p if isinstance(p, str) else r.strip()
                   for p, r in zip(parsed, raw, strict=True))
    return Axis(key, raw, values, "string")


def scenario_seed(data: Any, overrides: tuple[str, ...]) -> int:
    """The seed of the scenario mapping after --set, read without validating the rest."""
    node = copy.deepcopy(data) if isinstance(data, dict) else {}
    for assignment in overrides:
        apply_override(node, assignment)
    seed = node.get("seed", Scenario.model_fields["seed"].default)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _MAX_INT64:
        raise ScenarioError("seed", f"must be an integer in [0, 2^63), got {seed!r}")
    return seed


def read_base(path: Path, overrides: tuple[str, ...]) -> tuple[dict[str, Any], Path, int]:
    """The scenario mapping as read from its file, its base directory and seed.

    The file is validated with `--set` applied first, so an unreadable file fails here with
    `rlsim run`'s message. A field error is left to the points: a swept value may fix it.
    """
    try:
        load_scenario(path, list(overrides))
    except ScenarioError as err:
        if not err.field:
            raise  # the file itself: missing, empty, not YAML, not a mapping
    data = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    return data, path.resolve().parent, scenario_seed(data, overrides)


def build_spec(path: Path, overrides: list[str], grids: list[str], random: int | None,
               ranges: list[str], reps: int) -> tuple[SweepSpec, PointContext]:
    """Check the sweep options and read the scenario once; returns the spec and what the
    workers need. Bad options raise ScenarioError naming the option."""
    if reps < 1:
        raise ScenarioError("--reps", f"must be >= 1, got {reps}")
    if random is not None and random < 1:
        raise ScenarioError("--random", f"must be >= 1, got {random}")
    if random is not None and not ranges:
        raise ScenarioError("--random", "give at least one --range key=lo:hi to draw")
    if ranges and random is None:
        raise ScenarioError("--range", "give --random N: the number of random points to draw")
    axes = [make_axis(*parse_grid(g)) for g in grids]
    rngs = [parse_range(r) for r in ranges]
    seen: set[str] = set()
    for key in [a.key for a in axes] + [r.key for r in rngs]:
        if key in seen:
            option = "--range" if key in {r.key for r in rngs} else "--grid"
            raise ScenarioError(option, f"key {key!r} is swept twice; give it once")
        seen.add(key)
    sets = tuple(overrides)
    data, base_dir, seed = read_base(path, sets)
    spec = SweepSpec(
        scenario=path.resolve(),
        scenario_sha256=file_sha256(path),
        overrides=sets, grid=tuple(axes), random=random or 0, ranges=tuple(rngs), reps=reps,
        seed=seed, files=named_file_digests(
            data, base_dir, sets, tuple(f"{a.key}={raw}" for a in axes for raw in a.raw)))
    return spec, PointContext(data, base_dir, str(path), spec.keys)
