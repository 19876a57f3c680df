"""Framework profiles calibrated on the corpus: `python -m calibration.frameworks`.

Owns the fit of each framework's profile (rlsim/config/frameworks.json) on the calibration
side of the frozen split (validation/real_runs/split.json) and its check on the validation
side (reports/framework-profiles.md). docs/validation.md, "Framework profiles", says which
records calibrate which profile.

Per framework with calibration records that rlsim simulates:
- **Parameters** (the `framework` knobs of docs/cost-model.md, "Fitted framework knobs"):
  `rollout_speed` and `train_speed` where the records time generation and trainer passes
  apart, else one `speed` of both (a record that times only the step cannot tell them
  apart); and `step_overhead`, the driver's seconds per step, where the records leave a
  remainder to explain. At most 3, and never more than the records' residuals minus 2.
- **Residuals**: log(simulated / measured) of each record's step and of each phase it times
  (gen under sync, log-probs, update_actor), each record's residuals weighted so that the
  record counts once.
- **Fit**: `scipy.optimize.least_squares` (speeds in log space, within the schema's bounds),
  the Jacobian by forward differences over the records' simulations.
- **Intervals**: 95% normal, from `s^2 (J^T J)^-1` with `s^2` the residuals' variance
  (SSR / (m - n)); `discrepancy` is `s`, the model's log-space error per residual that the
  parameters do not explain, estimated on the same records.
Nothing on the validation side or named as a must-show is read by the fit; the report's
validation rows are simulated once, with and without the profile.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from scipy.stats import norm

from calibration.realruns.harness import simulate_row
from calibration.realruns.records import ROOT, RunRecord, load_records
from calibration.realruns.split import _framework, load_split
from calibration.realruns.table import Row
from calibration.realruns.translate import Translation, translate
from rlsim.config.frameworks import (
    FRAMEWORK_NAMES,
    PROFILES_PATH,
    FrameworkProfile,
    ProfileParam,
)
from rlsim.fit.fitter import knob_bounds

REPORT_PATH = ROOT / "reports" / "framework-profiles.md"
FRAMEWORKS = FRAMEWORK_NAMES
COMPARED = ("gen", "logprob", "update_actor")  # with the step; `remainder` is not compared
Z95 = float(norm.ppf(0.975))
OVERHEAD_SCALE_S = 10.0  # the solver's unit for step_overhead


def framework_of(rec: RunRecord) -> str | None:
    """The profile a record belongs to (None: a framework without one)."""
    name = _framework(rec)
    return name if name in FRAMEWORKS else None


@dataclass
class Case:
    """One record as the fit uses it: its translation and what it is compared on."""

    translation: Translation
    row: Row  # rlsim's own constants (no profile)

    @property
    def id(self) -> str:
        return self.translation.record.id


def residuals(row: Row) -> list[float]:
    """log(simulated / measured) of the step and each compared phase, weighted 1/sqrt(k)
    so a record with k residuals adds 1 to the sum of squares at equal errors."""
    pairs = [(row.measured_step_s, row.simulated_step_s)]
    pairs += [row.phases[k] for k in COMPARED if k in row.phases]
    logs = [math.log(s / m) for m, s in pairs if m and s and m > 0 and s > 0]
    w = 1 / math.sqrt(len(logs)) if logs else 0.0
    return [w * x for x in logs]


def with_knobs(t: Translation, knobs: dict[str, float]) -> Translation:
    assert t.scenario is not None
    scenario = {**t.scenario, "framework": {**t.scenario.get("framework", {}), **knobs}}
    return Translation(t.record, scenario, t.reason, t.taken, t.dropped, t.lengths,
                       t.gen_with_sync, t.refit_one_way)


def knobs_of(names: list[str], x: np.ndarray) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, v in zip(names, x, strict=True):
        if name == "step_overhead":
            out[name] = float(v) * OVERHEAD_SCALE_S
        elif name == "speed":
            out["train_speed"] = out["rollout_speed"] = math.exp(float(v))
        else:
            out[name] = math.exp(float(v))
    return out


def param_names(cases: list[Case]) -> list[str]:
    """Which parameters the records identify (the module docstring)."""
    phased = any("gen" in c.row.phases and any(k in c.row.phases for k in COMPARED[1:])
                 for c in cases if c.translation.scenario is not None
                 and c.translation.scenario["policy"]["name"] == "sync")
    names = ["rollout_speed", "train_speed"] if phased else ["speed"]
    names.append("step_overhead")
    m = sum(len(residuals(c.row)) for c in cases)
    return names[:max(1, min(3, m - 2))]


@dataclass
class Profile:
    framework: str
    params: dict[str, dict[str, Any]]
    discrepancy: float
    records: list[str]
    residuals: int
    validation: list[dict[str, Any]] = field(default_factory=list)

    discrepancy_oos: float | None = None  # leave one calibration record out (`loo_errors`)
    loo: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"params": self.params, "discrepancy_log_sd": self.discrepancy,
                "discrepancy_oos_log_sd": self.discrepancy_oos,
                "calibration_records": self.records, "residuals": self.residuals}


def fit_framework(name: str, cases: list[Case]) -> Profile:
    names = param_names(cases)

    def evaluate(x: np.ndarray) -> np.ndarray:
        knobs = knobs_of(names, x)
        out: list[float] = []
        for c in cases:
            out += residuals(simulate_row(with_knobs(c.translation, knobs)))
        return np.array(out)

    # Inside the bounds (an overhead of 0 sits on its bound, where the trust region does
    # not move it).
    x0 = np.array([0.0 if n != "step_overhead" else 0.1 for n in names])
    bounds = [knob_bounds(n) for n in names]  # the schema's
    lo = [math.log(b[0]) if n != "step_overhead" else b[0] / OVERHEAD_SCALE_S
          for n, b in zip(names, bounds, strict=True)]
    hi = [math.log(b[1]) if n != "step_overhead" else b[1] / OVERHEAD_SCALE_S
          for n, b in zip(names, bounds, strict=True)]
    sol = least_squares(evaluate, x0, bounds=(lo, hi), diff_step=1e-3, x_scale="jac")
    r, jac = sol.fun, sol.jac
    m, n = len(r), len(names)
    s2 = float(r @ r) / (m - n) if m > n else float("nan")
    try:
        cov = s2 * np.linalg.inv(jac.T @ jac)
        half = [Z95 * math.sqrt(max(cov[i, i], 0.0)) for i in range(n)]
    except np.linalg.LinAlgError:
        half = [float("nan")] * n
    params: dict[str, dict[str, Any]] = {}
    for i, p in enumerate(names):
        v = float(sol.x[i])
        if p == "step_overhead":
            ci = [max(0.0, (v - half[i]) * OVERHEAD_SCALE_S), (v + half[i]) * OVERHEAD_SCALE_S]
            params[p] = {"value": v * OVERHEAD_SCALE_S, "ci95": ci, "unit": "s"}
        else:
            params[p] = {"value": math.exp(v), "ci95": [math.exp(v - half[i]),
                                                        math.exp(v + half[i])], "unit": ""}
    return Profile(name, params, math.sqrt(s2) if s2 == s2 else float("nan"),
                   [c.id for c in cases], m)


def _loo_fold(args: tuple[str, list[Case], int]) -> float | None:
    """Record i's step log-error with the profile fitted on the other records."""
    name, cases, i = args
    rest = cases[:i] + cases[i + 1:]
    row = simulate_row(with_knobs(cases[i].translation,
                                  knob_values(fit_framework(name, rest))))
    if row.simulated_step_s is None or not row.measured_step_s:
        return None
    return math.log(row.simulated_step_s / row.measured_step_s)


