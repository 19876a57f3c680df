"""Honest coverage (issue 39's must-show): do rlsim's 80% intervals hold the papers' points?

`python -m calibration.coverage [--draws N] [--workers W]` (`make coverage-report`) draws
each figure's unstated inputs over the ranges fixed, before this run, in
docs/research/coverage-inputs.md (rules S1-S15, which do not read the figures), runs
every point of the figure at each draw with the figure's own code (the reproductions of
scenarios/rollflash and scenarios/rollart, their paper values included), and reports per
figure and overall:
(a) the share of the papers' points inside rlsim's 80% interval (10th to 90th percentile
    of the draws), with its Wilson 95% interval;
(b) the median over the points of the interval's half-width relative to its median.
Target: (a) >= 70% with (b) <= 30%. Writes reports/coverage.md and reports/coverage.json.

Draws are Latin hypercubes (rlsim.draws.design.draw_values, one seed per figure); every
point of a figure sees the same draw (common random numbers), so a ratio of two runs
(Fig. 1b's throughput relative to Async@16) draws its inputs once. A mean given with a
drawn sigma keeps the mean (`workload.response_len.mean`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from rlsim.config.unknowns import Unknown
from rlsim.draws.design import draw_values

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports" / "coverage.md"
RESULT = ROOT / "reports" / "coverage.json"
TARGET_INSIDE = 0.70
TARGET_HALF_WIDTH = 0.30
Z95 = 1.959964


def _u(low: float, high: float, dist: str = "uniform") -> Unknown:
    return Unknown.model_validate({"dist": dist, "low": low, "high": high})


# ---- the ranges of docs/research/coverage-inputs.md, by rule ----------------------------------
LENGTH = "workload.response_len"  # a mean and a sigma: drawn together, the mean kept
OVERHEAD = {"framework.step_overhead": _u(0.0, 23.8)}                            # S15
RHO = {"workload.group_correlation": _u(0.041, 0.121)}                           # S4
BASE_LENGTHS = {f"{LENGTH}.sigma": _u(0.826, 1.055), f"{LENGTH}.mean": _u(1500, 2500)}  # S1, S3
THINK_LENGTHS = {f"{LENGTH}.sigma": _u(0.576, 1.050), f"{LENGTH}.mean": _u(10500, 11500)}
AGENTIC = {                                                                      # S6-S10
    "workload.response_len.median": _u(55, 287, "loguniform"),
    "workload.response_len.sigma": _u(0.50, 0.94),
    "workload.agentic.obs_tokens.median": _u(270, 505, "loguniform"),
    "workload.agentic.obs_tokens.sigma": _u(0.19, 0.40),
    "workload.agentic.env_reset.sigma": _u(0.248, 0.568),
}
SWE_ENV = {"workload.agentic.env_step.median": _u(0.076, 0.127),                 # S11, S12
           "workload.agentic.env_step.sigma": _u(0.60, 0.84)}
OTHER_ENV = {"workload.agentic.env_step.median": _u(0.076, 0.18, "loguniform"),  # S13, S14
             "workload.agentic.env_step.sigma": _u(0.60, 1.59),
             "workload.agentic.env_reset.median": _u(0.18, 22, "loguniform")}


def overrides_of(draw: dict[str, float]) -> tuple[str, ...]:
    """A draw as `--set` assignments; a drawn mean and sigma of the response lengths become
    one lognormal given by its mean (the scenario's median is replaced)."""
    out = []
    mean, sigma = draw.get(f"{LENGTH}.mean"), draw.get(f"{LENGTH}.sigma")
    for key, value in draw.items():
        if mean is not None and key in (f"{LENGTH}.mean", f"{LENGTH}.sigma"):
            continue
        out.append(f"{key}={value!r}")
    if mean is not None:
        out.append(f"{LENGTH}={{dist: lognormal, mean: {mean!r}, sigma: {sigma!r}}}")
    return tuple(out)


# ---- the figures ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Figure:
    """One figure: its unknowns, its paper points and how one draw evaluates them all."""

    name: str
    unknowns: dict[str, Unknown]
    paper: dict[str, float]                                   # point -> the paper's value
    evaluate: Callable[[tuple[str, ...]], dict[str, float]]   # overrides -> point -> value
    metric: str


def _module(folder: str, name: str) -> Any:
    """A reproduction's script, loaded from its file under a name of its own: two folders
    both hold a make_report.py, and a bare import would return whichever came first."""
    key = f"rlsim_coverage_{folder}_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            key, ROOT / "scenarios" / folder / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module  # before running it: its dataclasses look it up
        spec.loader.exec_module(module)
    return sys.modules[key]


def _fig1b(model: str) -> Figure:
    rlvr = _module("rollflash", "rlvr")
    points = {f"{model} {s}@{n}": v for s in rlvr.SERIES
              for n, v in zip(rlvr.GPUS, rlvr.PAPER[(model, s)], strict=True)
              if not (s == "async" and n == 16)}  # the normaliser: 1 by construction

    def evaluate(extra: tuple[str, ...]) -> dict[str, float]:
        ref = rlvr.simulate(rlvr.job(model, "async", 16, extra)).step_s
        return {f"{model} {s}@{n}": ref / rlvr.simulate(rlvr.job(model, s, n, extra)).step_s
                for s in rlvr.SERIES for n in rlvr.GPUS if not (s == "async" and n == 16)}

    lengths = THINK_LENGTHS if model == "think" else BASE_LENGTHS
    return Figure(f"ROLL Flash Fig. 1b ({model})", {**lengths, **RHO, **OVERHEAD}, points,
                  evaluate, "throughput relative to Async@16")


def _fig7() -> Figure:
    micro = _module("rollflash", "micro")
    points = {f"{m} B={b}": float(v) for m, vals in micro.FIG7_PAPER.items()
              for b, v in zip(micro.FIG7_BATCHES, vals, strict=True)}

    def evaluate(extra: tuple[str, ...]) -> dict[str, float]:
        return {f"{m} B={b}": micro._gen_s(micro._fig7(m, b, extra))
                for m in micro.FIG7_PAPER for b in micro.FIG7_BATCHES}

    zero_variance = {"policy.schedule.zero_variance_fraction": _u(0.646, 0.719)}   # S5
    return Figure("ROLL Flash Fig. 7", {**BASE_LENGTHS, **RHO, **zero_variance}, points,
                  evaluate, "generation time (s)")


def _fig8() -> Figure:
    micro = _module("rollflash", "micro")
    points = {f"{p}x{n} {'PR' if pr else 'w/o'}": float(v[pr])
              for (p, n), v in micro.FIG8_PAPER.items() for pr in (0, 1)}

    def evaluate(extra: tuple[str, ...]) -> dict[str, float]:
        return {f"{p}x{n} {'PR' if pr else 'w/o'}": micro._gen_s(micro._fig8(p, n, bool(pr),
                                                                            extra))
                for (p, n) in micro.FIG8_PAPER for pr in (0, 1)}

    return Figure("ROLL Flash Fig. 8", {**BASE_LENGTHS, **RHO}, points, evaluate,
                  "generation time (s)")


def _fig11(env: str) -> Figure:
    agentic = _module("rollflash", "agentic")
    label, sync, async_, hours = next(e for e in agentic.ENVS if e[0] == env)
    keys = ("batched", "env_level", "sync_red", "async", "async_red")
    points = {f"{label} {c}": h for c, h in zip(agentic.CONFIGS, hours, strict=True)}

    def evaluate(extra: tuple[str, ...]) -> dict[str, float]:
        jobs = agentic._fig11_jobs(sync, async_, extra, extra)
        return {f"{label} {c}": agentic._hours(agentic._step_s(jobs[k]))
                for c, k in zip(agentic.CONFIGS, keys, strict=True)}

    env_ranges = SWE_ENV if env == "SWE" else OTHER_ENV
    return Figure(f"ROLL Flash Fig. 11 ({label})", {**AGENTIC, **env_ranges, **OVERHEAD},
                  points, evaluate, "hours per 50 steps")


def _rollart() -> Figure:
    rollart = _module("rollart", "make_report")
    points = {"step": rollart.STEP_TARGET_S, **rollart.COMPONENT_TARGETS_S}

    def evaluate(extra: tuple[str, ...]) -> dict[str, float]:
        b = rollart.simulate(extra)
        return {"step": b.step_s, **b.components}

    return Figure("RollArt Fig. 3 (SWE step)", {**AGENTIC, **SWE_ENV, **OVERHEAD}, points,
                  evaluate, "seconds per step")


def figures() -> list[Figure]:
    return [_fig1b("think"), _fig1b("base"), _fig7(), _fig8(), _fig11("SWE"),
            _fig11("ALFWorld"), _fig11("ShopSimulator"), _rollart()]


# ---- running and scoring ------------------------------------------------------------------
_FIGURES: list[Figure] = []


def _task(args: tuple[int, tuple[str, ...]]) -> dict[str, float]:
    i, extra = args
    if not _FIGURES:
        _FIGURES.extend(figures())
    return _FIGURES[i].evaluate(extra)


def wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson score 95% interval of a binomial share k / n."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    mid = (p + Z95 ** 2 / (2 * n)) / (1 + Z95 ** 2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / (1 + Z95 ** 2 / n)
    return (max(0.0, mid - half), min(1.0, mid + half))


def run(draws: int, workers: int, log: Callable[[str], None]) -> dict[str, Any]:
    figs = figures()
    _FIGURES[:] = figs
    tasks, values = [], []
    for i, fig in enumerate(figs):
        drawn = draw_values(fig.unknowns, i, draws)
        values.append(drawn)
        tasks += [(i, overrides_of(d)) for d in drawn]
    log(f"coverage: {len(figs)} figures x {draws} draws = {len(tasks)} evaluations on "
        f"{workers} workers")
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_task, tasks))
    else:
        results = [_task(t) for t in tasks]
    out: list[dict[str, Any]] = []
    for i, fig in enumerate(figs):
        per_draw = results[i * draws:(i + 1) * draws]
        points = []
        for name, paper in fig.paper.items():
            x = np.asarray([r[name] for r in per_draw], dtype=float)
            p10, med, p90 = (float(np.quantile(x, q)) for q in (0.10, 0.5, 0.90))
            points.append({"point": name, "paper": paper, "p10": p10, "median": med,
                           "p90": p90, "inside": p10 <= paper <= p90,
                           "half_width": (p90 - p10) / 2 / med if med else math.inf})
        out.append({"figure": fig.name, "metric": fig.metric,
                    "unknowns": {k: u.model_dump(exclude_defaults=True)
                                 for k, u in fig.unknowns.items()}, "points": points})
    every = [p for f in out for p in f["points"]]
    inside = sum(p["inside"] for p in every)
    return {"date": date.today().isoformat(), "draws": draws, "figures": out,
            "points": len(every), "inside": inside,
            "share_inside": inside / len(every), "share_inside_ci95": wilson(inside, len(every)),
            "median_half_width": statistics.median(p["half_width"] for p in every)}


