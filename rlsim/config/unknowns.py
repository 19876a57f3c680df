"""The `unknowns:` section: scenario fields whose values the user does not know, each with
a range or a distribution (issue 39).

Owns `Unknown` (one field's distribution: a uniform or log-uniform range, a normal, a
lognormal or a triangular), its quantile function (`Unknown.value`, what a draw's uniform
number becomes), and `check_unknowns`, which refuses, in one line naming
`unknowns.<field>`, a field that does not exist or is not a number, and a distribution
whose support leaves the field's bounds (each end of the support, or the 1e-6 and
1 - 1e-6 quantiles of an unbounded one, must validate as the field's value). Keys are the
dotted paths `--set` takes (`workload.response_len.median`, `pools.0.nodes`). Values are
in the field's own units (seconds, tokens, bytes). The draws themselves: `rlsim.draws`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from rlsim.config.base import Frozen
from rlsim.config.errors import ScenarioError

TAIL = 1e-6
"""An unbounded distribution's support is checked at these quantiles."""


class Unknown(Frozen):
    """One unknown field: `{low, high}` (uniform), `{low, high, dist: loguniform}`,
    `{dist: normal, mean, sd}`, `{dist: lognormal, median, sigma}` or
    `{dist: triangular, low, mode, high}`."""

    dist: Literal["uniform", "loguniform", "normal", "lognormal", "triangular"] = Field(
        default="uniform", description="The distribution the field's value is drawn from.")
    low: float | None = Field(default=None, description="uniform, loguniform, triangular: "
                              "the smallest value.")
    high: float | None = Field(default=None, description="uniform, loguniform, triangular: "
                               "the largest value.")
    mode: float | None = Field(default=None, description="triangular: the likeliest value.")
    mean: float | None = Field(default=None, description="normal: the mean.")
    sd: float | None = Field(default=None, gt=0, description="normal: the standard deviation.")
    median: float | None = Field(default=None, gt=0, description="lognormal: the median.")
    sigma: float | None = Field(default=None, gt=0,
                                description="lognormal: the standard deviation of the log.")
    also: list[str] = Field(
        default_factory=list,
        description="Other fields set to the same drawn value (one unknown, several "
        "fields), e.g. a single speed for both framework speeds.")

    @model_validator(mode="after")
    def _complete(self) -> Unknown:
        need = {"uniform": ("low", "high"), "loguniform": ("low", "high"),
                "normal": ("mean", "sd"), "lognormal": ("median", "sigma"),
                "triangular": ("low", "mode", "high")}[self.dist]
        missing = [n for n in need if getattr(self, n) is None]
        if missing:
            raise ValueError(f"{self.dist} needs {', '.join(need)} (missing "
                             f"{', '.join(missing)})")
        extra = [n for n in ("low", "high", "mode", "mean", "sd", "median", "sigma")
                 if n not in need and getattr(self, n) is not None]
        if extra:
            raise ValueError(f"{self.dist} takes {', '.join(need)}, not {', '.join(extra)}")
        if self.low is not None and self.high is not None and not self.low < self.high:
            raise ValueError(f"low ({self.low:g}) must be below high ({self.high:g}): an "
                             "inverted or empty range")
        if self.dist == "loguniform" and (self.low or 0.0) <= 0:
            raise ValueError("loguniform needs low > 0")
        if self.mode is not None and not (self.low or 0.0) <= self.mode <= (self.high or 0.0):
            raise ValueError("triangular needs low <= mode <= high")
        return self

    def value(self, u: float) -> float:
        """The value at quantile `u`, kept within [1e-12, 1 - 1e-12] (a draw's 0 or 1 would
        be an unbounded distribution's infinity)."""
        from scipy import stats

        u = min(max(u, 1e-12), 1.0 - 1e-12)

        if self.dist == "uniform":
            assert self.low is not None and self.high is not None
            return self.low + u * (self.high - self.low)
        if self.dist == "loguniform":
            assert self.low is not None and self.high is not None
            return math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        if self.dist == "normal":
            return float(stats.norm.ppf(u, loc=self.mean, scale=self.sd))
        if self.dist == "lognormal":
            assert self.median is not None and self.sigma is not None
            return float(self.median * math.exp(self.sigma * stats.norm.ppf(u)))
        assert self.low is not None and self.high is not None and self.mode is not None
        c = (self.mode - self.low) / (self.high - self.low)
        return float(stats.triang.ppf(u, c, loc=self.low, scale=self.high - self.low))

    def support(self) -> tuple[float, float]:
        """The ends the field must accept: the range's, or the TAIL quantiles."""
        if self.dist in ("uniform", "loguniform", "triangular"):
            assert self.low is not None and self.high is not None
            return self.low, self.high
        return self.value(TAIL), self.value(1.0 - TAIL)


def field_value(scenario: Any, key: str) -> Any:
    """The validated scenario's value at a dotted path (defaults included)."""
    node = scenario
    for part in key.split("."):
        if isinstance(node, list | tuple):
            try:
                node = node[int(part)]
            except (ValueError, IndexError):
                return _MISSING
        elif isinstance(node, dict):
            node = node.get(part, _MISSING)
        elif isinstance(node, BaseModel) and part in type(node).model_fields:
            node = getattr(node, part)
        else:
            return _MISSING
        if node is _MISSING:
            return node
    return node


_MISSING = object()


def check_unknowns(scenario: Any, data: dict[str, Any],
                   validate: Callable[[dict[str, Any]], Any],
                   apply_override: Callable[[dict[str, Any], str], None]) -> None:
    """Each of `scenario.unknowns` names a numeric field of `scenario` and its support fits
    the field's bounds. `data`: the scenario mapping as given (overrides applied);
    `validate(mapping)` validates a scenario mapping (raises ScenarioError);
    `apply_override(mapping, "key=value")` sets a field as `--set` does."""
    for key, unknown in scenario.unknowns.items():
        for also in unknown.also:
            _check_field(scenario, data, f"unknowns.{key}.also", also, unknown, validate,
                         apply_override)
        _check_field(scenario, data, f"unknowns.{key}", key, unknown, validate,
                     apply_override)


def _check_field(scenario: Any, data: dict[str, Any], field: str, key: str,
                 unknown: Unknown, validate: Callable[[dict[str, Any]], Any],
                 apply_override: Callable[[dict[str, Any], str], None]) -> None:
    """`key` (the unknown's field, or one drawn with it) exists, is a number, and takes
    each end of `unknown`'s support."""
    current = field_value(scenario, key)
    if current is _MISSING:
        raise ScenarioError(field, f"{key} is not a field of this scenario: use a dotted "
                            "path as --set takes (workload.response_len.median)")
    if isinstance(current, bool) or (current is not None
                                     and not isinstance(current, int | float)):
        raise ScenarioError(field, f"{key} is not a number ({current!r}): only numeric "
                            "fields can be unknown")
    for end in unknown.support():
        trial = copy.deepcopy(data)
        trial.pop("unknowns", None)
        number = round(end) if isinstance(current, int) else end
        try:
            apply_override(trial, f"{key}={number!r}")
            validate(trial)
        except ScenarioError as err:
            raise ScenarioError(field, f"the distribution reaches {number:g}, which "
                                f"{key} does not accept ({err.message}); narrow it") \
                from None