def loo_errors(name: str, cases: list[Case], workers: int = 2) -> list[float | None]:
    """Each calibration record's step log-error out of sample: the profile refitted
    without it (leave one record out; the validation side is never read). Their root mean
    square is the profile's out-of-sample discrepancy, what a draw adds to a run on it: the
    in-sample residual sd understates the error on a job the fit never saw."""
    from concurrent.futures import ProcessPoolExecutor

    folds = [(name, cases, i) for i in range(len(cases))]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            return list(pool.map(_loo_fold, folds))
    return [_loo_fold(f) for f in folds]


def knob_values(profile: Profile) -> dict[str, float]:
    """The `framework` knobs a scenario takes from `profile` (as rlsim reads it)."""
    params = {k: ProfileParam(k, d["value"], tuple(d["ci95"]), d["unit"])
              for k, d in profile.params.items()}
    return FrameworkProfile(profile.framework, params, profile.discrepancy,
                            tuple(profile.records), profile.residuals).knobs()


def _err(row: Row) -> float | None:
    if row.simulated_step_s is None or not row.measured_step_s:
        return None
    return (row.simulated_step_s - row.measured_step_s) / row.measured_step_s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=PROFILES_PATH)
    ap.add_argument("--report", type=Path, default=REPORT_PATH)
    ap.add_argument("--workers", type=int, default=2,
                    help="Processes for the leave-one-record-out refits.")
    args = ap.parse_args(argv)
    split = load_split()
    records = load_records()
    by_side: dict[tuple[str, str], list[Case]] = {}
    for rec in records:
        fw = framework_of(rec)
        side = split.get(rec.id)
        if fw is None or side is None:
            continue
        t = translate(rec)
        if t.scenario is None:
            continue
        row = simulate_row(t)
        if _err(row) is None:
            continue
        by_side.setdefault((fw, side), []).append(Case(t, row))
    profiles: dict[str, Profile] = {}
    for fw in FRAMEWORKS:
        cases = by_side.get((fw, "calibrate"), [])
        if len(cases) < 3:
            print(f"{fw}: {len(cases)} calibration record(s) simulated: no profile",
                  file=sys.stderr)
            continue
        prof = fit_framework(fw, cases)
        errors = loo_errors(fw, cases, args.workers)
        prof.loo = [{"id": c.id, "step_log_error": e} for c, e in zip(cases, errors,
                                                                        strict=True)]
        known = [e for e in errors if e is not None]
        prof.discrepancy_oos = (math.sqrt(statistics.fmean(e * e for e in known))
                                if known else None)
        knobs = knob_values(prof)
        for c in by_side.get((fw, "validate"), []):
            fitted = simulate_row(with_knobs(c.translation, knobs))
            prof.validation.append({"id": c.id, "measured_s": c.row.measured_step_s,
                                    "unfitted_s": c.row.simulated_step_s,
                                    "profile_s": fitted.simulated_step_s,
                                    "unfitted_error": _err(c.row), "profile_error": _err(fitted)})
        profiles[fw] = prof
        shown = ", ".join(f"{k} {v['value']:.3g}" for k, v in prof.params.items())
        print(f"{fw}: {shown}; "
              f"discrepancy {prof.discrepancy:.3f} over {prof.residuals} residuals of "
              f"{len(cases)} records", file=sys.stderr)
    doc = {"generated_by": "python -m calibration.frameworks", "date": date.today().isoformat(),
           "split": "validation/real_runs/split.json",
           "frameworks": {fw: p.as_json() for fw, p in profiles.items()}}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    args.report.write_text(report(profiles, by_side))
    return 0


