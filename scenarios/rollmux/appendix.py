"""The scheduler simulation of RollMux's appendix [P Weave 6.5, Table 6, Figs. 15a-b, 20].

Owns the report section that compares RollMux's inter-group scheduler with the naive
Random and Greedy (most-idle) placements and with the best placement one can bound, on
300 arriving jobs defined only by their phase times (Table 6):

- arrivals and durations: `appendix/arrivals.csv`, a STAND-IN matched to the Philly
  segment's published statistics (300 jobs, 580 h, mean 14.4 h, max 142.9 h), because no
  public non-LFS copy of the Philly job log was found (`appendix/README.md`);
- jobs: Balanced / Rollout-heavy / Train-heavy x Small / Medium / Large, T_roll and T_train
  drawn once per job from Table 6's uniform ranges; Mixed draws the profile uniformly from
  the nine. Each iteration varies the job's phases by up to +-`VARIATION` (documented
  choice: the paper draws per job and is silent on per-iteration noise); the admission's
  worst case is the top of that range;
- each job: one 8-GPU H20 node for rollout, one 8-GPU H800 node for training, $1.85 and
  $5.28 per GPU-hour [P Weave Table 1]. Why one and one: the paper's Fig. 20 pairs 1400
  GPUs with "over 5K $/h" and 504 GPUs with "~1.8K $/h", i.e. $3.57 per GPU-hour, the mean
  of the two prices: equal H20 and H800 counts; one node each is Table 3's Type-A/B shape;
- the optimum: rlsim/fleet/optimal.py. The paper's brute force is infeasible at 300 jobs
  (Table 5), so the trace is compared against a valid LOWER BOUND on any placement's cost
  (every phase's node-seconds paid once), and the exact brute force is run on small
  batches of simultaneous jobs, where RollMux's own first-fit choice is checked against it.

`section()` returns the markdown; `python scenarios/rollmux/appendix.py` prints it.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from rlsim.config.fleet import FleetScenario
from rlsim.fleet import JobProfile
from rlsim.fleet.optimal import (
    StaticJob,
    TraceJob,
    brute_force_optimum,
    static_lower_bound,
    work_lower_bound_usd,
)
from rlsim.fleet.runtime import FleetRun
from rlsim.fleet.summary import summarize_fleet
from rlsim.trace import Recorder

HERE = Path(__file__).resolve().parent
ARRIVALS = HERE / "appendix" / "arrivals.csv"
H20_USD, H800_USD = 1.85, 5.28  # per GPU-hour [P Weave Table 1]
NODE_GPUS = 8
ROLL_NODE_USD_H, TRAIN_NODE_USD_H = NODE_GPUS * H20_USD, NODE_GPUS * H800_USD
SEED = 0
VARIATION = 0.10  # per-iteration phase noise, +- share of the job's drawn phase time
PROFILED_ITERS = 8  # iterations each job's profile holds; the run draws from them
MAX_GROUP = 5  # [P Weave Fig. 20]: max group size 5
# Switches: a 7B job on one 8-GPU node [P Weave Fig. 4, arXiv]; Table 6 gives phases only
WARM_ROLL_S, WARM_TRAIN_S, COLD_ROLL_S, COLD_TRAIN_S = 0.9, 4.1, 38.8, 32.7

# Table 6 [P Weave Appendix]: (T_roll range, T_train range) in seconds
TABLE6: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "BL-S": ((50, 100), (50, 100)), "BL-M": ((100, 200), (100, 200)),
    "BL-L": ((200, 300), (200, 300)),
    "RH-S": ((100, 200), (25, 50)), "RH-M": ((200, 400), (50, 100)),
    "RH-L": ((400, 600), (100, 200)),
    "TH-S": ((25, 50), (100, 200)), "TH-M": ((50, 100), (200, 400)),
    "TH-L": ((100, 200), (400, 600)),
}
WORKLOADS = {"BL": "Balanced", "RH": "Rollout-heavy", "TH": "Train-heavy", "Mixed": "Mixed"}
PLACEMENTS = ("rollmux", "random", "greedy")
SLOS: tuple[str, ...] = ("1.2", "1.5", "2.0", "U(1,2)")
# [P Weave 6.5 and Appendix] what the paper reports
PAPER = {
    "fig15a": "RollMux 1.01-1.12x optimal at 100% SLO; Random 1.72-2.00x at 37-58%; "
              "Greedy 1.38-1.89x at 42-61%",
    "fig15b": "RollMux 100% at every SLO; baselines 1.59-2.09x optimal; Random/Greedy SLO "
              "attainment 38%/43% at SLO 1.2 rising to 71%/73% at 2.0",
    "fig20": "Mixed, SLO ~ U(1,2): RollMux 0.87K $/h (1.06x optimal, 100%), Random 1.62K "
             "(1.97x, 60%), Greedy 1.36K (1.66x, 62%); RollMux peak ~1.8K $/h, <= 504 GPUs",
}
TEMPLATE: dict[str, Any] = {  # only the GPUs matter: the profile is given, not modelled
    "model": "qwen2.5-7b",
    "rollout": {"pool": "h20", "gpus": NODE_GPUS},
    "train": {"pool": "h800", "gpus": NODE_GPUS},
    "workload": {"prompts_per_step": 64, "samples_per_prompt": 8, "max_response_len": 8192,
                 "response_len": {"dist": "fixed", "value": 1000}},
}


def arrivals() -> list[tuple[str, float, float]]:
    """(name, arrival s, solo duration s) of the 300 stand-in jobs."""
    with ARRIVALS.open() as f:
        return [(r["name"], float(r["arrival_s"]), float(r["duration_h"]) * 3600)
                for r in csv.DictReader(f)]


def draw_jobs(workload: str, seed: int = SEED) -> list[tuple[str, float, float]]:
    """(Table 6 kind, T_roll, T_train) per job, drawn once per job (seeded per workload)."""
    rng = np.random.default_rng([seed, list(WORKLOADS).index(workload)])
    kinds = [k for k in TABLE6 if workload == "Mixed" or k.startswith(workload)]
    out = []
    for _ in range(len(arrivals())):
        kind = kinds[int(rng.integers(len(kinds)))]
        (r0, r1), (t0, t1) = TABLE6[kind]
        out.append((kind, float(rng.uniform(r0, r1)), float(rng.uniform(t0, t1))))
    return out


def draw_slos(spec: str, n: int, seed: int = SEED) -> list[float]:
    if spec.startswith("U"):
        return [float(x) for x in np.random.default_rng([seed, 99]).uniform(1.0, 2.0, n)]
    return [float(spec)] * n


def profile(roll_s: float, train_s: float, rng: np.random.Generator) -> JobProfile:
    """A job's profile straight from its phase times (no cost model)."""
    k = PROFILED_ITERS
    rolls = tuple(float(x) for x in roll_s * rng.uniform(1 - VARIATION, 1 + VARIATION, k))
    trains = tuple(float(x) for x in train_s * rng.uniform(1 - VARIATION, 1 + VARIATION, k))
    return JobProfile(
        roll_s=rolls, tail_at=(1.0,) * k, train_s=trains, coloc_s=(roll_s + train_s,) * k,
        roll_worst_s=roll_s * (1 + VARIATION), train_worst_s=train_s * (1 + VARIATION),
        sync_s=0.0, warm_roll_s=WARM_ROLL_S, warm_train_s=WARM_TRAIN_S,
        cold_roll_s=COLD_ROLL_S, cold_train_s=COLD_TRAIN_S,
        host_roll_bytes=0.0, host_train_bytes=0.0,  # the group size limit binds instead
        samples=TEMPLATE["workload"]["prompts_per_step"] * 8)


