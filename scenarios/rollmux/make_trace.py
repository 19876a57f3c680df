"""Write trace-200-jobs.csv: a 200-job trace sampled, seeded, from RollMux's stated aggregates.

What the paper states of its two-week, 200-job production trace [P Weave 6.4]: Qwen models
3B-32B, single- and multi-turn jobs, maximum response length 4k-32k tokens with a mean of
12.1k, mean job duration 27.9 h, each job's SLO drawn from U(1, 2) relative to its solo run
time, Solo-D at 1:1 rollout and training GPUs; the replay spans 370.2 h [P Weave 6.6]. Its
top-10 production workloads [P Weave Fig. 2] are the menu of job kinds
(trace-job-types.yaml: one template per workload, each the [P Weave Table 3] type of
job-types.yaml it is modelled on, `Kind.table3_type`, with only model, cap, GPUs, TP and the
cap-dependent padding changed). A multi-turn Bsz counts trajectories, as job-types.yaml
reads it (ROLL's agentic rollout_batch_size); `mt_batch: prompts` (Bsz prompts x 8) is a
sensitivity variant, shown because [P Weave Fig. 2] hints at a larger multi-turn batch: its
8B/8K multi-turn workload rolls out for 310 s against 134 s for 7B/8K single-turn (256 x 8
responses) and trains as long (121 s against 113 s), where the trajectories reading gives it
256 trajectories of 2 turns against single-turn's 2,048 responses. trace_report.py's
per-kind table sets both readings against Fig. 2; nothing is tuned to it.

Every choice the paper leaves open is a `TraceParams` field, with its source in the field's
comment; `python make_trace.py --help` lists them and `trace_report.py` shows how the cost
ratios move when each changes. A job's duration is its run time alone on dedicated pools
(Solo-D); the fleet loader converts it to iterations with the job's profile.
Run: `python scenarios/rollmux/make_trace.py [--seed S] [--weights uniform] [--out FILE]`;
it prints the realised aggregates next to the paper's.
"""

from __future__ import annotations

import argparse
import csv
import math
from collections import Counter
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

HERE = Path(__file__).resolve().parent
K_TOKENS = 1024  # "4k-32k" are the power-of-two caps 4,096-32,768 [P Weave 6.4]


@dataclass(frozen=True)
class Kind:
    """One [P Weave Fig. 2] workload: its template, and what the figure says of it."""

    template: str
    model_b: int
    """Model size in billions of parameters."""
    cap_k: int
    """Maximum response length (per turn for multi-turn kinds), in units of 1,024 tokens."""
    multi_turn: bool
    fig2_roll_s: float
    """Rollout seconds per iteration in Fig. 2 (for comparison only; never used)."""
    fig2_train_s: float

    @property
    def table3_type(self) -> str:
        """The job-types.yaml type whose engine, trainer and batch settings the kind takes:
        A/B/C by size for single-turn, D for per-turn caps up to 8K, E for 16K and 32K."""
        if not self.multi_turn:
            return {7: "type-a", 14: "type-b", 32: "type-c"}[self.model_b]
        return "type-d" if self.cap_k <= 8 else "type-e"


# [P Weave Fig. 2], in the figure's order (PAPER-FACTS section 2).
MENU: tuple[Kind, ...] = (
    Kind("st-7b-8k", 7, 8, False, 134, 113),
    Kind("mt-8b-8k", 8, 8, True, 310, 121),
    Kind("mt-8b-16k", 8, 16, True, 581, 241),
    Kind("st-14b-8k", 14, 8, False, 239, 197),
    Kind("mt-4b-4k", 4, 4, True, 122, 51),
    Kind("mt-4b-16k", 4, 16, True, 496, 180),
    Kind("st-32b-8k", 32, 8, False, 268, 271),
    Kind("mt-8b-32k", 8, 32, True, 888, 560),
    Kind("st-7b-4k", 7, 4, False, 81, 77),
    Kind("mt-4b-8k", 4, 8, True, 262, 87),
)

# [P Weave Table 3]'s Bsz of the multi-turn types, and the group size that divides it into
# prompts under the trajectories reading (ROLL's agentic examples: 8 trajectories a group).
TABLE3_MT_BSZ = {"type-d": 256, "type-e": 64}
GROUP_SIZE = 8

# What the paper states [P Weave 6.4, 6.6]; the sampled trace is checked against these.
PAPER = {"jobs": 200, "mean_cap_k": 12.1, "mean_duration_h": 27.9, "span_h": 370.2,
         "slo_low": 1.0, "slo_high": 2.0}


