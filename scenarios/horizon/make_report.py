"""Write reports/horizon.md: the horizon (rlsim.horizon, issue 38) against the full
simulation, against its closed forms, the must-show run of large_sync_1024 over 30 days,
and the anchors (Llama 3's 54 days, RobustRL's stress test).

Every input comes from docs/research/horizon-anchors.yaml, committed before the first run
that used it. The check runs the quickstart job under three policies with faults inflated so
that a 100-step run sees dozens: 40 full simulations (faults.seed 0..39, one workload)
against the horizon's 400 replicates on the same scenario. Run: `make horizon-report`
(about 10 minutes on 2 cores).
"""

from __future__ import annotations

import math
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from rlsim.api import simulate
from rlsim.config.loading import load_scenario
from rlsim.faults.horizon import (
    FaultClass,
    JobModel,
    daly_interval_s,
    renewal_ettr,
    run_job,
    young_interval_s,
)
from rlsim.horizon import simulate_horizon
from rlsim.prepare import prepare

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "reports" / "horizon.md"
ANCHORS = "docs/research/horizon-anchors.yaml"
INPUTS = yaml.safe_load((ROOT / ANCHORS).read_text(encoding="utf-8"))


# ---------------------------------------------------------------- the check
def _check_sets(policy: dict[str, str]) -> list[str]:
    c = INPUTS["check"]
    return [f"policy.name={policy['name']}", f"policy.placement={policy['placement']}",
            f"steps={c['steps']}", f"recovery.trainer.checkpoint_every={c['checkpoint_every']}",
            f"faults.gpu=[{{mtbf: {c['gpu_mtbf']}}}]"]


def _full_run(args: tuple[dict[str, str], int]) -> tuple[float, int, int]:
    """One full simulation: (its time, faults injected, job restarts)."""
    policy, seed = args
    scenario, base = load_scenario(ROOT / INPUTS["check"]["scenario"],
                                   [*_check_sets(policy), f"faults.seed={seed}"])
    result = simulate(prepare(scenario, base))
    s = result.summary
    restarts = sum(1 for x in result.recorder.spans if x.name == "recovery")
    return float(s["sim_time_s"]), int(s["faults"]["injected"]), restarts


def _horizon(policy: dict[str, str]) -> dict[str, Any]:
    c = INPUTS["check"]
    scenario, base = load_scenario(ROOT / c["scenario"], [
        *_check_sets(policy),
        f"horizon={{steps: {c['steps']}, replicates: {c['horizon_replicates']}}}"])
    return simulate_horizon(prepare(scenario, base)).summary["horizon"]


def _mean_se(x: list[float]) -> tuple[float, float]:
    a = np.asarray(x, dtype=float)
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(len(a)))