@dataclass(frozen=True)
class Outcome:
    usd_total: float
    usd_per_hour: float
    peak_usd_per_hour: float
    peak_gpus: int
    slo_attainment: float
    bound_usd: float
    wall_s: float

    @property
    def vs_bound(self) -> float:
        return self.usd_total / self.bound_usd


@cache
def simulate(workload: str, placement: str, slo: str = "U(1,2)",
             max_group: int = MAX_GROUP) -> Outcome:
    """One 300-job run (cached: the sweep and the workload table share runs)."""
    t0 = time.perf_counter()
    arr = arrivals()
    jobs = draw_jobs(workload)
    slos = draw_slos(slo, len(arr))
    prng = np.random.default_rng([SEED, 7, list(WORKLOADS).index(workload)])
    profiles = {name: profile(r, t, prng) for (name, _, _), (_, r, t) in zip(arr, jobs,
                                                                             strict=True)}
    scenario = FleetScenario.model_validate({
        "kind": "fleet", "name": f"appendix-{workload}-{placement}", "seed": SEED,
        "pools": [{"name": "h20", "gpu": "H20", "nodes": len(arr),
                   "usd_per_gpu_hour": H20_USD},
                  {"name": "h800", "gpu": "H800", "nodes": len(arr),
                   "usd_per_gpu_hour": H800_USD}],
        "policy": {"name": "multiplex",
                   "multiplex": {"placement": placement, "max_jobs_per_group": max_group,
                                 "migration": False}},
        "jobs": [{**TEMPLATE, "name": name, "arrival": a, "duration": d, "slo": s}
                 for (name, a, d), s in zip(arr, slos, strict=True)]})
    rec = Recorder()
    run = FleetRun(scenario, profiles, rec)
    bound = work_lower_bound_usd(
        [TraceJob(r.steps, float(np.asarray(r.profile.roll_s)[r.draws].mean()),
                  float(np.asarray(r.profile.train_s)[r.draws].mean())) for r in run.runs],
        ROLL_NODE_USD_H, TRAIN_NODE_USD_H)
    run.run()
    s = summarize_fleet(rec, "multiplex", time.perf_counter() - t0, run.decision_s)
    usd_series = [c.value for c in rec.counters if c.name == "usd_per_hour"]
    return Outcome(s["cost"]["usd_total"], s["cost"]["usd_per_hour"], max(usd_series),
                   sum(s["gpus_peak"].values()), s["slo_attainment"], bound,
                   time.perf_counter() - t0)


