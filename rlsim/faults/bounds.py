"""Fault bounds: refuse fault rates that make a run hopeless; bound a run that never steps.

Owns `StepFloor` (lower bounds, in seconds, on a step and a request of one scenario, from
its first step's batch and the roofline of its GPUs: nothing is simulated),
`FaultEstimate` (the expected faults per step of every fault spec given by a rate, and the
expected faults in the unit of work each kind of fault voids), `check_faults`, which turns
a hopeless estimate into a one-line `ScenarioError` naming the spec's field, the estimate
and the fix, and the stall bound (`FaultEstimate.stall_s`) that
`policies.recovery.Recovery` holds the running job to.

Why a fault rate can be hopeless (docs/faults.md, "Bounds"): a fail-stop fault voids work
that then runs again from its start. If faults hit that work at rate r and it needs D
seconds, one try finishes with chance exp(-r D): M = r D, the expected faults in one unit
of work, makes it take about exp(M) tries. The unit, per fault kind:
- engine (and a rollout GPU's fault): a request in flight on the engine, decoded again from
  its start (a promoted shadow redoes at most `token_log_every` tokens);
- trainer (and a training GPU's fault, every GPU's when colocated): the steps since the last
  trainer checkpoint, the whole run without checkpoints;
- env: a trajectory's executions, replayed from its first turn under `restart`; at best
  one execution under `checkpoint` (a snapshot after every one).
Fail-slow faults slow work down without voiding it, so they never make a run hopeless
(a slow engine or trainer treated as crashed, `recovery.slow.mitigation: fail_stop`, is a
fail-stop fault); they count toward the faults per step, which bound the simulation's own
work. Explicit `times` are finite by construction and stay out of the estimate; the stall
bound still holds them.

The floors are lower bounds (the shipped scenarios' steps are 5-190x longer), so a refusal
means at least the printed number of faults. The limits against published rates:
- MAX_FAULTS_PER_UNIT = 10: a unit of work finishes with chance e^-10 (one try in 22,000).
  The harshest published setting, RobustRL's stress test (a trainer fault every 10 steps;
  ByteRobust's baseline checkpoints every 5), is M = 0.5; Llama 3's 419 interruptions in
  54 days on 16,384 GPUs (1.97e-5 per GPU-hour) give M = 0.54 for ten 10-minute steps
  between checkpoints on all of them; Belayer's injected tool-call failures (0.3-1%) are
  M = 0.09-0.3 over a 30-call trajectory. The limit is 20x the stress test.
- MAX_FAULTS_PER_STEP = 1,000 from the timed kinds (engine, trainer, link, GPU): the run
  would mostly draw faults. Published rates are under one per step (the stress test: 0.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rlsim.config.errors import ScenarioError
from rlsim.config.faults import FaultSpec
from rlsim.config.limits import format_duration
from rlsim.config.placement import Placement, resolve_placement
from rlsim.config.scenario import Scenario
from rlsim.workload import PromptGroup

MAX_FAULTS_PER_UNIT = 10.0
MAX_FAULTS_PER_STEP = 1000.0
# Runs of one environment execution before its trajectory is declared stuck (checked by
# policies.recovery as the run goes): what bounds a trajectory's replays.
MAX_ATTEMPTS = 1000
# The stall bound: no step finished in max(an hour, 20 critical paths of the first step,
# 20 of the longest step so far) simulated, times the largest fail-slow factor (a slow
# component stretches a step by up to that). The critical path counts the replays
# environment faults are expected to cost its longest sample (at most MAX_ATTEMPTS); the
# shipped scenarios' steps are 1-6.3x it (it has no queueing and decodes at the roofline;
# the Belayer scenarios' first steps at faults.scale=8: 1-4.2x), so 20 leaves room for a
# job restart and the work it redoes.
STALL_MIN_S = 3600.0
STALL_STEPS = 20.0
TIMED_KINDS = ("engine", "trainer", "link", "gpu", "node")
# What a GPU spec's fix is measured against: Llama 3's 1.97e-5 failures per GPU-hour.
REAL_GPU_MTBF_H = 50_000
# ... and per 8-GPU node (the same interruptions over 2,048 nodes: 6,335 h).
REAL_NODE_MTBF_H = 6_300


@dataclass(frozen=True)
class StepFloor:
    """Lower bounds on one step of a scenario (seconds), from its first step's batch.

    `token_s`: a decode iteration reads the engine's active weights from HBM at least once.
    `request_s`: the mean request (a turn of a multi-turn sample) decoded alone.
    `gen_s`: the batch's decoded tokens at `max_running_seqs` per iteration on every engine,
    or at the rollout GPUs' peak FLOPs if longer. `train_s`: the step's training FLOPs (6
    per parameter and token per epoch, 2 per forward pass of old/ref log-probs, the critic's
    too) at the training GPUs' peak. `step_s`: the larger of gen and train, their sum when
    colocated (the same GPUs do both in turn): every policy's step, on average.
    `critical_s`: the batch's longest sample end to end (its environment reset and
    executions, its turns decoded alone) then `train_s`: a synchronous step's floor.
    `executions`: mean environment executions per trajectory (0: single-turn samples).
    `paths`: each multi-turn sample's (seconds end to end, executions), for the critical
    path under environment faults."""

    token_s: float
    request_s: float
    gen_s: float
    train_s: float
    step_s: float
    critical_s: float
    executions: float
    paths: tuple[tuple[float, int], ...] = ()


def step_floor(scenario: Scenario, groups: Sequence[PromptGroup],
               placement: Placement | None = None) -> StepFloor:
    """The floors of `scenario`'s steps, from `groups` (its first step's batch)."""
    place = placement or resolve_placement(scenario)
    r, t = scenario.rollout, scenario.train
    rgpu, tgpu = place.rollout_pool.gpu_spec, place.train_pool.gpu_spec
    params = float(scenario.model_spec.matmul_params)
    fp8 = r.dtype == "fp8"
    token_s = params * (1 if fp8 else 2) / (r.tp * r.pp * rgpu.hbm_bandwidth)
    rollout_peak = max(rgpu.bf16_tflops, (rgpu.fp8_tflops or 0.0) if fp8 else 0.0) * 1e12
    decoded = requests = executions = samples = trained = 0
    longest = 0.0
    paths: list[tuple[float, int]] = []
    for g in groups:
        trained += sum(g.prompt_tokens + n for n in g.response_tokens)
        samples += len(g.response_tokens)
        if g.turns is None:
            decoded += sum(g.response_tokens)
            requests += len(g.response_tokens)
            longest = max(longest, max(g.response_tokens, default=0) * token_s)
            continue
        for j, turns in enumerate(g.turns):
            tokens = sum(turn.response_tokens for turn in turns)
            decoded += tokens
            requests += len(turns)
            executions += max(0, len(turns) - 1)
            reset = g.reset_s[j] if g.reset_s is not None else 0.0
            path = reset + sum(turn.env_s for turn in turns) + tokens * token_s
            paths.append((path, len(turns) - 1))
            longest = max(longest, path)
    gen_s = max(decoded / (place.engines * r.max_running_seqs) * token_s,
                2 * params * decoded / (place.rollout_gpus * rollout_peak))
    passes = 6 * t.ppo_epochs + 2 * (t.old_logprob + t.ref_logprob)
    if t.critic:
        passes += 2 + 6 * t.ppo_epochs
    train_s = passes * params * trained / (place.train_gpus * tgpu.bf16_tflops * 1e12)
    step_s = gen_s + train_s if place.colocated else max(gen_s, train_s)
    return StepFloor(token_s=token_s, request_s=decoded / requests * token_s if requests else 0.0,
                     gen_s=gen_s, train_s=train_s, step_s=step_s,
                     critical_s=max(step_s, longest + train_s),
                     executions=executions / samples if samples else 0.0, paths=tuple(paths))


@dataclass(frozen=True)
class SpecLoad:
    """The expected faults of one fault spec given by a rate."""

    field: str
    """Its rate's field: faults.gpu.0.mtbf, faults.env.0.probability."""
    kind: str
    per_step: float
    """Faults it injects in a step floor, over all its instances (env: per step's first
    try of every execution)."""
    engine_rate: float = 0.0
    """Fail-stop faults per second it brings to one engine."""
    trainer_rate: float = 0.0
    """Fail-stop faults per second it brings to the trainer."""
    env_hazard: float = 0.0
    """-ln(1 - p): expected failures of one execution, as a Poisson rate."""


