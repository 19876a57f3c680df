"""Fits on the corpus: how well `rlsim fit` reproduces the runs it is fitted to, and how well a
fit on one run of a job predicts another run of the same job from the same source.

Owns the record -> measured run conversion (a record's timings as one kept step, its stated
response mean and max as the step's lengths), the per-record fit over every simulated record
that times more than the step, the fit-on-one / predict-the-other pairs (veRL's one-step-off
README: colocated 16 GPUs -> one-step-off 4 + 12; NeMo-RL's on-policy -> 1-step-off rows of
one version and model), and reports/real-runs-fit.md. `make real-runs-fit` runs it.
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from calibration.realruns.records import CORPUS_DIR, ROOT, RunRecord, load_records
from calibration.realruns.table import rel_error
from calibration.realruns.translate import Translation, translate

REPORT = ROOT / "reports" / "real-runs-fit.md"
# veRL one-step-off README [verl/experimental/one_step_off_policy/README.md]: the same DAPO
# job colocated on 16 H20, then one-step-off with 4 rollout + 12 training GPUs.
VERL_PAIRS = (
    ("verl-onestepoff-readme-7b-dapo-colocate-16xH20-megatron",
     "verl-onestepoff-readme-7b-dapo-async-4gen12train-H20-megatron"),
    ("verl-onestepoff-readme-7b-dapo-colocate-16xH20-fsdp2",
     "verl-onestepoff-readme-7b-dapo-async-4gen12train-H20-fsdp2"),
)
_NEMO_ID = re.compile(r"^(nemorl-v[\d.]+-.+-grpo)-(on|1stepoff)-(\d+)x(\w+)$")


@dataclass
class RecordFit:
    """One record fitted: per phase measured, simulated before and after (s)."""

    id: str
    phases: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)      # name -> "value [ci]"
    unidentified: dict[str, str] = field(default_factory=dict)
    reason: str | None = None


@dataclass
class Prediction:
    """A fit on `fitted_on`, run on `target`'s own scenario: its step time against the
    measured one, and the stated uncertainty."""

    fitted_on: str
    target: str
    measured_s: float
    unfitted_s: float | None = None
    predicted_s: float | None = None
    uncertainty: float | None = None
    warning: str | None = None
    reason: str | None = None


def measured_run(rec: RunRecord) -> Any:
    """The record as a measured run of one kept step (its timings, its stated lengths)."""
    from rlsim.fit.logs import MeasuredRun, StepRecord

    lengths = {k: float(v) for k, v in (("mean", rec.response_len_mean),
                                          ("max", rec.raw.get("response_len_max")))
               if v is not None}
    step = StepRecord(step=1, phases_s=dict(rec.timing_s), response_len=lengths,
                      prompt_len={}, throughput=None, mfu=None, validation=False,
                      line=0, warmup=False)
    # the key vocabulary, and whose gen the fitter reads (only veRL's hybrid engine holds
    # the switch in gen): the record's framework, lowercased ("verl", "roll", "nemo-rl")
    fw = rec.framework.lower()
    name = "roll" if fw.startswith("roll") else "verl" if fw.startswith("verl") else fw
    return MeasuredRun(source=rec.where or rec.id, format="record", steps=[step],
                       framework=name)


def _scenario(t: Translation) -> Any:
    from rlsim.config.scenario import Scenario

    assert t.scenario is not None
    return Scenario.model_validate(t.scenario, context={"base_dir": str(ROOT)})


def fit_record(t: Translation) -> tuple[RecordFit, Any]:
    """Fit one translated record; (its RecordFit, the FitResult or None)."""
    from rlsim.fit.fitter import fit

    out = RecordFit(t.record.id)
    if t.scenario is None:
        out.reason = t.reason
        return out, None
    try:
        result = fit(_scenario(t), measured_run(t.record), base_dir=ROOT)
    except Exception as err:  # a record rlsim cannot fit is a finding, reported
        out.reason = f"{type(err).__name__}: {err}".replace("\n", " ")[:200]
        return out, None
    for name, p in result.phases.items():
        out.phases[name] = (p.measured_s, p.simulated_before_s, p.simulated_s)
    s = result.step
    out.phases["step"] = (s.measured_s, s.simulated_before_s, s.simulated_s)
    for name, knob in result.params.items():
        ci = f" [{knob.ci95[0]:.3g}, {knob.ci95[1]:.3g}]" if knob.ci95 else ""
        out.params[name] = f"{knob.value:.3g}{ci}"
    out.unidentified = dict(result.unidentified)
    return out, result


def nemo_pairs(records: list[RunRecord]) -> list[tuple[str, str]]:
    """NeMo-RL's on-policy and 1-step-off rows of one version and model."""
    by_job: dict[str, dict[str, str]] = {}
    for r in records:
        m = _NEMO_ID.match(r.id)
        if m:
            by_job.setdefault(m.group(1) + "/" + m.group(4), {})[m.group(2)] = r.id
    return [(v["on"], v["1stepoff"]) for _k, v in sorted(by_job.items())
            if "on" in v and "1stepoff" in v]


