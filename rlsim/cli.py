"""The `rlsim` command line: a thin typer app over `rlsim.api` and `rlsim.report`.

Owns argument parsing, printing and exit codes: 0 ok, 2 bad input (one line on stderr
naming the field and the fix, never a traceback), 1 internal error. `--json` prints only
JSON on stdout; progress and messages go to stderr.
"""

from __future__ import annotations

import atexit
import copy
import gc
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.exceptions import TyperException

from rlsim.cli_advise import ADVISE_HELP
from rlsim.cli_advise import advise as _advise_command
from rlsim.cli_common import (
    NoProfileUncertaintyOpt,
    compare_folder,
    fail,
    is_fleet_file,
    shared_plotly,
)
from rlsim.cli_draws import AddressOpt, ExecutorOpt, JobsOpt, ResumeOpt, draws_command
from rlsim.cli_fleet import compare_fleets, fleet_report, run_and_show
from rlsim.cli_plugins import add_plugins, command_name
from rlsim.config.errors import ScenarioError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Discrete-event simulator of LLM RL post-training clusters.")

REPO_SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _version(value: bool) -> None:
    if value:
        from rlsim import __version__

        typer.echo(f"rlsim {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_version,
        help="Print the version and exit.")] = False) -> None:
    """Discrete-event simulator of LLM RL post-training clusters."""


def _scenario_dir() -> Path:
    local = Path("scenarios")
    return local if local.is_dir() else REPO_SCENARIOS


def _default_scenario() -> Path:
    return _scenario_dir() / "quickstart.yaml"


class _ProgressBar:
    """Step progress of one run on stderr, shown only once the run has taken ~2 s.

    On a terminal: a rich bar (step k/N, elapsed, ETA) started by a timer, so it appears
    even while the first step is still simulating, and refreshed by rich's own thread, so
    the clocks tick between steps. Elsewhere (a log, a pipe): a plain line at the first
    step after ~2 s, then at most one every PLAIN_EVERY_S, and one at the end.
    """

    DELAY_S = 2.0
    PLAIN_EVERY_S = 30.0

    def __init__(self, label: str, total: int, enabled: bool = True,
                 stream: Any = None) -> None:
        import threading

        self.label = label
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.t0 = time.perf_counter()
        self._last_line: float | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._live: Any = None
        self._task: Any = None
        self._timer = threading.Timer(self.DELAY_S, self._show)
        self._timer.daemon = True
        if enabled and self.tty:
            self._timer.start()

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.tty:
            with self._lock:
                if self._live is not None:
                    self._live.update(self._task, completed=done, total=total)
        elif now - self.t0 >= self.DELAY_S and (
                done == total or self._last_line is None
                or now - self._last_line >= self.PLAIN_EVERY_S):
            self._last_line = now
            elapsed = now - self.t0
            eta = f", ETA {elapsed / done * (total - done):.0f} s" if 0 < done < total else ""
            self.stream.write(f"{self.label}: step {done}/{total}, {elapsed:.0f} s{eta}\n")
            self.stream.flush()

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        with self._lock:
            if self._closed:
                return
            self._live = Progress(
                TextColumn("{task.description}"), BarColumn(), TextColumn("step"),
                MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                TimeRemainingColumn(), console=Console(file=self.stream),
                refresh_per_second=2, redirect_stdout=False, redirect_stderr=False)
            self._live.start()
            self._task = self._live.add_task(self.label, total=self.total,
                                              completed=self.done)

    def where(self) -> str:
        """Where the run stopped: the step it was in."""
        return f"step {min(self.done + 1, self.total)} of {self.total}"

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._closed = True
            if self._live is not None:
                self._live.stop()
                self._live = None


def _overrides(values: list[str] | None) -> list[str]:
    from rlsim.config.loading import split_overrides

    out: list[str] = []
    for v in values or []:
        out.extend(split_overrides(v))
    return out


def _load_checked(path: Path, overrides: list[str], allow_large: bool) -> Any:
    """A scenario file loaded and through the prepare step (rlsim/prepare.py: memory,
    workload, faults and the run-size limits): the prepared job, or its one error."""
    from rlsim.prepare import prepare_file

    return prepare_file(path, overrides, allow_large=allow_large)


def _run_one(path: Path, overrides: list[str], label: str, show_progress: bool,
             allow_large: bool = False) -> Any:
    """One run of a scenario file (`_run_loaded`)."""
    return _run_loaded(_load_checked(path, overrides, allow_large), label, show_progress)


def _run_loaded(job: Any, label: str, show_progress: bool) -> Any:
    """One run of a prepared job, with its progress bar; a Ctrl-C raises `_Stopped` holding
    the partial result and where it stopped."""
    from rlsim.api import RunInterrupted, simulate

    if job.scenario.horizon is not None:
        from rlsim.horizon import simulate_horizon

        return simulate_horizon(job)
    bar = _ProgressBar(label, job.scenario.steps, show_progress)
    try:
        return simulate(job, progress=bar)
    except RunInterrupted as err:
        raise _Stopped(err.result, f"{label} at {bar.where()} (simulated time "
                       f"{err.sim_time_s:.1f} s)") from None
    finally:
        bar.close()