@dataclass(frozen=True)
class Unit:
    """The unit of work one kind of fail-stop fault voids, and its expected faults."""

    victim: str
    """engine, trainer or env."""
    faults: float
    """M: the expected faults in one unit; a try finishes with chance exp(-M)."""
    what: str
    """The unit in words, for the message."""
    driver: SpecLoad
    """The spec that brings most of them."""


@dataclass(frozen=True)
class FaultEstimate:
    """The expected faults of a scenario's fault specs given by a rate, and its stall bound."""

    floor: StepFloor
    loads: tuple[SpecLoad, ...]
    units: tuple[Unit, ...]
    critical_s: float
    """The floor's critical path with the replays environment faults are expected to cost
    its longest sample (`StepFloor.critical_s` without environment faults)."""
    slow_factor: float
    """The largest fail-slow factor of the scenario's specs (1: none)."""
    stall_s: float
    """No step finished in this long (simulated seconds) stops the run, at first (the
    running job raises it to STALL_STEPS x its longest step x slow_factor)."""

    @property
    def per_step(self) -> float:
        return sum(x.per_step for x in self.loads)

    def driver(self, kind: str | None = None) -> str | None:
        """The field of the spec (of `kind`, if given) with the most faults per step."""
        loads = [x for x in self.loads if kind is None or x.kind == kind]
        return max(loads, key=lambda x: x.per_step).field if loads else None


