"""The outputs of a fit: `write_fit(result, out_dir)` and `fit_json(result)`.

Owns what a user reads after `rlsim fit`: `fitted.yaml` (the fitted scenario, with a header
saying which values are fitted, replayed from the log, left at their defaults, or imported
from the input scenario), `fit.md` and `fit.html` (the same tables: measured against
simulated per phase and step, residuals, each fitted value with its interval and bounds,
the knobs the log could not identify, the replayed lengths, the regime the fit holds for),
and the JSON `rlsim fit --json` prints.

Every file is written under a temporary name and renamed; `fitted.yaml` goes last and an
old one is removed first, so a folder with a `fitted.yaml` is a complete one.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlsim.config.contracts import stamped
from rlsim.config.errors import ScenarioError
from rlsim.fit.fitter import (
    KNOB_PHASE,
    REGIME_CHANGE_REL,
    FitResult,
    PhaseFit,
)


@dataclass
class _Section:
    """One part of the report: a title, paragraphs and at most one table."""

    title: str
    text: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


def _s(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}"


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:+.1%}"


def _g(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


def _phase_row(p: PhaseFit) -> list[str]:
    log = " + ".join(p.measured_keys) + "".join(f" - {k}" for k in p.minus_keys)
    return [p.name, log, " + ".join(p.sim_phases), _s(p.measured_s),
            _s(p.simulated_before_s), _s(p.simulated_s), _pct(p.residual_before),
            _pct(p.residual), str(p.steps)]


def _dist(d: dict[str, Any]) -> str:
    """A length distribution in a few words."""
    if d.get("dist") == "lognormal":
        return f"lognormal, median {d['median']:.1f}, sigma {d['sigma']:.3f}"
    if d.get("dist") == "fixed":
        return f"fixed {d['value']}"
    return json.dumps(d)


def _left_at(result: FitResult, name: str) -> str:
    """The value an unidentified knob keeps in the fitted scenario."""
    value = result.scenario.get("framework", {}).get(name)
    return "none (the backend's)" if value is None else _g(float(value))


def _sections(result: FitResult) -> list[_Section]:
    r = result
    dropped = "; ".join(f"step {k}: {v}" for k, v in sorted(r.steps_dropped.items()))
    out = []
    if r.mismatches or r.implausible:
        out.append(_Section("Warnings", [
            *(f"- The log does not match the scenario (fitted anyway: --force): {m}."
              for m in r.mismatches),
            *(f"- Implausible: {m}." for m in r.implausible)]))
    out += [_Section("Run", [
        f"Log `{r.source}` ({r.log_format}); steps kept: "
        f"{', '.join(map(str, r.steps_kept))}" + (f"; left out: {dropped}." if dropped else "."),
        f"Scenario `{r.input_name}`; fitted regime: {r.regime.describe()}.",
        f"Measured values are medians over the kept steps; simulated values are means over "
        f"{r.sim_steps - 1} steady steps of a {r.sim_steps}-step rlsim run (1 warm-up) with "
        f"the replayed lengths. {r.simulations} simulations; solver: "
        f"{r.solver['method']}, {r.solver['nfev']} evaluations, "
        f"{r.solver['message']}",
    ])]
    rows = [_phase_row(p) for p in r.phases.values()] + [_phase_row(r.step)]
    out.append(_Section(
        "Measured against simulated (seconds per step)",
        ["Residual = (simulated - measured) / measured; 'before' runs the input scenario's "
         "knobs with the replayed lengths, 'after' the fitted knobs. The step's remainder "
         "(what the compared phases leave out) is the step row less the others."],
        ["quantity", "log keys", "rlsim phases", "measured", "before fit", "after fit",
         "residual before", "residual after", "steps logged"], rows))
    noise = r.noise
    s2_text = ("no estimate" if noise.get("s2") is None else
               f"s^2 = {noise['s2']:.3g} (residuals: {_g(noise.get('s2_residuals'))}, "
               f"measurement spread: {_g(noise.get('s2_measurement'))})")
    step_ci = ("no interval" if r.step_ci95_rel is None
               else f"+/-{r.step_ci95_rel:.1%} of the step ({r.step.simulated_s:.1f} s)")
    prows = [[p.name, _g(p.value),
              "" if p.ci95 is None else f"{_g(p.ci95[0])} .. {_g(p.ci95[1])}",
              f"{_g(p.bounds[0])} .. {_g(p.bounds[1])}", _g(p.default), _g(p.start),
              _g(p.initial), KNOB_PHASE.get(p.name, ""), p.note]
             for p in r.params.values()]
    out.append(_Section(
        "Fitted knobs (`framework`)",
        ["95% intervals are linearised normal intervals from the Jacobian at the solution, "
         "cov = s^2 (J^T J)^-1, with s^2 the larger of the residuals' variance (SSR / (m - "
         f"n), m = {noise.get('residuals')} residuals, n = {noise.get('knobs')} knobs) and "
         "the measurement's own (the relative standard error of the compared medians over "
         f"the kept steps): {s2_text}. An approximation: it assumes the cost model's shape "
         "is right and only its scale is off.",
         f"The fitted step's 95% interval from the knobs' intervals: {step_ci}."],
        ["knob", "value", "95% interval", "bounds", "default", "input", "solver start",
         "mainly moves", "note"], prows))
    urows = [[name, _left_at(r, name), why] for name, why in r.unidentified.items()]
    out.append(_Section(
        "Knobs the log could not identify",
        ["Left at the input scenario's value (the default unless the input set it)."],
        ["knob", "left at", "why"], urows))
    lrows = []
    for kind in ("response_len", "prompt_len"):
        info = r.replayed.get(kind, {})
        if info.get("replayed"):
            meas = ", ".join(f"{k} {v:g}" for k, v in info.get("measured", {}).items())
            lrows.append([f"workload.{kind}", "yes", _dist(info["dist"]),
                          info.get("how", ""), meas])
        else:
            lrows.append([f"workload.{kind}", "no", "as the input", info.get("why", ""), ""])
    out.append(_Section(
        "Replayed lengths",
        ["A lognormal with the measured mean whose median maximum over one step's samples "
         "is the measured maximum (rlsim.fit.fitter.lognormal_from_mean_max; clipped at the "
         "scenario's caps). Responses within a prompt stay correlated as "
         "workload.group_correlation says, which lowers a step's maximum a little below "
         "the independent-sample formula's."],
        ["field", "replayed", "distribution", "how", "measured (median over kept steps)"],
        lrows))
    out.append(_Section("Predicting other regimes", [
        f"The knobs hold for the fitted regime: {r.regime.describe()}. A fitted scenario "
        "runs under any policy, placement or scale like any other (`rlsim compare "
        "fitted.yaml --variant policy.name=one_off,policy.placement=disaggregated`); each "
        "change of policy, placement, GPU count or split, GPU type or model widens the "
        f"predicted step's 95% interval by {REGIME_CHANGE_REL:.0%} "
        "(`rlsim.config.regime.regime_warning`; `rlsim run` and `compare` print it for a "
        "fitted scenario run outside its regime), on top of the fit's own. That allowance "
        "is stated, not measured.",
    ]))
    if r.notes:
        out.append(_Section("Notes", [f"- {n}" for n in r.notes]))
    return out


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(result: FitResult) -> str:
    """fit.md."""
    lines = [f"# Fit: `{result.input_name}` to `{result.source}`", ""]
    for sec in _sections(result):
        lines += [f"## {sec.title}", ""]
        for t in sec.text:
            lines += [t, ""]
        if sec.headers:
            lines.append("| " + " | ".join(sec.headers) + " |")
            lines.append("|" + "---|" * len(sec.headers))
            for row in sec.rows:
                lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:80em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:.3em .6em;
text-align:left;vertical-align:top}th{background:#f3f3f3}code{background:#f6f6f6}"""


