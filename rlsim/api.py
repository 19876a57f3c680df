"""The Python API: simulate a scenario, write its outputs, compare several runs.

Owns the wiring of one run: a prepared job (rlsim/prepare.py, the one door that decides
whether a job can run), its cluster built, the policy's controller started, SimPy run to
the end, and the records summarized. `simulate` has no side effects; `write_run` puts a run's
files in a folder (each written to a temporary name first, so nothing partial looks done).
"""

from __future__ import annotations

import gc
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import simpy
import yaml

from rlsim.config.contracts import provenance, stamped
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import FILE_KEYS, rebase_paths
from rlsim.config.regime import recorded_warning
from rlsim.config.scenario import Scenario
from rlsim.entities.cluster import build_cluster
from rlsim.heap import use_huge_pages
from rlsim.policies import Phases, registry
from rlsim.policies.phases import Progress
from rlsim.prepare import PreparedJob, prepare, prepare_file
from rlsim.report.metrics import summarize
from rlsim.trace import Recorder
from rlsim.trace.sinks import write_parquet

if TYPE_CHECKING:
    # The report's modules are imported where a folder or page is written: a run that only
    # prints its summary does not pay for them (issue 40, fast start).
    from rlsim.report.rundata import RunData


@dataclass
class RunResult:
    """One simulated run: its scenario, records and summary; `base_dir` is the folder its
    relative paths (a trace, a length file, a profile) resolve against."""

    scenario: Scenario
    recorder: Recorder
    summary: dict[str, Any]
    base_dir: Path | None = None


def simulate(job: Scenario | PreparedJob, base_dir: Path | None = None,
             progress: Progress | None = None) -> RunResult:
    """Simulate a prepared job, or a loaded scenario (paths in it resolve against
    `base_dir`), which goes through the prepare step first (rlsim/prepare.py): a job that
    cannot run raises its ScenarioError before anything is built."""
    wall0 = time.perf_counter()
    use_huge_pages()  # where the run's objects live, not what it computes (rlsim/heap.py)
    if not isinstance(job, PreparedJob):
        job = prepare(job, base_dir)
    scenario, base = job.scenario, job.base_dir
    env = simpy.Environment()
    recorder = Recorder(scenario.output.detail)
    cluster = build_cluster(scenario, env, recorder, job.costs)
    phases = Phases(cluster, progress)
    if scenario.faults.any or scenario.recovery.trainer.checkpoint_every:
        # recovery is a plug-in: it takes over the job's step hooks (checkpoints, restarts,
        # the trainer restarted alone) and sets the samples' fault hooks and the engines';
        # the fault estimate's stall bound stops a run whose faults keep every step from
        # finishing (faults.bounds). Imported here: a job without faults does not pay
        # for it at start.
        from rlsim.policies.recovery import Recovery

        phases.hooks = Recovery(phases, job.faults)
    policy = registry.get(scenario.policy.name).run
    controller = env.process(policy(phases, job.workload))
    interrupted = False
    with _collector_tuned(_young_threshold(scenario)):
        try:
            env.run(until=controller)
        except KeyboardInterrupt:
            interrupted = True  # keep what finished: summarized below, marked partial
    # Spans and gauges still open (busy engines, a trainer pass) end with the run.
    cluster.close()
    # SimPy numbers every scheduled event; the next id is the count.
    events = next(env._eid) if hasattr(env, "_eid") else 0
    summary = summarize(recorder, time.perf_counter() - wall0, events)
    outside = recorded_warning(scenario)
    if outside is not None:
        summary.setdefault("warnings", []).append(outside)
    if interrupted:
        summary["partial"] = True
        summary.setdefault("warnings", []).append(
            f"interrupted (Ctrl-C) at simulated time {env.now:.1f} s: a partial run; its "
            "figures cover only the steps that finished")
        raise RunInterrupted(RunResult(scenario, recorder, summary, base), float(env.now))
    return RunResult(scenario, recorder, summary, base)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during `simulate`: `result` holds the records up to `sim_time_s`, summarized,
    with `summary["partial"] = True`. A KeyboardInterrupt, so that callers that stop on
    Ctrl-C (a sweep, `except Exception` blocks that must not swallow it) still do."""

    def __init__(self, result: RunResult, sim_time_s: float) -> None:
        super().__init__(f"interrupted at simulated time {sim_time_s:.1f} s")
        self.result = result
        self.sim_time_s = sim_time_s


YOUNG_MIN: Final = 200_000
YOUNG_PER_TRAJECTORY: Final = 100


def _young_threshold(scenario: Scenario) -> int:
    """The collector's young-generation threshold for a run of `scenario`: 100 allocations
    per trajectory of a step, at least 200,000 (see `_collector_tuned`)."""
    per_step = scenario.workload.prompts_per_step * scenario.workload.samples_per_prompt
    return max(YOUNG_MIN, YOUNG_PER_TRAJECTORY * per_step)


@contextmanager
def _collector_tuned(young: int = YOUNG_MIN) -> Iterator[None]:
    """Run with the cyclic garbage collector tuned for a run's millions of short-lived
    objects, and the previous settings back afterwards (also when the run raises).

    - A young-generation threshold of `young` allocations instead of 700: at the default
      the collector runs thousands of times and re-scans the growing state, which cost 15%
      of benchmarks/bench_large_sync.py at 20 steps (7.8 s vs 6.7 s). At 50,000 the
      1,024-GPU async agentic benchmark (8 steps) spent 0.39-0.54 s in 11 collections, at
      200,000 0.17-0.19 s in 2, with the same peak RSS (232 MB; also the same for the
      large sync benchmark and the faulted job below): fewer of a turn's objects outlive a
      collection. A young collection walks every object still alive that came since the
      last one, nearly all of them the state of the trajectories in flight, which grows
      with the job while the allocations between two collections did not: so the
      threshold grows with the job too (`_young_threshold`; issue 40: at 200,000 the
      20-step benchmark spent 0.64 s in the collector, at 819,200 0.30 s, peak RSS 356 MB
      either way).
    - What exists when the run starts (modules, the cluster, the workload) is frozen
      (`gc.freeze`), so no collection during the run scans it again; not when the
      caller has frozen objects of its own, which unfreezing after the run would release.
    The collector is not switched off: a run with faults leaves 141,000 objects in cycles
    (scenarios/robustrl/qwen3-8b-math-256-job.yaml), and paused it peaked 11% higher
    (128.5 vs 115.9 MB); the 1,024-GPU benchmarks leave at most 10 (issue 24).
    """
    old = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    gc.set_threshold(young, old[1], max(old[2], 100))
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if freeze:
            gc.unfreeze()


def simulate_file(path: str | Path, overrides: list[str] | None = None,
                  progress: Progress | None = None, allow_large: bool = False) -> RunResult:
    """Load, prepare (the run-size limits included; `allow_large` lifts them) and simulate
    a scenario file."""
    return simulate(prepare_file(path, overrides, allow_large=allow_large), progress=progress)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _report_data(result: RunResult, name: str | None = None) -> RunData:
    from rlsim.report.rundata import RunData

    return RunData(name or result.scenario.name, result.summary, result.recorder,
                   result.scenario.dump())


def write_comparison_report(results: list[RunResult], names: list[str], path: Path,
                            plotly_src: str | None = None) -> None:
    """One HTML page comparing runs side by side, with ratios against the first;
    `plotly_src` as in `write_run`."""
    from rlsim.report.html import write_report

    write_report([_report_data(r, n) for r, n in zip(results, names, strict=True)], path,
                 plotly_src)


def summary_document(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary as summary.json and `run --json` give it: its schema version first, then
    the summary, then `rlsim`, what wrote it (rlsim.config.contracts)."""
    return stamped("summary", {**summary, "rlsim": provenance()})


