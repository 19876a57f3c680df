"""The one door: whether a job can run, decided once, in one order.

Owns `prepare` (a loaded scenario to a `PreparedJob`, or one `ScenarioError` naming the
field, what is wrong and the fix) and `prepare_file`. Every command comes through here:
`rlsim run` and `compare` (and `check`) before anything runs, `api.simulate` (so every
sweep point, advise trial, fit and fleet job profile), and the importers, which prepare
the scenario they write. Nobody else decides whether a job can run, and nobody parses an
error's text: a stage raises with its field.

The stages, each run once, in this order:

1. **Schema**: the scenario model's validators (units, ranges, unknown keys), when the file
   or mapping is loaded (`config.loading`).
2. **The policy's own checks**: what its declaration supports (placements, multi-turn,
   faults, its settings together; `config.policy_checks`), at load.
3. **Placement**: the roles' pools and GPUs, engines of tp x pp GPUs and which GPU belongs
   to which engine or trainer rank (`config.placement.Placement`), at load for the checks
   and here for the result.
4. **Memory fit**: the engine's weights and KV cache, one longest sequence, a judge, and
   the trainer's state as the trainer prices it, resident in GPU memory and offloaded to
   host memory (`cost.job.cost_models`).
5. **Workload and trace fit**: the trace and length files read, recorded rollouts covering
   the steps, the responses per prompt the policy draws within those the trace records (its
   declaration's `check_recorded`), the longest recorded context within an engine's KV
   cache.
6. **Faults**: each explicit target an instance that exists, and the expected faults per
   step far from hopeless (`faults.bounds`).
7. **Run size**: the work within the limits (`config.limits`), unless `allow_large` (what
   no machine can represent is refused whatever the flag).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rlsim.config.errors import ScenarioError
from rlsim.config.limits import WorkEstimate, check_work
from rlsim.config.loading import load_scenario
from rlsim.config.placement import Placement, resolve_placement
from rlsim.config.policy_caps import declaration
from rlsim.config.scenario import Scenario
from rlsim.config.streams import stream
from rlsim.cost.job import CostModels, cost_models
from rlsim.workload import Workload

if TYPE_CHECKING:
    from rlsim.faults.bounds import FaultEstimate


@dataclass(frozen=True)
class PreparedJob:
    """A job that can run: its scenario, where its paths resolve, and what the stages
    found (placement, cost models with the memory fit, workload, fault estimate, size)."""

    scenario: Scenario
    base_dir: Path
    placement: Placement
    costs: CostModels
    workload: Workload
    faults: FaultEstimate | None
    work: WorkEstimate


def prepare(scenario: Scenario, base_dir: Path | None = None, *,
            allow_large: bool = True) -> PreparedJob:
    """Stages 3 to 7 (see the module docstring) of a loaded scenario: the prepared job, or
    the ScenarioError of the first stage that refuses it. `allow_large` lifts the run-size
    limits (the command line's `--allow-large`; the API's default, as before)."""
    base = base_dir or Path.cwd()
    placement = resolve_placement(scenario)
    costs = cost_models(scenario, placement)
    workload = _workload(scenario, base)
    _check_recorded(scenario, workload, costs.kv_tokens)
    _check_fault_targets(scenario, placement)
    faults = None
    if scenario.faults.any:
        from rlsim.faults.bounds import check_faults  # a job without faults skips its import

        faults = check_faults(scenario, workload.batch(0), placement)
    work = check_work(scenario, allow_large)
    return PreparedJob(scenario, base, placement, costs, workload, faults, work)


def prepare_file(path: str | Path, overrides: list[str] | None = None, *,
                 allow_large: bool = False) -> PreparedJob:
    """Load a scenario file (stages 1 to 3) and prepare it; an error names the file."""
    scenario, base = load_scenario(path, overrides)
    try:
        return prepare(scenario, base, allow_large=allow_large)
    except ScenarioError as err:
        raise ScenarioError(err.field, err.message, err.source or str(path)) from None


def _workload(scenario: Scenario, base: Path) -> Workload:
    """The scenario's workload, its trace read; a bad trace or length file is a
    ScenarioError naming the field."""
    try:
        return Workload(scenario.workload, stream(scenario.seed, "workload"), base)
    except ScenarioError:
        raise  # recorded rollouts that do not match the scenario name their own field
    except FileNotFoundError as err:
        field = "workload.trace.path" if scenario.workload.trace is not None else "workload"
        raise ScenarioError(field, str(err)) from None
    except ValueError as err:
        raise ScenarioError("workload", str(err)) from None


def _check_recorded(scenario: Scenario, workload: Workload, kv_capacity: int) -> None:
    """Recorded rollouts must cover the run's steps, the policy must draw no more responses
    per prompt than the trace records (its declaration's check), and the longest recorded
    multi-turn context must fit one engine's KV cache (single-turn lengths are bounded by the
    caps)."""
    most = workload.max_samples_per_prompt
    if most is not None:
        declaration(scenario.policy.name).check_recorded(scenario, most)
    recorded = workload.recorded_steps
    if recorded is not None and scenario.steps > recorded:
        raise ScenarioError("steps", f"the recorded rollouts have {recorded} steps but steps is "
                            f"{scenario.steps}; set steps to at most {recorded}")
    longest = workload.longest_sequence_tokens(scenario.steps) or 0
    if longest > kv_capacity:
        raise ScenarioError(
            "rollout.tp", f"a recorded multi-turn sample reaches {longest} tokens of context "
            f"(prompt + turns + observations), more than an engine's KV cache ({kv_capacity} "
            "tokens); raise rollout.tp or gpu_memory_utilization")


def _check_fault_targets(scenario: Scenario, placement: Placement) -> None:
    """Each explicit fault target names an instance that exists (`Placement.instances`)."""
    f = scenario.faults
    for kind in ("engine", "trainer", "link", "gpu", "node"):
        count = placement.instances(kind)
        for si, spec in enumerate(getattr(f, kind)):
            if spec.times and max(spec.targets) >= count:
                what = {"engine": "engines", "trainer": "trainers", "link": "links",
                        "gpu": "GPUs that faults hit", "node": "nodes"}[kind]
                raise ScenarioError(
                    f"faults.{kind}.{si}.targets", f"instance {max(spec.targets)} does not "
                    f"exist: the scenario has {count} {what} (0 to {count - 1})")
