"""The `rlsim` command line: a thin typer app over `rlsim.api` and `rlsim.report`.

Owns argument parsing, printing and exit codes: 0 ok, 2 bad input (one line on stderr
naming the field and the fix, never a traceback), 1 internal error. `--json` prints only
JSON on stdout; progress and messages go to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from rlsim.config.errors import ScenarioError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Discrete-event simulator of LLM RL post-training clusters.")

REPO_SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"rlsim: error: {message}", err=True)
    raise typer.Exit(code)


def _scenario_dir() -> Path:
    local = Path("scenarios")
    return local if local.is_dir() else REPO_SCENARIOS


def _default_scenario() -> Path:
    return _scenario_dir() / "quickstart.yaml"


class _ProgressBar:
    """A step progress bar on stderr that appears only once a run has taken ~2 s."""

    def __init__(self, label: str, enabled: bool = True) -> None:
        self.label = label
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.shown = False
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or time.perf_counter() - self.t0 < 2.0:
            return
        width = 30
        fill = int(width * done / max(total, 1))
        bar = "#" * fill + "-" * (width - fill)
        line = f"{self.label} [{bar}] step {done}/{total}"
        if self.tty:
            sys.stderr.write("\r" + line)
        elif done == total or done % max(total // 4, 1) == 0:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _overrides(values: list[str] | None) -> list[str]:
    from rlsim.config.loading import split_overrides

    out: list[str] = []
    for v in values or []:
        out.extend(split_overrides(v))
    return out


def _run_one(path: Path, overrides: list[str], label: str, show_progress: bool) -> Any:
    from rlsim.api import simulate_file

    bar = _ProgressBar(label, show_progress)
    try:
        return simulate_file(path, overrides, bar)
    finally:
        bar.close()


def _fleet_file(path: Path) -> bool:
    """Whether `path` holds a multi-job (`kind: fleet`) scenario; False when unreadable
    (the single-job loader then reports what is wrong with it)."""
    import yaml

    from rlsim.config.fleet_loading import is_fleet

    try:
        return is_fleet(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False


def _run_fleet(path: Path, overrides: list[str]) -> Any:
    from rlsim.config.fleet_loading import load_fleet
    from rlsim.fleet import simulate_fleet

    typer.echo(f"{path.stem}: profiling job shapes and simulating the fleet...", err=True)
    scenario, base = load_fleet(path, overrides)
    return simulate_fleet(scenario, base)


def _format_table(summaries: list[dict[str, Any]], names: list[str]) -> str:
    from rlsim.report.text import aligned

    rows = [
        ("step time mean (s)", lambda s: f"{s['step_time_s']['mean']:.1f}"),
        ("step time p99 (s)", lambda s: f"{s['step_time_s']['p99']:.1f}"),
        ("gen (s/step)", lambda s: f"{s['phase_time_s']['gen']:.1f}"),
        ("reward (s/step)", lambda s: f"{s['phase_time_s']['reward']:.1f}"),
        ("ref (s/step)", lambda s: f"{s['phase_time_s']['ref']:.1f}"),
        ("train (s/step)", lambda s: f"{s['phase_time_s']['train']:.1f}"),
        ("weight_sync (s/step)", lambda s: f"{s['phase_time_s']['weight_sync']:.2f}"),
        ("switch (s/step)", lambda s: f"{s['phase_time_s']['switch']:.2f}"),
        ("samples/s", lambda s: f"{s['throughput']['samples_per_s']:.2f}"),
        ("tokens/s", lambda s: f"{s['throughput']['tokens_per_s']:.0f}"),
        ("GPU util", lambda s: " ".join(f"{k}={v:.0%}" for k, v in s["gpu_util"].items())),
        ("$/1k samples", lambda s: f"{s['cost']['usd_per_1k_samples']:.2f}"),
        ("staleness mean", lambda s: f"{s['staleness']['mean']:.2f}"),
        ("events", lambda s: f"{s['events']}"),
        ("wall (s)", lambda s: f"{s['wall_s']:.2f}"),
    ]
    base = summaries[0]["step_time_s"]["mean"]
    rows.append(("speedup vs first", lambda s: f"{base / s['step_time_s']['mean']:.2f}x"
                 if s["step_time_s"]["mean"] else "-"))
    table = [["metric", *names]] + [[label, *(fn(s) for s in summaries)] for label, fn in rows]
    return aligned(table)


SetOpt = Annotated[list[str] | None, typer.Option(
    "--set", help="Override a field: dotted.path=value (repeatable; commas separate several).")]
OutOpt = Annotated[Path | None, typer.Option("--out", help="Folder for the run's outputs.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only JSON on stdout.")]


@app.command()
def run(
    scenario: Annotated[Path | None, typer.Argument(
        help="Scenario YAML; default scenarios/quickstart.yaml.")] = None,
    set_: SetOpt = None,
    out: OutOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Simulate one scenario and print its summary."""
    from rlsim.api import write_run

    path = scenario or _default_scenario()
    if _fleet_file(path):
        from rlsim.fleet.outputs import format_fleet_table, write_fleet_run

        fleet = _run_fleet(path, _overrides(set_))
        summary, name = fleet.summary, fleet.scenario.name
        if out is not None:
            write_fleet_run(fleet, out)
        table = format_fleet_table
    else:
        result = _run_one(path, _overrides(set_), path.stem, True)
        summary, name = result.summary, result.scenario.name
        if out is not None:
            write_run(result, out)
        table = _format_table
    if as_json:
        typer.echo(json.dumps(summary))
        return
    typer.echo(table([summary], [name]))
    if out is not None:
        typer.echo(f"\nwrote {out}/ (report.html, summary.json, records.parquet, "
                   "trace.json, scenario.resolved.yaml)")