@dataclass(frozen=True)
class TraceParams:
    """The sampling choices the paper leaves open, each with its source."""

    jobs: int = 200
    days: float = 14.0
    """Arrival window: "a two-week trace" [P Weave 6.4]."""
    arrivals: Literal["poisson", "diurnal"] = "poisson"
    """`poisson`: independent submissions at a constant rate over the window (uniform given
    the count), the paper being silent on the pattern. `diurnal`: the rate follows
    1 + cos(2 pi (t - 14 h) / 24 h) (busiest at 14:00, none at 02:00), a sensitivity probe."""
    weights: Literal["maxent", "uniform"] = "maxent"
    """Menu weights. `maxent`: the maximum-entropy weights over Fig. 2's kinds whose mean cap
    is the stated 12.1k (w ~ exp(lambda * cap); uniform weights give 11.2k); `uniform`: each
    kind equally likely (Fig. 2 gives no frequencies)."""
    mean_cap_k: float = PAPER["mean_cap_k"]
    """Target mean of the maximum response length for `maxent` [P Weave 6.4]."""
    mean_duration_h: float = PAPER["mean_duration_h"]
    """Mean job duration (solo run time) [P Weave 6.4]."""
    duration_sigma: float = 1.0
    """Shape of the lognormal job duration (log-space sigma; 0: every job the mean). The
    paper's own scheduler simulation draws durations from the Microsoft Philly trace: a
    300-job segment with mean 14.4 h and longest 142.9 h [P Weave 6.5]. For a lognormal the
    expected longest of 300 is mean * exp(2.71 sigma - sigma^2 / 2), and a ratio of
    142.9 / 14.4 gives sigma = 1.05; 1.0 is used."""
    gpu_scale: int = 1
    """Multiplier on each kind's GPUs (rollout and training alike, so 1:1 stays 1:1): 1 is
    [P Weave Table 3]'s 8 + 8 (16 + 16 for 32B)."""
    lengths: Literal["math", "code"] = "math"
    """Response-length distribution under each cap: RollPacker's math (DeepMath-like) or code
    (DeepCoder-like) lengths, scenarios/rollpacker/lengths-*-{8,16,32}k.txt [P RollPacker Fig.
    2a]; a 4k cap truncates the 8k distribution."""
    mt_batch: Literal["trajectories", "prompts"] = "trajectories"
    """Reading of [P Weave Table 3]'s Bsz for multi-turn kinds. `trajectories` (the
    default, job-types.yaml's reading and the templates' value): Bsz trajectories = Bsz / 8
    prompts x 8, as ROLL's agentic pipeline counts rollout_batch_size (its primary source).
    `prompts`: Bsz prompts x 8 trajectories, as single-turn; a sensitivity variant only,
    shown for [P Weave Fig. 2]'s hint of a larger multi-turn batch (the module docstring
    gives it). Nothing is tuned to Fig. 2; trace_report.py shows both readings per kind."""
    slo_low: float = PAPER["slo_low"]
    slo_high: float = PAPER["slo_high"]
    """SLO ~ U(slo_low, slo_high) relative to the solo run time [P Weave 6.4]."""


# The values of TraceParams' categorical fields (argparse choices).
CHOICES = {"arrivals": ("poisson", "diurnal"), "weights": ("maxent", "uniform"),
           "lengths": ("math", "code"), "mt_batch": ("trajectories", "prompts")}


def kind_weights(params: TraceParams) -> np.ndarray:
    """Probability of each menu kind."""
    caps = np.array([k.cap_k for k in MENU], dtype=float)
    if params.weights == "uniform":
        return np.full(len(MENU), 1.0 / len(MENU))
    target = params.mean_cap_k
    if not caps.min() < target < caps.max():
        raise ValueError(f"mean_cap_k: {target} must lie strictly between the menu's smallest "
                         f"and largest caps ({caps.min():.0f}k, {caps.max():.0f}k)")

    def mean_cap(lam: float) -> float:
        w = np.exp(lam * (caps - caps.mean()))
        return float(w @ caps / w.sum())

    lo, hi = -10.0, 10.0  # mean_cap is increasing in lambda: bisect
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mean_cap(mid) < target else (lo, mid)
    w = np.exp(lo * (caps - caps.mean()))
    return np.asarray(w / w.sum())


def _arrivals_s(rng: np.random.Generator, params: TraceParams) -> np.ndarray:
    span_s = params.days * 86400.0
    if params.arrivals == "poisson":
        return np.sort(rng.uniform(0, span_s, params.jobs))
    out: list[float] = []
    while len(out) < params.jobs:  # thinning against the peak rate 2
        t = float(rng.uniform(0, span_s))
        if rng.uniform(0, 2) < 1 + math.cos(2 * math.pi * (t - 14 * 3600) / 86400):
            out.append(t)
    return np.sort(np.array(out))


def prompts_reading(kind: Kind) -> int:
    """Prompts per step of a multi-turn kind when its type's Bsz counts prompts (each with
    GROUP_SIZE trajectories) instead of trajectories (the templates' Bsz / GROUP_SIZE)."""
    return TABLE3_MT_BSZ[kind.table3_type]


