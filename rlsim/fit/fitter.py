"""Fit a scenario's framework knobs to a measured run: `fit(scenario, run) -> FitResult`.

Owns what a fit does with a `MeasuredRun` (`rlsim.fit.logs`), in four parts:

1. **Lengths replayed.** The kept steps' response (and prompt) length statistics become the
   workload's length distributions (`replay_lengths`): a lognormal with the measured mean
   whose median maximum over one step's samples is the measured maximum (closed form in
   `lognormal_from_mean_max`), clipped at the scenario's caps like any other draw.
2. **What the log identifies.** Each knob of `framework` (docs/cost-model.md, "Fitted
   framework knobs") mainly moves one measured quantity, and is fitted only when the log
   times it: `train_speed` the trainer passes (update_actor, old_log_prob / ref / values),
   `rollout_speed` gen (only under policy sync, where the log's gen is generation and not
   the trainer's wait for samples), `weight_sync_overhead` update_weights,
   `update_overhead` what update_actor pays beyond the log-prob passes' rate (only when the
   log times both), `switch_overhead` a colocated veRL gen less its generate_sequences,
   `step_overhead` the step (it takes up the step's remainder: what the logged phases leave
   out). Each is paid by the part of the job that pays it in the real framework, so a fit
   on one placement or policy carries to another: the switch only colocated, the
   controller's and the update's costs serially, the engines' speed where they run. A log
   that times only the step fits one `speed` of the trainer and the engines together
   (`SPEED`), not `step_overhead`. `micro_batch_overhead` is never fitted (a log times
   whole passes, so it cannot be told from `train_speed`). Every other knob keeps its
   value, and the result says why.
3. **The fit.** Residuals `(simulated - measured) / measured` over the compared phases and
   the step, minimised by `scipy.optimize.least_squares` (trust-region reflective, within
   the schema's bounds, Jacobian by forward differences over short rlsim runs of
   `steps` steps, the first a warm-up, all with the scenario's seed: common random numbers,
   so a knob's change moves the residuals smoothly; each step is 1e-3 of the knob's scale,
   so an overhead at 0 moves too). The start is near the answer: each
   speed scaled by its phase's simulated-to-measured ratio, each overhead by its phase's
   (or the step's) difference, over two rounds, so the solver needs few iterations.
4. **Uncertainty.** 95% normal intervals from the Jacobian at the solution:
   `cov = s^2 (J^T J)^-1`, with `s^2` the larger of the residuals' variance (`SSR / (m -
   n)`, n the knobs not held at a bound, when there are more residuals) and the
   measurement's own (the relative
   standard error of each compared median over the kept steps, `1.2533 sd / (median
   sqrt(k))`, averaged). Linearised and normal: an approximation, said as such. A
   prediction outside the fitted regime (another policy, placement, GPU count or split,
   GPU type or model) widens the step's interval by `REGIME_CHANGE_REL` per change
   (`regime_warning`, `prediction_uncertainty`).

SimPy runs happen through `rlsim.api.simulate`; nothing here reads files (the CLI reads the
log, `rlsim.fit.report` writes the outputs).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import brentq, least_squares
from scipy.stats import norm

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import rebase_paths
from rlsim.config.policy_caps import declaration
from rlsim.config.regime import (  # noqa: F401  (re-exported: callers import them here)
    REGIME_CHANGE_REL,
    Regime,
    regime_changes,
    regime_of,
    regime_warning,
)
from rlsim.config.scenario import FrameworkConfig, Scenario
from rlsim.fit.logs import MeasuredRun, StepRecord, summary

DEFAULT_SIM_STEPS = 4
"""Steps of each simulation the fit runs: one warm-up and three measured (a short run keeps
a fit's dozens of simulations fast; the lengths are drawn afresh each step)."""

Z95 = float(norm.ppf(0.975))
"""The 95% two-sided normal quantile (1.96)."""

MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)
"""Standard error of a median over that of a mean, for normal data (1.2533)."""

KNOB_PHASE = {
    "train_speed": "trainer passes (update_actor, old_log_prob, ref, values)",
    "rollout_speed": "gen",
    "weight_sync_overhead": "update_weights",
    "step_overhead": "step",
    "switch_overhead": "the colocated switch (veRL's gen less its generate_sequences)",
    "update_overhead": "update_actor (beside the log-prob passes, which do not pay it)",
    "micro_batch_overhead": "trainer passes",
    "speed": "the whole step (trainer and engines together)",
}
"""What each knob mainly moves, for the report."""

SPEED = "speed"
"""A log that times only the step identifies one number. It is fitted as one speed of the
trainer and the engines together (`train_speed` = `rollout_speed`), not as a serial
`step_overhead`: rlsim's misses on such runs are in its compute phases (reports/real-runs.md,
'Where the error is'), and a speed carries over to policies that overlap those phases, where
a serial overhead would be paid again in full."""


def _framework_value(framework: FrameworkConfig, name: str) -> float:
    return float(framework.train_speed if name == SPEED else getattr(framework, name))