def resolved_scenario(scenario: dict[str, Any], base_dir: Path | None,
                      out_dir: Path) -> dict[str, Any]:
    """A run's scenario as its folder keeps it (scenario.resolved.yaml): every default
    filled in, and each relative file it names (a trace, a length file, a model or profile
    file) made relative to `out_dir`, so that `rlsim run DIR/scenario.resolved.yaml` runs
    the same job from wherever it is started."""
    if base_dir is None:
        return scenario
    return rebase_paths(scenario, base_dir, out_dir, keys=FILE_KEYS)


def write_run_folder(out_dir: Path, scenario: dict[str, Any], recorder: Recorder,
                     summary: dict[str, Any], write_html: Callable[[Path], None],
                     base_dir: Path | None = None) -> None:
    """A run folder: scenario.resolved.yaml (its relative paths resolved against
    `base_dir`, `resolved_scenario`), records.parquet, trace.json, the report that
    `write_html` writes, and, last, summary.json (its presence marks a complete folder)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".rlsim-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise ScenarioError("--out", f"cannot write run folder {str(out_dir)!r}: "
                            f"{err.strerror or err}") from None
    # A folder being rewritten (--force) must not look complete while it is half new.
    (out_dir / "summary.json").unlink(missing_ok=True)
    resolved = resolved_scenario(scenario, base_dir, out_dir)
    _write_text(out_dir / "scenario.resolved.yaml", yaml.safe_dump(resolved, sort_keys=False))
    write_parquet(recorder, out_dir / "records.parquet")
    from rlsim.report.perfetto import write_chrome_trace

    write_chrome_trace(recorder, out_dir / "trace.json")
    write_html(out_dir / "report.html")
    _write_text(out_dir / "summary.json", json.dumps(summary_document(summary), indent=2) + "\n")


def write_run(result: RunResult, out_dir: Path, name: str | None = None,
              plotly_src: str | None = None) -> None:
    """The run's folder (`write_run_folder`); `name` labels the run in its report (default:
    the scenario's name). The report embeds plotly.js (the folder stands alone) unless
    `plotly_src` gives the relative path of a shared copy (a compare folder's)."""
    from rlsim.report.html import write_report

    write_run_folder(out_dir, result.scenario.dump(), result.recorder, result.summary,
                     lambda path: write_report([_report_data(result, name)], path,
                                               plotly_src), result.base_dir)


def compare(results: list[RunResult]) -> dict[str, Any]:
    """Side-by-side summaries in input order, with step-time and throughput (samples/s and
    tokens/s) ratios to the first run, and `notes` when the runs trained different work."""
    from rlsim.report.metrics import compare_notes

    base = results[0].summary

    def ratio(s: dict[str, Any], key: str) -> float:
        first = base["throughput"][key]
        return s["throughput"][key] / first if first else 0.0

    rows = []
    for r in results:
        s = r.summary
        rows.append({
            "name": r.scenario.name,
            "policy": r.scenario.policy.name,
            "placement": r.scenario.policy.placement,
            "speedup_vs_first": (base["step_time_s"]["mean"] / s["step_time_s"]["mean"]
                                 if s["step_time_s"]["mean"] else 0.0),
            "throughput_vs_first": ratio(s, "samples_per_s"),
            "tokens_per_s_vs_first": ratio(s, "tokens_per_s"),
            "response_tokens_per_s_vs_first": ratio(s, "response_tokens_per_s"),
        })
    summaries = [r.summary for r in results]
    return stamped("compare", {
        "runs": [summary_document(s) for s in summaries], "ratios": rows,
        "notes": compare_notes(summaries, [r.scenario.name for r in results])})
