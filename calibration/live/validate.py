"""`rlsim validate`: run the live RL job, simulate the same job, and compare.

Order, so the profile and the live runs see the same machine states: supervised warm-up
(cached in the output folder), a calibration pass of this machine at the live policy's
shapes (`calibration.run.measure`), then the live repeats of every mode, each repeat after
the first preceded by another pass of the job's own engine and trainer families; then the
profile is fitted on each point's median over the passes (`calibration.fit.fit_profile`),
and each live run's recorded rollouts become a scenario (`calibration.live.scenario`) that
is simulated. The comparison is per phase and end to end, live vs simulated mean seconds,
error = (sim - live) / live. docs/validation.md explains the method and the errors.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
import yaml

from calibration.benchmarks.model_dims import ModelDims
from calibration.fit import fit_profile, fit_report_markdown, write_profile
from calibration.live.cores import pinned, placement
from calibration.live.driver import DriverCosts, measure_driver_costs
from calibration.live.model import LMConfig, TinyLM
from calibration.live.runner import MODES, LiveConfig, LiveResult, run_live
from calibration.live.scenario import scenario_dict, write_rollouts
from calibration.live.sft import warm_up
from calibration.live.tokenizer import Tokenizer
from calibration.live.weightsync import measure_weight_sync_s
from calibration.measurements import MeasurementSet, median_of_passes
from calibration.run import measure
from calibration.timing import _busy_s
from rlsim.api import simulate, write_run
from rlsim.config.loading import load_scenario
from rlsim.cost.inference import InferenceCost
from rlsim.cost.profile import Profile
from rlsim.trace import CONTROLLER, Recorder
from rlsim.trace.sinks import write_parquet

PHASES = ("gen", "reward", "ref", "train", "weight_sync")
CALIBRATION_BENCHES = ["gemm", "elementwise", "memcpy", "attention", "layer", "live_engine",
                       "live_trainer"]
TRAINER_BENCHES = ["live_trainer"]  # timed on the trainer's core, the rest on the engine's
# Measured again before every repeat after the first (`validate`): the job's own engine and
# trainer, whose points set the per-iteration, per-sequence and trainer costs the live
# phases are priced by. The operator families are measured once: refitting them from other
# passes moved the priced engine by about 2% (the engine's trace fit absorbs them).
REPEATED_FAMILIES = ["live_engine", "live_trainer"]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """What one `rlsim validate` runs."""

    modes: tuple[str, ...]
    quick: bool
    repeats: int
    live: LiveConfig
    sft_steps: int
    sft_batch: int = 16
    sft_lr: float = 3e-3


def plan(modes: tuple[str, ...], quick: bool, repeats: int | None = None,
         steps: int | None = None) -> Plan:
    if quick:
        live = LiveConfig(steps=4, prompts_per_step=32, samples_per_prompt=4)
        # Three repeats: a live run of the quick job lasts seconds, and the median of three
        # is what one disturbed run cannot move.
        p = Plan(modes, True, repeats or 3, live, sft_steps=150)
    else:
        live = LiveConfig(steps=10, prompts_per_step=32, samples_per_prompt=8)
        p = Plan(modes, False, repeats or 3, live, sft_steps=150)
    if steps is not None:
        p = replace(p, live=replace(p.live, steps=steps))
    return p


# Steps left out of the compared means, live and simulated alike: step 0 carries the
# pipeline fill (one_off's first generation, async's first batches, which later steps overlap)
# and a fresh process's first real work. The whole run is reported beside them.
WARMUP_STEPS = 1


def phase_means(recorder: Recorder, skip_steps: int = 0) -> dict[str, float]:
    """Mean seconds of each phase span and of the step span, on the controller track, over
    the spans of steps >= `skip_steps` (a span's `step` attribute: in one_off a `gen` span
    belongs to the step it generates for). All steps when that would leave none."""
    spans: dict[str, list[float]] = {}
    for s in recorder.spans:
        if s.track == CONTROLLER:
            spans.setdefault(s.name, []).append(s.t1 - s.t0)
    kept: dict[str, list[float]] = {}
    for s in recorder.spans:
        if s.track == CONTROLLER and int(s.attrs.get("step", 0)) >= skip_steps:
            kept.setdefault(s.name, []).append(s.t1 - s.t0)
    if "step" not in kept:
        kept = spans
    return {name: statistics.fmean(v) for name, v in kept.items()}


def _spread(values: list[float]) -> dict[str, float]:
    """Median, min and max of one figure over the repeats."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _error(sim: float, live: float) -> float | None:
    return (sim - live) / live if live > 0 else None