@dataclass(frozen=True)
class Comparison:
    """One measured quantity against the rlsim phases that price the same work."""

    name: str              # gen | switch | logprob | update_actor | update_weights | step
    measured_keys: tuple[str, ...]   # the log's canonical phases, summed
    sim_phases: tuple[str, ...]      # rlsim's phase_time_s entries, summed ("step": the step)
    minus_keys: tuple[str, ...] = ()  # the log's phases inside those, subtracted

    def logged_in(self, phases_s: dict[str, float]) -> bool:
        """Whether a step record (or the medians) holds every key this compares."""
        return all(k in phases_s for k in (*self.measured_keys, *self.minus_keys))

    def measured_s(self, phases_s: dict[str, float]) -> float:
        """The measured seconds this compares, from a step's (or the median) phases."""
        return (sum(phases_s[k] for k in self.measured_keys)
                - sum(phases_s[k] for k in self.minus_keys))


@dataclass
class PhaseFit:
    """Measured against simulated seconds of one compared quantity (per step)."""

    name: str
    measured_s: float
    simulated_before_s: float
    simulated_s: float
    measured_keys: tuple[str, ...]
    sim_phases: tuple[str, ...]
    steps: int  # kept steps that logged it
    minus_keys: tuple[str, ...] = ()  # the log's phases subtracted from measured_keys'

    @property
    def residual_before(self) -> float:
        return (self.simulated_before_s - self.measured_s) / self.measured_s

    @property
    def residual(self) -> float:
        return (self.simulated_s - self.measured_s) / self.measured_s


@dataclass
class ParamFit:
    """One fitted knob: its value, 95% interval and what bounded it."""

    name: str
    value: float
    ci95: tuple[float, float] | None  # None: no interval could be estimated (see `note`)
    bounds: tuple[float, float]
    default: float
    initial: float  # where the solver started
    start: float    # the input scenario's value
    at_bound: bool
    note: str = ""


@dataclass
class FitResult:
    """Everything a fit found, for the report, the JSON and the fitted scenario."""

    source: str                       # the log's path
    log_format: str
    steps_kept: list[int]
    steps_dropped: dict[int, str]
    regime: Regime
    params: dict[str, ParamFit]
    unidentified: dict[str, str]      # knob -> why the log cannot fit it
    phases: dict[str, PhaseFit]       # compared phases, without the step
    step: PhaseFit
    step_ci95_rel: float | None       # the step's 95% relative half-width from the knobs' CIs
    replayed: dict[str, Any]          # what the lengths became, and from what
    scenario: dict[str, Any]          # the fitted scenario (input + framework + lengths)
    input_name: str
    sim_steps: int
    simulations: int
    solver: dict[str, Any]
    noise: dict[str, Any]             # how s^2 was estimated
    notes: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)  # log vs scenario, fitted by --force
    implausible: list[str] = field(default_factory=list)  # fitted values to distrust

    def fitted_scenario(self) -> Scenario:
        return Scenario.model_validate(self.scenario)


# --------------------------------------------------------------------------------------------
# Lengths