def _inline(text: str) -> str:
    """Escaped text with `code` spans."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def render_html(result: FitResult) -> str:
    """fit.html: the same tables, one self-contained page (no scripts, no network)."""
    title = f"Fit: {result.input_name} to {result.source}"
    body = [f"<h1>{html.escape(title)}</h1>"]
    for sec in _sections(result):
        body.append(f"<h2>{_inline(sec.title)}</h2>")
        body += [f"<p>{_inline(t)}</p>" for t in sec.text]
        if sec.headers:
            body.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>"
                                                for h in sec.headers) + "</tr>")
            for row in sec.rows:
                body.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>")
            body.append("</table>")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def fitted_yaml(result: FitResult) -> str:
    """fitted.yaml: the fitted scenario under a header naming the log and what each value
    is (fitted, replayed, default, imported)."""
    r = result
    head = [f"Fitted by `rlsim fit` from the log {r.source} ({r.log_format}; steps kept: "
            f"{', '.join(map(str, r.steps_kept))}).",
            f"Input scenario: {r.input_name}. Fitted regime: {r.regime.describe()}.",
            "Values:"]
    for p in r.params.values():
        ci = "" if p.ci95 is None else f", 95% CI {_g(p.ci95[0])} .. {_g(p.ci95[1])}"
        knob = ("train_speed = framework.rollout_speed" if p.name == "speed" else p.name)
        head.append(f"  fitted:   framework.{knob} = {_g(p.value)}{ci}")
    for kind in ("response_len", "prompt_len"):
        info = r.replayed.get(kind, {})
        if info.get("replayed"):
            head.append(f"  replayed from the log: workload.{kind} ({info.get('how', '')})")
    for name, why in r.unidentified.items():
        head.append(f"  default:  framework.{name} = {_left_at(r, name)} (not identified: "
                    f"{why})")
    head.append("  imported: every other value, as in the input scenario.")
    head.append("Outside the fitted regime (another policy, placement or GPU count) a "
                "prediction is less certain: see fit.md.")
    text = "".join(f"# {line}\n" for line in head)
    return text + yaml.safe_dump(r.scenario, sort_keys=False)


def fit_json(result: FitResult) -> dict[str, Any]:
    """What `rlsim fit --json` prints: per-phase measured and simulated seconds, the step,
    the fitted knobs and the unidentified ones (and the replayed lengths and regime)."""
    def phase(p: PhaseFit) -> dict[str, Any]:
        return {"measured_s": p.measured_s, "simulated_s": p.simulated_s,
                "simulated_before_s": p.simulated_before_s, "residual": p.residual,
                "log_keys": list(p.measured_keys),
                "log_keys_subtracted": list(p.minus_keys),
                "rlsim_phases": list(p.sim_phases),
                "steps": p.steps}

    r = result
    step = phase(r.step)
    step["ci95_rel"] = r.step_ci95_rel
    return stamped("fit", {
        "source": r.source,
        "format": r.log_format,
        "steps_kept": list(r.steps_kept),
        "phases": {name: phase(p) for name, p in r.phases.items()},
        "step": step,
        "params": {name: {"value": p.value,
                          "ci95": None if p.ci95 is None else list(p.ci95),
                          "bounds": list(p.bounds), "default": p.default,
                          "input": p.start, "at_bound": p.at_bound, "note": p.note}
                   for name, p in r.params.items()},
        "unidentified": dict(r.unidentified),
        "replayed": r.replayed,
        "regime": {"policy": r.regime.policy, "placement": r.regime.placement,
                   "gpus": r.regime.gpus, "rollout_gpus": r.regime.rollout_gpus,
                   "train_gpus": r.regime.train_gpus, "gpu": r.regime.gpu,
                   "model": r.regime.model},
        "simulations": r.simulations,
        "notes": list(r.notes),
        "mismatches": list(r.mismatches),
        "implausible": list(r.implausible),
    })


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_fit(result: FitResult, out_dir: Path) -> None:
    """out_dir/fit.md, fit.html and, last, fitted.yaml (module docstring)."""
    # Render everything first: a rendering error writes nothing.
    texts = {"fit.md": render_markdown(result), "fit.html": render_html(result),
             "fitted.yaml": fitted_yaml(result)}
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "fitted.yaml").unlink(missing_ok=True)
        for name in ("fit.md", "fit.html", "fitted.yaml"):
            _write(out_dir / name, texts[name])
    except OSError as err:
        raise ScenarioError("--out", f"cannot write the fit to {str(out_dir)!r}: "
                            f"{err.strerror or err}") from None
