"""The micro-benchmarks section of reports/rollmux.md [P Weave 6.2, Fig. 10, Table 4].

Owns simulating the three micro-benchmarks on Table 3's job types (temporal: 2 x Type-A;
rollout-heavy: 2 x Type-D + Type-E; spatial: Type-C + 2 x Type-D) under Solo-D, RollMux
(multiplex), the job-level share (gavel) and veRL (colocated), at the SLOs the paper leaves
open (1.5, with rows at 1.1 and 2.0), without long-tail migration, and with each open
job-type choice changed; and writing the markdown: throughput per dollar against the
paper's ratios, the co-execution overhead per iteration against Table 4's 1.6-9.8%, the
measured SLO attainment, the job types (job_types.py) and a discussion of each gap.
`section()` is what make_report.py includes; `.venv/bin/python scenarios/rollmux/micro.py`
prints it (about 1.5 minutes on one core).
"""

from __future__ import annotations

import copy
import functools
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsim.config.fleet_loading import fleet_from_dict
from rlsim.config.loading import read_yaml_file
from rlsim.fleet import FleetResult, JobProfile, profile_jobs, simulate_fleet

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # job_types.py sits beside this file, imported or run alone
    sys.path.insert(0, str(HERE))
import job_types  # noqa: E402

TOLERANCE = 0.15
# (benchmark, label, paper ratio over Solo-D, over Gavel+, over veRL) [P Weave 6.2, Fig. 10]
MICRO = (("temporal", "Temporal (2 x Type-A)", 1.82, 1.73, 1.47),
         ("rollout-heavy", "Rollout-heavy (2 x Type-D + Type-E)", 1.90, 1.43, 1.35),
         ("spatial", "Spatial (Type-C + 2 x Type-D)", 1.99, 1.78, 1.43))
POLICIES = ("solo", "colocated", "gavel", "multiplex")
OVERHEAD_PAPER = (0.016, 0.098)  # per-iteration overhead over solo [P Weave 6.2, Table 4]
SLO_ROWS = (1.1, 2.0)  # the paper sets no micro-benchmark SLO; 1.5 is the trace's mean
# Open job-type choices re-run through the benchmarks (job_types.SENSITIVITY has them all,
# on the phase times alone); fields set to None fall back to the schema's defaults.
MICRO_SENSITIVITY: tuple[tuple[str, job_types.Patch], ...] = (
    ("single-turn trainer packs samples unpadded",
     {t: {"train.micro_batch_size_per_gpu": None, "train.pad_to_multiple_of": None,
          "train.ref_pad_to": None} for t in ("type-a", "type-b", "type-c")}),
    ("multi-turn trainer packs trajectories unpadded",
     {t: {"train.pad_to": None} for t in ("type-d", "type-d-16", "type-e")}),
    ("single-turn Bsz counts responses (32 prompts x 8)",
     {t: {"workload.prompts_per_step": 32} for t in ("type-a", "type-b", "type-c")}),
    ("multi-turn: 1 turn (no tool call)",
     {t: {"workload.agentic.turns.value": 1} for t in ("type-d", "type-d-16", "type-e")}),
)


@dataclass
class Fleet:
    result: FleetResult

    @property
    def s(self) -> dict[str, Any]:
        return self.result.summary

    @property
    def per_usd(self) -> float:
        return float(self.s["cost"]["samples_per_usd"])

    @property
    def overheads(self) -> list[float]:
        """Each job's run from its start over its solo run, less 1: the co-execution
        slowdown per iteration (cold starts included in both)."""
        return [(float(j["finish"]) - float(j["start"])) / float(j["solo_jct_s"]) - 1
                for j in self.s["per_job"]]


def _data(key: str, patch: job_types.Patch | None = None) -> dict[str, Any]:
    """The benchmark's RollMux scenario with `patch` set on the jobs of each template (a
    job's own fields merge over its template's, None included)."""
    data = copy.deepcopy(read_yaml_file(HERE / f"{key}-rollmux.yaml"))
    for job in data["jobs"]:
        for dotted, value in (patch or {}).get(job["template"], {}).items():
            *head, last = dotted.split(".")
            node = job
            for part in head:
                node = node.setdefault(part, {})
            node[last] = copy.deepcopy(value)
    return data


def _run(data: dict[str, Any], overrides: list[str],
         profiles: dict[str, JobProfile] | None = None) -> Fleet:
    scenario, base = fleet_from_dict(data, overrides, HERE)
    return Fleet(simulate_fleet(scenario, base, profiles))


@functools.cache
def simulate(key: str) -> dict[str, Any]:
    """Every policy and variant of one benchmark, sharing one set of profiles (cached: the
    report's figures reuse the runs of its tables)."""
    data = _data(key)
    scenario, base = fleet_from_dict(data, None, HERE)
    profiles = profile_jobs(scenario, base)
    runs: dict[str, Any] = {p: _run(data, [f"policy.name={p}"], profiles) for p in POLICIES}
    for slo in SLO_ROWS:
        runs[f"slo-{slo}"] = _run(data, [f"jobs.{i}.slo={slo}" for i in
                                         range(len(scenario.jobs))], profiles)
    runs["no-migration"] = _run(data, ["policy.multiplex.migration=false"], profiles)
    for label, patch in MICRO_SENSITIVITY:
        if any(j["template"] in patch for j in data["jobs"]):
            changed = _data(key, patch)
            runs[label] = {p: _run(changed, [f"policy.name={p}"]) for p in ("solo", "multiplex")}
    return runs