@app.command()
def compare(
    scenarios: Annotated[list[Path], typer.Argument(help="Scenario YAML files.")],
    set_: SetOpt = None,
    variant: Annotated[list[str] | None, typer.Option(
        "--variant", help="Run each scenario once per variant: comma-separated overrides "
        "(repeatable), e.g. --variant policy.placement=disaggregated.")] = None,
    out: OutOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Simulate several scenarios (or variants of one) and print them side by side."""
    from rlsim.api import compare as compare_runs
    from rlsim.api import write_comparison_report, write_run

    common = _overrides(set_)
    plans: list[tuple[Path, list[str], str]] = []
    for path in scenarios:
        for v in variant or [""]:
            extra = _overrides([v]) if v else []
            label = path.stem + (f"[{v}]" if v else "")
            plans.append((path, common + extra, label))
    fleets = [_fleet_file(p) for p, _, _ in plans]
    if any(fleets):
        if not all(fleets):
            _fail("compare either single-job scenarios or fleet (kind: fleet) scenarios, "
                  "not both")
        _compare_fleets(plans, out, as_json)
        return
    results = [_run_one(p, o, label, True) for p, o, label in plans]
    names = []
    for i, (res, (_, o, _)) in enumerate(zip(results, plans, strict=True)):
        short = ",".join(x.split("=", 1)[1] for x in o if x not in common) if variant else ""
        names.append(short or res.scenario.name or f"run{i}")
    if out is not None:
        for i, res in enumerate(results):
            write_run(res, out / f"{i}-{_slug(names[i])}", name=names[i])
        write_comparison_report(results, names, out / "report.html")
    if as_json:
        typer.echo(json.dumps(compare_runs(results)))
        return
    typer.echo(_format_table([r.summary for r in results], names))
    if out is not None:
        typer.echo(f"\nwrote {len(results)} run folders and the comparison "
                   f"{out / 'report.html'} under {out}/")


def _compare_fleets(plans: list[tuple[Path, list[str], str]], out: Path | None,
                    as_json: bool) -> None:
    from rlsim.fleet.outputs import format_fleet_table, write_fleet_run

    results = [_run_fleet(p, o) for p, o, _ in plans]
    names = [label for _, _, label in plans]
    if out is not None:
        for i, res in enumerate(results):
            write_fleet_run(res, out / f"{i}-{_slug(names[i])}", name=names[i])
    summaries = [r.summary for r in results]
    if as_json:
        base = summaries[0]["cost"]["samples_per_usd"]
        typer.echo(json.dumps({"runs": summaries, "ratios": [
            {"name": n, "policy": s["policy"],
             "samples_per_usd_vs_first": s["cost"]["samples_per_usd"] / base if base else 0.0}
            for n, s in zip(names, summaries, strict=True)]}))
        return
    typer.echo(format_fleet_table(summaries, names))
    if out is not None:
        typer.echo(f"\nwrote {len(results)} run folders under {out}/")


@app.command()
def report(
    dirs: Annotated[list[Path], typer.Argument(
        help="Run folders (rlsim run/compare --out), compared side by side with ratios "
        "against the first; or one sweep folder (rlsim sweep --out).")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="HTML file to write; default report.html in the run or sweep folder "
        "(in the runs' common parent folder for several runs).")] = None,
) -> None:
    """Write the HTML report (plotly, opens offline) of saved runs or of a sweep."""
    from rlsim.report.html import write_report
    from rlsim.report.rundata import is_run_dir, load_run
    from rlsim.report.sweep_report import is_sweep_dir, write_sweep_report

    for d in dirs:
        if not d.is_dir():
            _fail(f"RUN_DIR: {d} is not a folder; give run folders written by "
                  "`rlsim run --out DIR` or a sweep folder written by `rlsim sweep --out DIR`")
    if out is not None:
        if out.is_dir():
            out = out / "report.html"  # like cp: a folder receives the file
        if not out.parent.is_dir():
            _fail(f"--out: folder {out.parent} does not exist; create it or give another path")
    sweeps = [d for d in dirs if is_sweep_dir(d)]
    if sweeps:
        if len(dirs) > 1:
            _fail("RUN_DIR: a sweep folder is reported on its own; give one sweep folder or "
                  "only run folders")
        target = out or dirs[0] / "report.html"
        try:
            write_sweep_report(dirs[0], target)
        except OSError as err:
            _fail(f"--out: cannot write {target}: {err.strerror or err}")
    else:
        for d in dirs:
            if not is_run_dir(d):
                _fail(f"RUN_DIR: {d} has no summary.json: not a complete rlsim run folder; "
                      "run `rlsim run ... --out DIR` first")
        fleets = [_fleet_file(d / "scenario.resolved.yaml") for d in dirs]
        if any(fleets):
            _fleet_report(dirs, fleets, out)
            return
        runs = [load_run(d) for d in dirs]
        parents = {d.resolve().parent for d in dirs}
        target = out or (dirs[0] / "report.html" if len(dirs) == 1 else
                         (parents.pop() if len(parents) == 1 else Path.cwd()) / "report.html")
        try:
            write_report(runs, target)
        except OSError as err:
            _fail(f"--out: cannot write {target}: {err.strerror or err}")
    typer.echo(f"wrote {target}")


def _fleet_report(dirs: list[Path], fleets: list[bool], out: Path | None) -> None:
    """A saved fleet run's report (one folder: fleet reports are not compared yet)."""
    import json as json_

    from rlsim.report.fleet import write_fleet_report
    from rlsim.trace.sinks import read_parquet

    if len(dirs) > 1 or not all(fleets):
        _fail("RUN_DIR: a fleet run folder is reported on its own; compare fleets with "
              "`rlsim compare FLEET.yaml ...`")
    summary = json_.loads((dirs[0] / "summary.json").read_text())
    target = out or dirs[0] / "report.html"
    try:
        write_fleet_report(dirs[0].resolve().name, summary,
                           read_parquet(dirs[0] / "records.parquet"), target)
    except OSError as err:
        _fail(f"--out: cannot write {target}: {err.strerror or err}")
    typer.echo(f"wrote {target}")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text)[:60]


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
    executor: Annotated[str, typer.Option(
        "--executor", help="local (process pool) or ray.")] = "local",
    jobs: Annotated[int | None, typer.Option(
        "--jobs", help="Parallel workers (default: one per CPU).")] = None,
    address: Annotated[str | None, typer.Option(
        "--address", help="Ray cluster address (with --executor ray).")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the sweep in --out: run only its unfinished points.")]
        = False,
    as_json: JsonOpt = False,
) -> None:
    """Run one scenario over a grid (and random points) of field values, in parallel."""
    from rlsim.sweep import PointFailed, build_spec, check_executor, run_sweep
    from rlsim.sweep.display import ProgressBar, summary_lines

    check_executor(executor, jobs, address)
    if _fleet_file(scenario):
        _fail(f"{scenario}: sweeps of fleet (kind: fleet) scenarios are not supported yet; "
              "compare variants with `rlsim compare FLEET.yaml --variant key=value ...`")
    spec, ctx = build_spec(scenario, _overrides(set_), grid or [], random, range_ or [], reps)
    try:
        outcome = run_sweep(spec, ctx, out, executor=executor, jobs=jobs, address=address,
                            resume=resume, progress=ProgressBar())
    except PointFailed as err:
        _fail(f"sweep: {err}; finished points are kept: rerun with --resume", code=1)
    if not outcome.interrupted:
        for line in summary_lines(outcome, spec.keys):
            typer.echo(line, err=True)
    if as_json:
        typer.echo(json.dumps({"out": str(out), "points": outcome.points, "done": outcome.done,
                               "failed": outcome.failed, "interrupted": outcome.interrupted}))
    if outcome.interrupted:
        typer.echo(f"interrupted: {outcome.done} of {outcome.points} points done; resume "
                   "with --resume", err=True)
        raise typer.Exit(130)