def _stops(spec: FaultSpec, scenario: Scenario) -> bool:
    """Whether `spec` kills what it hits: fail-stop, or fail-slow that recovery replaces as
    crashed once noticed, before the slowdown would end."""
    slow = scenario.recovery.slow
    return spec.mode in ("stop", "hang") or (slow.mitigation == "fail_stop"
                                   and slow.detect_s < spec.duration)


def _loads(scenario: Scenario, place: Placement, floor: StepFloor) -> list[SpecLoad]:
    f = scenario.faults
    engine_gpus = scenario.rollout.tp * scenario.rollout.pp
    # GPUs are numbered over the rollout GPUs then the training ones (the same when
    # colocated, where a rollout GPU's fault hits its engine and the trainer)
    gpus = place.rollout_gpus + (0 if place.colocated else place.train_gpus)
    trainer_gpus = place.rollout_gpus if place.colocated else place.train_gpus
    # nodes an engine spans (at least its own), and the nodes holding training ranks
    engine_nodes = max(1, -(-engine_gpus // place.rollout_pool.node_size))
    trainer_nodes = place.nodes if place.colocated else place.nodes - place.rollout_nodes
    out: list[SpecLoad] = []
    counts = (place.engines, 1, 1, gpus, place.nodes)
    for kind, count in zip(TIMED_KINDS, counts, strict=True):
        for i, raw in enumerate(getattr(f, kind)):
            spec = f.scaled(raw)
            if spec is None or spec.mtbf is None:
                continue  # scaled to nothing, or explicit times
            rate = 1.0 / spec.mtbf
            engine = trainer = 0.0
            if _stops(spec, scenario):
                engine = {"engine": rate, "gpu": rate * engine_gpus,
                          "node": rate * engine_nodes}.get(kind, 0.0)
                trainer = {"trainer": rate, "gpu": rate * trainer_gpus,
                           "node": rate * trainer_nodes}.get(kind, 0.0)
            out.append(SpecLoad(f"faults.{kind}.{i}.mtbf", kind, count * rate * floor.step_s,
                                engine_rate=engine, trainer_rate=trainer))
    samples = scenario.workload.prompts_per_step * scenario.workload.samples_per_prompt
    for i, raw in enumerate(f.env):
        spec = f.scaled(raw)
        if spec is None or spec.probability is None:
            continue
        p = spec.probability  # scaled: capped at 1
        out.append(SpecLoad(f"faults.env.{i}.probability", "env",
                            samples * floor.executions * p,
                            env_hazard=math.inf if p >= 1.0 else -math.log1p(-p)))
    return out


def _units(scenario: Scenario, floor: StepFloor, loads: list[SpecLoad]) -> list[Unit]:
    rec = scenario.recovery
    units: list[Unit] = []

    def unit(victim: str, scores: list[tuple[SpecLoad, float]], what: str) -> None:
        live = [(x, m) for x, m in scores if m > 0]
        if live:
            driver = max(live, key=lambda xm: xm[1])[0]
            units.append(Unit(victim, sum(m for _, m in live), what, driver))

    request_s = floor.request_s
    what = f"a request's decode (at least {_secs(request_s)})"
    if rec.engine.scheme == "shadow":
        request_s = min(request_s, rec.engine.token_log_every * floor.token_s)
        what = f"the decode a promoted shadow redoes (at least {_secs(request_s)})"
    unit("engine", [(x, x.engine_rate * request_s) for x in loads], what)
    every = rec.trainer.checkpoint_every
    steps = every or scenario.steps
    span = steps * floor.step_s
    what = (f"the {steps} step(s) between trainer checkpoints (at least {_secs(span)})"
            if every else f"the whole run of {steps} step(s), which writes no trainer "
            f"checkpoint (at least {_secs(span)})")
    unit("trainer", [(x, x.trainer_rate * span) for x in loads], what)
    execs = _replays(scenario, floor.executions)
    if execs < floor.executions:
        what = f"the {execs:.3g} execution(s) between snapshots, at best"
    else:
        what = f"a trajectory's {execs:.3g} executions (replayed from its first turn)"
    unit("env", [(x, x.env_hazard * execs) for x in loads], what)
    return units


def _replays(scenario: Scenario, executions: float) -> float:
    """The executions a trajectory of `executions` replays when one fails, at best: all
    of them under `restart` (or no snapshots), else those since the last snapshot, which
    comes after every one (`always`), every k-th (`every_k`), or at least min_steps
    apart (`adaptive`)."""
    env = scenario.recovery.env
    cp = env.checkpoints
    if env.scheme == "restart" or cp.policy == "never":
        return executions
    return min(executions, {"always": 1, "every_k": cp.k}.get(cp.policy, cp.min_steps))


def _replayed(scenario: Scenario, floor: StepFloor, loads: list[SpecLoad]) -> float:
    """`floor.critical_s` with each sample's expected tries under environment faults:
    exp(hazard x the executions a failure replays), at most MAX_ATTEMPTS (the run stops
    a trajectory that needs more)."""
    hazard = sum(x.env_hazard for x in loads)
    if not hazard or not floor.paths:
        return floor.critical_s

    def tries(n: int) -> float:
        exposed = _replays(scenario, n)
        return min(math.exp(min(hazard * exposed, 50.0)), MAX_ATTEMPTS) if exposed else 1.0

    longest = max(path * tries(n) for path, n in floor.paths)
    return max(floor.critical_s, longest + floor.train_s)


def estimate_faults(scenario: Scenario, groups: Sequence[PromptGroup],
                    placement: Placement | None = None) -> FaultEstimate:
    """The expected faults of `scenario` (the module docstring), from `groups`, its first
    step's batch."""
    place = placement or resolve_placement(scenario)
    floor = step_floor(scenario, groups, place)
    loads = _loads(scenario, place, floor)
    f = scenario.faults
    factor = max([s.factor for kind in TIMED_KINDS for s in getattr(f, kind)
                  if s.mode == "slow"], default=1.0)
    critical = _replayed(scenario, floor, loads)
    stall = max(STALL_MIN_S, STALL_STEPS * critical) * factor
    return FaultEstimate(floor, tuple(loads), tuple(_units(scenario, floor, loads)), critical,
                         factor, stall)


def check_faults(scenario: Scenario, groups: Sequence[PromptGroup],
                 placement: Placement | None = None) -> FaultEstimate:
    """The estimate, or a ScenarioError naming the spec that makes the run hopeless: more
    than MAX_FAULTS_PER_UNIT expected faults in the work a fault voids, or more than
    MAX_FAULTS_PER_STEP faults per step. No flag lifts it: such a run does not end."""
    est = estimate_faults(scenario, groups, placement)
    scaled = " or faults.scale" if scenario.faults.scale != 1.0 else ""
    worst = max(est.units, key=lambda u: u.faults, default=None)
    if worst is not None and worst.faults > MAX_FAULTS_PER_UNIT:
        d = worst.driver
        if worst.victim == "env":
            p = -math.expm1(-d.env_hazard)
            fix = f"lower it{scaled}" + (
                "" if scenario.recovery.env.scheme == "checkpoint" else
                ", or restore snapshots (recovery.env.scheme: checkpoint)")
            if math.isinf(worst.faults):
                raise ScenarioError(d.field, f"probability {p:.3g} per execution (after "
                                    f"faults.scale) fails every execution: no trajectory "
                                    f"ever finishes; {fix}")
            lead = f"probability {p:.3g} per execution gives {_num(worst.faults)} expected " \
                f"failures in {worst.what}, each voiding it"
        else:
            rec = scenario.recovery
            restart = ("restarting the job from its first step"
                       if rec.trainer.checkpoint_every is None else
                       f"restarting the {'job' if rec.scope == 'job' else 'trainer'} from its "
                       "last checkpoint")
            lead = (f"{_num(worst.faults)} fail-stop faults expected in {worst.what}, each "
                    + ("voiding it" if worst.victim == "engine" else restart))
            fix = _raise(d, worst.faults / MAX_FAULTS_PER_UNIT, scaled)
            if worst.victim == "trainer" and scenario.recovery.trainer.checkpoint_every is None:
                fix += ", or write checkpoints (recovery.trainer.checkpoint_every)"
        raise ScenarioError(d.field, (
            f"{lead}: one try succeeds with chance e^-{_num(worst.faults)}, so the run never "
            f"ends (limit: {MAX_FAULTS_PER_UNIT:.0f}; published rates give under 1, "
            f"docs/faults.md 'Bounds'); {fix}"))
    timed = [x for x in est.loads if x.kind != "env"]
    busiest = max(timed, key=lambda x: x.per_step, default=None)
    if busiest is not None and busiest.per_step > MAX_FAULTS_PER_STEP:
        raise ScenarioError(busiest.field, (
            f"{_num(busiest.per_step)} faults per step (a step takes at least "
            f"{_secs(est.floor.step_s)}): the run would do little but draw faults (limit: "
            f"{MAX_FAULTS_PER_STEP:,.0f}; published rates give under 1, docs/faults.md "
            f"'Bounds'); {_raise(busiest, busiest.per_step / MAX_FAULTS_PER_STEP, scaled)}"))
    return est


def _raise(load: SpecLoad, by: float, scaled: str) -> str:
    """The fix of a spec given by an MTBF: longer by at least `by`."""
    real = {"gpu": f" (a real GPU fails about once per {REAL_GPU_MTBF_H:,} h)",
            "node": f" (a real 8-GPU node fails about once per {REAL_NODE_MTBF_H:,} h)",
            }.get(load.kind, "")
    return f"raise it{scaled} at least {_num(by)}x{real}"


def _secs(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds < 120 else format_duration(seconds)


def _num(x: float) -> str:
    return f"{x:.3g}" if x >= 1e4 or x < 100 else f"{x:,.0f}"
