"""`--draws N` on `rlsim run`, `compare` and `sweep`: run the draws, print what they answer.

Owns the draws' options shared by the three commands (executor, workers, resume), the
tables they print and the `--json` documents (shapes: docs/uncertainty.md). The draws
themselves are rlsim.draws; they run on the sweep runner, so `--out DIR` journals each
finished run (DIR is a sweep folder of kind "draws", plus DIR/draws.json, the answer)
and `--resume` continues an interrupted set. Exit codes: 0; 1 when some runs gave no
metrics (listed; the answer uses the others); 2 bad input; 130 interrupted (partial, kept
in --out). Imported by rlsim.cli on every command, so it imports the draws and the report
modules only when --draws is given (start-up time).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from rlsim.cli_common import fail

ExecutorOpt = Annotated[str, typer.Option(
    "--executor", help="local (process pool) or ray.")]
JobsOpt = Annotated[int | None, typer.Option(
    "--jobs", help="Parallel workers (default: one per CPU).")]
AddressOpt = Annotated[str | None, typer.Option(
    "--address", help="Ray cluster address (with --executor ray).")]
ResumeOpt = Annotated[bool, typer.Option(
    "--resume", help="Continue the sweep (or the draws) in --out: run only what is "
    "unfinished.")]
SHOWN_FAILURES = 5


def draws_command(kind: str, plans: list[tuple[Path, list[str], str]], n: int, *,
                  out: Path | None, resume: bool, executor: str, jobs: int | None,
                  address: str | None, as_json: bool, sensitivity: bool = False,
                  profile: bool = True, grids: list[str] | None = None,
                  allow_large: bool = False, max_points: int = 0) -> None:
    """Run `rlsim <kind> --draws n` (kind: run, compare or sweep) and print its answer."""
    from rlsim.config.contracts import stamped
    from rlsim.draws import (
        build_draw_spec,
        compare_doc,
        compare_sensitivity_doc,
        interval_doc,
        run_draws,
        sensitivity_base_rows,
        sensitivity_doc,
        sweep_doc,
    )
    from rlsim.report.draws_report import DRAWS_FILE, write_answer
    from rlsim.sweep import check_executor
    from rlsim.sweep.display import ProgressBar

    if resume and out is None:
        fail("--resume: give the --out folder of the draws to continue")
    check_executor(executor, jobs, address)
    spec, ctx = build_draw_spec(plans, n, grids=grids, sensitivity=sensitivity,
                                profile=profile, max_runs=max_points)
    outcome = run_draws(spec, ctx, out, executor=executor, jobs=jobs, address=address,
                        resume=resume, progress=ProgressBar(label="draws", unit="runs"),
                        allow_large=allow_large)
    if outcome.sweep.interrupted:
        kept = (f"{outcome.sweep.done} of {outcome.sweep.points} runs kept in {out}; "
                "continue with --resume" if out is not None else
                "nothing kept: give --out DIR to journal the draws and --resume them")
        typer.echo(f"rlsim: interrupted: {kept}", err=True)
        raise typer.Exit(130)
    c = outcome.collected
    doc = (interval_doc(c) if kind == "run" else compare_doc(c) if kind == "compare"
           else sweep_doc(c))
    if sensitivity:
        doc["sensitivity"] = (compare_sensitivity_doc(c) if kind == "compare"
                              else sensitivity_doc(c))
        doc["sensitivity_base_rows"] = sensitivity_base_rows(c)
    document = stamped("summary" if kind == "run" else kind, {"draws": doc})
    if out is not None:
        write_answer(out, document)
    if as_json:
        typer.echo(json.dumps(document))
    else:
        for line in (run_lines(doc) if kind == "run" else compare_lines(doc)
                     if kind == "compare" else sweep_lines(doc)):
            typer.echo(line)
        if out is not None:
            typer.echo(f"\nwrote {out}/ (report.html, {DRAWS_FILE}, and one Parquet row per "
                       "run in results/)")
    if c.failures:
        for line in c.failures[:SHOWN_FAILURES]:
            typer.echo(f"  {line}", err=True)
        more = len(c.failures) - SHOWN_FAILURES
        fail(f"--draws: {len(c.failures)} of {spec.n_points} runs gave no metrics"
             + (f" ({more} more not shown)" if more > 0 else " (listed above)")
             + "; the intervals use the others. Narrow the unknowns that make a run "
             "invalid", code=1)


def share(x: float | None) -> str:
    """A probability of being best as a percentage ("-": no draw that every one ran)."""
    return "-" if x is None else f"{x:.0%}"


def _q(q: dict[str, float] | None, fmt: str = ".4g") -> str:
    return "-" if q is None else f"{q['median']:{fmt}} [{q['p10']:{fmt}}, {q['p90']:{fmt}}]"


def _heading(doc: dict[str, Any], what: str) -> str:
    ran = "" if doc["ran"] == doc["n"] else f" ({doc['ran']} with metrics)"
    return f"{doc['n']} draws{ran} over {', '.join(doc['unknowns'])}{what}"


def run_lines(doc: dict[str, Any]) -> list[str]:
    """`rlsim run --draws`: each metric's median, 80% and 95% intervals (and indices)."""
    from rlsim.draws import METRICS
    from rlsim.report.text import aligned

    rows = [["metric", "median", "80% interval", "95% interval"]]
    for key, label in METRICS:
        q = doc["metrics"][key]
        rows.append([label, *(["-"] * 3 if q is None else [
            f"{q['median']:.4g}", f"{q['p10']:.4g} - {q['p90']:.4g}",
            f"{q['p2_5']:.4g} - {q['p97_5']:.4g}"])])
    return [_heading(doc, ""), aligned(rows), *sensitivity_lines(doc)]