@dataclass
class ModeRun:
    """One live run of a mode and its simulation."""

    live: dict[str, float]  # phase means after the warm-up steps
    sim: dict[str, float]
    rewards: list[float]
    out_dir: str
    engine_live_s: float = 0.0  # the live engine's iterations, measured
    engine_priced_s: float = 0.0  # the same iterations priced by the profile
    engine_iterations: int = 0
    # Cores other processes of the machine kept busy during the live run (None: unknown)
    other_cores: float | None = None
    staleness_max: int = 0  # over the live run's trained samples
    sim_staleness_max: int = 0
    sim_outcomes: dict[str, Any] = field(default_factory=dict)  # async: the simulator's
    live_whole_step_s: float = 0.0  # mean step over the whole run, warm-up included
    sim_whole_step_s: float = 0.0

    def comparison(self) -> dict[str, Any]:
        return {"live_step_s": self.live["step"], "sim_step_s": self.sim["step"],
                "error": _error(self.sim["step"], self.live["step"]),
                "phases": {p: {"live_s": self.live.get(p, 0.0), "sim_s": self.sim.get(p, 0.0),
                               "error": _error(self.sim.get(p, 0.0), self.live.get(p, 0.0))}
                           for p in PHASES}}


@dataclass
class Validation:
    plan: Plan
    profile_path: str
    runs: dict[str, list[ModeRun]] = field(default_factory=dict)
    calibration_s: float = 0.0
    fit_report: str = ""
    sft_losses: list[float] = field(default_factory=list)
    placement: str = "not pinned"  # which core each role of the job ran on
    calibration_passes: int = 1  # passes the profile's points are the median of

    def mode_result(self, mode: str) -> dict[str, Any]:
        """Medians over repeats, compared (sim against live), with each repeat's figures and
        the live spread (min, max) per phase and end to end: on a shared machine one slow
        repeat moves a mean, not the median."""
        runs = self.runs[mode]
        stale: dict[str, Any] = {
            "other_cores_each": [r.other_cores for r in runs],
            "staleness_max": max(r.staleness_max for r in runs),
            "sim_staleness_max": max(r.sim_staleness_max for r in runs)}
        if any(r.sim_outcomes for r in runs):
            stale["sim_outcomes_each"] = [r.sim_outcomes for r in runs]
        live = [r.live["step"] for r in runs]
        sim = [r.sim["step"] for r in runs]
        phases = {}
        for p in PHASES:
            lv = _spread([r.live.get(p, 0.0) for r in runs])
            sv = statistics.median(r.sim.get(p, 0.0) for r in runs)
            phases[p] = {"live_s": lv["median"], "live_min_s": lv["min"],
                         "live_max_s": lv["max"], "sim_s": sv,
                         "error": _error(sv, lv["median"])}
        lm, sm = _spread(live), statistics.median(sim)
        whole_live = statistics.median(r.live_whole_step_s for r in runs)
        whole_sim = statistics.median(r.sim_whole_step_s for r in runs)
        return {"live_step_s": lm["median"], "sim_step_s": sm,
                "error": _error(sm, lm["median"]), "phases": phases,
                "repeats": len(runs), "warmup_steps": WARMUP_STEPS,
                "live_step_s_each": live, "sim_step_s_each": sim,
                "error_each": [r.comparison()["error"] for r in runs],
                "live_step_s_min": lm["min"], "live_step_s_max": lm["max"],
                "live_step_s_spread": (lm["max"] - lm["min"]) / lm["median"]
                if lm["median"] else 0.0,
                "whole_run": {"live_step_s": whole_live, "sim_step_s": whole_sim,
                              "error": _error(whole_sim, whole_live)}} | stale

    def engine_check(self, mode: str) -> dict[str, float | int | None]:
        runs = self.runs[mode]
        live = sum(r.engine_live_s for r in runs)
        priced = sum(r.engine_priced_s for r in runs)
        return {"iterations": sum(r.engine_iterations for r in runs), "live_s": live,
                "priced_s": priced, "error": _error(priced, live)}

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"modes": {m: self.mode_result(m) for m in self.runs}}
        for m in self.runs:
            out["modes"][m]["engine_iterations"] = self.engine_check(m)
        for mode in ("one_off", "async"):
            if "sync" in self.runs and mode in self.runs:
                s, o = out["modes"]["sync"], out["modes"][mode]
                live_x = s["live_step_s"] / o["live_step_s"]
                sim_x = s["sim_step_s"] / o["sim_step_s"]
                out[f"speedup_{mode}"] = {"live": live_x, "sim": sim_x,
                                          "error": _error(sim_x, live_x)}
        out["profile"] = self.profile_path
        out["placement"] = self.placement
        out["calibration_passes"] = self.calibration_passes
        out["quick"] = self.plan.quick
        return out


