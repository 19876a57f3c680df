"""Write reports/rollmux.md: rlsim's reproduction of RollMux (Weave, OSDI'26).

Simulates the three micro-benchmark pairs of this folder under Solo-D, RollMux (multiplex),
the job-level share (gavel) and veRL colocated; the micro-benchmarks again at the paper's
example SLO of 1.1 and without long-tail migration; and the generated 200-job trace under
every policy and both naive placements (greedy, random). It writes the tables next to the
paper's numbers (docs/research/rollmux.md), two SVG figures (the timeline of one group, the
trace's cost over time) and a discussion of every gap above 10%. Every figure is computed
here from the scenarios as committed.
Run: `make rollmux-report` (about 4 minutes on 2 cores).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlsim.config.fleet_loading import load_fleet
from rlsim.fleet import FleetResult, JobProfile, profile_jobs, simulate_fleet
from rlsim.report.fleet import busiest_group, cost_series, cost_svg, group_timeline_svg

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "reports" / "rollmux.md"
# (benchmark, paper ratio vs Solo-D, vs Gavel+, vs veRL) [P Weave 6.2, Fig. 10]
MICRO = (("temporal", "Temporal (2 x Type-A)", 1.82, 1.73, 1.47),
         ("rollout-heavy", "Rollout-heavy (2 x Type-D + Type-E)", 1.90, 1.43, 1.35),
         ("spatial", "Spatial (Type-C + 2 x Type-D)", 1.99, 1.78, 1.43))
TOLERANCE = 0.15
POLICIES = ("solo", "colocated", "gavel", "multiplex")


@dataclass
class Fleet:
    result: FleetResult

    @property
    def s(self) -> dict[str, Any]:
        return self.result.summary

    @property
    def per_usd(self) -> float:
        return float(self.s["cost"]["samples_per_usd"])


def _run(path: Path, overrides: list[str],
         profiles: dict[str, JobProfile] | None = None) -> Fleet:
    scenario, base = load_fleet(path, overrides)
    return Fleet(simulate_fleet(scenario, base, profiles))


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def micro() -> tuple[list[str], dict[str, dict[str, Fleet]]]:
    runs: dict[str, dict[str, Fleet]] = {}
    for key, *_ in MICRO:
        path = HERE / f"{key}-rollmux.yaml"
        scenario, base = load_fleet(path)
        profiles = profile_jobs(scenario, base)
        runs[key] = {p: _run(path, [f"policy.name={p}"], profiles) for p in POLICIES}
        runs[key]["slo-1.1"] = _run(path, [f"jobs.{j.name}.slo=1.1" for j in scenario.jobs],
                                    profiles)
        runs[key]["no-migration"] = _run(path, ["policy.multiplex.migration=false"], profiles)
        runs[key]["profiles"] = profiles  # type: ignore[assignment]
    lines = [
        "## Micro-benchmarks: throughput per dollar",
        "",
        "Samples trained per dollar of allocated GPUs (the fleet's whole run), RollMux over "
        "each baseline. Paper: Fig. 10 [P 6.2]; target: within 15% of the Solo-D ratio.",
        "",
        "| benchmark | RollMux / Solo-D: paper | rlsim | error | within 15% | "
        "/ Gavel+: paper | rlsim (gavel) | / veRL: paper | rlsim (colocated) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, label, solo_p, gavel_p, verl_p in MICRO:
        r = runs[key]
        mux = r["multiplex"].per_usd
        ratio = mux / r["solo"].per_usd
        err = ratio / solo_p - 1
        lines.append(
            f"| {label} | {solo_p:.2f}x | {ratio:.2f}x | {_pct(err)} | "
            f"{'yes' if abs(err) <= TOLERANCE else '**no**'} | {gavel_p:.2f}x | "
            f"{mux / r['gavel'].per_usd:.2f}x | {verl_p:.2f}x | "
            f"{mux / r['colocated'].per_usd:.2f}x |")
    lines += [
        "",
        "How RollMux placed the jobs, what it allocated, and the co-execution overhead per "
        "iteration against each job's own solo iterations (paper: 1.6-9.8% [P Table 4]):",
        "",
        "| benchmark | placements | GPUs (RollMux) | GPUs (Solo-D) | overhead per job | "
        "SLO met | at SLO 1.1 | without migration |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, label, *_ in MICRO:
        r = runs[key]
        s = r["multiplex"].s
        over = [(float(j["finish"]) - float(j["start"])) / float(j["solo_jct_s"]) - 1
                for j in s["per_job"]]
        tight = r["slo-1.1"]
        lines.append(
            f"| {label} | {_mix(s)} | {_gpus(s)} | {_gpus(r['solo'].s)} | "
            f"{min(over):.1%} to {max(over):.1%} | {s['slo_attainment']:.0%} | "
            f"{tight.per_usd / r['solo'].per_usd:.2f}x ({_mix(tight.s)}) | "
            f"{r['no-migration'].per_usd / r['solo'].per_usd:.2f}x |")
    lines += ["", "Job types as rlsim profiles them (scenarios/rollmux/job-types.yaml; seconds "
              "per iteration, mean of the profiled iterations):", "",
              "| type | model | rollout / train GPUs | rollout | train | sync | "
              "rollout / train | worst case rollout / train | tail share kept |",
              "|---|---|---|---|---|---|---|---|---|"]
    seen = set()
    for key, *_ in MICRO:
        scenario, _ = load_fleet(HERE / f"{key}-rollmux.yaml")
        profiles: dict[str, JobProfile] = runs[key]["profiles"]  # type: ignore[assignment]
        for job in scenario.jobs:
            kind = (job.model_spec.name, job.rollout.gpus, job.train.gpus,
                    job.workload.prompts_per_step, job.workload.agentic is not None)
            if kind in seen:
                continue
            seen.add(kind)
            p = profiles[job.name]
            lines.append(
                f"| {job.name} ({key}) | {job.model_spec.name} | {job.rollout.gpus} H20 / "
                f"{job.train.gpus} H800 | {p.roll_mean_s:.0f} | {p.train_mean_s:.0f} | "
                f"{p.sync_s:.1f} | {p.roll_mean_s / p.train_mean_s:.2f} | "
                f"{p.roll_worst_s:.0f} / {p.train_worst_s:.0f} | {p.tail_fraction:.2f} |")
    return lines, runs


def _mix(s: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in s["placements"].items())


def _gpus(s: dict[str, Any]) -> str:
    return " + ".join(f"{v} {k.upper()}" for k, v in s["gpus_peak"].items() if v)


def trace() -> tuple[list[str], dict[str, Fleet]]:
    path = HERE / "trace-200-jobs.yaml"
    scenario, base = load_fleet(path)
    profiles = profile_jobs(scenario, base)
    runs = {p: _run(path, [f"policy.name={p}"], profiles) for p in POLICIES}
    for placement in ("greedy", "random"):
        runs[placement] = _run(path, [f"policy.multiplex.placement={placement}"], profiles)
    runs["no-migration"] = _run(path, ["policy.multiplex.migration=false"], profiles)
    solo = runs["solo"].s["cost"]["usd_per_hour"]
    paper = {"solo": "$940/h (1.84x)", "colocated": "$710/h (1.38x)", "multiplex": "$510/h",
             "gavel": "-", "greedy": "- (SLO 42-61% in the paper's simulations)",
             "random": "- (SLO 37-58% in the paper's simulations)"}
    lines = [
        "## Production trace: 200 jobs",
        "",
        "The generated trace (scenarios/rollmux/make_trace.py: what the paper states of its "
        "trace and what is chosen) under each policy; cost is the time-average $/h of the "
        "allocated GPUs, RollMux's advantage is the policy's $/h over RollMux's. Paper: "
        "[P 6.4].",
        "",
        "| policy | $/h | paper | $/h over RollMux | samples per $ | SLO met | slowdown mean "
        "/ max | peak GPUs | busy share of allocated nodes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    mux = runs["multiplex"].s["cost"]["usd_per_hour"]
    for name in ("solo", "colocated", "gavel", "multiplex", "greedy", "random"):
        s = runs[name].s
        usd = s["cost"]["usd_per_hour"]
        label = {"greedy": "multiplex, greedy placement",
                 "random": "multiplex, random placement"}.get(name, name)
        lines.append(
            f"| {label} | {usd:.0f} | {paper[name]} | {usd / mux:.2f}x | "
            f"{s['cost']['samples_per_usd']:.0f} | {s['slo_attainment']:.1%} | "
            f"{s['slowdown']['mean']:.3f} / {s['slowdown']['max']:.2f} | {_gpus(s)} | "
            + ", ".join(f"{k} {v:.0%}" for k, v in s["busy_fraction"].items()) + " |")
    s = runs["multiplex"].s
    n = sum(s["placements"].values())
    mix = {k: v / n for k, v in s["placements"].items()}
    nm = runs["no-migration"].s["cost"]["usd_per_hour"]
    lines += [
        "",
        f"RollMux's admissions: {mix.get('pack', 0):.1%} direct packing, "
        f"{mix.get('scale', 0):.1%} rollout scaling, {mix.get('new', 0):.1%} new groups "
        "(paper: 60.5%, 15%, 24.5%). Solo-D over RollMux: "
        f"{solo / mux:.2f}x (paper 1.84x, error {_pct(solo / mux / 1.84 - 1)}). "
        f"Without long-tail migration RollMux costs ${nm:.0f}/h ({_pct(nm / mux - 1)}). "
        f"Placement decisions took {s['decision_s']:.2f} s of wall time for the 200 jobs.",
    ]
    return lines, runs


def figures(micro_runs: dict[str, dict[str, Fleet]], trace_runs: dict[str, Fleet]) -> list[str]:
    rec = micro_runs["temporal"]["multiplex"].result.recorder
    gid = busiest_group(rec) or 0
    starts = sorted(s.t0 for s in rec.spans if s.track.startswith("node.")
                    and s.name in ("rollout", "train"))
    (OUT.parent / "rollmux-temporal-group.svg").write_text(
        group_timeline_svg(rec, gid, until_s=float(np.percentile(starts, 20))) + "\n")
    trec = trace_runs["multiplex"].result.recorder
    tgid = busiest_group(trec) or 0
    first = min(float(i.t) for i in trec.instants if i.name == "placement"
                and int(i.attrs["group"]) == tgid)
    (OUT.parent / "rollmux-trace-group.svg").write_text(
        group_timeline_svg(trec, tgid, until_s=first + 4 * 3600.0, since_s=first) + "\n")
    (OUT.parent / "rollmux-trace-cost.svg").write_text(cost_svg(
        [(name, cost_series(trace_runs[name].result.recorder))
         for name in ("solo", "colocated", "multiplex")]) + "\n")
    return [
        "## Timelines and cost over time",
        "",
        "Which job's phase holds each node: the temporal pair in its first fifth (the cold "
        "starts, then the two jobs alternating on one H20 and one H800 node), and the trace's "
        f"busiest group (group {tgid}) over its first four hours. Faint bars are switches "
        "(cold or warm starts) and migrated tails.",
        "",
        "![temporal group](rollmux-temporal-group.svg)",
        "",
        "![trace group](rollmux-trace-group.svg)",
        "",
        "The trace's $/h of allocated GPUs over the two weeks:",
        "",
        "![trace cost](rollmux-trace-cost.svg)",
    ]


def main() -> None:
    micro_lines, micro_runs = micro()
    trace_lines, trace_runs = trace()
    text = [
        "# RollMux (Weave) reproduction",
        "",
        "Generated by `make rollmux-report` (scenarios/rollmux/make_report.py) from the "
        "scenarios in scenarios/rollmux; the paper's numbers and what could not be read of "
        "it are in docs/research/rollmux.md, the model in docs/fleet.md.",
        "",
        *micro_lines, "",
        *trace_lines, "",
        *figures(micro_runs, trace_runs), "",
        *discussion(micro_runs, trace_runs),
    ]
    tmp = OUT.with_name(OUT.name + ".partial")
    tmp.write_text("\n".join(text) + "\n")
    tmp.replace(OUT)
    print(f"wrote {OUT}")


def discussion(micro_runs: dict[str, dict[str, Fleet]],
               trace_runs: dict[str, Fleet]) -> list[str]:
    """Filled in from the figures above; the reasoning behind each gap is in prose that
    names the figure it rests on."""
    r = {k: v["multiplex"].per_usd / v["solo"].per_usd for k, v in micro_runs.items()}
    margin = micro_runs["temporal"]["multiplex"].result.scenario.policy.multiplex.slo_margin
    t = trace_runs
    solo = t["solo"].s
    mux = t["multiplex"].s
    col = t["colocated"].s
    return [
        "## Discussion",
        "",
        f"**Micro-benchmarks** ({r['temporal']:.2f}x, {r['rollout-heavy']:.2f}x, "
        f"{r['spatial']:.2f}x against 1.82x, 1.90x, 1.99x). Most of each ratio is cost "
        "arithmetic that the paper's text fixes: RollMux runs the temporal pair on half the "
        "GPUs, the rollout-heavy trio on one H800 node instead of three, and the spatial "
        "trio's training on C's 16 H800 instead of 48. What rlsim adds is how much the "
        "co-executed iterations slow down (the overhead column). The job types' shapes are "
        "rlsim's (the paper's Table 3 is an image); they follow the text's phase ratios. "
        "The SLO decides whether RollMux packs at all (the 'at SLO 1.1' column, the paper's "
        "example tolerance): the admission estimate plus the one-off charges of a joining "
        f"job plus the {margin:.0%} margin must fit under it, so the scenarios use 1.5, the "
        "mean of the trace's U(1, 2) SLOs; the micro-benchmarks' own SLOs are not stated.",
        "",
        "**Baselines in the micro-benchmarks.** rlsim's veRL (colocated) runs rollout on the "
        "H800 training GPUs, where the cost model decodes far faster than on H20 (989 vs 148 "
        "TFLOP/s at the large batches of RL rollouts), so veRL is cheaper here than the "
        "paper measured; the Gavel+-like baseline shares nodes only between whole "
        "iterations, so it packs nothing the SLO allows. Both gaps are above 10% and come "
        "from baselines the paper defines in a table that could not be read.",
        "",
        f"**Trace** (Solo-D over RollMux "
        f"{solo['cost']['usd_per_hour'] / mux['cost']['usd_per_hour']:.2f}x "
        "against 1.84x). The gap is the job mix. Under Solo-D rlsim's generated jobs keep "
        f"their H20 busy {solo['busy_fraction'].get('h20', 0):.0%} of the time and their H800 "
        f"only {solo['busy_fraction'].get('h800', 0):.0%}: on H20, rlsim's decode cost model "
        "makes a 128 x 8 rollout 2-5x its training on H800, so only the training side has "
        "bubbles. RollMux fills them (rollout scaling is most admissions) but keeps as many "
        "H20 as Solo-D (peak GPUs column), while the paper's RollMux cut both peaks (H800 "
        "328 to 152, H20 328 to 216), which takes jobs whose rollout and training phases "
        "are of comparable length. The trace's per-job shapes are not stated beyond sizes, "
        "caps and turns, so this is the unknown that decides the gap. veRL colocated comes "
        f"out cheaper than RollMux (${col['cost']['usd_per_hour']:.0f}/h) for the same "
        "reason: its rollouts run on H800, which the cost model decodes far faster at RL "
        "batch sizes. RollMux meets every SLO; the greedy and random placements, which pack "
        f"without the SLO check, cost ${t['greedy'].s['cost']['usd_per_hour']:.0f}/h and "
        f"${t['random'].s['cost']['usd_per_hour']:.0f}/h but meet "
        f"{t['greedy'].s['slo_attainment']:.0%} and {t['random'].s['slo_attainment']:.0%} of "
        "the SLOs (the paper's simulations: 37-61%).",
        "",
        "**Long-tail migration** barely matters in rlsim (the no-migration columns), against "
        "1.06-1.28x in the paper: when 80% of a rollout's responses are done the remaining "
        "20% are still hundreds of sequences, and moving them onto a small share of the "
        "engines makes every decode iteration read several times more KV, so the default "
        "keeps most engines (the tail share column) and frees little.",
        "",
        "**Speed.** Placement for 2,000 arriving jobs: benchmarks/RESULTS.md "
        "(placement_2000).",
    ]


if __name__ == "__main__":
    main()
