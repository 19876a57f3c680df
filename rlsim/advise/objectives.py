"""What `rlsim advise` optimizes and what it must respect: objectives and constraints.

Owns the figures advise reads off a run (`figures`), the objectives (`OBJECTIVES`: name,
direction, figure) and the `--constraint` grammar (`parse_constraint`: `key<=value`,
`key>=value`, or `key=value`, which means at most for a `max_` key and at least for a `min_`
one). Every figure is a steady-state figure of the run's summary (report/metrics.py), so
runs of different policies are compared after their warm-up, on the same trained work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from rlsim.config.errors import ScenarioError

Direction = Literal["max", "min"]


def figures(row: Mapping[str, float]) -> dict[str, float]:
    """The figures advise compares, from a run's flattened summary (sweep/worker.py)."""
    tokens = float(row.get("throughput.tokens_per_s", 0.0))
    usd_h = float(row.get("cost.usd_per_hour", math.nan))
    return {
        "tokens_per_s": tokens,
        "samples_per_s": float(row.get("throughput.samples_per_s", 0.0)),
        # Trained tokens, prompt and response: what a user pays for.
        "usd_per_1k_tokens": usd_h / 3600 / tokens * 1000 if tokens > 0 else math.inf,
        "step_time": float(row.get("step_time_s.mean", math.inf)),
        "goodput": float(row.get("goodput_samples_per_s", 0.0)),
        "staleness": float(row.get("staleness.max", 0.0)),
        "usd_per_hour": usd_h,
        "tokens_per_sample": float(row.get("throughput.response_tokens_per_sample", 0.0)),
    }


@dataclass(frozen=True)
class Objective:
    name: str
    direction: Direction
    label: str
    unit: str

    def better(self, a: float, b: float) -> bool:
        """a strictly better than b."""
        return a > b if self.direction == "max" else a < b

    def signed(self, value: float) -> float:
        """The value with larger always better (what a search maximizes)."""
        return value if self.direction == "max" else -value


OBJECTIVES: dict[str, Objective] = {o.name: o for o in (
    Objective("tokens_per_s", "max", "trained tokens per second", "tokens/s"),
    Objective("usd_per_1k_tokens", "min", "dollars per 1,000 trained tokens", "$/1k tokens"),
    Objective("step_time", "min", "mean step time", "s"),
    Objective("goodput", "max", "good samples per second", "samples/s"),
)}


def objective(name: str) -> Objective:
    """The objective called `name`, or a one-line error naming the choices."""
    if name not in OBJECTIVES:
        raise ScenarioError("--objective", f"unknown objective {name!r}; choose one of "
                            f"{', '.join(OBJECTIVES)}")
    return OBJECTIVES[name]


def objectives(text: str) -> list[Objective]:
    """`tokens_per_s` or several, comma-separated (`tokens_per_s,usd_per_1k_tokens`): the
    first decides the recommendation; all of them shape the search (multi-objective)."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise ScenarioError("--objective", f"expected names separated by commas, got {text!r}")
    if len(set(names)) != len(names):
        raise ScenarioError("--objective", f"an objective is named twice in {text!r}")
    return [objective(n) for n in names]


# Constraint keys: the figure each bounds, and the bound's sense for `key=value`.
CONSTRAINTS: dict[str, tuple[str, str]] = {
    "max_staleness": ("staleness", "<="),
    "usd_per_hour": ("usd_per_hour", "<="),
    "usd_per_1k_tokens": ("usd_per_1k_tokens", "<="),
    "step_time": ("step_time", "<="),
    "tokens_per_s": ("tokens_per_s", ">="),
    "goodput": ("goodput", ">="),
}

_CONSTRAINT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=|=)\s*(\S+)\s*$")


@dataclass(frozen=True)
class Constraint:
    key: str
    figure: str
    op: str  # "<=" or ">="
    bound: float

    def holds(self, figs: Mapping[str, float]) -> bool:
        value = figs[self.figure]
        return value <= self.bound if self.op == "<=" else value >= self.bound

    def text(self) -> str:
        return f"{self.key}{self.op}{self.bound:g}"


def parse_constraint(text: str) -> Constraint:
    """`max_staleness=1`, `usd_per_hour<=400`, `tokens_per_s>=20000`: one constraint."""
    m = _CONSTRAINT.match(text)
    if m is None:
        raise ScenarioError("--constraint", f"expected key<=value, key>=value or key=value, "
                            f"got {text!r}")
    key, op, raw = m.groups()
    if key not in CONSTRAINTS:
        raise ScenarioError("--constraint", f"unknown constraint key {key!r}; choose one of "
                            f"{', '.join(CONSTRAINTS)}")
    try:
        bound = float(raw)
    except ValueError:
        raise ScenarioError("--constraint", f"{key}: the bound must be a number, got "
                            f"{raw!r}") from None
    if not math.isfinite(bound):
        raise ScenarioError("--constraint", f"{key}: the bound must be finite, got {raw!r}")
    figure, sense = CONSTRAINTS[key]
    return Constraint(key, figure, sense if op == "=" else op, bound)
