"""The scenario checks of a policy: its capabilities', then its declaration's own.

Owns `check_policy`, which raises a `ScenarioError` naming the field and the fix when a
scenario asks its policy for what the policy's `PolicyCaps` does not list (a placement,
multi-turn samples, a fault kind, trainer checkpoints or job restarts, schedule options,
environment instances), then runs the checks its declaration adds
(`PolicyDeclaration.check`: settings it cannot combine). No policy name is written here:
every answer comes from the declaration (config/policy_caps.py), so a plug-in policy is
checked exactly as a shipped one. `check_placement` calls it when a scenario is loaded; the
check that needs the trace read (`PolicyDeclaration.check_recorded`: responses per prompt
against what the trace records) is the prepare step's (rlsim/prepare.py).
"""

from __future__ import annotations

from rlsim.config.errors import ScenarioError
from rlsim.config.policies.declaration import multi_turn_field
from rlsim.config.policy_caps import FAULT_KINDS, PolicyCaps, declaration, supporting
from rlsim.config.scenario import Scenario


def _alternatives(names: list[str], word: str) -> str:
    """'a', 'a or b', 'a, b or c' (word: 'or' / 'and')."""
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} {word} {names[-1]}"


def _restart_field(scenario: Scenario) -> str | None:
    """The field that asks for trainer checkpoints or a job restart; None if none does."""
    f, r = scenario.faults, scenario.recovery
    if any(x.mode == "stop" for x in f.trainer):
        return "faults.trainer"
    if f.gpu:
        return "faults.gpu"
    if f.node:
        return "faults.node"
    if r.trainer.checkpoint_every is not None:
        return "recovery.trainer.checkpoint_every"
    if f.trainer and r.slow.mitigation == "fail_stop":
        return "recovery.slow.mitigation"
    return None


def _check_placement(scenario: Scenario, c: PolicyCaps) -> None:
    if scenario.policy.placement in c.placements:
        return
    why = f" ({c.placement_why})" if c.placement_why else ""
    raise ScenarioError(
        "policy.placement", f"{c.name} runs {_alternatives(list(c.placements), 'or')} only"
        f"{why}; set policy.placement={c.placements[0]}")


def _check_multi_turn(scenario: Scenario, c: PolicyCaps) -> None:
    found = multi_turn_field(scenario.workload)
    if c.multi_turn or found is None:
        return
    field, what = found
    able = supporting(lambda x: x.multi_turn)
    raise ScenarioError(field, f"{c.name} runs single-turn responses only; {what} need "
                        f"policy.name: {_alternatives(able, 'or')}")


def _check_faults(scenario: Scenario, c: PolicyCaps) -> None:
    restart = _restart_field(scenario)
    if restart is not None and not c.job_restarts:
        able = supporting(lambda x: x.job_restarts)
        raise ScenarioError(
            restart, "trainer checkpoints and faults that restart the job (fail-stop "
            "trainer or GPU faults, a slow trainer treated as failed) need policy.name: "
            f"{_alternatives(able, 'or')}; {c.name} does not restart the job")
    for kind in FAULT_KINDS:
        if getattr(scenario.faults, kind) and kind not in c.faults:
            raise ScenarioError(f"faults.{kind}", f"{c.name} runs no {kind} faults so far; "
                                f"{_who_runs(kind)}drop faults.{kind}")


def _who_runs(kind: str) -> str:
    """The policies that run faults of `kind`, as the start of the fix."""
    able = supporting(lambda x: kind in x.faults)
    if len(able) > 1:
        return f"policies {_alternatives(able, 'and')} do: set policy.name: {able[0]} or "
    if able:
        return f"policy {able[0]} does: set policy.name: {able[0]} or "
    return "no policy does: "


def _check_schedule(scenario: Scenario, c: PolicyCaps) -> None:
    sched = scenario.policy.schedule
    if sched == type(sched)():
        return
    if not c.schedule:
        able = supporting(lambda x: x.schedule)
        raise ScenarioError("policy.schedule", f"{c.name} has no rollout schedule options; "
                            f"drop policy.schedule or set policy.name: "
                            f"{_alternatives(able, 'or')}")
    found = multi_turn_field(scenario.workload)
    if found is not None:
        raise ScenarioError("policy.schedule", f"the schedule options run single-turn "
                            f"responses only so far; drop policy.schedule or {found[0]}")
    # trainer checkpoints alone are fine (written between steps; nothing restarts): what
    # the schedule's own processes cannot survive yet is a job restart
    f = scenario.faults
    kinds = [k for k in FAULT_KINDS if getattr(f, k)]
    if kinds:
        raise ScenarioError(f"faults.{kinds[0]}", "the schedule options run without faults "
                            "so far; drop policy.schedule or the faults")


def _check_env_instances(scenario: Scenario, c: PolicyCaps) -> None:
    if scenario.env.instances is None or c.env_instances:
        return
    able = supporting(lambda x: x.env_instances)
    raise ScenarioError("env.instances", f"{c.name} does not cap live trajectories by "
                        f"environment instances; drop env.instances or set policy.name: "
                        f"{_alternatives(able, 'or')}")


def check_policy(scenario: Scenario) -> None:
    """Raise a ScenarioError if the scenario asks its policy for what the policy's
    capabilities do not list or its declaration cannot run (see the module docstring)."""
    try:
        policy = declaration(scenario.policy.name)
    except KeyError as err:
        raise ScenarioError("policy.name", str(err.args[0])) from None
    c = policy.caps
    _check_placement(scenario, c)
    _check_multi_turn(scenario, c)
    _check_faults(scenario, c)
    _check_schedule(scenario, c)
    _check_env_instances(scenario, c)
    policy.check(scenario)