def predict(fitted: Any, source_id: str, target: Translation) -> Prediction:
    """Run the target's own scenario with the fitted framework knobs."""
    from rlsim.api import simulate
    from rlsim.fit.fitter import prediction_uncertainty, regime_warning

    rec = target.record
    out = Prediction(source_id, rec.id, rec.timing_s["step"])
    if target.scenario is None:
        out.reason = target.reason
        return out
    try:
        plain = _scenario(target)
        out.unfitted_s = simulate(plain, ROOT).summary["step_time_s"]["mean"]
        framework = fitted.fitted_scenario().framework
        tuned = plain.model_copy(update={"framework": framework})
        out.predicted_s = simulate(tuned, ROOT).summary["step_time_s"]["mean"]
        out.warning = regime_warning(fitted.fitted_scenario(), tuned)
        out.uncertainty = prediction_uncertainty(fitted, tuned)
    except Exception as err:
        out.reason = f"{type(err).__name__}: {err}".replace("\n", " ")[:200]
    return out


def _pct(e: float | None) -> str:
    return "" if e is None else f"{e:+.0%}"


def markdown(fits: list[RecordFit], preds: list[Prediction]) -> str:
    lines = ["# Public real runs, fitted: `rlsim fit` on the corpus", "",
             "Generated by `make real-runs-fit` (`python -m calibration.realruns.fitcheck`); "
             "do not edit. Every simulated record of validation/real_runs/ that times more "
             "than the step is fitted to its own timings (docs/validation.md, 'Public real "
             "runs, fitted'). Records that time only the step fit `step_overhead` alone and "
             "are used for the predictions only.", "", "## Fit on each record", ""]
    done = [f for f in fits if f.reason is None]
    errors = [abs(rel_error(a, m)) for f in done for n, (m, _b, a) in f.phases.items()
              if n != "step"]
    steps = [abs(rel_error(a, m)) for f in done for n, (m, _b, a) in f.phases.items()
             if n == "step"]
    med = statistics.median(errors) if errors else None
    med_step = statistics.median(steps) if steps else None
    lines += [f"Median |fitted phase error| over {len(errors)} phase times (the step not "
              f"counted) of {len(done)} records: {'-' if med is None else f'{med:.1%}'} "
              "(target: within 10%); over their steps: "
              f"{'-' if med_step is None else f'{med_step:.1%}'}.", "",
              "| record | phase: measured / before / fitted s (fitted error) | fitted knobs "
              "(95% CI) | not identified |", "|---|---|---|---|"]
    for f in fits:
        if f.reason is not None:
            lines.append(f"| `{f.id}` | not fitted: {f.reason} | | |")
            continue
        ph = "; ".join(f"{n}: {m:.1f} / {b:.1f} / {a:.1f} ({_pct(rel_error(a, m))})"
                       for n, (m, b, a) in f.phases.items())
        kn = "; ".join(f"{k} {v}" for k, v in f.params.items())
        un = "; ".join(f"{k} ({v})" for k, v in f.unidentified.items())
        lines.append(f"| `{f.id}` | {ph} | {kn} | {un} |")
    lines += ["", "## Fit on one run, predict another run of the same job", "",
              "Target: step time within 20%. 'unfitted' is rlsim with its own constants.", "",
              "| fitted on | predicted | measured s | unfitted s (error) | predicted s (error) "
              "| stated uncertainty | regime change |", "|---|---|---:|---:|---:|---:|---|"]
    for p in preds:
        if p.reason is not None or p.predicted_s is None:
            lines.append(f"| `{p.fitted_on}` | `{p.target}` | {p.measured_s:.1f} | not "
                         f"predicted: {p.reason} | | | |")
            continue
        unf = "" if p.unfitted_s is None else (
            f"{p.unfitted_s:.1f} ({_pct(rel_error(p.unfitted_s, p.measured_s))})")
        unc = "" if p.uncertainty is None else f"+-{p.uncertainty:.0%}"
        lines.append(f"| `{p.fitted_on}` | `{p.target}` | {p.measured_s:.1f} | {unf} | "
                     f"{p.predicted_s:.1f} ({_pct(rel_error(p.predicted_s, p.measured_s))}) "
                     f"| {unc} | {p.warning or ''} |")
    within = [p for p in preds if p.predicted_s is not None]
    hits = sum(1 for p in within if abs(rel_error(p.predicted_s or 0.0, p.measured_s)) <= 0.20)
    lines += ["", f"{hits} of {len(within)} predictions within 20% of the measured step."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    records = load_records(CORPUS_DIR)
    translations = {r.id: translate(r) for r in records}
    fits: list[RecordFit] = []
    results: dict[str, Any] = {}
    for t in translations.values():
        timed = set(t.record.timing_s) - {"step"}
        if t.scenario is None or not timed:
            continue
        w0 = time.perf_counter()
        f, res = fit_record(t)
        fits.append(f)
        results[t.record.id] = res
        print(f"fit {t.record.id}: {time.perf_counter() - w0:.1f} s", file=sys.stderr)
    preds: list[Prediction] = []
    for src, dst in list(VERL_PAIRS) + nemo_pairs(records):
        if src not in translations or dst not in translations:
            continue
        res = results.get(src)
        if res is None:
            f, res = fit_record(translations[src])
            if res is None:
                preds.append(Prediction(src, dst, translations[dst].record.timing_s["step"],
                                        reason=f"fit failed: {f.reason}"))
                continue
        w0 = time.perf_counter()
        preds.append(predict(res, src, translations[dst]))
        print(f"predict {dst}: {time.perf_counter() - w0:.1f} s", file=sys.stderr)
    REPORT.write_text(markdown(fits, preds))
    print(f"wrote {REPORT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