class _Stopped(Exception):
    """Ctrl-C during a run: the partial `result` and a description of where it stopped."""

    def __init__(self, result: Any, where: str) -> None:
        super().__init__(where)
        self.result = result
        self.where = where


def _check_out(out: Path | None, force: bool) -> None:
    """Refuse an --out that would mix a new run with what is there, unless --force."""
    if out is None or not out.exists():
        return
    if not out.is_dir():
        fail(f"--out: {out} exists and is not a folder; give a new folder")
    if not any(out.iterdir()):
        return
    what = "holds a run (summary.json)" if (out / "summary.json").exists() else "is not empty"
    if not force:
        fail(f"--out: {out} {what}; give a new folder, or --force to replace its run files")
    # The old run must not look complete while the new one is written: summary.json marks
    # a complete run folder (write_run_folder writes it last), here and in run subfolders.
    for marker in (out / "summary.json", *out.glob("*/summary.json")):
        marker.unlink(missing_ok=True)


def _format_table(summaries: list[dict[str, Any]], names: list[str]) -> str:
    """Steady-state figures side by side (summary.json's headline keys), speedups against
    the first run on step time, samples/s and tokens/s. Where any run's generation overlaps
    other phases (one_off), the gen row says it is the whole generation and the part on the
    step's critical path follows it."""
    from rlsim.report.metrics import CRITICAL_GEN, gen_overlaps, gen_qualifiers
    from rlsim.report.text import aligned

    rows = [
        ("step time mean (s)", lambda s: f"{s['step_time_s']['mean']:.1f}"),
        ("step time p99 (s)", lambda s: f"{s['step_time_s']['p99']:.1f}"),
        ("; ".join(["gen (s/step", *gen_qualifiers(summaries)]) + ")",
         lambda s: f"{s['phase_time_s']['gen']:.1f}"),
    ]
    if any(gen_overlaps(s) for s in summaries):
        # an older summary.json has no such key: "-" rather than a guess
        rows.append((f"{CRITICAL_GEN} (s/step)",
                     lambda s: f"{s['gen_critical_path_s']:.1f}"
                     if "gen_critical_path_s" in s else "-"))
    rows += [
        ("reward (s/step)", lambda s: f"{s['phase_time_s']['reward']:.1f}"),
        ("ref (s/step)", lambda s: f"{s['phase_time_s']['ref']:.1f}"),
        ("train (s/step)", lambda s: f"{s['phase_time_s']['train']:.1f}"),
        ("weight_sync (s/step)", lambda s: f"{s['phase_time_s']['weight_sync']:.2f}"),
        ("switch (s/step)", lambda s: f"{s['phase_time_s']['switch']:.2f}"),
        # the driver's work across controller, ref and train (an older summary lacks it)
        ("driver (s/step; of it copies)",
         lambda s: f"{s['controller']['total_s']:.2f} ({s['controller']['transfer_s']:.2f})"
         if "controller" in s else "-"),
        ("samples/s", lambda s: f"{s['throughput']['samples_per_s']:.2f}"),
        ("tokens/s", lambda s: f"{s['throughput']['tokens_per_s']:.0f}"),
        ("response tokens/s", lambda s: f"{s['throughput']['response_tokens_per_s']:.0f}"),
        ("response tokens/sample",
         lambda s: f"{s['throughput']['response_tokens_per_sample']:.0f}"),
        ("GPU util", lambda s: " ".join(f"{k}={v:.0%}" for k, v in s["gpu_util"].items())),
        ("$/1k samples", lambda s: f"{s['cost']['usd_per_1k_samples']:.2f}"),
        ("staleness mean", lambda s: f"{s['staleness']['mean']:.2f}"),
        ("events", lambda s: f"{s['events']}"),
        ("wall (s)", lambda s: f"{s['wall_s']:.2f}"),
    ]
    if len(summaries) == 1:  # a run alone has nothing to be faster than
        return aligned([["metric", *names]] + [[label, fn(summaries[0])] for label, fn in rows])
    base = summaries[0]["step_time_s"]["mean"]
    rows.append(("speedup vs first (step time)",
                 lambda s: f"{base / s['step_time_s']['mean']:.2f}x"
                 if s["step_time_s"]["mean"] else "-"))

    def ratio(key: str) -> Callable[[dict[str, Any]], str]:
        first = summaries[0]["throughput"][key]
        return lambda s: f"{s['throughput'][key] / first:.2f}x" if first else "-"

    rows += [("  on samples/s", ratio("samples_per_s")), ("  on tokens/s", ratio("tokens_per_s"))]
    table = [["metric", *names]] + [[label, *(fn(s) for s in summaries)] for label, fn in rows]
    return aligned(table)


def _print_warnings(summaries: list[dict[str, Any]], names: list[str]) -> None:
    """Each run's `summary.warnings` on stderr, after its table: figures the run's end
    state biases (docs/metrics.md, "Warnings")."""
    for summary, name in zip(summaries, names, strict=True):
        for warning in summary.get("warnings") or []:
            typer.echo(f"rlsim: warning: {name}: {warning}", err=True)


SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", help="Override a field: dotted.path=value (repeatable; commas separate several).")]
OutOpt = Annotated[Path | None, typer.Option("--out", help="Folder for the run's outputs.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only JSON on stdout.")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="Write into an --out folder that is not empty (its run files are "
    "replaced).")]
AllowLargeOpt = Annotated[bool, typer.Option(
    "--allow-large", help="Run even when the estimated work is over the run-size limits "
    "(about 1 h or 8 GiB; docs/design.md).")]


@app.command()
def run(
    scenario: Annotated[Path | None, typer.Argument(
        help="Scenario YAML; default scenarios/quickstart.yaml.")] = None,
    set_: SetOpt = None,
    out: OutOpt = None,
    as_json: JsonOpt = False,
    force: ForceOpt = False,
    allow_large: AllowLargeOpt = False,
    draws: Annotated[int | None, typer.Option(
        "--draws", help="Run N draws over the scenario's unknowns (its `unknowns:` section: "
        "a Latin hypercube seeded by its seed) and print each headline metric's median and "
        "80%/95% intervals (docs/uncertainty.md). With --out, DIR journals every draw "
        "and --resume continues them.")] = None,
    sensitivity: Annotated[bool, typer.Option(
        "--sensitivity", help="With --draws: draw a Saltelli design instead and print the "
        "three unknowns each metric's spread comes from most (Sobol indices).")] = False,
    no_profile_uncertainty: NoProfileUncertaintyOpt = False,
    executor: ExecutorOpt = "local",
    jobs: JobsOpt = None,
    address: AddressOpt = None,
    resume: ResumeOpt = False,
) -> None:
    """Simulate one scenario and print its summary."""
    from rlsim.api import write_run

    path = scenario or _default_scenario()
    if draws is not None:
        draws_command("run", [(path, _overrides(set_), path.stem)], draws, out=out,
                      resume=resume, executor=executor, jobs=jobs, address=address,
                      as_json=as_json, sensitivity=sensitivity,
                      profile=not no_profile_uncertainty, allow_large=allow_large)
        return
    _draws_only(sensitivity=sensitivity, resume=resume, executor=executor, jobs=jobs,
                address=address, no_profile_uncertainty=no_profile_uncertainty)
    _check_out(out, force)
    if is_fleet_file(path):
        run_and_show(path, _overrides(set_), out, as_json)
        return
    try:
        result = _run_one(path, _overrides(set_), path.stem, True, allow_large)
    except _Stopped as stop:
        _interrupted(stop, out)
    summary, name = result.summary, result.scenario.name
    if out is not None:
        write_run(result, out)
    if as_json:
        from rlsim.api import summary_document

        typer.echo(json.dumps(summary_document(summary)))
        return
    typer.echo(_format_table([summary], [name]))
    if "horizon" in summary:
        from rlsim.report.text import horizon_lines

        typer.echo("\n" + "\n".join(horizon_lines(summary["horizon"])))
    _print_warnings([summary], [name])
    if out is not None:
        typer.echo(f"\nwrote {out}/ (report.html, summary.json, records.parquet, "
                   "trace.json, scenario.resolved.yaml)")


def _draws_only(*, sensitivity: bool = False, resume: bool, executor: str,
                jobs: int | None, address: str | None, no_profile_uncertainty: bool) -> None:
    """Refuse the options that only a run with --draws takes."""
    for flag, given in (("--sensitivity", sensitivity), ("--resume", resume),
                        ("--executor", executor != "local"), ("--jobs", jobs is not None),
                        ("--address", address is not None),
                        ("--no-profile-uncertainty", no_profile_uncertainty)):
        if given:
            fail(f"{flag}: give --draws N as well (it applies to the draws)")


def _interrupted(stop: _Stopped, out: Path | None) -> NoReturn:
    """Ctrl-C in a run: say where it stopped, write the partial run to `out`, exit 130."""
    from rlsim.api import write_run

    typer.echo(f"rlsim: interrupted: {stop.where}", err=True)
    if out is not None:
        write_run(stop.result, out)
        typer.echo(f"rlsim: wrote the partial run (summary.json has \"partial\": true) to "
                   f"{out}/", err=True)
    raise typer.Exit(130)


