"""What a policy declaration is: its capabilities, its facts, its load-time checks.

Owns `PolicyCaps` (a policy's name, one-line doc, supported placements, whether it trains
off-policy, whether its generation overlaps its other phases or is a wait for samples,
whether a framework log's gen time measures it, multi-turn samples, fault kinds, job
restarts, fleets, schedule options, environment instances, and the `search_space` of knobs
that `rlsim advise` may vary), `Knob`, and `PolicyDeclaration`, the class each policy's
module instantiates or subclasses: its facts and checks, with the defaults of a policy
that draws and trains exactly the batch (workload.prompts_per_step x samples_per_prompt).

The facts and checks read a scenario through `ScenarioView`, a protocol, not through
`Scenario`: scenario.py composes `PolicyConfig` from the declarations' settings models, so a
declaration that imported it would close an import cycle. A declaration reads its own
settings by name (`settings_of`) for the same reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel

from rlsim.config.faults import FaultsConfig, RecoveryConfig
from rlsim.config.workload import WorkloadConfig

PlacementName = Literal["colocated", "disaggregated"]
FaultKind = Literal["engine", "env", "trainer", "link", "gpu", "node"]

FAULT_KINDS: tuple[FaultKind, ...] = ("engine", "env", "trainer", "link", "gpu", "node")
"""The component kinds of `faults:` (FaultsConfig's lists), in its order."""

KnobValue = bool | int | float | str

SEPARATE_GPUS = "it overlaps generation with training, which needs separate GPUs"
"""Why a policy that overlaps generation with training runs disaggregated only."""


@dataclass(frozen=True, slots=True)
class Knob:
    """One setting `rlsim advise` may vary for a policy: a dotted scenario field, and either
    the values to try (`choices`) or the closed range to search (`low`..`high`)."""

    field: str
    choices: tuple[KnobValue, ...] = ()
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        ranged = self.low is not None and self.high is not None
        if bool(self.choices) == ranged or (self.low is None) != (self.high is None):
            raise ValueError(f"knob {self.field}: give either choices or low and high")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"knob {self.field}: low must not exceed high")


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyCaps:
    """What one policy supports. The defaults are the narrowest: a new policy claims a
    capability only when it has it (and a test shows it)."""

    name: str
    doc: str
    """One line, shown by `rlsim list policies`."""
    placements: tuple[PlacementName, ...]
    """The values of policy.placement it runs with (the first is the one suggested)."""
    placement_why: str = ""
    """Why the other placements are not supported, for the error message."""
    off_policy: bool = False
    """It may train a sample on newer weights than generated it (staleness above 0)."""
    gen_overlaps: bool = False
    """Its `gen` phase spans run alongside its other phases (one_off generates a step's
    batch during the step before, beside its training): the reports then label gen as the
    whole generation and show the part on the step's critical path beside it."""
    gen_waits: bool = False
    """Its `gen` phase is the trainer's wait for samples, not generation (async: rollout
    runs on its own, and a step waits for enough complete groups): the reports say so
    wherever they show gen."""
    logged_gen: bool = False
    """A framework log's gen time (veRL's and ROLL's timing_s/gen) measures its `gen`
    phase, so `rlsim fit` compares the two and fits rollout_speed from them (sync's batch
    generation; under one_off and async the log's gen is the trainer's wait for samples)."""
    multi_turn: bool = False
    """It runs multi-turn samples (workload.agentic, multi-turn or recorded rollouts)."""
    faults: tuple[FaultKind, ...] = ()
    """The fault kinds (`faults.<kind>`) it runs with."""
    job_restarts: bool = False
    """It runs trainer checkpoints and the faults that restart the job from one (fail-stop
    trainer or GPU faults, a slow trainer treated as failed)."""
    fleets: bool = False
    """A fleet scenario (kind: fleet) may run its jobs under it."""
    schedule: bool = False
    """It runs policy.schedule's options (ROLL's queue scheduling, prompt replication,
    additional prompts, zero-variance filtering), single-turn and without faults."""
    env_instances: bool = False
    """Its trajectories each hold one of env.instances for their whole life (ROLL's
    environment managers)."""
    search_space: tuple[Knob, ...] = ()
    """The policy's own knobs that `rlsim advise` may vary (policy.placement is varied
    over `placements`, not listed here)."""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"policy name {self.name!r}: use letters, digits and _")
        if not self.placements:
            raise ValueError(f"policy {self.name}: give at least one placement")
        unknown = sorted(set(self.faults) - set(FAULT_KINDS))
        if unknown:
            raise ValueError(f"policy {self.name}: unknown fault kinds {unknown}; "
                             f"kinds are {', '.join(FAULT_KINDS)}")