def _pct(e: float | None) -> str:
    return "" if e is None else f"{e * 100:+.0f}%"


def report(profiles: dict[str, Profile], by_side: dict[tuple[str, str], list[Case]]) -> str:
    lines = ["# Framework profiles, calibrated on the corpus", "",
             "Generated by `python -m calibration.frameworks` (`make framework-profiles`); do "
             "not edit. Each profile is fitted on its framework's calibration records of "
             "validation/real_runs/split.json and checked on its validation records, which "
             "the fit never reads (docs/validation.md, 'Framework profiles').", ""]
    for fw, p in profiles.items():
        lines += [f"## {fw}", "", "| parameter | value | 95% interval |", "|---|---:|---|"]
        for name, d in p.params.items():
            unit = f" {d['unit']}" if d["unit"] else ""
            lines.append(f"| `{name}` | {d['value']:.3g}{unit} | "
                         f"[{d['ci95'][0]:.3g}, {d['ci95'][1]:.3g}]{unit} |")
        lines += ["", f"Model discrepancy (log-space sd per residual): {p.discrepancy:.3f}, "
                      f"from {p.residuals} residuals of {len(p.records)} calibration records: "
                  + ", ".join(f"`{r}`" for r in p.records) + ".", ""]
        if p.discrepancy_oos is not None:
            lines += [f"Out of sample (each calibration record's step error with the profile "
                      f"refitted without it; root mean square): {p.discrepancy_oos:.3f}. "
                      "This is the model error `rlsim run --draws` adds to a run on the "
                      "profile.", "", "| left out | step log-error |", "|---|---:|"]
            lines += [f"| `{d['id']}` | " + ("-" if d["step_log_error"] is None else
                                              f"{d['step_log_error']:+.3f}") + " |"
                      for d in p.loo]
            lines.append("")
        if p.validation:
            un = [abs(v["unfitted_error"]) for v in p.validation if v["unfitted_error"] is not None]
            pr = [abs(v["profile_error"]) for v in p.validation if v["profile_error"] is not None]
            lines += [f"Validation ({len(p.validation)} records): median |step error| "
                      f"{statistics.median(un) * 100:.0f}% unfitted, "
                      f"{statistics.median(pr) * 100:.0f}% with the profile "
                      "(target: 10% or less).", "",
                      "| record | measured s | unfitted s (error) | with profile s (error) |",
                      "|---|---:|---:|---:|"]
            for v in p.validation:
                lines.append(f"| `{v['id']}` | {v['measured_s']:.1f} | {v['unfitted_s']:.1f} "
                             f"({_pct(v['unfitted_error'])}) | {v['profile_s']:.1f} "
                             f"({_pct(v['profile_error'])}) |")
            lines.append("")
        else:
            lines += ["No validation record of this framework is simulated.", ""]
    missing = [fw for fw in FRAMEWORKS if fw not in profiles]
    if missing:
        counts = {fw: len(by_side.get((fw, "calibrate"), [])) for fw in missing}
        lines += ["## Without a profile", "",
                  "Fewer than 3 simulated calibration records: "
                  + ", ".join(f"{fw} ({n})" for fw, n in counts.items()) + ".", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
