"""The regime a fit holds for, and what leaving it costs (issue 37; issue 39 warns of it).

Owns `Regime` (a run's policy, placement, GPUs, split, GPU type and model), `regime_of`,
`regime_changes` and `regime_warning` (one line saying how a scenario leaves a fitted
regime and by how much its uncertainty widens). In config, below the fitter that records
a regime and the run that warns when it is left.
"""

from __future__ import annotations

from rlsim.config.placement import resolve_placement
from rlsim.config.scenario import FittedRegime, Scenario

REGIME_CHANGE_REL = 0.10
"""Extra relative half-width of a predicted step's 95% interval per change of regime (policy,
placement, GPU count, rollout/train split, GPU type, model), added to the fit's own. A
stated allowance, not a measurement: the fit learns one regime's framework costs, and a
change of regime moves work onto parts of the cost model the log never checked. The
corpus's fit-on-one-run, predict-another pairs (issue 20: within 20%) are what should
calibrate it."""


Regime = FittedRegime
"""A regime is what a fit records (`framework.fitted_on`)."""


def regime_of(scenario: Scenario) -> Regime:
    """The regime a scenario runs in (what a fit on it holds for)."""
    place = resolve_placement(scenario)
    gpus = place.rollout_gpus if place.colocated else place.rollout_gpus + place.train_gpus
    gpu_names = sorted({place.rollout_pool.gpu_spec.name, place.train_pool.gpu_spec.name})
    return Regime(policy=scenario.policy.name, placement=scenario.policy.placement,
                  gpus=gpus, rollout_gpus=place.rollout_gpus, train_gpus=place.train_gpus,
                  gpu="+".join(gpu_names), model=scenario.model_spec.name)


def regime_changes(fitted: Scenario | Regime, other: Scenario) -> list[str]:
    """Each way `other` leaves `fitted`'s regime (a scenario's, or one a fit recorded), as
    a phrase."""
    a = fitted if isinstance(fitted, Regime) else regime_of(fitted)
    b = regime_of(other)
    out = []
    if a.policy != b.policy:
        out.append(f"policy {a.policy} -> {b.policy}")
    if a.placement != b.placement:
        out.append(f"placement {a.placement} -> {b.placement}")
    if a.gpus != b.gpus:
        out.append(f"GPUs {a.gpus} -> {b.gpus}")
    elif (a.rollout_gpus, a.train_gpus) != (b.rollout_gpus, b.train_gpus):
        out.append(f"split {a.rollout_gpus} rollout + {a.train_gpus} train -> "
                   f"{b.rollout_gpus} + {b.train_gpus}")
    if a.gpu != b.gpu:
        out.append(f"GPU type {a.gpu} -> {b.gpu}")
    if a.model != b.model:
        out.append(f"model {a.model} -> {b.model}")
    return out


def regime_warning(fitted: Scenario | Regime, other: Scenario) -> str | None:
    """None when `other` runs in `fitted`'s regime; else one line saying how it leaves it
    and by how much the stated uncertainty widens (`REGIME_CHANGE_REL` per change)."""
    changes = regime_changes(fitted, other)
    if not changes:
        return None
    a = fitted if isinstance(fitted, Regime) else regime_of(fitted)
    extra = REGIME_CHANGE_REL * len(changes)
    return (f"prediction outside the fitted regime ({'; '.join(changes)}): the framework "
            f"knobs were fitted on {a.describe()}; widen the step's 95% "
            f"interval by +/-{extra:.0%} ({REGIME_CHANGE_REL:.0%} per change, a stated "
            "allowance, not a measurement) on top of the fit's own")


def recorded_warning(scenario: Scenario) -> str | None:
    """The warning for a scenario whose framework knobs a fit wrote
    (`framework.fitted_on`) and that runs outside that regime; None otherwise."""
    on = scenario.framework.fitted_on
    if on is None:
        return None
    return regime_warning(on, scenario)