def check(pool: ProcessPoolExecutor) -> list[str]:
    c = INPUTS["check"]
    scenario, _ = load_scenario(ROOT / c["scenario"], [])
    samples = scenario.workload.prompts_per_step * scenario.workload.samples_per_prompt
    steps = c["steps"]
    rows = []
    verdicts = []
    for policy in c["policies"]:
        jobs = [(policy, r) for r in range(c["full_replicates"])]
        full = list(pool.map(_full_run, jobs))
        h = _horizon(policy)
        step = h["steady_step_s"]
        f_ettr = _mean_se([steps * step / t for t, _, _ in full])
        f_good = _mean_se([steps * samples / t for t, _, _ in full])
        h_sd = (h["ettr"]["ci95_high"] - h["ettr"]["mean"]) / 1.96
        g_sd = (h["goodput_samples_per_s"]["ci95_high"]
                - h["goodput_samples_per_s"]["mean"]) / 1.96
        d_ettr = (h["ettr"]["mean"] - f_ettr[0]) * 100
        se_ettr = math.hypot(f_ettr[1], h_sd) * 100
        d_good = (h["goodput_samples_per_s"]["mean"] / f_good[0] - 1) * 100
        se_good = math.hypot(f_good[1] / f_good[0], g_sd / f_good[0]) * 100
        ok = abs(d_ettr) <= 2 and abs(d_good) <= 2
        verdicts.append(ok)
        faults = np.mean([n for _, n, _ in full])
        restarts = np.mean([r for _, _, r in full])
        rows.append(
            f"| {policy['name']}, {policy['placement']} | {faults:.1f} ({restarts:.1f}) | "
            f"{f_ettr[0]:.4f} ± {f_ettr[1]:.4f} | {h['ettr']['mean']:.4f} ± {h_sd:.4f} | "
            f"{d_ettr:+.2f} ± {se_ettr:.2f} | {f_good[0]:.4f} | "
            f"{h['goodput_samples_per_s']['mean']:.4f} | {d_good:+.2f} ± {se_good:.2f} | "
            f"{h['restarts']['mean']:.1f} / {h['penalty_faults']['mean']:.1f} | "
            f"{'within 2' if ok else 'MISSED'} |")
    head = [
        "## 1. The horizon against the full simulation",
        "",
        f"The quickstart job (scenarios/quickstart.yaml), {steps} steps, a checkpoint every "
        f"{c['checkpoint_every']} steps, every GPU failing at an MTBF of {c['gpu_mtbf']} (faults "
        f"inflated so that a run sees dozens). Full: {c['full_replicates']} detailed "
        "simulations with `faults.seed` 0.. (the same workload, other faults). Horizon: one "
        f"`horizon: {{steps: {steps}}}` run of {c['horizon_replicates']} replicates of the "
        "job-level fault process on the same scenario. ETTR: the steps trained x the "
        "horizon's steady step (its fault-free, checkpoint-free step) over the wall time, "
        "the same formula on both sides; goodput: samples trained per second. Differences are "
        "horizon minus full, ± one standard error of the difference (both sides' Monte Carlo "
        "noise). Target: within 2 points (ETTR) and 2% (goodput).",
        "",
        "| policy | full: faults (restarts) | full ETTR ± se | horizon ETTR ± se | "
        "ETTR diff (pp) | full goodput | horizon goodput | goodput diff (%) | "
        "horizon restarts / ridden | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    tail = ["", f"{sum(verdicts)} of {len(verdicts)} policies within the target.", ""]
    return head + rows + tail


# ---------------------------------------------------------------- same faults, same steps
class _Replay:
    """A stand-in for the horizon's random stream that replays given fault times and the
    detailed run's own step sequence (`emulation`)."""

    def __init__(self, times: list[float], steps: list[float]) -> None:
        self.times, self.last, self.steps = iter(times), 0.0, steps

    def choice(self, a: Any, size: int | None = None, p: Any = None) -> Any:
        return np.asarray(self.steps[:size]) if size is not None else 0

    def exponential(self, scale: float) -> float:
        t = next(self.times)
        gap, self.last = t - self.last, t
        return gap

    def random(self) -> float:
        return 0.0


def emulation() -> list[str]:
    """The job-level process fed the full simulation's own fault times and step sequence
    (sync, colocated: every fault restarts the job, so nothing is drawn from measured
    costs): its wall time against the full simulation's, seed by seed."""
    import heapq
    import itertools
    from dataclasses import replace

    from rlsim.faults import fault_times
    from rlsim.horizon import _model, _quiet, _step_ends
    from rlsim.trace import CONTROLLER

    c = INPUTS["check"]
    sets = _check_sets(c["policies"][0])
    scenario, base = load_scenario(ROOT / c["scenario"], sets)
    job = prepare(scenario, base)
    ends = _step_ends(simulate(prepare(_quiet(scenario), base)))
    gaps = list(np.diff(ends))
    model = replace(_model(job, tuple(gaps), 0.0, ends[0]), first_step_extra_s=0.0)
    spec = scenario.faults.gpu[0]
    rows = []
    exact = 0
    seeds = range(10)
    for seed in seeds:
        s2, b2 = load_scenario(ROOT / c["scenario"], [*sets, f"faults.seed={seed}"])
        full = simulate(prepare(s2, b2))
        streams = [fault_times(spec, "gpu", 0, i, seed) for i in range(job.placement.gpus)]
        times = list(itertools.islice(heapq.merge(*streams), 10_000))
        run = run_job(model, _Replay(times, [ends[0], *gaps]), steps=c["steps"])  # type: ignore[arg-type]
        t_full = float(full.summary["sim_time_s"])
        n_full = sum(1 for x in full.recorder.spans
                     if x.track == CONTROLLER and x.name == "recovery")
        same = abs(run.wall_s - t_full) <= 1e-6 * t_full and run.restarts == n_full
        exact += same
        rows.append(f"| {seed} | {t_full:,.1f} | {n_full} | {run.wall_s:,.1f} | "
                    f"{run.restarts} | {'yes' if same else 'NO'} |")
    return ["### Same faults, same steps", "",
            "The job-level process fed the full simulation's own fault times (the GPUs' "
            "streams merged) and its step sequence, sync colocated (every fault restarts "
            "the job): the wall time of each seed.", "",
            "| faults.seed | full: wall (s) | restarts | job-level: wall (s) | restarts | "
            "equal |", "|---:|---:|---:|---:|---:|---|", *rows, "",
            f"{exact} of {len(seeds)} seeds equal: with the same inputs the job-level "
            "process is the full simulation's restart logic; what differs in section 1 is "
            "the draws (steps bootstrapped, faults from the horizon's own stream) and, for "
            "the policies with ridden-through faults, their measured costs.", ""]


# ---------------------------------------------------------------- closed forms
def closed_forms() -> list[str]:
    step, write, down, mtbf = 60.0, 120.0, 600.0, 20 * 3600.0
    year = 365 * 86400.0
    out = ["## 2. The closed forms", "",
           f"Faults and checkpoints only (tests/faults/test_horizon.py): a {step:.0f} s step, "
           f"a {write:.0f} s write, a {down:.0f} s restart, a job MTBF of {mtbf / 3600:.0f} h, "
           "one year per replicate, 30 replicates. The exact renewal value (Daly 2006, with "
           "a restart no fault interrupts, as in the detailed simulation: work / ((M + R)"
           "(e^((work + write)/M) - 1))).", "",
           "| checkpoint every (steps) | horizon ETTR | ± 99% CI | renewal ETTR | inside |",
           "|---:|---:|---:|---:|---|"]

    def ettr(every: int, reps: int) -> np.ndarray:
        model = JobModel((step,), 0.0, every, write, (FaultClass("x", 1 / mtbf, True, down),))
        runs = [run_job(model, np.random.default_rng([7, r]), span_s=year)
                for r in range(reps)]
        return np.asarray([r.steps * step / r.wall_s for r in runs])

    for every in (5, 20, 60, 120):
        e = ettr(every, 30)
        half = 2.76 * e.std(ddof=1) / math.sqrt(len(e))
        exact = renewal_ettr(every * step, write, down, mtbf)
        out.append(f"| {every} | {e.mean():.5f} | {half:.5f} | {exact:.5f} | "
                   f"{'yes' if abs(e.mean() - exact) <= half else 'NO'} |")
    every = np.arange(20, 140, 12)
    wall = np.asarray([1.0 / ettr(int(k), 8).mean() for k in every])
    tau = every * step
    _, a, b = np.linalg.lstsq(np.column_stack([np.ones_like(tau), 1 / tau, tau]), wall,
                              rcond=None)[0]
    best = math.sqrt(a / b)
    young = young_interval_s(write, mtbf)
    daly = daly_interval_s(write, mtbf)
    out += ["", f"Best interval from a c + a/tau + b tau curve fitted to {len(every)} intervals "
            f"({every[0]}-{every[-1]} steps, 8 replicates each on common random numbers): "
            f"{best:.0f} s; Young's sqrt(2 x write x MTBF) {young:.0f} s "
            f"({(best / young - 1) * 100:+.1f}%), Daly's {daly:.0f} s. Target: within 10% of "
            "Young's.", ""]
    return out


# ---------------------------------------------------------------- must-show
def large_sync() -> list[str]:
    a = INPUTS["large_sync_1024"]
    out = ["## 3. large_sync_1024 over 30 days at a node MTBF of 6,000 h", "",
           f"scenarios/bench/large_sync_1024.yaml (1,024 H800, 100 steps in detail), "
           f"`horizon: {a['span']}`, `faults.node: [{{mtbf: {a['node_mtbf']}}}]`, 20 replicates "
           "(the default). CPU time of the whole command in one process on this machine "
           f"({platform.processor() or platform.machine()}), the detailed runs included.", "",
           "| checkpoint every | CPU s | ETTR mean [95% CI] (5-95th pct) | lost GPU-h mean "
           "[95% CI] (5-95th pct) | failure $/day | job restarts | best interval tried |",
           "|---|---:|---|---|---:|---:|---|"]
    for every in a["checkpoint_every"]:
        sets = [f"horizon={a['span']}", f"faults.node=[{{mtbf: {a['node_mtbf']}}}]"]
        if every:
            sets.append(f"recovery.trainer.checkpoint_every={every}")
        t0 = time.process_time()
        scenario, base = load_scenario(ROOT / "scenarios/bench/large_sync_1024.yaml", sets)
        h = simulate_horizon(prepare(scenario, base, allow_large=True)).summary["horizon"]
        cpu = time.process_time() - t0
        e, lost = h["ettr"], h["lost_gpu_hours"]
        scan = h["checkpoint_scan"]
        best = (f"every {scan['best_every']}: ETTR {scan['best_ettr']:.4f}" if scan else "-")
        out.append(
            f"| {every or 'never (as the file is)'} | {cpu:.1f} | {e['mean']:.4f} "
            f"[{e['ci95_low']:.4f}, {e['ci95_high']:.4f}] ({e['p5']:.4f}-{e['p95']:.4f}) | "
            f"{lost['mean']:,.0f} [{lost['ci95_low']:,.0f}, {lost['ci95_high']:,.0f}] "
            f"({lost['p5']:,.0f}-{lost['p95']:,.0f}) | "
            f"{h['failure_usd_per_day']['mean']:,.0f} | {h['restarts']['mean']:.1f} | {best} |")
    out += ["", "Without checkpoints every job restart goes back to step 1: the month is "
            "mostly redone work. The target is under a minute of CPU for one horizon run of "
            "20 replicates (and under 10 minutes for 20 replicates).", ""]
    return out


# ---------------------------------------------------------------- anchors
def llama3() -> list[str]:
    a = INPUTS["llama3"]
    span = a["days"] * 86400.0
    fail_rate = a["unexpected_interruptions"] / span
    planned_rate = a["planned_interruptions"] / span
    mtbf = 1 / fail_rate
    step = a["step_s"]
    out = ["## 4. Anchor: Llama 3's 54 days on 16,384 GPUs", "",
           f"Llama 3 (arXiv 2407.21783, section 3.3.4): {a['unexpected_interruptions']} "
           f"unexpected interruptions in {a['days']} days (a job MTBF of {mtbf / 3600:.2f} h) "
           f"and {a['planned_interruptions']} planned ones, 'higher than 90% effective "
           f"training time'. A {step} s step [D], checkpoints at Young's interval, a planned "
           "interruption costing a restart only (it checkpoints first). Inputs and sources: "
           f"{ANCHORS}. 20 replicates of the 54 days.", "",
           "| write (s) | restart (s) | interval (steps) | ETTR mean [95% CI] | "
           "loss per failure (s) |", "|---:|---:|---:|---|---:|"]

    def model(write: float, restart: float) -> JobModel:
        every = max(1, round(young_interval_s(write, mtbf) / step))
        return JobModel((step,), 0.0, every, write, (
            FaultClass("unexpected", fail_rate, True, restart),
            FaultClass("planned", planned_rate, False, penalties_s=(restart,))))

    def ettr(m: JobModel) -> tuple[float, float, float]:
        runs = [run_job(m, np.random.default_rng([38, r]), span_s=span) for r in range(20)]
        e = np.asarray([r.steps * step / r.wall_s for r in runs])
        loss = sum(r.lost_work_s + r.down_s for r in runs) / max(1, sum(r.restarts
                                                                       for r in runs))
        return float(e.mean()), 1.96 * float(e.std(ddof=1)) / math.sqrt(len(e)), loss

    for write in a["checkpoint_write_s"]:
        for restart in a["restart_s"]:
            m = model(write, restart)
            e, half, loss = ettr(m)
            out.append(f"| {write} | {restart} | {m.checkpoint_every} | {e:.4f} "
                       f"[{e - half:.4f}, {e + half:.4f}] | {loss:,.0f} |")
    out += ["", "Where ETTR falls below 90% (bisection on the restart time, same draws):", ""]
    for write in a["checkpoint_write_s"]:
        lo, hi = 0.0, 7200.0
        for _ in range(30):
            mid = (lo + hi) / 2
            if ettr(model(write, mid))[0] >= 0.9:
                lo = mid
            else:
                hi = mid
        loss = ettr(model(write, lo))[2]
        out.append(f"- write {write} s: a restart of {lo / 60:.1f} min, {loss / 60:.1f} min "
                   "lost per unexpected interruption in all (restart plus the work since "
                   "the last checkpoint).")
    out.append("")
    return out


def robustrl() -> list[str]:
    a = INPUTS["robustrl"]
    out = ["## 5. Anchor: RobustRL's job through the horizon", "",
           f"scenarios/robustrl (256 GPUs, async), its ten injected trainer faults in 100 "
           f"steps as a rate (a trainer MTBF of {a['trainer_mtbf_s']} s, {ANCHORS}), "
           f"`horizon: {{steps: {a['steps']}}}`. The full simulation's figures are "
           "reports/robustrl.md's (faults at one instant per tenth of the steps, seeds 0-2); "
           "its 'goodput vs fault-free' is what the horizon's ETTR measures.", "",
           "| scheme | horizon ETTR mean [95% CI] | full: goodput vs fault-free | "
           "paper's ETTR |", "|---|---|---:|---:|"]
    full = {"job": "70.5%", "role": "94.4%"}
    paper = {"job": "60%", "role": "> 80%"}
    for scheme in ("job", "role"):
        scenario, base = load_scenario(
            ROOT / f"scenarios/robustrl/qwen3-8b-math-256-{scheme}.yaml",
            [f"faults.trainer=[{{mtbf: {a['trainer_mtbf_s']} s}}]",
             f"horizon={{steps: {a['steps']}}}"])
        h = simulate_horizon(prepare(scenario, base)).summary["horizon"]
        e = h["ettr"]
        out.append(f"| {scheme} | {e['mean']:.1%} [{e['ci95_low']:.1%}, {e['ci95_high']:.1%}] "
                   f"| {full[scheme]} | {paper[scheme]} |")
    out.append("")
    return out


def main() -> None:
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        parts = check(pool)
    parts += emulation() + closed_forms() + large_sync() + llama3() + robustrl()
    head = ["# The horizon: a month of training at a cluster's failure rates", "",
            "Generated by `make horizon-report` (scenarios/horizon/make_report.py) from "
            f"{ANCHORS} in {time.time() - t0:.0f} s. The model: "
            "docs/faults.md, 'Horizon'.", ""]
    OUT.write_text("\n".join(head + parts), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