def _config_key(p: Plan) -> str:
    blob = json.dumps([asdict(p.live.lm), asdict(p.live.mix), p.sft_steps, p.sft_batch,
                       p.sft_lr, p.live.seed, torch.__version__], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def warm_start(p: Plan, out: Path, progress: Progress) -> tuple[dict[str, torch.Tensor],
                                                                list[float]]:
    """The supervised warm-up's weights, trained once per configuration and cached."""
    path = out / f"warmup-{_config_key(p)}.pt"
    if path.exists():
        progress(f"warm-up: cached {path}")
        saved = torch.load(path, weights_only=True)
        return saved["state"], saved["losses"].tolist()
    torch.manual_seed(p.live.seed)
    model = TinyLM(p.live.lm)
    t0 = time.perf_counter()
    with torch.enable_grad():
        # One thread, as the job's processes: on a shared 2-core box a second thread mostly
        # waits for a core.
        torch.set_num_threads(p.live.threads)
        losses = warm_up(model, Tokenizer(), p.sft_steps, p.sft_batch, p.sft_lr, p.live.seed,
                         p.live.mix)
    progress(f"warm-up: {p.sft_steps} supervised steps in {time.perf_counter() - t0:.1f} s, "
             f"loss {losses[0]:.2f} -> {losses[-1]:.2f}")
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    tmp = path.with_suffix(".partial")
    torch.save({"state": state, "losses": torch.tensor(losses)}, tmp)
    tmp.replace(path)
    return state, losses


def dims_of(lm: LMConfig) -> ModelDims:
    return ModelDims(hidden=lm.hidden, heads=lm.heads, kv_heads=lm.heads, head_dim=lm.head_dim,
                     ffn=lm.ffn)


def measure_pass(p: Plan, out: Path, progress: Progress, families: list[str],
                 number: int) -> MeasurementSet:
    """One calibration pass of `families` on the cores the job runs on: the engine's
    families (and the operators that price its iterations) on the rollout core, the
    trainer's on the trainer core (`cores.placement`); written to
    `measurements-pass-<number>.json`."""
    torch.set_num_threads(p.live.threads)
    place = placement() if p.live.pin else None

    def bench_progress(bench: str, done: int, total: int) -> None:
        if done == total:
            progress(f"calibrate: {bench} ({total} points)")

    def run(only: list[str], cores: frozenset[int] | None) -> MeasurementSet:
        with pinned(cores):
            return measure(device="cpu", quick=p.quick, only=only, progress=bench_progress,
                           dims=dims_of(p.live.lm), live=p.live.lm)

    engine_side = run([b for b in families if b not in TRAINER_BENCHES],
                      place.rollout if place else None)
    ms = engine_side
    trainer = [b for b in families if b in TRAINER_BENCHES]
    if trainer:
        trainer_side = run(trainer, place.trainer if place else None)
        ms = engine_side.model_copy(update={"measurements": engine_side.measurements
                                            + trainer_side.measurements})
    (out / f"measurements-pass-{number}.json").write_text(ms.model_dump_json(indent=1))
    return ms


def fit_passes(passes: list[MeasurementSet], out: Path) -> tuple[Profile, Path, str]:
    """The profile fitted on each point's median over the passes (`median_of_passes`,
    written to `measurements.json`)."""
    ms = median_of_passes(passes)
    (out / "measurements.json").write_text(ms.model_dump_json(indent=1))
    profile, report = fit_profile(ms)
    path = write_profile(profile, out / "profile.json")
    return profile, path, fit_report_markdown(report)


@dataclass
class LiveRun:
    """One live run of a mode, before it is simulated."""

    mode: str
    result: LiveResult
    run_dir: Path
    other_cores: float | None


def run_live_mode(p: Plan, mode: str, repeat: int, state: dict[str, torch.Tensor], out: Path,
                  progress: Progress) -> LiveRun:
    """The live job of `mode`, repeat `repeat`, written to `<out>/<mode>-<repeat>/`."""
    cfg = replace(p.live, mode=mode)
    run_dir = out / f"{mode}-{repeat}"
    (run_dir / "sim").mkdir(parents=True, exist_ok=True)
    with JobLoad() as load:
        result = run_live(cfg, state, progress)
    if load.cores is not None and load.cores > 0.25:
        progress(f"{mode}: other processes kept {load.cores:.2f} cores busy during the live "
                 "run; its phases ran slower than on a quiet machine")
    write_parquet(result.recorder, run_dir / "live.records.parquet")
    (run_dir / "live.json").write_text(json.dumps(result.summary(), indent=1) + "\n")
    write_rollouts(result, run_dir / "rollouts.jsonl")
    return LiveRun(mode, result, run_dir, load.cores)


def simulate_mode(live: LiveRun, profile: Profile, weight_sync_s: list[float] | None = None,
                  driver: DriverCosts | None = None) -> ModeRun:
    """The simulation of one live run (its scenario derived from the run, priced by
    `profile`), compared with it."""
    result, run_dir = live.result, live.run_dir
    scen = scenario_dict(result, profile, "../profile.json", "rollouts.jsonl", weight_sync_s,
                         driver)
    scen_path = run_dir / "scenario.yaml"
    scen_path.write_text(yaml.safe_dump(scen, sort_keys=False))
    scenario, base = load_scenario(scen_path)
    sim = simulate(scenario, base)
    write_run(sim, run_dir / "sim")
    live_s, priced_s = price_iterations(result, profile)
    return ModeRun(phase_means(result.recorder, WARMUP_STEPS),
                   phase_means(sim.recorder, WARMUP_STEPS),
                   [s.reward_mean for s in result.stats], str(run_dir),
                   live_s, priced_s, len(result.iterations), live.other_cores,
                   staleness_max=max((s.staleness for s in result.stats), default=0),
                   sim_staleness_max=max((int(s.attrs.get("staleness_max", 0))
                                          for s in sim.recorder.spans if s.name == "train"),
                                         default=0),
                   sim_outcomes=_outcomes(sim.recorder),
                   live_whole_step_s=phase_means(result.recorder)["step"],
                   sim_whole_step_s=phase_means(sim.recorder)["step"])


class JobLoad:
    """Context manager: average cores that processes outside this one and its (joined)
    children kept busy while the block ran, from /proc/stat (None where unavailable)."""

    def __init__(self) -> None:
        self.cores: float | None = None
        self._start: tuple[float | None, float, float] = (None, 0.0, 0.0)

    @staticmethod
    def _own_s() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def __enter__(self) -> JobLoad:
        self._start = (_busy_s(), self._own_s(), time.perf_counter())
        return self

    def __exit__(self, *exc: object) -> None:
        busy0, own0, wall0 = self._start
        busy1, own1, wall1 = _busy_s(), self._own_s(), time.perf_counter()
        if busy0 is None or busy1 is None or wall1 <= wall0:
            return
        self.cores = max(0.0, (busy1 - busy0) - (own1 - own0)) / (wall1 - wall0)


def _outcomes(recorder: Recorder) -> dict[str, Any]:
    """The async policy's count of attempts by how they ended (empty for other policies)."""
    for r in recorder.instants:
        if r.track == CONTROLLER and r.name == "outcomes":
            return dict(r.attrs)
    return {}


def price_iterations(result: LiveResult, profile: Profile) -> tuple[float, float]:
    """(measured, priced) seconds of the live engine's iterations: each one priced by the
    profile's `InferenceCost.step` with its own shape. A check of the iteration cost model
    apart from the simulated schedule; nothing is fitted to it."""
    assert profile.device is not None
    cost = InferenceCost(result.config.lm.model_spec(), profile.device, 1, profile)
    priced = 0.0
    for decodes, kv, lens, _ in result.iterations:
        priced += cost.step(decodes, kv, sum(lens), 0,
                            [(n, 0) for n in lens] if lens else None).total_s
    return sum(dt for *_, dt in result.iterations), priced


def validate(p: Plan, out: Path, progress: Progress) -> Validation:
    """Warm-up, calibration passes interleaved with the live repeats, then the fit and the
    simulations. The first pass measures every family; before each later repeat the job's
    own engine and trainer (REPEATED_FAMILIES) are measured again, and the profile is fitted
    on each point's median over the passes (`median_of_passes`): the calibration then samples
    the machine across the same minutes as the live repeats, and, like their median, is
    moved by no single slow stretch. One pass measured during a few seconds' slowdown of
    this machine (every engine point 40-90% slower, nothing else running) priced the live
    engine's iterations 61-70% high (docs/validation.md)."""
    out.mkdir(parents=True, exist_ok=True)
    state, losses = warm_start(p, out, progress)
    t0 = time.perf_counter()
    passes = [measure_pass(p, out, progress, CALIBRATION_BENCHES, 1)]
    calibration_s = time.perf_counter() - t0
    place = placement() if p.live.pin else None
    with pinned(place.trainer if place else None):
        sync_s = measure_weight_sync_s(p.live, place)
    (out / "weight_sync.json").write_text(json.dumps({"sync_s": sync_s}, indent=1) + "\n")
    progress(f"calibrate: weight sync {statistics.median(sync_s) * 1e3:.2f} ms (median of "
             f"{len(sync_s)})")
    with pinned(place.rollout if place else None):
        driver = measure_driver_costs(p.live, place)
    (out / "driver.json").write_text(json.dumps(driver.as_json(), indent=1) + "\n")
    progress(f"calibrate: rollout driver {driver.env_submit_s * 1e6:.0f} + "
             f"{driver.env_take_s * 1e6:.0f} us per environment step, "
             f"{driver.reward_submit_s * 1e6:.0f} + {driver.reward_take_s * 1e6:.0f} us per "
             "reward job (medians)")
    lives: list[LiveRun] = []
    for repeat in range(p.repeats):
        if repeat:
            t1 = time.perf_counter()
            passes.append(measure_pass(p, out, progress, REPEATED_FAMILIES, repeat + 1))
            calibration_s += time.perf_counter() - t1
        for mode in p.modes:
            lives.append(run_live_mode(p, mode, repeat, state, out, progress))
    t1 = time.perf_counter()
    profile, profile_path, report = fit_passes(passes, out)
    calibration_s += time.perf_counter() - t1
    v = Validation(p, str(profile_path), calibration_s=calibration_s, fit_report=report,
                   sft_losses=losses, placement=place.describe() if place else "not pinned",
                   calibration_passes=len(passes))
    progress(f"calibrate: profile {profile_path} from {len(passes)} pass(es) in "
             f"{calibration_s:.1f} s")
    for live in lives:
        v.runs.setdefault(live.mode, []).append(simulate_mode(live, profile, sync_s, driver))
    return v


def check_modes(mode: str) -> tuple[str, ...]:
    if mode == "all":
        return MODES
    if mode not in MODES:
        raise ValueError(f"--mode must be {', '.join(MODES)} or all, got {mode!r}")
    return (mode,)
