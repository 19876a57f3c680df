"""Calibrated intervals on real runs (issue 39's must-show): do the framework profiles'
intervals, with their discrepancy term, hold the measured step times they never saw?

`python -m calibration.coverage_realruns [--draws N] [--workers W]`
(`make coverage-realruns`) takes every record on the validation side of the frozen split
(validation/real_runs/split.json) whose framework has a shipped profile
(rlsim/config/frameworks.json, fitted on the calibration side only), draws the profile's
knobs over their 95% intervals as `rlsim run --draws` does (rlsim.draws.design:
a lognormal, or uniform where the interval reaches 0) and the model's discrepancy
(exp(predictive_log_sd x z): the out-of-sample discrepancy), simulates the record at each
draw, and reports the share of the measured step times inside rlsim's 80% interval (10th
to 90th percentile), with its
Wilson 95% interval. Target: between 70% and 90% (below: overconfident; above: too wide
to be useful). Writes reports/coverage-realruns.md and .json.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from calibration.coverage import wilson
from calibration.realruns.harness import simulate_row
from calibration.realruns.records import ROOT, load_records
from calibration.realruns.split import _framework, load_split
from calibration.realruns.translate import Translation, translate
from rlsim.config.frameworks import profiles
from rlsim.config.unknowns import Unknown
from rlsim.draws.design import DISCREPANCY, STANDARD_NORMAL, draw_values, profile_unknown

REPORT = ROOT / "reports" / "coverage-realruns.md"
RESULT = ROOT / "reports" / "coverage-realruns.json"
TARGET = (0.70, 0.90)


def cases() -> list[tuple[str, Translation]]:
    """(framework, translation) of every simulable validation record with a profile."""
    split, shipped = load_split(), profiles()
    out = []
    for rec in load_records():
        fw = _framework(rec)
        if split.get(rec.id) != "validate" or fw not in shipped:
            continue
        t = translate(rec)
        if t.scenario is not None and rec.timing_s.get("step"):
            out.append((fw, t))
    return out


def unknowns(fw: str) -> dict[str, Unknown]:
    """The profile's knobs (by knob name; `speed` sets both speeds) and its discrepancy."""
    out: dict[str, Unknown] = {}
    for p in profiles()[fw].params.values():
        u = profile_unknown(p)
        if u is not None:
            out[p.name] = u
    out[DISCREPANCY] = STANDARD_NORMAL
    return out


def knobs(fw: str, draw: dict[str, float]) -> dict[str, float]:
    """The `framework` knob values of one draw: drawn ones, else the profile's."""
    values = profiles()[fw].knobs()
    for name, v in draw.items():
        if name == "speed":
            values["train_speed"] = values["rollout_speed"] = v
        elif name != DISCREPANCY:
            values[name] = v
    return values


def _task(args: tuple[str, Translation, dict[str, float]]) -> float | None:
    fw, t, draw = args
    from calibration.frameworks import with_knobs

    row = simulate_row(with_knobs(t, knobs(fw, draw)))
    if row.simulated_step_s is None:
        return None
    return row.simulated_step_s * math.exp(profiles()[fw].predictive_log_sd
                                           * draw[DISCREPANCY])


def run(draws: int, workers: int) -> dict[str, Any]:
    found = cases()
    tasks = []
    for i, (fw, t) in enumerate(found):
        tasks += [(fw, t, d) for d in draw_values(unknowns(fw), i, draws)]
    print(f"coverage-realruns: {len(found)} validation records x {draws} draws on "
          f"{workers} workers", file=sys.stderr)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            steps = list(pool.map(_task, tasks, chunksize=4))
    else:
        steps = [_task(x) for x in tasks]
    records: list[dict[str, Any]] = []
    for i, (fw, t) in enumerate(found):
        x = np.asarray([s for s in steps[i * draws:(i + 1) * draws] if s is not None])
        measured = float(t.record.timing_s["step"])
        if x.size < draws:  # rlsim refuses some draws of it: left out, and said
            records.append({"id": t.record.id, "framework": fw, "measured_s": measured,
                            "refused_draws": draws - int(x.size)})
            continue
        p10, med, p90 = (float(np.quantile(x, q)) for q in (0.10, 0.5, 0.90))
        records.append({"id": t.record.id, "framework": fw, "measured_s": measured,
                        "p10": p10, "median": med, "p90": p90,
                        "inside": p10 <= measured <= p90,
                        "position": "below" if measured < p10 else "above"
                        if measured > p90 else "inside",
                        "half_width": (p90 - p10) / 2 / med})
    scored = [r for r in records if "inside" in r]
    k = sum(r["inside"] for r in scored)
    return {"date": date.today().isoformat(), "draws": draws, "records": records,
            "scored": len(scored), "inside": k,
            "share_inside": k / len(scored) if scored else math.nan,
            "share_inside_ci95": wilson(k, len(scored)),
            "median_half_width": statistics.median(r["half_width"] for r in scored)
            if scored else math.nan}


def markdown(res: dict[str, Any]) -> str:
    a, (lo, hi) = res["share_inside"], res["share_inside_ci95"]
    met = TARGET[0] <= a <= TARGET[1]
    scored = [r for r in res["records"] if "inside" in r]
    below = sum(r["position"] == "below" for r in scored)
    above = sum(r["position"] == "above" for r in scored)
    lines = [
        "# Calibrated intervals on real runs (issue 39)", "",
        f"Written by `python -m calibration.coverage_realruns --draws {res['draws']}` "
        f"(`make coverage-realruns`) on {res['date']}. Every record on the validation side "
        "of the frozen split (validation/real_runs/split.json) whose framework has a profile "
        "(rlsim/config/frameworks.json, fitted on the calibration side only) is simulated at "
        f"{res['draws']} draws of the profile's knobs over their 95% intervals, each step "
        "time multiplied by exp(s x z), z a drawn standard normal and s the profile's "
        "out-of-sample discrepancy (predictive_log_sd; the in-sample one where a profile "
        "has none): the "
        "intervals `rlsim run --draws` gives a scenario on that profile. A record is inside "
        "when its measured step lies between the 10th and 90th percentiles.", "",
        f"- **Measured steps inside the 80% interval: {res['inside']} of {res['scored']} = "
        f"{a:.1%}** (Wilson 95% interval {lo:.1%} - {hi:.1%}); target 70% - 90%: "
        f"**{'met' if met else 'missed'}**. Outside: {below} below the interval (rlsim "
        f"slower than measured), {above} above.",
        f"- Median relative half-width of the intervals: {res['median_half_width']:.1%}.",
        "", "| record | framework | measured step (s) | rlsim median | 80% interval | where |",
        "|---|---|---:|---:|---:|---|"]
    for r in res["records"]:
        if "inside" not in r:
            lines.append(f"| {r['id']} | {r['framework']} | {r['measured_s']:.4g} | - | "
                         f"rlsim refused {r['refused_draws']} draws | left out |")
            continue
        lines.append(f"| {r['id']} | {r['framework']} | {r['measured_s']:.4g} | "
                     f"{r['median']:.4g} | {r['p10']:.4g} - {r['p90']:.4g} | "
                     f"{r['position']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    res = run(args.draws, args.workers)
    Path(REPORT).write_text(markdown(res), encoding="utf-8")
    Path(RESULT).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(f"coverage-realruns: {res['inside']}/{res['scored']} inside "
          f"({res['share_inside']:.1%}); wrote {REPORT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