@app.command()
def check(
    scenario: Annotated[Path | None, typer.Argument(
        help="Scenario YAML; default scenarios/quickstart.yaml.")] = None,
    set_: SetOpt = None,
    allow_large: AllowLargeOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Check that a job can run, without running it: where each role runs (GPU to engine
    and trainer rank), memory per GPU and host memory, expected faults per step; or the one
    error that stops it (exit 2)."""
    from rlsim.check import describe, lines
    from rlsim.config.contracts import stamped

    path = scenario or _default_scenario()
    if is_fleet_file(path):
        fail(f"{path}: check takes a single job; check a fleet's jobs one by one, or run "
             "the fleet (`rlsim run`), which profiles each job through the same checks")
    described = describe(_load_checked(path, _overrides(set_), allow_large))
    if as_json:
        typer.echo(json.dumps(stamped("check", described)))
        return
    for line in lines(described):
        typer.echo(line)


@app.command()
def compare(
    scenarios: Annotated[list[Path], typer.Argument(help="Scenario YAML files.")],
    set_: SetOpt = None,
    variant: Annotated[list[str] | None, typer.Option(
        "--variant", help="Run each scenario once per variant: comma-separated overrides "
        "(repeatable), e.g. --variant policy.placement=disaggregated.")] = None,
    out: OutOpt = None,
    as_json: JsonOpt = False,
    force: ForceOpt = False,
    allow_large: AllowLargeOpt = False,
    draws: Annotated[int | None, typer.Option(
        "--draws", help="Run every variant at N draws over the first scenario's unknowns "
        "(the same values for all) and print each metric's interval, each ratio to the "
        "first variant and the probability each is best (docs/uncertainty.md).")] = None,
    sensitivity: Annotated[bool, typer.Option(
        "--sensitivity", help="With --draws: draw a Saltelli design instead and print the "
        "three unknowns each ratio to the first variant depends on most (Sobol indices).")]
        = False,
    no_profile_uncertainty: NoProfileUncertaintyOpt = False,
    executor: ExecutorOpt = "local",
    jobs: JobsOpt = None,
    address: AddressOpt = None,
    resume: ResumeOpt = False,
) -> None:
    """Simulate several scenarios (or variants of one) and print them side by side."""
    from rlsim.api import compare as compare_runs
    from rlsim.api import write_comparison_report, write_run

    common = _overrides(set_)
    plans: list[tuple[Path, list[str], str]] = []
    for path in scenarios:
        for v in variant or [""]:
            extra = _overrides([v]) if v else []
            # the values alone name a variant, as in the table of a plain compare
            short = ",".join(x.split("=", 1)[1] for x in extra)
            label = (f"{path.stem}:{short}" if len(scenarios) > 1 and short else
                     short or path.stem)
            plans.append((path, common + extra, label))
    labels = [label for _, _, label in plans]
    if len(set(labels)) < len(labels):  # the same name twice: number them
        plans = [(p, o, f"{label} ({i})") for i, (p, o, label) in enumerate(plans)]
    if draws is not None:
        draws_command("compare", plans, draws, out=out, resume=resume, executor=executor,
                      jobs=jobs, address=address, as_json=as_json, sensitivity=sensitivity,
                      profile=not no_profile_uncertainty, allow_large=allow_large)
        return
    _draws_only(sensitivity=sensitivity, resume=resume, executor=executor, jobs=jobs,
                address=address, no_profile_uncertainty=no_profile_uncertainty)
    _check_out(out, force)
    fleets = [is_fleet_file(p) for p, _, _ in plans]
    if any(fleets):
        if not all(fleets):
            fail("compare either single-job scenarios or fleet (kind: fleet) scenarios, "
                 "not both")
        compare_fleets(plans, out, as_json)
        return
    # every run is valid and within the limits before any starts
    loaded = [_load_checked(p, o, allow_large) for p, o, _ in plans]
    results = []
    stopped: _Stopped | None = None
    for job, (_, _, label) in zip(loaded, plans, strict=True):
        try:
            results.append(_run_loaded(job, label, True))
        except _Stopped as stop:
            stopped = stop  # the finished runs are still printed and written
            break
    if stopped is not None:
        typer.echo(f"rlsim: interrupted: {stopped.where}; {len(results)} of {len(plans)} "
                   "runs finished" + (" (shown below)" if results else ""), err=True)
        if not results:
            raise typer.Exit(130)
        plans = plans[:len(results)]
    names = []
    for i, (res, (_, o, _)) in enumerate(zip(results, plans, strict=True)):
        short = ",".join(x.split("=", 1)[1] for x in o if x not in common) if variant else ""
        names.append(short or res.scenario.name or f"run{i}")
    if out is not None:
        from rlsim.report.rundata import write_compare_manifest

        dirs, js = compare_folder(out, names)
        for res, sub, name in zip(results, dirs, names, strict=True):
            write_run(res, out / sub, name=name, plotly_src=f"../{js}")
        write_comparison_report(results, names, out / "report.html", js)
        write_compare_manifest(out, "runs", list(zip(dirs, names, strict=True)))
    if as_json:
        typer.echo(json.dumps(compare_runs(results)))
        if stopped is not None:
            raise typer.Exit(130)
        return
    from rlsim.report.metrics import compare_notes

    summaries = [r.summary for r in results]
    typer.echo(_format_table(summaries, names))
    for note in compare_notes(summaries, names):
        typer.echo(f"\nnote: {note}")
    _print_warnings(summaries, names)
    if out is not None:
        typer.echo(f"\nwrote {len(results)} run folders and the comparison "
                   f"{out / 'report.html'} under {out}/")
    if stopped is not None:
        raise typer.Exit(130)


@app.command()
def report(
    dirs: Annotated[list[Path], typer.Argument(
        help="Run folders (rlsim run/compare --out), compared side by side with ratios "
        "against the first; or one compare folder (rlsim compare --out: its runs in their "
        "order and names); or one sweep folder (rlsim sweep --out).")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="HTML file to write; default report.html in the run, compare or sweep "
        "folder (in the runs' common parent folder for several runs).")] = None,
) -> None:
    """Write the HTML report (plotly, opens offline) of saved runs, a compare or a sweep."""
    from rlsim.report.html import write_report
    from rlsim.report.rundata import compare_runs, is_compare_dir, is_run_dir, load_run
    from rlsim.report.sweep_report import is_sweep_dir, write_sweep_report

    for d in dirs:
        if not d.is_dir():
            fail(f"RUN_DIR: {d} is not a folder; give run folders written by "
                 "`rlsim run --out DIR` or a sweep folder written by `rlsim sweep --out DIR`")
    if out is not None:
        if out.is_dir():
            out = out / "report.html"  # like cp: a folder receives the file
        if not out.parent.is_dir():
            fail(f"--out: folder {out.parent} does not exist; create it or give another path")
    from rlsim.report.draws_report import is_draws_dir, write_draws_report

    if any(is_draws_dir(d) for d in dirs):
        if len(dirs) > 1:
            fail("RUN_DIR: a draws folder is reported on its own; give one draws folder")
        target = out or dirs[0] / "report.html"
        try:
            write_draws_report(dirs[0], target)
        except OSError as err:
            fail(f"--out: cannot write {target}: {err.strerror or err}")
        typer.echo(f"wrote {target}")
        return
    sweeps = [d for d in dirs if is_sweep_dir(d)]
    if sweeps:
        if len(dirs) > 1:
            fail("RUN_DIR: a sweep folder is reported on its own; give one sweep folder or "
                 "only run folders")
        target = out or dirs[0] / "report.html"
        try:
            write_sweep_report(dirs[0], target)
        except OSError as err:
            fail(f"--out: cannot write {target}: {err.strerror or err}")
    elif any(is_compare_dir(d) for d in dirs):
        if len(dirs) > 1:
            fail("RUN_DIR: a compare folder is reported on its own; give one compare "
                 "folder or only run folders")
        entries = compare_runs(dirs[0])
        for sub, _ in entries:
            if not is_run_dir(sub):
                fail(f"RUN_DIR: {sub} (a run of the compare folder {dirs[0]}) has no "
                     "summary.json; run `rlsim compare ... --out DIR` again")
        target = out or dirs[0] / "report.html"
        fleets = [is_fleet_file(sub / "scenario.resolved.yaml") for sub, _ in entries]
        if any(fleets):
            fleet_report([sub for sub, _ in entries], fleets, target,
                          [name for _, name in entries])
            return
        try:
            write_report([load_run(sub, name) for sub, name in entries], target,
                         shared_plotly(target))
        except OSError as err:
            fail(f"--out: cannot write {target}: {err.strerror or err}")
    else:
        for d in dirs:
            if not is_run_dir(d):
                fail(f"RUN_DIR: {d} has no summary.json: not a complete rlsim run folder; "
                     "run `rlsim run ... --out DIR` first")
        parents = {d.resolve().parent for d in dirs}
        target = out or (dirs[0] / "report.html" if len(dirs) == 1 else
                         (parents.pop() if len(parents) == 1 else Path.cwd()) / "report.html")
        fleets = [is_fleet_file(d / "scenario.resolved.yaml") for d in dirs]
        if any(fleets):
            fleet_report(dirs, fleets, target, [None] * len(dirs))
            return
        runs = [load_run(d) for d in dirs]
        try:
            write_report(runs, target, shared_plotly(target))
        except OSError as err:
            fail(f"--out: cannot write {target}: {err.strerror or err}")
    typer.echo(f"wrote {target}")


@app.command()
def sweep(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML.")],
    out: Annotated[Path, typer.Option(
        "--out", help="Sweep folder: sweep.json and results/ (Parquet, one file per point).")],
    grid: Annotated[list[str] | None, typer.Option(
        "--grid", help="key=v1,v2,...: values of one field, YAML scalars as in --set "
        "(repeatable; the points are the product of the grids).")] = None,
    random: Annotated[int | None, typer.Option(
        "--random", help="N random points drawn from the --range keys (times the grid).")]
        = None,
    range_: Annotated[list[str] | None, typer.Option(
        "--range", help="key=lo:hi: uniform range of a random key, integers when both "
        "bounds are (repeatable).")] = None,
    reps: Annotated[int, typer.Option(
        "--reps", help="Replicates per point; replicate 0 uses the scenario's seed.")] = 1,
    set_: SetOpt = None,
    executor: ExecutorOpt = "local",
    jobs: JobsOpt = None,
    address: AddressOpt = None,
    resume: ResumeOpt = False,
    max_points: Annotated[int, typer.Option(
        "--max-points", help="Refuse a sweep of more points than this.")]
        = 10_000,
    allow_large: AllowLargeOpt = False,
    as_json: JsonOpt = False,
    draws: Annotated[int | None, typer.Option(
        "--draws", help="Run every grid setting at N draws over the scenario's unknowns "
        "(the same values for all) and print each setting's interval and probability of "
        "being best (docs/uncertainty.md).")] = None,
    no_profile_uncertainty: NoProfileUncertaintyOpt = False,
) -> None:
    """Run one scenario over a grid (and random points) of field values, in parallel."""
    # Exit 0: every point gave metrics; 1: some failed (listed, the others kept); 2: bad
    # input; 130: interrupted (partial; --resume continues). docs/sweeps.md.
    from rlsim.sweep import build_spec, check_executor, run_sweep
    from rlsim.sweep.display import ProgressBar, failure_lines, summary_lines

    check_executor(executor, jobs, address)
    if is_fleet_file(scenario):
        fail(f"{scenario}: sweeps of fleet (kind: fleet) scenarios are not supported yet; "
             "compare variants with `rlsim compare FLEET.yaml --variant key=value ...`")
    if draws is not None:
        if random is not None or range_ or reps != 1:
            fail("--draws: draws replace --random/--range and --reps (each draw is a point "
                 "of its own); give --grid and --draws only")
        draws_command("sweep", [(scenario, _overrides(set_), scenario.stem)], draws, out=out,
                      resume=resume, executor=executor, jobs=jobs, address=address,
                      as_json=as_json, profile=not no_profile_uncertainty, grids=grid or [],
                      allow_large=allow_large, max_points=max_points)
        return
    if no_profile_uncertainty:
        fail("--no-profile-uncertainty: only with --draws N")
    spec, ctx = build_spec(scenario, _overrides(set_), grid or [], random, range_ or [], reps)
    outcome = run_sweep(spec, ctx, out, executor=executor, jobs=jobs, address=address,
                        resume=resume, progress=ProgressBar(), max_points=max_points,
                        allow_large=allow_large)
    for line in [*summary_lines(outcome, spec.keys, spec.overrides), *failure_lines(outcome)]:
        typer.echo(line, err=True)
    failures = outcome.failures()
    if as_json:
        from rlsim.config.contracts import stamped

        typer.echo(json.dumps(stamped("sweep", {
            "out": str(out), "points": outcome.points, "done": outcome.done,
            "failed": len(failures), "interrupted": outcome.interrupted,
            "partial": outcome.partial, "failures": [f.line() for f in failures]})))
    if outcome.interrupted:
        typer.echo(f"interrupted: {outcome.done} of {outcome.points} points done, sweep "
                   "partial; resume with --resume", err=True)
        raise typer.Exit(130)
    if failures:
        rerun = (f"; {len(outcome.crashed)} point(s) raised: fix, then rerun with --resume"
                 if outcome.crashed else "")
        fail(f"sweep: {len(failures)} of {outcome.points} points failed (listed above); "
             f"the others are kept in {out}{rerun}", code=1)


# `rlsim advise` lives in cli_advise.py (its options are many); listed after sweep.
app.command("advise", help=ADVISE_HELP)(_advise_command)


@app.command()
def estimate(
    gpu: Annotated[str, typer.Option(help="GPU type (rlsim list gpus).")],
    model: Annotated[str, typer.Option(help="Catalogue model or a YAML/JSON architecture.")],
    tp: Annotated[int, typer.Option(help="Tensor-parallel degree.")] = 1,
    batch: Annotated[int, typer.Option(help="Sequences decoding one token each.")] = 1,
    context: Annotated[int, typer.Option(help="Context tokens of each sequence.")] = 0,
    prefill_tokens: Annotated[int, typer.Option(help="Prefill tokens in the step.")] = 0,
    gpu_memory_utilization: Annotated[float, typer.Option(
        help="Fraction of GPU memory the engine may use (as rollout.gpu_memory_utilization)."
    )] = 0.9,
    as_json: JsonOpt = False,
) -> None:
    """Price one engine iteration: seconds by component, tokens/s, KV capacity, largest batch.

    A configuration `rlsim run` would refuse (weights that do not fit, a context beyond the
    model's, a batch beyond the KV cache) fails here the same way (exit 2)."""
    from rlsim.config.hardware import lookup_gpu
    from rlsim.cost.estimate import engine_estimate
    from rlsim.cost.fit import FitError

    try:
        gspec = lookup_gpu(gpu)
    except KeyError as err:
        fail(f"--gpu: {err.args[0]}")
    mspec = _model_arg(model)
    for name, value in (("--batch", batch), ("--context", context),
                        ("--prefill-tokens", prefill_tokens)):
        if value < 0:
            fail(f"{name}: must be >= 0, got {value}")
    if batch == 0 and prefill_tokens == 0:
        fail("--batch: give --batch >= 1 or --prefill-tokens >= 1")
    if not 0.0 < gpu_memory_utilization <= 1.0:
        fail(f"--gpu-memory-utilization: must be in (0, 1], got {gpu_memory_utilization}")
    try:
        result = engine_estimate(gspec, mspec, tp, batch, context, prefill_tokens,
                                 gpu_memory_utilization=gpu_memory_utilization)
    except FitError as err:
        fail(f"--{err.kind}: {err}")
    except ValueError as err:
        fail(f"--tp: {err}" if str(err).startswith("tp") else str(err))
    if as_json:
        from rlsim.config.contracts import stamped

        # The iteration's seconds moved under step_s without notice (0.1.0); the old
        # top-level keys stay one more version (CHANGELOG.md 0.2.0, removed in 0.3.0).
        typer.echo(json.dumps(stamped("estimate", {**result, **result["step_s"]})))
        return
    typer.echo(f"{mspec.name} on {gspec.name}, TP {tp}: {batch} sequences at context "
               f"{context}, {prefill_tokens} prefill tokens")
    for key, seconds in result["step_s"].items():
        typer.echo(f"  {key:12s} {seconds * 1e3:10.3f} ms")
    typer.echo(f"tokens/s       {result['tokens_per_s_per_engine']:12,.0f} per engine  "
               f"{result['tokens_per_s_per_gpu']:12,.0f} per GPU")
    typer.echo(f"KV capacity    {result['kv_capacity_tokens']:12,d} tokens "
               f"(gpu_memory_utilization {gpu_memory_utilization})")
    typer.echo(f"largest batch  {result['max_batch_at_context']:12,d} sequences at context "
               f"{context}")


def _model_arg(value: str) -> Any:
    from rlsim.config.hardware import ModelFileError, is_model_file, load_model_file, lookup_model

    if is_model_file(value):
        try:
            return load_model_file(value)
        except ModelFileError as err:
            fail(f"--model: {err}")
    try:
        return lookup_model(value)
    except KeyError as err:
        fail(f"--model: {err.args[0]} (or give a YAML/JSON file)")


@app.command("list")
def list_(what: Annotated[str, typer.Argument(
        help="scenarios | gpus | models | policies | frameworks")]) -> None:
    """List shipped scenarios, catalogue GPUs and models, policies, or framework profiles."""
    from rlsim.config.hardware import GPUS, MODELS

    if what == "gpus":
        for g in GPUS.values():
            typer.echo(f"{g.name:6s} {g.bf16_tflops:6.0f} TFLOP/s  {g.hbm / 2**30:6.1f} GiB "
                       f"({g.hbm / 1e9:5.1f} GB)  {g.hbm_bandwidth / 1e12:4.2f} TB/s  "
                       f"${g.usd_per_gpu_hour:.2f}/h")
    elif what == "models":
        width = max(len(m.name) for m in MODELS.values())
        for m in MODELS.values():
            typer.echo(f"{m.name:{width}s} {m.params / 1e9:7.2f}B  layers={m.layers} "
                       f"hidden={m.hidden} heads={m.heads}/{m.kv_heads} ffn={m.ffn}")
    elif what == "policies":
        from rlsim.policies import specs

        width = max(len(spec.name) for spec in specs())
        for spec in specs():
            typer.echo(f"{spec.name:{width}s}  {spec.doc}")
    elif what == "scenarios":
        # model architecture files (*.model.yaml) sit beside the scenarios that use them
        for p in sorted(_scenario_dir().rglob("*.yaml")):
            if not p.name.endswith(".model.yaml"):
                typer.echo(str(p))
    elif what == "frameworks":
        from rlsim.config.frameworks import profiles

        for prof in profiles().values():
            params = ", ".join(
                f"{p.name} {p.value:.3g}{' ' + p.unit if p.unit else ''} "
                f"[{p.ci95[0]:.3g}, {p.ci95[1]:.3g}]" for p in prof.params.values())
            oos = ("" if prof.discrepancy_oos_log_sd is None else
                   f", {prof.discrepancy_oos_log_sd:.3f} out of sample")
            typer.echo(f"{prof.name:8s} {params}; discrepancy {prof.discrepancy_log_sd:.3f}"
                       f"{oos} (log sd); {len(prof.calibration_records)} calibration records: "
                       + ", ".join(prof.calibration_records))
        typer.echo("(95% intervals; fitted on the corpus's calibration split by `python -m "
                   "calibration.frameworks`, reports/framework-profiles.md)")
    else:
        fail(f"list: unknown {what!r}; choose scenarios, gpus, models, policies or "
             "frameworks")


@app.command()
def schema(
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="Print the field reference as Markdown instead.")] = False,
    fleet: Annotated[bool, typer.Option(
        "--fleet", help="The fleet (kind: fleet) scenario's JSON Schema instead of the "
        "single job's; with --markdown, only the reference's fleet section.")] = False,
) -> None:
    """Print the JSON Schema of a scenario file (single job, or --fleet), or the Markdown
    reference of both kinds."""
    if markdown:
        from rlsim.config.reference import markdown as reference

        text = reference()
        heading = "\n## Fleet scenarios"
        if heading not in text:
            fail("schema: the reference has no fleet section", code=1)
        at = text.index(heading)
        # The whole page (docs/scenario.md is this output) or only its fleet section.
        typer.echo(text[at + 1:] if fleet else text, nl=False)
        return
    from rlsim.config.json_schema import scenario_json_schema

    typer.echo(json.dumps(scenario_json_schema(fleet), indent=2))