def rows(params: TraceParams, seed: int) -> list[dict[str, Any]]:
    """The trace's rows (one job each), drawn from `params` with `seed`."""
    rng = np.random.default_rng(seed)
    arrivals = _arrivals_s(rng, params)
    weights = kind_weights(params)
    sigma = params.duration_sigma
    mu = math.log(params.mean_duration_h) - sigma**2 / 2  # lognormal mean = mean_duration_h
    out = []
    for i, t in enumerate(arrivals):
        kind = MENU[int(rng.choice(len(MENU), p=weights))]
        row: dict[str, Any] = {
            "name": f"job{i:04d}",
            "arrival_s": round(float(t), 1),
            "template": kind.template,
            "slo": round(float(rng.uniform(params.slo_low, params.slo_high)), 3),
            "duration_h": round(float(rng.lognormal(mu, sigma)) if sigma > 0
                                else params.mean_duration_h, 2),
        }
        if params.gpu_scale != 1:
            gpus = (16 if kind.model_b == 32 else 8) * params.gpu_scale
            row["rollout.gpus"] = gpus
            row["train.gpus"] = gpus
        if params.mt_batch == "prompts" and kind.multi_turn:
            row["workload.prompts_per_step"] = prompts_reading(kind)
        if params.lengths != "math":
            file_k = max(kind.cap_k, 8)  # 4k kinds truncate the 8k distribution
            row["workload.response_len.path"] = (
                f"../rollpacker/lengths-{params.lengths}-{file_k}k.txt")
        out.append(row)
    return out


def aggregates(data: list[dict[str, Any]]) -> dict[str, Any]:
    """What the paper states of its trace, measured on `data`."""
    by_name = {k.template: k for k in MENU}
    kinds = [by_name[str(r["template"])] for r in data]
    arrivals_h = [float(r["arrival_s"]) / 3600 for r in data]
    return {
        "jobs": len(data),
        "mean_cap_k": float(np.mean([k.cap_k for k in kinds])),
        "mean_duration_h": float(np.mean([float(r["duration_h"]) for r in data])),
        "max_duration_h": float(max(float(r["duration_h"]) for r in data)),
        "arrival_span_h": max(arrivals_h) - min(arrivals_h),
        "slo_mean": float(np.mean([float(r["slo"]) for r in data])),
        "slo_range": (min(float(r["slo"]) for r in data), max(float(r["slo"]) for r in data)),
        "multi_turn": sum(k.multi_turn for k in kinds) / len(kinds),
        "sizes": dict(sorted(Counter(f"{k.model_b}B" for k in kinds).items(),
                             key=lambda kv: int(kv[0][:-1]))),
        "kinds": dict(Counter(k.template for k in kinds)),
    }


def describe(agg: dict[str, Any]) -> str:
    """The realised aggregates next to the paper's, one line each."""
    lo, hi = agg["slo_range"]
    return "\n".join([
        f"jobs {agg['jobs']} (paper {PAPER['jobs']})",
        f"mean max response {agg['mean_cap_k']:.1f}k (paper {PAPER['mean_cap_k']}k; range "
        "4k-32k)",
        f"mean duration {agg['mean_duration_h']:.1f} h (paper {PAPER['mean_duration_h']} h), "
        f"longest {agg['max_duration_h']:.1f} h",
        f"arrivals over {agg['arrival_span_h']:.0f} h (paper: two weeks)",
        f"SLO mean {agg['slo_mean']:.2f}, range {lo:.2f}-{hi:.2f} (paper U(1, 2))",
        f"multi-turn {agg['multi_turn']:.0%}; sizes "
        + ", ".join(f"{k} {v}" for k, v in agg["sizes"].items()) + " (paper: 3B-32B)",
    ])


def write(data: list[dict[str, Any]], out: Path) -> None:
    """Write `data` as CSV (atomically: a partial file never replaces a good one)."""
    columns: list[str] = []
    for r in data:
        columns += [c for c in r if c not in columns]
    tmp = out.with_name(out.name + ".partial")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(data)
    tmp.replace(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "trace-200-jobs.csv")
    defaults = TraceParams()
    for f in fields(TraceParams):
        value = getattr(defaults, f.name)
        ap.add_argument(f"--{f.name.replace('_', '-')}", type=type(value), default=value,
                        choices=CHOICES.get(f.name),
                        help=f"default {value!r} (see TraceParams in this file)")
    args = ap.parse_args(argv)
    params = replace(defaults, **{f.name: getattr(args, f.name) for f in fields(TraceParams)})
    data = rows(params, args.seed)
    write(data, args.out)
    changed = [f"{k}={v}" for k, v in asdict(params).items() if v != getattr(defaults, k)]
    print(f"wrote {args.out} ({len(data)} jobs, seed {args.seed}"
          + "".join(f", {c}" for c in changed) + ")")
    print(describe(aggregates(data)))
    print("menu weights: " + ", ".join(
        f"{k.template} {w:.3f}" for k, w in zip(MENU, kind_weights(params), strict=True)))


if __name__ == "__main__":
    main()