def small_batches(n_batches: int = 20, size: int = 6) -> list[tuple[float, float, float]]:
    """(RollMux $/h, exact optimum $/h, static bound $/h) for batches of `size` Mixed jobs
    arriving together, SLO ~ U(1,2): RollMux's placements read from a short run."""
    rng = np.random.default_rng([SEED, 11])
    kinds = list(TABLE6)
    out = []
    for b in range(n_batches):
        jobs = []
        for _ in range(size):
            (r0, r1), (t0, t1) = TABLE6[kinds[int(rng.integers(len(kinds)))]]
            jobs.append(StaticJob(float(rng.uniform(r0, r1)), float(rng.uniform(t0, t1)),
                                  float(rng.uniform(1, 2))))
        prng = np.random.default_rng([SEED, 12, b])
        profiles = {f"s{i}": profile(j.roll_s, j.train_s, prng) for i, j in enumerate(jobs)}
        scenario = FleetScenario.model_validate({
            "kind": "fleet", "name": "appendix-small", "seed": SEED,
            "pools": [{"name": "h20", "gpu": "H20", "nodes": size,
                       "usd_per_gpu_hour": H20_USD},
                      {"name": "h800", "gpu": "H800", "nodes": size,
                       "usd_per_gpu_hour": H800_USD}],
            "policy": {"name": "multiplex", "multiplex": {"migration": False,
                                                          "max_jobs_per_group": MAX_GROUP}},
            "jobs": [{**TEMPLATE, "name": f"s{i}", "steps": 300, "slo": j.slo}
                     for i, j in enumerate(jobs)]})
        rec = Recorder()
        run = FleetRun(scenario, profiles, rec)
        run.run()
        rollmux = max(c.value for c in rec.counters if c.name == "usd_per_hour")
        # the model's optimum with the same worst-case phases the admission uses
        worst = [StaticJob(j.roll_s * (1 + VARIATION), j.train_s * (1 + VARIATION), j.slo)
                 for j in jobs]
        opt = brute_force_optimum(worst, ROLL_NODE_USD_H, TRAIN_NODE_USD_H, MAX_GROUP)
        out.append((rollmux, opt.usd_per_hour,
                    static_lower_bound(worst, ROLL_NODE_USD_H, TRAIN_NODE_USD_H, MAX_GROUP)))
    return out