def _mix(s: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in s["placements"].items() if v)


def _gpus(s: dict[str, Any]) -> str:
    return " + ".join(f"{v} {k.upper()}" for k, v in s["gpus_peak"].items() if v)


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def section() -> list[str]:
    wall0 = time.perf_counter()
    runs = {key: simulate(key) for key, *_ in MICRO}
    type_profiles = job_types.profile_types()
    lines = [
        "## Micro-benchmarks: throughput per dollar",
        "",
        "Table 3's job types (scenarios/rollmux/job-types.yaml) at the paper's prices ($1.85 "
        "per H20-hour, $5.28 per H800-hour [P Weave Table 1]) with Fig. 4's start times and "
        "Table 2's host footprints. Samples trained per dollar of allocated GPUs over the "
        "fleet's whole run, RollMux over each baseline [P Weave 6.2, Fig. 10]; \"within 15%\": "
        "|rlsim / paper - 1| <= 0.15.",
        "",
        "| benchmark | / Solo-D: paper | rlsim | error | within 15% | / Gavel+: paper | "
        "rlsim (gavel) | within 15% | / veRL: paper | rlsim (colocated) | within 15% |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, label, solo_p, gavel_p, verl_p in MICRO:
        r = runs[key]
        mux = r["multiplex"].per_usd
        vs = {p: mux / r[p].per_usd for p in ("solo", "gavel", "colocated")}
        lines.append(
            f"| {label} | {solo_p:.2f}x | {vs['solo']:.2f}x | {_pct(vs['solo'] / solo_p - 1)} "
            f"| {_yes(abs(vs['solo'] / solo_p - 1) <= TOLERANCE)} | {gavel_p:.2f}x | "
            f"{vs['gavel']:.2f}x | {_yes(abs(vs['gavel'] / gavel_p - 1) <= TOLERANCE)} | "
            f"{verl_p:.2f}x | {vs['colocated']:.2f}x | "
            f"{_yes(abs(vs['colocated'] / verl_p - 1) <= TOLERANCE)} |")
    lo, hi = OVERHEAD_PAPER
    lines += [
        "",
        "RollMux's placements and GPUs, the co-execution overhead per iteration of each job "
        f"against its solo run (paper: {lo:.1%}-{hi:.1%}, \"at most 10%\" [P Weave Table 4]), "
        "and the SLO "
        "attainment as measured (admission checks the worst case, every response at the max "
        "length; the run draws its own iterations). The paper sets no SLO for these jobs: "
        "1.5 (the trace's mean) is the default, with rows at 1.1 and 2.0.",
        "",
        "| benchmark | placements | GPUs (RollMux) | GPUs (Solo-D) | overhead per job | "
        "at most 9.8% | SLO met | / Solo-D at SLO 1.1 | at SLO 2.0 | without migration |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, label, *_ in MICRO:
        r = runs[key]
        s = r["multiplex"].s
        over = r["multiplex"].overheads
        solo = r["solo"].per_usd
        slo_cells = [f"{r[f'slo-{v}'].per_usd / solo:.2f}x ({_mix(r[f'slo-{v}'].s)}; SLO met "
                     f"{r[f'slo-{v}'].s['slo_attainment']:.0%})" for v in SLO_ROWS]
        # Table 4's range spans the paper's jobs; its claim is "at most 10%", so the check is
        # the largest overhead against the range's top (a job alone in its group has none)
        inside = max(over) <= hi
        lines.append(
            f"| {label} | {_mix(s)} | {_gpus(s)} | {_gpus(r['solo'].s)} | "
            f"{min(over):.1%} to {max(over):.1%} | {_yes(inside)} | "
            f"{s['slo_attainment']:.0%} (slowdown max {s['slowdown']['max']:.2f}) | "
            + " | ".join(slo_cells)
            + f" | {r['no-migration'].per_usd / solo:.2f}x |")
    lines += [
        "",
        "### Job types",
        "",
        "Each type profiled alone by rlsim's cost model (scenarios/rollmux/job_types.py); "
        "seconds per iteration, mean of the profiled iterations; the worst case has every "
        "response (every turn) at the max length:",
        "",
        *job_types.type_table(type_profiles),
        "",
        "Checked against what the paper reports of the phases (checks only: nothing is "
        "tuned to them; a range is compared by its midpoint):",
        "",
        *job_types.check_table(type_profiles),
        "",
        "### Sensitivity to the choices the paper leaves open",
        "",
        "job-types.yaml's header gives the source of every value the paper does not state. "
        "Each row changes one of them; first the phases of every type it touches:",
        "",
        *job_types.sensitivity_table(),
        "",
        "then RollMux over Solo-D in the benchmarks that hold such jobs:",
        "",
        "| choice changed | " + " | ".join(label for _, label, *_ in MICRO) + " |",
        "|---|" + "---|" * len(MICRO),
        "| as chosen | " + " | ".join(
            f"{runs[k]['multiplex'].per_usd / runs[k]['solo'].per_usd:.2f}x"
            for k, *_ in MICRO) + " |",
    ]
    for label, _ in MICRO_SENSITIVITY:
        cells = []
        for key, *_ in MICRO:
            v = runs[key].get(label)
            cells.append("-" if v is None else
                         f"{v['multiplex'].per_usd / v['solo'].per_usd:.2f}x "
                         f"({_mix(v['multiplex'].s)})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", *discussion(runs, type_profiles), "",
              f"(This section took {time.perf_counter() - wall0:.0f} s to simulate.)"]
    return lines


def discussion(runs: dict[str, Any], prof: dict[str, JobProfile]) -> list[str]:
    """The gaps, with the figures they rest on filled in from the runs."""
    ratio = {k: runs[k]["multiplex"].per_usd / runs[k]["solo"].per_usd for k, *_ in MICRO}
    a, d, e = prof["type-a"], prof["type-d"], prof["type-e"]
    c = prof["type-c"]
    spatial = runs["spatial"]["multiplex"].s
    return [
        "### Discussion of the micro-benchmark gaps",
        "",
        f"**Phase times.** rlsim's cost model, given Table 3's shapes and the documented "
        f"choices, makes Type-A's rollout {a.roll_mean_s:.0f} s (the Gantt chart: 125-152 s) "
        f"and its training {a.train_mean_s:.0f} s (99-117 s). Training depends on how the "
        "trainer batches: RollPacker's artifact (the same authors, on ROLL) pads each "
        "micro-batch and the reference pass, which overshoots; packing the samples "
        "unpadded undershoots by about as much (sensitivity rows), so the paper's trainer "
        "sits between the two. The multi-turn types come out far less rollout-heavy than the "
        f"paper says: D {d.roll_mean_s / d.train_mean_s:.2f} (paper ~2.5), E "
        f"{e.roll_mean_s / e.train_mean_s:.2f} (~6). Their training phases are within about "
        f"20-25% of the Gantt chart's ({d.train_mean_s:.0f} and {e.train_mean_s:.0f} s "
        f"against 115-149 s) while their rollouts are less than half as long "
        f"({d.roll_mean_s:.0f} and {e.roll_mean_s:.0f} s against 294-336 and 666-917 s): "
        "ROLL's Math-Orz57K code-tool env allows one tool call (2 turns) and the per-turn "
        "lengths are DeepMath's (RollPacker's distribution, mean about 1k tokens at the 8K "
        "cap), while Qwen3's thinking turns are likely longer and the paper's agents may take "
        "more turns. The sensitivity rows show that no single open choice brings both D and "
        "E to the paper's ratios with their training phases in range, so the gap is left "
        "as measured rather than closed by picking lengths to fit.",
        "",
        f"**Temporal** ({ratio['temporal']:.2f}x against 1.82x). With Type-A's phases "
        "roughly balanced, two jobs fit on one H20 and one H800 node: RollMux pays for half "
        "the GPUs of Solo-D, and the ratio is 2x less the co-execution overhead (the "
        "overhead column). The paper's 1.82x implies about 10% overhead; rlsim's is "
        "what the two jobs' unequal phases (training longer than rollout here) leave.",
        "",
        f"**Rollout-heavy** ({ratio['rollout-heavy']:.2f}x against 1.90x). RollMux keeps "
        "the three rollout nodes and shares one H800 node for training, as in the paper. "
        "Because rlsim's D and E are much less rollout-heavy than the paper's, three "
        "training phases of about 100 s each do not fit in the cycle of the longest job "
        "without slowing the others, so the shared node is the bottleneck and the gain "
        "depends on how much slowdown the SLO allows (the SLO columns).",
        "",
        f"**Spatial** ({ratio['spatial']:.2f}x against 1.99x; placements "
        f"{_mix(spatial)}, peak {_gpus(spatial)}). The paper packs both D jobs into C's "
        "rollout bubbles on C's 16 H800. rlsim's Type-C is training-heavy "
        f"({c.roll_mean_s:.0f} s rollout against {c.train_mean_s:.0f} s training on 16 + 16 "
        "GPUs), so C's training nodes have no bubble long enough for D's training within "
        "the SLO, and RollMux keeps less of the paper's saving.",
        "",
        "**Baselines.** rlsim's veRL (colocated) runs the rollout on H800, which the cost "
        "model decodes far faster than H20 (989 against 148 TFLOP/s and 3.35 against "
        "4.0 TB/s), and the Gavel+-like baseline shares nodes only between whole "
        "iterations. Both are rlsim's readings of baselines the paper describes in a "
        "sentence each [P Weave 6.1].",
    ]


if __name__ == "__main__":
    t0 = time.perf_counter()
    print("\n".join(section()))
    print(f"\n(wall {time.perf_counter() - t0:.0f} s)")
