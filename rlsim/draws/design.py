"""What is drawn: the unknowns of a set of draws, and the values of each draw.

Owns `design_unknowns` (the first scenario's `unknowns:`, its framework profile's
calibrated knobs, and the model-error dimensions that are not scenario fields), the two
designs over them (`draw_values`: a Latin hypercube; `sensitivity_design`: a Saltelli
design, rlsim.sensitivity), both seeded from the scenario's seed so that the same scenario,
seed and N give the same draws on any machine, and `draw_sets`: a draw as the `--set`
assignments a run takes.

Model-error dimensions (`error.*`) are standard normal numbers z, not fields: the summary
(rlsim.draws.summary) turns them into multipliers exp(sigma z) on each run's time metrics,
sigma taken from the run's own scenario (`model_sigmas`):
- `error.discrepancy`: what a framework profile's fit could not explain, for runs on a
  profile: `predictive_log_sd`, the log-space sd of a calibration record's step error
  with the profile fitted without it (else the in-sample residuals' sd). One
  dimension for every run of a set: the same framework's error moves its variants together.
- `error.regime.J`: a fitted scenario (`framework.fitted_on`) run outside its regime, for
  plan J. Sigma ln(1 + 10% x changes) / 1.96, so the factor's own 95% interval is the
  stated allowance (`rlsim.config.regime.REGIME_CHANGE_REL`); independent per plan, as two
  changes of regime err independently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rlsim.config.errors import ScenarioError
from rlsim.config.streams import rng
from rlsim.config.unknowns import Unknown, field_value

ERROR = "error."
"""Prefix of the model-error dimensions (not scenario fields; no scenario field is `error`)."""
DISCREPANCY = "error.discrepancy"
STANDARD_NORMAL = Unknown(dist="normal", mean=0.0, sd=1.0)


def regime_key(plan: int) -> str:
    return f"{ERROR}regime.{plan}"


def with_profile_unknowns(scenario: Any, profile: bool) -> Any:
    """`scenario` whose unknowns include its framework profile's calibrated knobs
    (`framework.name`, rlsim/config/frameworks.json), each where the scenario keeps the
    profile's value and declares no unknown of its own: a 95% interval above 0 as a
    lognormal (median the value, sigma ln(high/low) / 3.92), one reaching 0 as uniform
    over it; a profile's single `speed` sets both speeds (one unknown, two fields).
    `profile` False: the scenario's own unknowns only."""
    fw = scenario.framework
    prof = _profile(scenario) if profile else None
    if prof is None or not fw.profile:
        return scenario
    extra: dict[str, Unknown] = {}
    for p in prof.params.values():
        fields = (["framework.train_speed", "framework.rollout_speed"] if p.name == "speed"
                  else [f"framework.{p.name}"])
        if any(f in scenario.unknowns for f in fields) or any(
                field_value(scenario, f) != p.value for f in fields):
            continue
        unknown = profile_unknown(p, fields[1:])
        if unknown is not None:
            extra[fields[0]] = unknown
    return scenario.model_copy(update={"unknowns": {**extra, **scenario.unknowns}})


def profile_unknown(p: Any, also: list[str] | None = None) -> Unknown | None:
    """A profile parameter's 95% interval as an unknown: above 0, a lognormal (median the
    fitted value, sigma ln(high/low) / 3.92); reaching 0, uniform over it; None when the
    interval is empty."""
    lo, hi = p.ci95
    if not lo < hi:
        return None
    if lo > 0:
        return Unknown(dist="lognormal", median=p.value, sigma=math.log(hi / lo) / 3.92,
                       also=also or [])
    return Unknown(low=max(lo, 0.0), high=hi, also=also or [])


def _profile(scenario: Any) -> Any:
    from rlsim.config.frameworks import profiles

    fw = scenario.framework
    return profiles().get(str(fw.name)) if fw.name and fw.profile else None


def model_sigmas(scenario: Any, profile: bool) -> dict[str, float]:
    """The log-space sd of one run's model errors: "discrepancy" (its profile's) and
    "regime" (a fitted scenario outside its regime); absent: none."""
    from rlsim.config.regime import REGIME_CHANGE_REL, regime_changes

    out: dict[str, float] = {}
    prof = _profile(scenario) if profile else None
    if prof is not None and prof.predictive_log_sd > 0:
        out["discrepancy"] = prof.predictive_log_sd
    on = scenario.framework.fitted_on
    if on is not None:
        changes = len(regime_changes(on, scenario))
        if changes:
            out["regime"] = math.log(1 + REGIME_CHANGE_REL * changes) / 1.96
    return out


@dataclass(frozen=True)
class Dimension:
    """One drawn dimension: its name in the draws, its distribution, the fields it sets
    (none for a model error) and the plans (variants) it applies to."""

    key: str
    unknown: Unknown
    fields: tuple[str, ...]
    plans: frozenset[int]


def touches(field: str, overrides: list[str]) -> bool:
    """Whether an override sets `field`, or a section holding it, or a field inside it."""
    for o in overrides:
        key = o.split("=", 1)[0].strip()
        if field == key or field.startswith(key + ".") or key.startswith(field + "."):
            return True
    return False