@app.command()
def estimate(
    gpu: Annotated[str, typer.Option(help="GPU type (rlsim list gpus).")],
    model: Annotated[str, typer.Option(help="Catalogue model or a YAML/JSON architecture.")],
    tp: Annotated[int, typer.Option(help="Tensor-parallel degree.")] = 1,
    batch: Annotated[int, typer.Option(help="Sequences decoding one token each.")] = 1,
    context: Annotated[int, typer.Option(help="Context tokens of each sequence.")] = 0,
    prefill_tokens: Annotated[int, typer.Option(help="Prefill tokens in the step.")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Price one engine iteration: seconds by component."""
    from rlsim.config.hardware import lookup_gpu
    from rlsim.cost.estimate import estimate as estimate_step

    try:
        gspec = lookup_gpu(gpu)
    except KeyError as err:
        _fail(f"--gpu: {err.args[0]}")
    mspec = _model_arg(model)
    for name, value in (("--batch", batch), ("--context", context),
                        ("--prefill-tokens", prefill_tokens)):
        if value < 0:
            _fail(f"{name}: must be >= 0, got {value}")
    if batch == 0 and prefill_tokens == 0:
        _fail("--batch: give --batch >= 1 or --prefill-tokens >= 1")
    try:
        result = estimate_step(gspec, mspec, tp, batch, context, prefill_tokens)
    except ValueError as err:
        _fail(str(err))
    if as_json:
        typer.echo(json.dumps(result))
        return
    for key, seconds in result.items():
        typer.echo(f"{key:12s} {seconds * 1e3:10.3f} ms")


def _model_arg(value: str) -> Any:
    import yaml
    from pydantic import ValidationError

    from rlsim.config.hardware import ModelSpec, lookup_model
    from rlsim.config.loading import format_validation_error

    path = Path(value)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.is_file():
        if not path.is_file():
            _fail(f"--model: file {value!r} not found")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError):
            _fail(f"--model: {value!r} is not valid YAML/JSON")
        if not isinstance(data, dict):
            _fail(f"--model: {value!r} must hold a mapping of architecture fields")
        data.setdefault("name", path.stem)
        try:
            return ModelSpec.model_validate(data)
        except ValidationError as err:
            e = format_validation_error(err)
            _fail(f"--model {value}: {e.field}: {e.message}")
    try:
        return lookup_model(value)
    except KeyError as err:
        _fail(f"--model: {err.args[0]} (or give a YAML/JSON file)")


@app.command()
def calibrate(
    out: Annotated[Path, typer.Option("--out", help="Profile JSON to write.")],
    device: Annotated[str, typer.Option(help="auto | cpu | cuda")] = "auto",
    quick: Annotated[bool, typer.Option(
        "--quick", help="Reduced grids: about 2 minutes on a 2-core CPU.")] = False,
    only: Annotated[str | None, typer.Option(
        help="Comma-separated benchmarks to run (default: all).")] = None,
    from_vidur: Annotated[Path | None, typer.Option(
        "--from-vidur", help="Convert Vidur profiling CSVs in this folder instead of "
        "measuring.")] = None,
    gpu: Annotated[str | None, typer.Option(
        help="GPU type of the --from-vidur data (default: from the folder names).")] = None,
    from_measurements: Annotated[Path | None, typer.Option(
        "--from-measurements", help="Refit saved raw measurements (a MeasurementSet JSON, "
        "or a profile that holds them) instead of measuring.")] = None,
) -> None:
    """Measure this machine (or import Vidur data) and write a cost profile."""
    if device not in ("auto", "cpu", "cuda"):
        _fail(f"--device: choose auto, cpu or cuda, got {device!r}")
    if from_vidur is not None:
        profile, report = _calibrate_from_vidur(from_vidur, gpu)
    else:
        ms = _load_measurements(from_measurements) if from_measurements is not None \
            else _measure(device, quick, only)
        from calibration.fit import fit_profile

        try:
            profile, report = fit_profile(ms)
        except ValueError as err:
            _fail(f"calibrate: {err}")
    from calibration.fit import fit_report_markdown, write_profile

    try:
        write_profile(profile, out)
    except OSError as err:
        _fail(f"--out: cannot write {str(out)!r}: {err.strerror or err}")
    typer.echo(fit_report_markdown(report))
    typer.echo(f"\nwrote {out} (profile hash {profile.content_hash()[:12]})")


def _calibrate_from_vidur(directory: Path, gpu: str | None) -> Any:
    from calibration.vidur import profile_from_vidur
    from rlsim.config.hardware import lookup_gpu

    spec = None
    if gpu is not None:
        try:
            spec = lookup_gpu(gpu)
        except KeyError as err:
            _fail(f"--gpu: {err.args[0]}")
    if not directory.is_dir():
        _fail(f"--from-vidur: {str(directory)!r} is not a folder")
    try:
        return profile_from_vidur(directory, spec)
    except ValueError as err:
        _fail(f"--from-vidur: {err}")


def _load_measurements(path: Path) -> Any:
    from pydantic import ValidationError

    from calibration.measurements import MeasurementSet

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        _fail(f"--from-measurements: cannot read {str(path)!r}: {err}")
    if isinstance(data, dict) and "measurement_set" in data:
        data = data["measurement_set"]
    try:
        return MeasurementSet.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        _fail(f"--from-measurements: {loc}: {first['msg']}")


def _measure(device: str, quick: bool, only: str | None) -> Any:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        _fail("calibrate needs torch: .venv/bin/pip install -e '.[calibrate]' "
              "(pip install torch==2.13.0)")
    from calibration.run import measure

    names = [n.strip() for n in only.split(",") if n.strip()] if only else None
    started: dict[str, float] = {}

    def progress(bench: str, done: int, total: int) -> None:
        started.setdefault(bench, time.perf_counter())
        width = 24
        fill = int(width * done / max(total, 1))
        line = f"{bench:20s} [{'#' * fill}{'-' * (width - fill)}] {done}/{total}"
        if sys.stderr.isatty():
            sys.stderr.write("\r" + line + ("\n" if done == total else ""))
        elif done == total:
            sys.stderr.write(f"{line} {time.perf_counter() - started[bench]:.1f} s\n")
        sys.stderr.flush()

    try:
        return measure(device=device, quick=quick, only=names, progress=progress)
    except ValueError as err:
        _fail(f"calibrate: {err}")


@app.command()
def validate(
    quick: Annotated[bool, typer.Option(
        "--quick", help="Small job and quick calibration: at most 3 minutes on 2 CPU cores.")]
        = False,
    mode: Annotated[str, typer.Option(
        help="sync | one_off | async | all (async: alpha = 1 with partial rollout)")] = "all",
    out: Annotated[Path, typer.Option("--out", help="Folder for the live runs, the profile, "
                                      "the derived scenarios and their simulations.")]
        = Path("runs/validate"),
    report: Annotated[Path, typer.Option(
        "--report", help="Markdown report to write.")] = Path("reports/validation.md"),
    repeats: Annotated[int | None, typer.Option(
        min=1, help="Live runs per mode (default 3, or 1 with --quick).")] = None,
    steps: Annotated[int | None, typer.Option(
        min=1, help="Training steps per live run (default 10, or 4 with --quick).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
        = False,
) -> None:
    """Run a small real RL job here, simulate it with this machine's profile, compare."""
    import importlib.util

    if mode not in ("sync", "one_off", "async", "all"):
        _fail(f"--mode must be sync, one_off, async or all, got {mode!r}")
    if importlib.util.find_spec("torch") is None:
        _fail("validate needs torch: .venv/bin/pip install -e '.[calibrate]' "
              "(pip install torch==2.13.0)")
    from calibration.live.report import markdown
    from calibration.live.validate import check_modes, plan
    from calibration.live.validate import validate as run_validation

    p = plan(check_modes(mode), quick, repeats, steps)
    t0 = time.perf_counter()

    def progress(line: str) -> None:
        typer.echo(f"[{time.perf_counter() - t0:6.1f} s] {line}", err=True)

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        _fail(f"--out: cannot create {str(out)!r}: {err.strerror or err}")
    result = run_validation(p, out, progress)
    text = markdown(result, time.perf_counter() - t0)
    target = report
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".partial")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except OSError as err:
        _fail(f"--report: cannot write {str(target)!r}: {err.strerror or err}")
    data = result.as_json()
    tmp = out / "validation.json.partial"
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, out / "validation.json")
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        from calibration.live.report import table

        typer.echo(table(data))
        typer.echo(f"\nreport: {target}")