_plugins_added = False


def whole_app() -> typer.Typer:
    """`app` with the plugins' commands: `calibrate` and `validate` are the calibration
    package's (calibration/cli.py), added through the `rlsim.plugins` entry points (rlsim
    never imports calibration). They are found once per process, only when a command line
    needs them (reading every installed package's entry points is ~0.01 s), and listed
    between `estimate` and `list`, where `rlsim --help` has always listed them."""
    global _plugins_added
    if not _plugins_added:
        _plugins_added = True
        builtin = list(app.registered_commands)
        add_plugins(app)
        added = app.registered_commands[len(builtin):]
        at = next((i + 1 for i, info in enumerate(builtin)
                   if command_name(info) == "estimate"), len(builtin))
        app.registered_commands = [*builtin[:at], *added, *builtin[at:]]
    return app


def command_app(args: list[str]) -> typer.Typer:
    """The app that parses the command line `args`: when they start with a command's name,
    an app holding that command alone (and the options before any command), else the whole
    app.

    Before it parses anything, typer turns every registered command into a click command:
    each callback's type hints and a pydantic adapter per parameter, ~9% of a small `rlsim
    run`'s instructions (benchmarks/RESULTS.md). The one command's app parses its line as
    the whole app does (tests/cli/test_command_app.py compares each command's help and
    usage errors both ways)."""
    name = args[0] if args else ""
    commands = [info for info in app.registered_commands if command_name(info) == name]
    groups = [info for info in app.registered_groups if info.name == name]
    if len(commands) + len(groups) != 1:
        # a plugin's command, an option first, `--help`, no command or no such command: the
        # whole app parses it, or says so
        return whole_app()
    one = copy.copy(app)
    one.registered_commands, one.registered_groups = commands, groups
    return one


