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


def model_sigmas(scenario: Any, plan: int, profile: bool) -> dict[str, float]:
    """The log-space sd of each model-error dimension for one run's scenario (0: none)."""
    from rlsim.config.regime import REGIME_CHANGE_REL, regime_changes

    out: dict[str, float] = {}
    prof = _profile(scenario) if profile else None
    if prof is not None and prof.predictive_log_sd > 0:
        out[DISCREPANCY] = prof.predictive_log_sd
    on = scenario.framework.fitted_on
    if on is not None:
        changes = len(regime_changes(on, scenario))
        if changes:
            out[regime_key(plan)] = math.log(1 + REGIME_CHANGE_REL * changes) / 1.96
    return out


def design_unknowns(scenarios: list[Any], profile: bool) -> dict[str, Unknown]:
    """Every dimension drawn for these plans' scenarios (the first one's unknowns and
    profile knobs, then the model-error dimensions any of them needs), sorted by key."""
    first = with_profile_unknowns(scenarios[0], profile)
    dims: dict[str, Unknown] = dict(first.unknowns)
    for plan, scenario in enumerate(scenarios):
        for key in model_sigmas(scenario, plan, profile):
            dims[key] = STANDARD_NORMAL
        if scenario.framework.fitted_on is not None:
            # a grid may move it out of its regime even where the plan itself is in it
            dims[regime_key(plan)] = STANDARD_NORMAL
    return dict(sorted(dims.items()))


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
    base = n // (len(keys) + 2)
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


def round_integers(scenario: Any, draw: dict[str, float]) -> dict[str, float]:
    """`draw` with each integer field's value rounded (what the run sets and records)."""
    return {k: float(round(v)) if not k.startswith(ERROR)
            and isinstance(field_value(scenario, k), int) else v for k, v in draw.items()}


def draw_sets(scenario: Any, unknowns: dict[str, Unknown], draw: dict[str, float]) -> list[str]:
    """A draw as --set assignments: each unknown field and the fields drawn with it
    (`Unknown.also`); model-error dimensions set no field."""
    out = []
    for key, value in draw.items():
        if key.startswith(ERROR):
            continue
        text = (str(int(value)) if isinstance(field_value(scenario, key), int)
                else repr(value))
        out += [f"{k}={text}" for k in (key, *unknowns[key].also)]
    return out