@app.command("list")
def list_(what: Annotated[str, typer.Argument(
        help="scenarios | gpus | models | policies")]) -> None:
    """List shipped scenarios, catalogue GPUs and models, or policies."""
    from rlsim.config.hardware import GPUS, MODELS

    if what == "gpus":
        for g in GPUS.values():
            typer.echo(f"{g.name:6s} {g.bf16_tflops:6.0f} TFLOP/s  {g.hbm / 1e9:4.0f} GB  "
                       f"{g.hbm_bandwidth / 1e12:4.2f} TB/s  ${g.usd_per_gpu_hour:.2f}/h")
    elif what == "models":
        for m in MODELS.values():
            typer.echo(f"{m.name:14s} {m.params / 1e9:6.2f}B  layers={m.layers} "
                       f"hidden={m.hidden} heads={m.heads}/{m.kv_heads} ffn={m.ffn}")
    elif what == "policies":
        from rlsim.policies import POLICIES

        width = max(len(name) for name in POLICIES)
        for name, (_, doc) in POLICIES.items():
            typer.echo(f"{name:{width}s}  {doc}")
    elif what == "scenarios":
        for p in sorted(_scenario_dir().rglob("*.yaml")):
            typer.echo(str(p))
    else:
        _fail(f"list: unknown {what!r}; choose scenarios, gpus, models or policies")