def median_max_z(n: int) -> float:
    """The median of the largest of `n` independent standard normal draws:
    P(max <= z) = Phi(z)^n = 1/2, so z = Phi^-1(2^(-1/n))."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return float(norm.ppf(0.5 ** (1.0 / n)))


def lognormal_from_mean_max(mean: float, largest: float, n: int,
                            cap: float | None = None,
                            clip_ratio: float | None = None) -> tuple[float, float, str]:
    """(median, sigma, how) of the lognormal whose mean is `mean` and whose median maximum
    over `n` samples is `largest`, the samples clipped at `cap`.

    Unclipped (`largest` < `cap`): ln(length) ~ N(mu, sigma^2) has mean exp(mu + sigma^2/2),
    and its largest of n draws is exp(mu + sigma z) with z the largest standard normal
    (exp is monotone), whose median is `median_max_z(n)`. Subtracting the two logs:
    sigma^2 / 2 - z sigma + ln(largest / mean) = 0, so

        sigma = z - sqrt(z^2 - 2 ln(largest / mean)),   median = mean exp(-sigma^2 / 2)

    (the smaller root: the larger one puts the mean in the far tail). A ratio above
    exp(z^2 / 2) is beyond any lognormal's median maximum: sigma = z, and `how` says so.

    Clipped (`clip_ratio` > 0: the run's own cap is the measured max; or `largest` reaches
    `cap`): the clip point C sits at the quantile q of the clipped share, q = Phi^-1(1 -
    clip_ratio) (no clip_ratio: q = z, C is where the maximum would be), so mu = ln(C) -
    sigma q, and the measured mean is the clipped mean E[min(X, C)] = C (exp(sigma^2/2 -
    sigma q) Phi(q - sigma) + 1 - Phi(q)), solved for sigma (Brent's method; one root, the
    clipped mean falls as sigma grows).
    """
    if mean <= 0 or largest <= 0:
        raise ValueError(f"lengths must be > 0, got mean {mean}, max {largest}")
    if n < 2:
        raise ValueError(f"a step needs at least 2 samples to tell a spread, got {n}")
    z = median_max_z(n)
    by_ratio = clip_ratio is not None and clip_ratio > 0
    if not by_ratio and (cap is None or largest < cap):
        ratio = largest / mean
        if ratio <= 1.0 + 1e-9:
            return mean, 0.0, "max equals mean: a fixed length"
        r = math.log(ratio)
        disc = z * z - 2.0 * r
        if disc < 0:
            return mean * math.exp(-z * z / 2), z, (
                f"max/mean {ratio:.2f} is beyond a lognormal's median maximum over {n} "
                f"samples (exp(z^2/2) = {math.exp(z * z / 2):.2f}): sigma set to z = {z:.3f}")
        sigma = z - math.sqrt(disc)
        return mean * math.exp(-sigma * sigma / 2), sigma, (
            f"mean and max closed form, z = {z:.3f} for {n} samples")
    c_top = largest if by_ratio or cap is None else float(cap)
    if mean >= c_top:
        return c_top, 0.0, "mean at the cap: every response clipped, a fixed length"
    if clip_ratio is not None and clip_ratio > 0:
        q = float(norm.ppf(1.0 - min(clip_ratio, 1.0 - 1e-9)))
        how = f"clipped at the max {c_top:g} with clip_ratio {clip_ratio:.3g} (q = {q:.3f})"
    else:
        q = z
        how = (f"max at the cap {c_top:g}, no clip_ratio logged: cap taken as the median "
               f"max (q = z = {q:.3f}); the tail beyond the cap is a lower bound")
    tail = 1.0 - float(norm.cdf(q))

    def clipped_mean(sigma: float) -> float:
        return c_top * (math.exp(sigma * sigma / 2 - sigma * q) * float(norm.cdf(q - sigma))
                        + tail)

    lo, hi = 1e-6, 8.0
    if clipped_mean(hi) >= mean:  # even sigma 8 leaves the mean above the measured one
        sigma = hi
        how += "; sigma at its search bound 8"
    elif clipped_mean(lo) <= mean:
        sigma = lo
    else:
        sigma = float(brentq(lambda s: clipped_mean(s) - mean, lo, hi, xtol=1e-10))
    return c_top * math.exp(-sigma * q), sigma, how


def _length_dist(mean: float, largest: float | None, n: int, cap: int,
                 clip_ratio: float | None, keep_sigma: float | None) -> tuple[dict[str, Any],
                                                                            str]:
    """A workload length distribution (a scenario dict) and how it was derived."""
    if largest is None:
        sigma = keep_sigma if keep_sigma is not None else 1.0
        source = "the scenario's" if keep_sigma is not None else "1.0 (no max logged, no " \
            "lognormal in the scenario: a documented choice)"
        return ({"dist": "lognormal", "median": mean * math.exp(-sigma * sigma / 2),
                 "sigma": sigma},
                f"mean only: lognormal with the measured mean and sigma {sigma:.3f} from "
                f"{source}")
    median, sigma, how = lognormal_from_mean_max(mean, largest, n, cap, clip_ratio)
    if sigma <= 0:
        return {"dist": "fixed", "value": max(1, round(median))}, how
    return {"dist": "lognormal", "median": median, "sigma": sigma}, how


def replay_lengths(scenario: Scenario, stats: dict[str, Any]) -> tuple[dict[str, Any],
                                                                        dict[str, Any]]:
    """The scenario's `workload` (a dict) with the measured lengths, and what was replayed.

    `stats` is `rlsim.fit.logs.summary(run)`: `response_len` / `prompt_len` medians over the
    kept steps of each step's mean, max, clip_ratio. The response maximum is over a step's
    `prompts_per_step x samples_per_prompt` responses, the prompt maximum over its
    `prompts_per_step` prompts. Not replayed (and said why): multi-turn workloads (a logged
    response length counts a whole trajectory), task mixes (one logged distribution cannot
    be split), recorded rollouts (they hold every sample's lengths already)."""
    w = scenario.workload
    out = w.model_dump(mode="json")
    replayed: dict[str, Any] = {}
    resp, prompt = stats.get("response_len", {}), stats.get("prompt_len", {})
    why_not = None
    if w.agentic is not None:
        why_not = ("multi-turn trajectories: the log's response length counts a whole "
                   "trajectory, rlsim's response_len one turn")
    elif w.tasks is not None:
        why_not = "a task mix: one logged distribution cannot be split among the tasks"
    elif w.trace is not None and w.trace.format != "polytrace":
        why_not = f"recorded lengths (trace format {w.trace.format}) are kept"
    for kind, logged, cap, n in (
            ("response_len", resp, w.max_response_len, w.prompts_per_step * w.samples_per_prompt),
            ("prompt_len", prompt, w.max_prompt_len, w.prompts_per_step)):
        if why_not is not None:
            replayed[kind] = {"replayed": False, "why": why_not}
            continue
        if "mean" not in logged or logged["mean"] <= 0:
            replayed[kind] = {"replayed": False,
                              "why": f"the log has no {kind.replace('_len', '')} length mean"}
            continue
        current = getattr(w, kind)
        keep_sigma = current.sigma if current is not None and getattr(
            current, "dist", "") == "lognormal" else None
        largest = logged.get("max")
        clip = logged.get("clip_ratio")
        field_name = "max_response_len" if kind == "response_len" else "max_prompt_len"
        if largest is not None and largest > cap:
            replayed.setdefault("notes", []).append(
                f"measured {kind} max {largest:g} exceeds workload.{field_name} {cap}: "
                "the replayed lengths clip at the scenario's cap")
        elif largest is not None and clip is not None and clip > 0 and largest < cap - 1:
            replayed.setdefault("notes", []).append(
                f"the log clips {kind} at {largest:g} tokens (clip_ratio {clip:.3g}) but "
                f"workload.{field_name} is {cap}: the replayed lengths clip at the "
                f"scenario's cap; set workload.{field_name} to the run's value")
        if n < 2:
            largest = None
        dist, how = _length_dist(float(logged["mean"]),
                                 None if largest is None else float(largest), n, cap,
                                 None if clip is None else float(clip), keep_sigma)
        out[kind] = dist
        replayed[kind] = {"replayed": True, "dist": dist, "how": how,
                          "measured": {k: float(v) for k, v in logged.items()},
                          "samples_per_step": n, "cap": cap}
    if any(v.get("replayed") for v in replayed.values() if isinstance(v, dict)) and (
            w.trace is not None):
        out["trace"] = None
        replayed.setdefault("notes", []).append(
            f"the trace {w.trace.path} is replaced by the measured lengths")
    return out, replayed


# --------------------------------------------------------------------------------------------
# What the log identifies


def _comparisons(scenario: Scenario, measured: dict[str, float], framework: str,
                 notes: list[str]) -> list[Comparison]:
    """The measured quantities rlsim can price, with the keys summed on each side."""
    t = scenario.train
    out: list[Comparison] = []

    def logged(key: str) -> bool:
        return measured.get(key, 0.0) > 0

    if logged("gen"):
        if declaration(scenario.policy.name).caps.logged_gen:
            out.extend(_gen_comparisons(scenario, measured, framework, notes))
        else:
            notes.append(f"gen is not compared: under policy {scenario.policy.name} the "
                         "log's gen is the trainer's wait for samples, not generation")
    computed = {"old_log_prob": t.old_logprob, "ref": t.ref_logprob, "values": t.critic}
    want = [k for k, on in computed.items() if on]
    extra = [k for k, on in computed.items() if not on and logged(k)]
    if extra:
        notes.append(f"the log times {', '.join(extra)}, which the scenario does not compute "
                     "(train.old_logprob / ref_logprob / critic): that time counts in the "
                     "step's remainder")
    if want and all(logged(k) for k in want):
        out.append(Comparison("logprob", tuple(want), ("ref",)))
    elif any(logged(k) for k in want):
        notes.append(f"log-prob passes not compared: the scenario computes {', '.join(want)} "
                     f"but the log times only {', '.join(k for k in want if logged(k))}")
    if logged("update_actor"):
        keys = ("update_actor", "update_critic") if t.critic and logged("update_critic") \
            else ("update_actor",)
        out.append(Comparison("update_actor", keys, ("train",)))
    if logged("update_weights"):
        out.append(Comparison("update_weights", ("update_weights",), ("weight_sync",
                                                                        "switch")))
    out.append(Comparison("step", ("step",), ("step",)))
    return out


GEN_WITH_SWITCH = ("gen", "weight_sync", "switch")
"""rlsim's phases that a veRL hybrid engine's `gen` holds (up to v0.7.0; later releases time
the weight sync apart as update_weights): the generation, the weight sync and the switch."""


def _gen_comparisons(scenario: Scenario, measured: dict[str, float], framework: str,
                     notes: list[str]) -> list[Comparison]:
    """What a logged gen (policy sync) compares with. ROLL's step_generate runs the reward
    workers inside generation. veRL's hybrid engine (colocated) runs the switch to rollout
    mode (engines woken, the trainer's weights resharded into them), the generation and the
    switch back to trainer mode inside one worker call under its `gen` timer
    (verl/workers/fsdp_workers.py `generate_sequences`), unless it times the weight sync
    apart as update_weights (#5031); its `generate_sequences` timer holds the generation
    alone. With that timer the two are fitted apart: the generation by `rollout_speed`, gen
    less generate_sequences by `switch_overhead` (the colocated switch, which a dedicated
    placement does not pay); without it gen is compared with rlsim's generation, weight
    sync and switch together."""
    if framework == "roll":
        return [Comparison("gen", ("gen",), ("gen", "reward"))]
    switch_in_gen = (framework == "verl" and scenario.policy.placement == "colocated"
                     and measured.get("update_weights", 0.0) <= 0)
    if not switch_in_gen:
        return [Comparison("gen", ("gen",), ("gen",))]
    engines = measured.get("generate_sequences", 0.0)
    if 0 < engines < measured["gen"]:
        return [Comparison("gen", ("generate_sequences",), ("gen",)),
                Comparison("switch", ("gen",), GEN_WITH_SWITCH[1:],
                           minus_keys=("generate_sequences",))]
    notes.append("veRL's colocated gen holds the weight sync and the engines' wake-up and "
                 "sleep, and the log has no generate_sequences to tell them apart: gen is "
                 "compared with rlsim's generation, weight sync and switch together")
    return [Comparison("gen", ("gen",), GEN_WITH_SWITCH)]


def _measured_median(c: Comparison, kept: Sequence[StepRecord],
                     medians: dict[str, float]) -> float:
    """What `c` measures, per step: the medians' sum, or for a difference (`minus_keys`) the
    median of each step's own difference (two medians' difference need not be any step's)."""
    if not c.minus_keys:
        return c.measured_s(medians)
    each = [c.measured_s(r.phases_s) for r in kept if c.logged_in(r.phases_s)]
    return statistics.median(each) if each else c.measured_s(medians)


def _identify(comparisons: Sequence[Comparison], scenario: Scenario,
              measured: dict[str, float]) -> tuple[list[str], dict[str, str]]:
    """(knobs the log identifies, in fitting order; knob -> why not)."""
    names = {c.name for c in comparisons}
    fitted: list[str] = []
    why: dict[str, str] = {}
    if names == {"step"}:
        only = "the log times only the step: fitted with rollout_speed as one `speed`"
        why["step_overhead"] = ("the log times only the step: its one number is fitted as "
                                "the speed of the compute phases (`speed`), which carries "
                                "over to other policies, not as a serial overhead")
        why["weight_sync_overhead"] = "the log has no update_weights time"
        why["switch_overhead"] = "the log times only the step"
        why["update_overhead"] = "the log times only the step"
        why["micro_batch_overhead"] = ("a log times whole passes, so a fixed cost per "
                                       "micro-batch cannot be told from train_speed")
        return [SPEED], {"train_speed": only, "rollout_speed": only.replace(
            "with rollout_speed", "with train_speed"), **why}
    if names & {"logprob", "update_actor"}:
        fitted.append("train_speed")
    else:
        why["train_speed"] = ("the log times no trainer pass rlsim computes (update_actor, "
                              "old_log_prob, ref)")
    if {"logprob", "update_actor"} <= names:
        # two trainer passes of different work: the speed from both, and what the update
        # pays beyond the forward's rate as a fixed cost per update
        fitted.append("update_overhead")
    else:
        why["update_overhead"] = ("a fixed cost per update is told from train_speed only "
                                  "beside a log-prob pass, and the log does not time both "
                                  "update_actor and the log-prob passes rlsim computes")
    if "gen" in names:
        fitted.append("rollout_speed")
    elif measured.get("gen", 0.0) > 0:
        why["rollout_speed"] = (f"policy {scenario.policy.name}: the log's gen is the "
                                "trainer's wait for samples, not generation time")
    else:
        why["rollout_speed"] = "the log has no gen time"
    if "update_weights" in names:
        fitted.append("weight_sync_overhead")
    else:
        why["weight_sync_overhead"] = "the log has no update_weights time"
    if "switch" in names:
        fitted.append("switch_overhead")
    else:
        why["switch_overhead"] = ("the log does not time the colocated switch apart (veRL: "
                                  "gen and generate_sequences, colocated, without "
                                  "update_weights)")
    fitted.append("step_overhead")  # kept steps always have a step time
    why["micro_batch_overhead"] = ("a log times whole passes, so a fixed cost per "
                                   "micro-batch cannot be told from train_speed")
    return fitted, why


def knob_bounds(name: str) -> tuple[float, float]:
    """A `framework` knob's (lower, upper) bound, read from the schema."""
    if name == SPEED:
        return knob_bounds("train_speed")
    lo, hi = -math.inf, math.inf
    for meta in FrameworkConfig.model_fields[name].metadata:
        if getattr(meta, "ge", None) is not None:
            lo = float(meta.ge)
        if getattr(meta, "le", None) is not None:
            hi = float(meta.le)
    return lo, hi


def _knob_default(name: str) -> float:
    if name == SPEED:
        return 1.0
    value = FrameworkConfig.model_fields[name].default
    return 0.0 if value is None else float(value)


# --------------------------------------------------------------------------------------------
# The fit


class _Simulator:
    """The short simulations a fit runs, memoised by knob values."""

    def __init__(self, base: Scenario, names: Sequence[str], comparisons: Sequence[Comparison],
                 base_dir: Path | None) -> None:
        self.base = base
        self.names = list(names)
        self.comparisons = list(comparisons)
        self.base_dir = base_dir
        self.cache: dict[tuple[float, ...], dict[str, float]] = {}
        self.runs = 0

    def framework(self, x: Sequence[float]) -> FrameworkConfig:
        values = self.base.framework.model_dump()
        for name, v in zip(self.names, x, strict=True):
            lo, hi = knob_bounds(name)
            clamped = min(max(float(v), lo), hi)
            for knob in (("train_speed", "rollout_speed") if name == SPEED else (name,)):
                values[knob] = clamped
        return FrameworkConfig(**values)

    def __call__(self, x: Sequence[float]) -> dict[str, float]:
        key = tuple(float(v) for v in x)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        sc = self.base.model_copy(update={"framework": self.framework(x)})
        s = simulate(sc, self.base_dir).summary
        self.runs += 1
        phases = s["phase_time_s"]
        out = {c.name: (s["step_time_s"]["mean"] if c.name == "step"
                        else sum(phases.get(p, 0.0) for p in c.sim_phases))
               for c in self.comparisons}
        self.cache[key] = out
        return out


def _initial(sim: _Simulator, x_in: list[float], measured: dict[str, float],
             ) -> list[float]:
    """Two rounds of per-knob updates from the input: a speed scaled by its phase's
    simulated/measured ratio (it divides most of that phase), an overhead moved by its
    phase's difference; `step_overhead` in the second round only, from the step's
    remainder once the phases are near."""
    names = sim.names
    x = list(x_in)
    for round_ in (1, 2):
        got = sim(x)
        new = list(x)
        for i, name in enumerate(names):
            lo, hi = knob_bounds(name)
            if name == "train_speed":
                # with update_overhead the log-prob passes alone set the speed
                keys = ["logprob"] if "update_overhead" in names else [
                    k for k in ("logprob", "update_actor") if k in measured]
                s_sum, m_sum = sum(got[k] for k in keys), sum(measured[k] for k in keys)
                v = x[i] * s_sum / m_sum if s_sum > 0 else x[i]
            elif name == "update_overhead":
                # the update's gap at the speed this round moves to
                j = names.index("train_speed")
                rate = x[j] / new[j] if new[j] > 0 else 1.0
                v = measured["update_actor"] - (got["update_actor"] - x[i]) * rate
            elif name == "rollout_speed":
                v = x[i] * got["gen"] / measured["gen"] if got["gen"] > 0 else x[i]
            elif name == SPEED:
                v = x[i] * got["step"] / measured["step"] if got["step"] > 0 else x[i]
            elif name == "weight_sync_overhead":
                v = x[i] + measured["update_weights"] - got["update_weights"]
            elif name == "switch_overhead":
                v = x[i] + measured["switch"] - got["switch"]
            elif name == "step_overhead":
                if round_ == 1:
                    continue
                # The other knobs' second-round moves change the step by about as much as
                # they change their phases.
                moved = 0.0
                for j, other in enumerate(names):
                    if other == "step_overhead" or new[j] == x[j]:
                        continue
                    moved += _expected_move(other, x[j], new[j], got)
                v = x[i] + measured["step"] - (got["step"] + moved)
            else:
                continue
            new[i] = min(max(v, lo), hi)
        x = new
    return x


def _at_bound(name: str, value: float) -> str | None:
    """"lower" or "upper" when a fitted knob sits at that bound of its range, else None."""
    lo, hi = knob_bounds(name)
    if math.isclose(value, lo, abs_tol=1e-6 * max(1.0, abs(lo))):
        return "lower"
    if math.isclose(value, hi, rel_tol=1e-6):
        return "upper"
    return None


def _expected_move(name: str, old: float, new: float, got: dict[str, float]) -> float:
    """About how much a knob's move changes the step, from its own phase (sync)."""
    if name == "train_speed":
        return sum(got.get(k, 0.0) for k in ("logprob", "update_actor")) * (old / new - 1)
    if name == "rollout_speed":
        return got.get("gen", 0.0) * (old / new - 1)
    return new - old


FD_REL_STEP = 1e-3
"""Finite-difference step of the Jacobian, relative to a knob's scale: large enough that a
simulation's rounding does not swamp the change, small enough to stay linear."""


def _jacobian(residuals: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
              scale: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Forward differences with absolute steps `FD_REL_STEP * max(|x|, scale)` (an overhead
    at 0 still gets a step of its scale), backward where the forward step would leave the
    bounds."""
    f0 = residuals(x)
    jac = np.empty((f0.size, x.size))
    for i in range(x.size):
        h = FD_REL_STEP * max(abs(float(x[i])), float(scale[i]))
        if x[i] + h > hi[i]:
            h = -h
        xi = x.copy()
        xi[i] = x[i] + h
        jac[:, i] = (residuals(xi) - f0) / (xi[i] - x[i])
    return jac


def _rounded(x: float) -> float:
    """6 significant digits: what the fitted scenario carries (and what is re-simulated)."""
    return float(f"{x:.6g}")


def _measurement_noise(kept: Sequence[StepRecord],
                       comparisons: Sequence[Comparison]) -> tuple[float | None, dict[str,
                                                                                     float]]:
    """The mean squared relative standard error of the compared medians over the kept
    steps (None: no quantity logged on 2 steps or more), and each one's."""
    each: dict[str, float] = {}
    for c in comparisons:
        values = [c.measured_s(r.phases_s) for r in kept if c.logged_in(r.phases_s)]
        if len(values) < 2:
            continue
        med = statistics.median(values)
        if med <= 0:
            continue
        each[c.name] = MEDIAN_SE_FACTOR * statistics.stdev(values) / (med * math.sqrt(
            len(values)))
    if not each:
        return None, each
    return float(np.mean([v * v for v in each.values()])), each


def fit(scenario: Scenario, run: MeasuredRun, steps: int | None = None, *,
        base_dir: Path | None = None,
        progress: Callable[[str], None] | None = None) -> FitResult:
    """Fit `scenario`'s framework knobs to the measured `run` (module docstring).

    `steps`: steps of each simulation the fit runs (default `DEFAULT_SIM_STEPS`, at least 2:
    one warm-up); `base_dir`: where the scenario's relative paths resolve (the scenario
    file's folder; default the working directory). Raises ScenarioError when the log leaves
    nothing to fit."""
    t_wall = time.perf_counter()
    sim_steps = DEFAULT_SIM_STEPS if steps is None else steps
    if sim_steps < 2:
        raise ScenarioError("--steps", f"a fit simulates at least 2 steps (1 warm-up), got "
                            f"{sim_steps}")
    base = Path.cwd() if base_dir is None else base_dir
    stats = summary(run)  # ScenarioError when no step is kept
    kept = run.kept()
    measured_phases: dict[str, float] = stats["phases_s"]
    notes: list[str] = list(stats.get("notes", []))

    # 1. The input with the measured lengths (and absolute paths: fitted.yaml moves).
    workload, replayed = replay_lengths(scenario, stats)
    data = scenario.dump()
    data["workload"] = workload
    data = rebase_paths(data, base)
    try:
        replayed_sc = Scenario.model_validate(data, context={"base_dir": str(base)})
    except Exception as err:  # the replayed lengths must make a valid scenario
        raise ScenarioError("workload", f"the measured lengths make no valid workload: "
                            f"{err}") from None
    short = replayed_sc.model_copy(update={
        "steps": sim_steps,
        "output": replayed_sc.output.model_copy(update={"warmup_steps": 1, "detail": "phase"}),
    })

    # 2. What the log can fit.
    comparisons = _comparisons(scenario, measured_phases, getattr(run, "framework", "verl"),
                               notes)
    measured = {c.name: _measured_median(c, kept, measured_phases) for c in comparisons}
    counts = {c.name: sum(1 for r in kept if c.logged_in(r.phases_s)) for c in comparisons}
    names, unidentified = _identify(comparisons, scenario, measured_phases)
    sim = _Simulator(short, names, comparisons, base)
    x_in = [_framework_value(scenario.framework, n) for n in names]

    # 3. Least squares from a start near the answer.
    def residuals(x: np.ndarray) -> np.ndarray:
        got = sim(list(x))
        return np.array([(got[c.name] - measured[c.name]) / measured[c.name]
                         for c in comparisons])

    if progress:
        progress(f"fitting {', '.join(names)} to {len(comparisons)} measured quantities")
    before = sim(x_in)
    x0 = _initial(sim, x_in, measured)
    lo = np.array([knob_bounds(n)[0] for n in names])
    hi = np.array([knob_bounds(n)[1] for n in names])
    x_scale = np.array([1.0 if n.endswith("speed") else max(1.0, abs(v))
                        for n, v in zip(names, x0, strict=True)])
    def jacobian(x: np.ndarray) -> np.ndarray:
        return _jacobian(residuals, x, x_scale, lo, hi)

    res = least_squares(residuals, np.clip(x0, lo, hi), jac=jacobian, bounds=(lo, hi),
                        method="trf", x_scale=x_scale, xtol=1e-8, ftol=1e-8, gtol=1e-10,
                        max_nfev=40)
    # 6 significant digits, and a knob within a hair of its bound on the bound.
    x_fit = [float(b_lo) if abs(v - b_lo) < 1e-9 * sc else float(b_hi)
             if abs(b_hi - v) < 1e-9 * sc else _rounded(v)
             for v, b_lo, b_hi, sc in zip(res.x, lo, hi, x_scale, strict=True)]
    after = sim(x_fit)
    r_fit = residuals(np.array(x_fit))

    # 4. Intervals: cov = s^2 (J^T J)^-1 at the solution.
    jac = jacobian(np.array(x_fit))
    # A knob the solver left at a bound is held by the bound, not by the data: it uses up
    # no residual degree of freedom (an update_overhead at 0 beside train_speed must not
    # leave a log with as many quantities as free knobs without an interval).
    at_bounds = [_at_bound(name, v) for name, v in zip(names, x_fit, strict=True)]
    m, n = jac.shape[0], sum(1 for lo_hi in at_bounds if lo_hi is None)
    ssr = float(r_fit @ r_fit)
    s2_resid = ssr / (m - n) if m > n else None
    s2_meas, meas_each = _measurement_noise(kept, comparisons)
    candidates = [v for v in (s2_resid, s2_meas) if v is not None]
    s2 = max(candidates) if candidates else None
    cov: np.ndarray | None = None
    if s2 is not None:
        # The free knobs' covariance from their own columns (a knob held at a bound does
        # not widen the others'); a held knob's one-sided interval as if it were free.
        cov = s2 * np.linalg.pinv(jac.T @ jac)
        free = [i for i, b in enumerate(at_bounds) if b is None]
        if free:
            held = [i for i, b in enumerate(at_bounds) if b is not None]
            own = np.diag(cov).copy()
            cov = np.zeros_like(cov)
            cov[np.ix_(free, free)] = s2 * np.linalg.pinv(jac[:, free].T @ jac[:, free])
            cov[held, held] = own[held]
    params: dict[str, ParamFit] = {}
    for i, name in enumerate(names):
        b = knob_bounds(name)
        value = x_fit[i]
        at_lower, at_bound = at_bounds[i] == "lower", at_bounds[i] is not None
        note = ""
        ci: tuple[float, float] | None = None
        if cov is None:
            note = ("no interval: as many measured quantities as knobs and fewer than 2 "
                    "kept steps to tell the measurement's spread")
        elif not np.any(jac[:, i]):
            note = "no interval: the simulated phases do not move with this knob"
        else:
            half = Z95 * math.sqrt(max(float(cov[i, i]), 0.0))
            ci = (max(b[0], value - half), min(b[1], value + half))
            if ci != (value - half, value + half):
                note = "interval clipped at the bounds"
        if at_bound:
            note = (note + "; " if note else "") + (
                f"at its {'lower' if at_lower else 'upper'} bound: the log asks for "
                f"{'less' if at_lower else 'more'} than the knob allows")
        params[name] = ParamFit(name, value, ci, b, _knob_default(name), float(x0[i]),
                                float(x_in[i]), at_bound, note)
    step_ci: float | None = None
    if cov is not None:
        # a held knob's variance counts too (its bound is the fit's, not the truth's)
        row = jac[[c.name for c in comparisons].index("step")]
        step_ci = Z95 * math.sqrt(max(float(row @ cov @ row), 0.0))

    phases = {c.name: PhaseFit(c.name, measured[c.name], before[c.name], after[c.name],
                               c.measured_keys, c.sim_phases, counts[c.name],
                               c.minus_keys)
              for c in comparisons}
    step = phases.pop("step")
    fitted_fw = sim.framework(x_fit)
    final = replayed_sc.model_copy(update={"framework": fitted_fw})
    regime = regime_of(final)
    fitted_dict = final.dump()
    fitted_dict["framework"]["fitted_on"] = regime.model_dump()
    fitted_dict["unknowns"] = {**fitted_unknowns(params), **fitted_dict.get("unknowns", {})}
    return FitResult(
        source=run.source, log_format=run.format, steps_kept=list(stats["steps_kept"]),
        steps_dropped={int(k): v for k, v in stats.get("dropped", {}).items()},
        regime=regime, params=params, unidentified=unidentified, phases=phases, step=step,
        step_ci95_rel=step_ci, replayed=replayed, scenario=fitted_dict,
        input_name=scenario.name, sim_steps=sim_steps, simulations=sim.runs,
        solver={"method": "scipy.optimize.least_squares (trf, forward-difference "
                          f"Jacobian, step {FD_REL_STEP:g} of each knob's scale)",
                "status": int(res.status), "message": str(res.message),
                "nfev": int(res.nfev), "njev": int(res.njev or 0),
                "cost": float(res.cost), "wall_s": time.perf_counter() - t_wall},
        noise={"s2": s2, "s2_residuals": s2_resid, "s2_measurement": s2_meas,
               "measurement_rel_se": meas_each, "residuals": m, "knobs": n},
        notes=notes + list(replayed.get("notes", [])),
    )


# --------------------------------------------------------------------------------------------
# Predicting outside the fitted regime


def fitted_unknowns(params: dict[str, ParamFit]) -> dict[str, dict[str, Any]]:
    """The fitted knobs' intervals as the scenario's unknowns (docs/uncertainty.md), so
    draws of a fitted scenario carry them: triangular over the 95% interval, peaking at the
    fitted value (it stays within the knob's bounds, as the clipped interval does); a knob
    without an interval, or held at a bound, is left out."""
    out: dict[str, dict[str, Any]] = {}
    for p in params.values():
        if p.ci95 is None or p.at_bound or not p.ci95[0] < p.ci95[1]:
            continue
        lo, hi = p.ci95
        fields = (["framework.train_speed", "framework.rollout_speed"] if p.name == SPEED
                  else [f"framework.{p.name}"])
        out[fields[0]] = {"dist": "triangular", "low": lo, "mode": min(max(p.value, lo), hi),
                          "high": hi, "also": fields[1:]}
    return out


def prediction_uncertainty(result: FitResult, other: Scenario) -> float | None:
    """The relative 95% half-width of `other`'s predicted step: the fit's own (from the
    knobs' intervals) plus `REGIME_CHANGE_REL` per regime change; None when the fit has no
    interval."""
    if result.step_ci95_rel is None:
        return None
    changes = regime_changes(result.fitted_scenario(), other)
    return result.step_ci95_rel + REGIME_CHANGE_REL * len(changes)