def _top3(rows: list[dict[str, Any]]) -> str:
    return "; ".join(f"{t['unknown']} {t['total']:.2f} [{t['total_ci'][0]:.2f}, "
                     f"{t['total_ci'][1]:.2f}]" + ("" if t["ranked_apart"] else " ~")
                     for t in rows[:3])


def sensitivity_lines(doc: dict[str, Any]) -> list[str]:
    """The three largest total indices per metric, or per ratio of a comparison (`~`: not
    ranked apart)."""
    from rlsim.draws import METRICS

    if "sensitivity" not in doc:
        return []
    sens = doc["sensitivity"]
    if "ratios" in sens:
        out = [f"{label} / first ({key.split('.')[-1]}): total index {_top3(rows)}"
               for label, by in sens["ratios"].items() for key, rows in by.items()]
    else:
        out = [f"{label}: total index {_top3(sens[key])}" for key, label in METRICS]
    rows = doc.get("sensitivity_base_rows") or {}
    if rows and rows["used"] < rows["of"]:
        out.append(f"(indices over {rows['used']} of {rows['of']} base rows: the others had a "
                   "run without metrics)")
    return [*out, "(~: its interval overlaps the next one's, so the two are not ranked)"]


def compare_lines(doc: dict[str, Any]) -> list[str]:
    """`rlsim compare --draws`: intervals per variant, ratios, P(best)."""
    from rlsim.draws import METRICS
    from rlsim.report.text import aligned

    labels = [r["label"] for r in doc["runs"]]
    rows = [["metric", *labels]]
    for key, label in METRICS:
        rows.append([label, *(_q(r["metrics"][key]) for r in doc["runs"])])
    for key, label in (("throughput.samples_per_s", "samples/s"),
                       ("throughput.tokens_per_s", "tokens/s")):
        rows.append([f"  vs first ({label})", "1",
                     *(_q(doc["ratios"][lab][key], ".3g") for lab in labels[1:])])
    for key, label in METRICS:
        rows.append([f"P(best: {label})", *(share(doc['p_best'][key][lab])
                                            for lab in labels)])
    return [_heading(doc, ", the same values for every variant: median [80% interval]"),
            aligned(rows), *sensitivity_lines(doc)]


def sweep_lines(doc: dict[str, Any]) -> list[str]:
    """`rlsim sweep --draws`: per setting, samples/s and step time with P(best)."""
    from rlsim.report.text import aligned

    rows = [["setting", "samples/s", "P(best)", "step time (s)", "P(best)"]]
    for cell in doc["settings"]:
        name = ", ".join(cell["set"]) or cell["plan"]
        rows.append([name, _q(cell["metrics"]["throughput.samples_per_s"]),
                     share(cell['p_best']['throughput.samples_per_s']),
                     _q(cell["metrics"]["step_time_s.mean"]),
                     share(cell['p_best']['step_time_s.mean'])])
    return [_heading(doc, ", the same values at every setting: median [80% interval]"),
            aligned(rows)]