@app.command()
def schema(markdown: Annotated[bool, typer.Option(
        "--markdown", help="Print the field reference as Markdown instead.")] = False) -> None:
    """Print the scenario JSON Schema (or its Markdown reference)."""
    if markdown:
        from rlsim.config.reference import markdown as reference

        typer.echo(reference(), nl=False)
        return
    from rlsim.config.scenario import Scenario

    typer.echo(json.dumps(Scenario.model_json_schema(), indent=2))


def main() -> None:
    """Entry point: maps ScenarioError to exit 2 and unexpected errors to exit 1."""
    try:
        code = app(standalone_mode=False)
        # With standalone_mode off, click returns the code of a typer.Exit instead of exiting.
        sys.exit(code if isinstance(code, int) else 0)
    except ScenarioError as err:
        typer.echo(f"rlsim: error: {err.line()}", err=True)
        sys.exit(2)
    except typer.Exit as err:
        sys.exit(err.exit_code)
    except (KeyboardInterrupt, BrokenPipeError):
        sys.exit(130)
    except Exception as err:  # click usage errors and internal errors
        import click

        if isinstance(err, click.exceptions.ClickException):
            err.show()
            sys.exit(err.exit_code)
        if isinstance(err, click.exceptions.Abort):
            sys.exit(130)
        if os.environ.get("RLSIM_DEBUG"):
            raise
        typer.echo(f"rlsim: internal error: {type(err).__name__}: {err} "
                   "(set RLSIM_DEBUG=1 for a traceback)", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