def markdown(res: dict[str, Any]) -> str:
    a, (lo, hi), b = res["share_inside"], res["share_inside_ci95"], res["median_half_width"]
    met_a, met_b = a >= TARGET_INSIDE, b <= TARGET_HALF_WIDTH
    lines = [
        "# Coverage of the papers' points by rlsim's 80% intervals (issue 39)", "",
        f"Written by `python -m calibration.coverage --draws {res['draws']}` "
        f"(`make coverage-report`) on {res['date']}. Each figure's unstated inputs are drawn "
        f"{res['draws']} times (Latin hypercube) over the ranges fixed beforehand in "
        "docs/research/coverage-inputs.md, whose rules do not read the figures; every point "
        "runs at every draw with the figure's own reproduction code. A point is inside when "
        "the paper's value lies between the 10th and 90th percentiles of its draws; the "
        "half-width is (p90 - p10) / 2 over the median.", "",
        f"- **(a) points inside the 80% interval: {res['inside']} of {res['points']} = "
        f"{a:.1%}** (Wilson 95% interval {lo:.1%} - {hi:.1%}); target >= "
        f"{TARGET_INSIDE:.0%}: **{'met' if met_a else 'missed'}**.",
        f"- **(b) median relative half-width: {b:.1%}**; target <= {TARGET_HALF_WIDTH:.0%}: "
        f"**{'met' if met_b else 'missed'}**.", "",
        "Where a point misses, the paper's value lies below the interval (rlsim higher) "
        "or above it (rlsim lower); a figure whose misses all fall on one side is a bias of "
        "the model, not of an input.", "",
        "| figure | metric | points | inside | paper below | paper above | median half-width |",
        "|---|---|---:|---:|---:|---:|---:|"]
    for f in res["figures"]:
        pts = f["points"]
        below = sum(p["paper"] < p["p10"] for p in pts)
        above = sum(p["paper"] > p["p90"] for p in pts)
        lines.append(f"| {f['figure']} | {f['metric']} | {len(pts)} | "
                     f"{sum(p['inside'] for p in pts)} | {below} | {above} | "
                     f"{statistics.median(p['half_width'] for p in pts):.1%} |")
    for f in res["figures"]:
        lines += ["", f"## {f['figure']}", "",
                  "Unknowns: " + "; ".join(
                      f"`{k}` {u.get('dist', 'uniform')} [{u['low']:g}, {u['high']:g}]"
                      for k, u in f["unknowns"].items()) + ".", "",
                  "| point | paper | rlsim median | 80% interval | inside |",
                  "|---|---:|---:|---:|---|"]
        for p in f["points"]:
            lines.append(f"| {p['point']} | {p['paper']:.4g} | {p['median']:.4g} | "
                         f"{p['p10']:.4g} - {p['p90']:.4g} | "
                         f"{'yes' if p['inside'] else 'no'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--report-only", action="store_true",
                        help="Rewrite reports/coverage.md from reports/coverage.json.")
    args = parser.parse_args(argv)
    if args.report_only:
        REPORT.write_text(markdown(json.loads(RESULT.read_text(encoding="utf-8"))),
                          encoding="utf-8")
        return 0
    res = run(args.draws, args.workers, lambda s: print(s, file=sys.stderr))
    REPORT.write_text(markdown(res), encoding="utf-8")
    RESULT.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(f"coverage: {res['inside']}/{res['points']} inside ({res['share_inside']:.1%}), "
          f"median half-width {res['median_half_width']:.1%}; wrote {REPORT}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
