"""The settings `rlsim advise` chooses among: one job, every way rlsim can run it.

Owns the search space of one scenario: which policies, their placements, the rollout/train
GPU split, the rollout tensor parallelism and maximum running sequences, and each policy's
own knobs (`PolicyCaps.search_space`, in each policy's declaration, config/policies/); and
the valid points in it.

The job is held fixed: its model, workload and total GPUs (`--gpus`, default the scenario's)
on the scenario's GPU type. Every point runs those GPUs as one pool, colocated or split
between rollout and training, so no point silently runs the job on fewer GPUs. A point is
valid when its scenario loads and passes the prepare step every run goes through
(rlsim/prepare.py: placement, memory fit, workload and trace, faults), and it meets the
static constraints (cost per hour; the staleness bound a policy's settings imply, asked of
the policy's declaration); invalid points are counted with their reasons and never simulated.

A point is a `Config`, an ordered tuple of (parameter, value); its overrides are `--set`
assignments on the scenario file's mapping. The space is a tree walked in one order by both
the exhaustive grid (`Space.grid`) and the search (`Space.suggest`, an optuna trial), so both
cover exactly the same points.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsim.advise.objectives import Constraint
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.config.policy_caps import Knob, KnobValue, declaration, declared, lookup
from rlsim.config.scenario import Scenario
from rlsim.prepare import prepare

Config = tuple[tuple[str, KnobValue], ...]

POLICY, PLACEMENT, ROLLOUT_GPUS = "policy", "placement", "rollout_gpus"
TP, SEQS = "rollout.tp", "rollout.max_running_seqs"
SEQS_CHOICES = (128, 256, 512)  # vLLM's max_num_seqs default (256), halved and doubled
RANGE_LEVELS = 3  # a knob given as a range is tried at its ends and middle
POOL = "cluster"  # the one pool every point runs on


def config_key(config: Config) -> str:
    """A config as canonical text (the key its results are stored under)."""
    return json.dumps([[k, v] for k, v in config])


def config_from_key(key: str) -> Config:
    return tuple((k, v) for k, v in json.loads(key))


def knob_values(knob: Knob) -> tuple[KnobValue, ...]:
    """The values tried for a knob: its choices, or RANGE_LEVELS points of its range."""
    if knob.choices:
        return knob.choices
    assert knob.low is not None and knob.high is not None
    step = (knob.high - knob.low) / (RANGE_LEVELS - 1)
    return tuple(round(knob.low + i * step, 6) for i in range(RANGE_LEVELS))


@dataclass
class Space:
    """The valid points of one job (see the module docstring)."""

    data: dict[str, Any]  # the scenario file's mapping, --set applied
    job: Scenario  # the scenario loaded from it
    base_dir: Path
    source: str
    gpus: int
    node_size: int
    gpu_type: str
    pool: dict[str, Any]  # what the scenario's pools share (gpu, profile, price...)
    steps: int
    policies: tuple[str, ...]
    splits: tuple[int, ...]  # rollout GPUs of a disaggregated point
    tps: tuple[int, ...]
    seqs: tuple[int, ...]
    constraints: tuple[Constraint, ...] = ()
    invalid: Counter[str] = field(default_factory=Counter)  # reason -> points
    _valid: dict[Config, bool] = field(default_factory=dict)

    # ----------------------------------------------------------------- the tree
    def _walk(self, choose: Callable[[str, Sequence[KnobValue]], KnobValue]) -> Config:
        """One point, each parameter's value picked by `choose(name, choices)`."""
        out: list[tuple[str, KnobValue]] = []
        policy = str(choose(POLICY, self.policies))
        out.append((POLICY, policy))
        pc = declaration(policy).caps
        placement = str(choose(f"{policy}.{PLACEMENT}", pc.placements)) \
            if len(pc.placements) > 1 else pc.placements[0]
        out.append((PLACEMENT, placement))
        if placement == "disaggregated":
            out.append((ROLLOUT_GPUS, choose(ROLLOUT_GPUS, self.splits)))
        out.append((TP, choose(TP, self.tps)))
        out.append((SEQS, choose(SEQS, self.seqs)))
        for knob in pc.search_space:
            out.append((knob.field, choose(knob.field, knob_values(knob))))
        return tuple(out)

    def grid(self) -> Iterator[Config]:
        """Every point of the space, valid or not, in a fixed order."""
        def expand(prefix: dict[str, KnobValue]) -> Iterator[Config]:
            pending: list[tuple[str, Sequence[KnobValue]]] = []

            def choose(name: str, choices: Sequence[KnobValue]) -> KnobValue:
                if name in prefix:
                    return prefix[name]
                pending.append((name, choices))
                return choices[0]

            config = self._walk(choose)
            if not pending:
                yield config
                return
            name, choices = pending[0]
            for value in choices:
                yield from expand({**prefix, name: value})

        yield from expand({})

    def params(self, config: Config) -> dict[str, KnobValue]:
        """The optuna parameters (the tree's names) that propose `config`."""
        values = dict(config)
        out: dict[str, KnobValue] = {}

        def choose(name: str, choices: Sequence[KnobValue]) -> KnobValue:
            out[name] = values[PLACEMENT if name.endswith(f".{PLACEMENT}") else name]
            return out[name]

        self._walk(choose)
        return out

    def suggest(self, trial: Any) -> Config:
        """The point an optuna trial proposes (the parameters' names are the tree's)."""
        return self._walk(lambda name, choices: trial.suggest_categorical(name, list(choices)))

    # ----------------------------------------------------------------- points
    def overrides(self, config: Config, seed: int | None = None) -> list[str]:
        """The `--set` assignments that make the scenario file run `config`."""
        values = dict(config)
        pool = {"name": POOL, **self.pool, "nodes": self.gpus // self.node_size}
        out = [f"pools={json.dumps([pool])}", f"rollout.pool={POOL}", f"train.pool={POOL}",
               f"steps={self.steps}", f"policy.name={values[POLICY]}",
               f"policy.placement={values[PLACEMENT]}"]
        if values[PLACEMENT] == "disaggregated":
            k = int(values[ROLLOUT_GPUS])
            out += [f"rollout.gpus={k}", f"train.gpus={self.gpus - k}"]
        else:
            out += ["rollout.gpus=null", "train.gpus=null"]
        for name, value in config:
            if name in (POLICY, PLACEMENT, ROLLOUT_GPUS):
                continue
            out.append(f"{name}={json.dumps(value)}")
        if seed is not None:
            out.append(f"seed={seed}")
        return out

    def scenario(self, config: Config) -> Scenario:
        scenario, _ = scenario_from_dict(self.data, self.overrides(config), self.base_dir,
                                         self.source)
        return scenario

    def policy_view(self, config: Config) -> Scenario:
        """The job's scenario under `config`'s policy and knob values, unvalidated: what the
        policy's declaration is asked about a point before the point's own scenario is
        built (a validation and the memory fit)."""
        name = str(dict(config)[POLICY])
        fields = {k.field for k in declaration(name).caps.search_space}
        return _with(self.job, [("policy.name", name),
                                *((k, v) for k, v in config if k in fields)])

    def staleness_bound(self, config: Config) -> float:
        """The most steps a sample may lag the weights under `config` (its policy's bound)."""
        return declaration(str(dict(config)[POLICY])).staleness_bound(self.policy_view(config))

    def why_invalid(self, config: Config) -> str | None:
        """Why `config` cannot run (one line), or None if it can."""
        for c in self.constraints:
            if c.figure == "staleness" and c.op == "<=" and self.staleness_bound(config) > c.bound:
                return f"constraint {c.text()}: the policy's staleness bound is above it"
        try:
            scenario = self.scenario(config)
            prepare(scenario, self.base_dir)  # the door every run goes through
        except ScenarioError as err:
            return ScenarioError(err.field, err.message).line().replace("\n", " ")
        for c in self.constraints:
            if c.figure == "usd_per_hour":
                usd = sum(p.gpus * (p.price or 0.0) for p in scenario.pools)
                if not c.holds({"usd_per_hour": usd}):
                    return f"constraint {c.text()}: the job's GPUs cost {usd:g} $/h"
        return None

    def valid(self, config: Config) -> bool:
        """Whether `config` can run (each point checked once; reasons counted)."""
        known = self._valid.get(config)
        if known is None:
            why = self.why_invalid(config)
            known = self._valid[config] = why is None
            if why is not None:
                self.invalid[why] += 1
        return known

    def valid_grid(self) -> list[Config]:
        return [c for c in self.grid() if self.valid(c)]


def _with(scenario: Scenario, values: Iterable[tuple[str, KnobValue]]) -> Scenario:
    """`scenario` with these dotted fields set, unvalidated (`Space.policy_view`)."""
    out = scenario
    for name, value in values:
        out = _set(out, name.split("."), value)
    return out


def _set(model: Any, path: list[str], value: Any) -> Any:
    head = path[0]
    new = _set(getattr(model, head), path[1:], value) if len(path) > 1 else value
    return model.model_copy(update={head: new})


def longest_cycle(scenario: Scenario, name: str) -> int:
    """The longest cycle, in steps, of policy `name` over the values its knobs take in the
    space (async's: alpha + 1 at its largest alpha)."""
    policy = declaration(name)
    fields = [k.field for k in policy.caps.search_space]
    points = itertools.product(*(knob_values(k) for k in policy.caps.search_space))
    return max(policy.cycle_steps(_with(scenario, [("policy.name", name),
                                                   *zip(fields, values, strict=True)]))
               for values in points)


def _gpu_name(pool: dict[str, Any]) -> str:
    gpu = pool.get("gpu")
    return gpu if isinstance(gpu, str) else str((gpu or {}).get("name", ""))


def build_space(data: dict[str, Any], scenario: Scenario, base_dir: Path, source: str,
                policies: Sequence[str] | None, gpus: int | None,
                constraints: Sequence[Constraint], steps: int | None) -> Space:
    """The space of the job in `scenario` (`data`: its mapping with --set applied)."""
    pools = scenario.pools
    raw = [p for p in data.get("pools", []) if isinstance(p, dict)]
    shared = [{k: v for k, v in p.items() if k not in ("name", "nodes")} for p in raw]
    if not shared or any(s != shared[0] for s in shared) or not _gpu_name(shared[0]):
        raise ScenarioError("pools", "advise runs the job as one pool of one GPU type: give "
                            "every pool the same gpu (and profile, price, GPUs per node)")
    gpu_type = _gpu_name(shared[0])
    node = pools[0].node_size
    total = gpus if gpus is not None else sum(p.gpus for p in pools)
    if total <= 0 or total % node:
        raise ScenarioError("--gpus", f"must be a positive multiple of the {node} GPUs per "
                            f"node, got {total}")
    names = tuple(policies) if policies else tuple(c.name for c in declared())
    for name in names:
        if lookup(name) is None:
            raise ScenarioError("--policies", f"unknown policy {name!r}; choose among "
                                f"{', '.join(c.name for c in declared())}")
    # Rollout GPUs of a split: eighths of the job from a quarter to three quarters.
    step = max(1, total // 8)
    splits = tuple(sorted({k for k in range(step, total, step) if total / 4 <= k <= 3 * total / 4}))
    # TP inside one NVLink domain (a node, or a GB200 rack of trays).
    domain = pools[0].nvlink_domain
    tps = tuple(t for t in (1, 2, 4, 8, 16) if t <= max(domain, 8) and t <= total)
    # Cover the longest cycle twice after the warm-up (two steps at least, one_off's, so that
    # the steps do not depend on which policies are compared).
    cycle = max([2, *(longest_cycle(scenario, name) for name in names)])
    need = scenario.output.warmup_steps + 2 * cycle
    if steps is not None and steps < need:
        raise ScenarioError("--steps", f"must be at least {need} (the warm-up and the "
                            f"longest policy cycle, {cycle} steps, twice), got {steps}")
    return Space(data=data, job=scenario, base_dir=base_dir, source=source, gpus=total,
                 node_size=node, gpu_type=gpu_type, pool=shared[0],
                 steps=steps or max(scenario.steps, need), policies=names, splits=splits,
                 tps=tps, seqs=SEQS_CHOICES, constraints=tuple(constraints))


def describe(config: Config) -> str:
    """A config in a line: `async, disaggregated 32+32, tp 4, 256 seqs, alpha 2, ...`."""
    values = dict(config)
    parts = [str(values[POLICY]), str(values[PLACEMENT])]
    if ROLLOUT_GPUS in values:
        parts[-1] += f" (rollout {values[ROLLOUT_GPUS]} GPUs)"
    parts.append(f"rollout tp {values[TP]}")
    parts.append(f"{values[SEQS]} running seqs")
    for name, value in config:
        if name.startswith("policy."):
            parts.append(f"{name.rsplit('.', 1)[-1]} {value}")
    return ", ".join(parts)