def _k(usd: float) -> str:
    return f"{usd / 1000:.2f}K"


def section() -> list[str]:
    t0 = time.perf_counter()
    lines = [
        "## Scheduler simulation (appendix) [P Weave 6.5, Table 6, Figs. 15a, 15b, 20]",
        "",
        "**Arrivals are a stand-in, not the Philly trace.** The public Philly job log is a "
        "Git LFS pointer in msr-fiddle/philly-traces and no other public copy of the per-job "
        "table was found (scenarios/rollmux/appendix/README.md lists the search). "
        "`appendix/arrivals.csv` has 300 Poisson arrivals over 580 h and lognormal durations "
        "matched exactly to the segment's published mean (14.4 h) and maximum (142.9 h); "
        "every figure below is blocked on the real segment only through these arrivals.",
        "",
        "Jobs: Table 6's phase times drawn once per job, +-10% per iteration (admission "
        "checks the top of that range; the run draws within it); one H20 node + one H800 "
        "node per job, $1.85 / $5.28 per GPU-hour; max group size 5; no long-tail "
        "migration (Table 6 jobs have no response lengths). Cost = integral of allocated "
        "nodes' price; $/h over first arrival to last finish. The paper's Offline Optimal "
        "cannot be computed at 300 jobs (its brute force passes 5 h at 13 jobs, Table 5), so "
        "the column *bound* is a valid lower bound on ANY placement's total cost (every "
        "phase's node-seconds paid once, rlsim/fleet/optimal.py); *x bound* is a run's "
        "total cost over it. The true optimum lies between the bound and RollMux.",
        "",
        "### Cost and SLO attainment per workload (SLO ~ U(1,2)) [Fig. 15a]",
        "",
        f"Paper: {PAPER['fig15a']}.",
        "",
        "| workload | bound $/h | RollMux $/h | x bound | SLO | Random $/h | x bound | SLO "
        "| Greedy $/h | x bound | SLO |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for w, label in WORKLOADS.items():
        rows = {p: simulate(w, p) for p in PLACEMENTS}
        rm = rows["rollmux"]
        bound_h = rm.bound_usd / (rm.usd_total / rm.usd_per_hour)  # over RollMux's span
        cells = [f"{label}", _k(bound_h)]
        for p in PLACEMENTS:
            o = rows[p]
            cells += [_k(o.usd_per_hour), f"{o.vs_bound:.2f}x", f"{o.slo_attainment:.0%}"]
        lines.append("| " + " | ".join(cells) + " |")
    mixed = {p: simulate("Mixed", p) for p in PLACEMENTS}
    rm = mixed["rollmux"]
    lines += [
        "",
        "### Mixed workload, SLO ~ U(1,2) [Fig. 20]",
        "",
        f"Paper: {PAPER['fig20']}.",
        "",
        "| placement | $/h | total $ | x bound | SLO met | peak $/h | peak GPUs |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in PLACEMENTS:
        o = mixed[p]
        lines.append(f"| {p} | {_k(o.usd_per_hour)} | {o.usd_total:,.0f} | "
                     f"{o.vs_bound:.2f}x | {o.slo_attainment:.0%} | "
                     f"{_k(o.peak_usd_per_hour)} | {o.peak_gpus} |")
    lines += [
        "",
        "### SLO sweep, Mixed [Fig. 15b]",
        "",
        f"Paper: {PAPER['fig15b']}.",
        "",
        "| SLO | RollMux x bound | SLO met | Random x bound | SLO met | Greedy x bound "
        "| SLO met |",
        "|---|---|---|---|---|---|---|",
    ]
    for slo in SLOS:
        cells = [slo]
        for p in PLACEMENTS:
            o = simulate("Mixed", p, slo)
            cells += [f"{o.vs_bound:.2f}x", f"{o.slo_attainment:.0%}"]
        lines.append("| " + " | ".join(cells) + " |")
    small = small_batches()
    ratio = [r / o for r, o, _ in small]
    gap = [o / b for _, o, b in small]
    lines += [
        "",
        "### Exact optimum on small batches",
        "",
        f"{len(small)} batches of 6 Mixed jobs arriving together (SLO ~ U(1,2)): RollMux's "
        "placement (300-step jobs) against the exact brute-force optimum of the same "
        "group model (Theorem-1 cycle, worst-case phases, max group 5, switches left "
        "out). RollMux / optimum: "
        f"mean {np.mean(ratio):.3f}x, max {np.max(ratio):.3f}x; optimum / static bound: "
        f"mean {np.mean(gap):.3f}x, max {np.max(gap):.3f}x (a RollMux below 1.00x is a "
        "group its replay admits that the Theorem-1 estimate would not).",
        "",
        "### Gaps and why",
        "",
        "- **RollMux vs optimum.** Against the exact optimum (small batches) RollMux lands "
        "in the paper's 1.01-1.12x band on average, with single batches up to the max "
        "above: it places jobs one at a time in arrival order, the optimum reorders and "
        "regroups. On the 300-job runs only the work bound is available; that bound is "
        "itself loose (on the small batches the exact optimum is ~1.5x the analogous "
        "static bound, worst for rollout- and train-heavy jobs, whose other pool must idle "
        "through the dependency), so '1.5x the bound' does not show a 1.5x gap to the "
        "optimum: the optimum lies between the two columns and 'within 10% of optimal' "
        "cannot be decided at 300 jobs.",
        "- **Random and Greedy cost about what RollMux costs here (Greedy less, Random "
        "within a few percent), the paper has them 1.4-2.1x dearer.** rlsim's `random` is "
        "the paper's Random: uniformly one of the groups with room or a new group, then one "
        "of that group's offers (packing onto its least-loaded nodes or scaling its "
        "rollout), not random nodes; `greedy` picks the group whose busiest rollout node "
        "is least loaded and opens a new group only when none has room. Neither checks "
        "SLOs, so they pack more densely than RollMux and miss SLOs (the tables set their "
        "attainment beside the paper's; Greedy, which always packs, misses most). Their ranking "
        "(RollMux the only one meeting SLOs) holds; their cost ratios do not reproduce: "
        "how the paper's baselines reach 5K $/h and 1400 GPUs is not described, and "
        "packing without an SLO check cannot cost more nodes than RollMux's placement "
        "unless slowed jobs run much longer (as in Rollout-heavy, where five jobs on one "
        "rollout node stretch each other's runs and bills).",
        "- **Absolute $/h is ~3x below the paper's.** 300 jobs x 14.4 h over ~580 h is "
        "~7.5 jobs running at a time; at one H20 + one H800 node per job even Solo-D would "
        "cost ~$0.43K/h, below the paper's optimum (~$0.82K/h). The paper's jobs must "
        "hold more GPUs, or its arrivals be far burstier than a Poisson stand-in (its "
        "baselines peak at 1400 GPUs); neither is stated. Ratios are compared, not $/h.",
        "- **RollMux misses a few SLOs (99-100%, paper 100%).** Admission checks the worst "
        "case, but the runtime draws phases within +-10% and neighbours' cycles shift; "
        "a job that waits once for a whole neighbour phase on joining can exceed a tight "
        "SLO near 1.0. Measured, not assumed.",
        "",
        f"_Section computed in {time.perf_counter() - t0:.0f} s._",
    ]
    return lines


if __name__ == "__main__":
    print("\n".join(section()))