# The commands that load a scenario: each imports rlsim.api's modules before it does
# anything else (`_start_up`).
_SCENARIO_COMMANDS = frozenset({"run", "check", "compare", "sweep", "advise", "fit"})


def _start_up(args: list[str]) -> None:
    """Spare the garbage collector what a command's start-up makes, which lives until the
    process ends: ~0.04 s of a small `rlsim run` (~0.5 s; benchmarks/RESULTS.md).

    - A scenario command's imports (pydantic's schemas, the classes, numpy) are made with
      the collector off: otherwise ~100 young collections traverse them. Nothing is frozen
      here: the run freezes what exists when it starts, itself, and only when nothing is
      frozen yet (`rlsim.api._collector_tuned`). Skipped when the modules are already
      imported (a test calling `main` again).
    - At exit the interpreter runs full collections before it tears the modules down.
      Freezing first (an atexit hook, so the other exit hooks and the flushes still run)
      spares them the objects the command left; the process's memory is returned anyway.
      What that skips is finalizing objects caught in reference cycles: rlsim writes its
      files inside `with` blocks, so none holds unwritten output.
    """
    atexit.unregister(gc.freeze)  # once, however often a test calls main
    atexit.register(gc.freeze)
    if not args or args[0] not in _SCENARIO_COMMANDS or "rlsim.api" in sys.modules:
        return
    gc.disable()
    try:
        import rlsim.api  # noqa: F401  (the import is the point)
    finally:
        gc.enable()