def design_dimensions(scenarios: list[Any], variant_overrides: list[list[str]],
                      profile: bool) -> list[Dimension]:
    """Every dimension drawn for these plans, sorted by key:
    - the first scenario's `unknowns:`, for each plan whose own overrides
      (`variant_overrides`: those not shared by every plan) leave its fields alone: a
      variant that sets a field keeps its value;
    - each plan's framework profile knobs (`with_profile_unknowns` of its own scenario),
      one dimension per profile and knob, keyed `field` when every plan drawing knobs is on
      one profile, else `field@profile`;
    - `error.discrepancy` per profile (`@profile` as above): one z for the plans on one
      profile, independent across profiles;
    - `error.regime.J` for each plan J whose scenario was fitted (`framework.fitted_on`)."""
    dims: dict[str, Dimension] = {}
    first = scenarios[0]
    everyone = frozenset(range(len(scenarios)))
    for key, u in first.unknowns.items():
        fields = (key, *u.also)
        plans = frozenset(p for p in everyone
                          if not any(touches(f, variant_overrides[p]) for f in fields))
        dims[key] = Dimension(key, u, fields, plans)
    knobs: dict[tuple[str, str], tuple[Unknown, set[int]]] = {}
    on_profile: dict[str, set[int]] = {}
    for p, scenario in enumerate(scenarios):
        prof = _profile(scenario) if profile else None
        if prof is None:
            continue
        on_profile.setdefault(prof.name, set()).add(p)
        own = with_profile_unknowns(scenario.model_copy(update={"unknowns": {
            k: u for k, u in scenario.unknowns.items() if p in dims.get(k, _NONE).plans}}),
            True)
        for field, u in own.unknowns.items():
            if field in dims and p in dims[field].plans:
                continue  # the scenario's own unknown, already drawn
            knobs.setdefault((prof.name, field), (u, set()))[1].add(p)
    many = len(on_profile) > 1
    for (name, field), (u, users) in knobs.items():
        key = f"{field}@{name}" if many or field in dims else field
        dims[key] = Dimension(key, u, (field, *u.also), frozenset(users))
    for name, users in on_profile.items():
        if any(model_sigmas(scenarios[p], True).get("discrepancy") for p in users):
            key = f"{DISCREPANCY}@{name}" if many else DISCREPANCY
            dims[key] = Dimension(key, STANDARD_NORMAL, (), frozenset(users))
    for p, scenario in enumerate(scenarios):
        if scenario.framework.fitted_on is not None:
            # a grid may move it out of its regime even where the plan itself is in it
            dims[regime_key(p)] = Dimension(regime_key(p), STANDARD_NORMAL, (),
                                            frozenset({p}))
    return [dims[k] for k in sorted(dims)]


_NONE = Dimension("", STANDARD_NORMAL, (), frozenset())


def design_unknowns(scenarios: list[Any], profile: bool) -> dict[str, Unknown]:
    """The drawn dimensions' distributions by key (`design_dimensions`, no variants)."""
    return {d.key: d.unknown for d in design_dimensions(
        scenarios, [[] for _ in scenarios], profile)}


def draw_values(unknowns: dict[str, Unknown], seed: int, n: int) -> list[dict[str, float]]:
    """`n` Latin-hypercube draws over `unknowns` (seeded by `seed` and `n`): per draw,
    key -> value, through each unknown's quantile function."""
    from scipy.stats import qmc

    if n < 1:
        raise ScenarioError("--draws", f"must be >= 1, got {n}")
    _need_unknowns(unknowns)
    keys = list(unknowns)
    sampler = qmc.LatinHypercube(d=len(keys), seed=rng(seed, "draws", n))
    return [{k: unknowns[k].value(float(u)) for k, u in zip(keys, row, strict=True)}
            for row in sampler.random(n)]


def sensitivity_design(unknowns: dict[str, Unknown], seed: int,
                       n: int) -> tuple[int, list[dict[str, float]]]:
    """A Saltelli design over `unknowns` (rlsim.sensitivity) within `n` runs: its base rows
    and, in `Design.points` order, each run's key -> value."""
    from rlsim.sensitivity import saltelli_design

    _need_unknowns(unknowns)
    keys = list(unknowns)
    if len(keys) < 2:
        raise ScenarioError("--sensitivity", "needs at least two unknowns to compare")
    # a power of two: the scrambled Sobol' sequence is balanced only at those sizes
    base = 2 ** int(math.log2(n // (len(keys) + 2))) if n >= len(keys) + 2 else 0
    if base < 2:
        raise ScenarioError("--draws", f"{n} draws are too few for the sensitivity of "
                            f"{len(keys)} unknowns: give at least {2 * (len(keys) + 2)}")
    points = saltelli_design(len(keys), base, int(rng(seed, "sensitivity", n)
                                                  .integers(2**31))).points()
    return base, [{k: unknowns[k].value(float(u)) for k, u in zip(keys, row, strict=True)}
                  for row in points]


def _need_unknowns(unknowns: dict[str, Unknown]) -> None:
    if not unknowns:
        raise ScenarioError("--draws", "the scenario declares no unknowns: add an "
                            "`unknowns:` section (docs/uncertainty.md)")


def draw_sets(scenario: Any, dims: list[Dimension], draw: dict[str, float],
              plan: int) -> list[str]:
    """A draw as the --set assignments of one plan: the fields of each dimension that
    applies to it (an integer field's value rounded); model errors set no field."""
    out = []
    for d in dims:
        if plan not in d.plans or not d.fields:
            continue
        value = draw[d.key]
        text = (str(int(value)) if isinstance(field_value(scenario, d.fields[0]), int)
                else repr(value))
        out += [f"{f}={text}" for f in d.fields]
    return out