class PolicyView(Protocol):
    """What a declaration reads of a scenario's `policy:` section, its own settings aside
    (those it reads by name, `settings_of`)."""

    @property
    def name(self) -> str: ...

    @property
    def placement(self) -> str: ...

    @property
    def env_interaction(self) -> str: ...


class ScenarioView(Protocol):
    """What a declaration reads of a scenario (`Scenario` has all of it)."""

    @property
    def workload(self) -> WorkloadConfig: ...

    @property
    def policy(self) -> PolicyView: ...

    @property
    def faults(self) -> FaultsConfig: ...

    @property
    def recovery(self) -> RecoveryConfig: ...


Settings = TypeVar("Settings", bound=BaseModel)


def settings_of(scenario: ScenarioView, field: str, model: type[Settings]) -> Settings:
    """`scenario.policy.<field>`, which must be a `model` (a declaration's own settings)."""
    value = getattr(scenario.policy, field)
    if not isinstance(value, model):
        raise TypeError(f"policy.{field} is a {type(value).__name__}, not {model.__name__}")
    return value


def multi_turn_field(workload: WorkloadConfig) -> tuple[str, str] | None:
    """The field that makes the samples multi-turn, and what it makes them; None if single."""
    if workload.agentic is not None:
        return "workload.agentic", "multi-turn trajectories"
    if workload.trace is not None and workload.trace.format == "polytrace_multiturn":
        return "workload.trace.format", "multi-turn trajectories"
    if workload.trace is not None and workload.trace.format == "rollouts":
        return "workload.trace.format", "recorded rollouts (replayed turn by turn)"
    return None


class PolicyDeclaration:
    """A scheduling policy as the config layer knows it (the module docstring).

    The defaults fit a policy that launches exactly the batch, prompts_per_step groups of
    samples_per_prompt responses, and lags at most one step if its capabilities say
    off-policy; a policy that does otherwise overrides the facts that differ, and adds its
    own checks. A plug-in policy (which owns no `policy:` fields) usually needs none."""

    def __init__(self, caps: PolicyCaps) -> None:
        self.caps = caps

    @property
    def name(self) -> str:
        return self.caps.name

    @property
    def doc(self) -> str:
        return self.caps.doc

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # ----------------------------------------------------------------- facts
    def responses_per_prompt(self, scenario: ScenarioView) -> int:
        """The most responses it draws for one prompt: a trace must record that many
        (`check_recorded`, asked by the prepare step, so by every run and advise point)."""
        return scenario.workload.samples_per_prompt

    def samples_per_step(self, scenario: ScenarioView) -> float:
        """Responses it launches per step, over-provisioning included: the run-size
        estimate's (config/limits.py)."""
        w = scenario.workload
        return float(w.prompts_per_step) * float(w.samples_per_prompt)

    def staleness_bound(self, scenario: ScenarioView) -> int:
        """The most steps a trained sample may lag the weights that train on it."""
        return 1 if self.caps.off_policy else 0

    def cycle_steps(self, scenario: ScenarioView) -> int:
        """Steps in one period of its schedule, which `rlsim advise` covers twice after the
        warm-up: a sample trains at most the staleness bound later than it was launched, so
        the bound plus one."""
        return 1 + self.staleness_bound(scenario)

    def size_drivers(self, scenario: ScenarioView) -> dict[str, tuple[float, float]]:
        """Its settings that make a run large, each field with its value and a typical large
        run's: the run-size limit names the field furthest above it (config/limits.py)."""
        return {}

    # ----------------------------------------------------------------- checks
    def check(self, scenario: ScenarioView) -> None:
        """Raise a ScenarioError naming the field and the fix for settings it cannot run;
        `config.policy_checks.check_policy` calls it after the capability checks."""

    def check_recorded(self, scenario: ScenarioView, responses: int) -> None:
        """Raise a ScenarioError naming the field when it would draw more responses per
        prompt than the trace records (`responses`). None by default: the workload loader
        already refuses a trace with fewer than samples_per_prompt."""