def main() -> None:
    """Entry point: maps ScenarioError to exit 2 and unexpected errors to exit 1."""
    _start_up(sys.argv[1:])
    try:
        code = command_app(sys.argv[1:])(standalone_mode=False)
        # With standalone_mode off, click returns the code of a typer.Exit instead of exiting.
        sys.exit(code if isinstance(code, int) else 0)
    except ScenarioError as err:
        typer.echo(f"rlsim: error: {err.line()}", err=True)
        sys.exit(2)
    except typer.Exit as err:
        sys.exit(err.exit_code)
    except (KeyboardInterrupt, typer.Abort):  # outside a simulation: nothing to keep
        typer.echo("rlsim: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(130)
    except TyperException as err:  # the parser's usage errors (typer bundles its own click)
        if type(err).__name__ == "NoArgsIsHelpError":
            err.show()  # type: ignore[attr-defined]  # bare `rlsim`: the help, on stderr
            sys.exit(2)
        # One line: click's messages can span lines (a BadParameter's choices).
        message = " ".join(err.format_message().split())
        typer.echo(f"rlsim: error: {message}", err=True)
        sys.exit(2)
    except Exception as err:  # internal errors
        if os.environ.get("RLSIM_DEBUG"):
            raise
        typer.echo(f"rlsim: internal error: {type(err).__name__}: {err} "
                   "(set RLSIM_DEBUG=1 for a traceback)", err=True)
        sys.exit(1)


from rlsim.cli_byo import fit as _fit_command  # noqa: E402  (after app: registers on it)
from rlsim.cli_byo import import_app  # noqa: E402

app.add_typer(import_app, name="import")
app.command("fit")(_fit_command)


if __name__ == "__main__":
    main()
