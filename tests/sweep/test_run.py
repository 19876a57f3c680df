"""Running sweeps: rows equal `simulate`, invalid points are rows, one schema, resume rules."""

from __future__ import annotations

import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlsim.api import simulate
from rlsim.config.loading import load_scenario
from rlsim.sweep import build_spec, read_results, run_sweep
from rlsim.sweep.store import ResultStore
from rlsim.sweep.worker import flatten_metrics
from tests.cli.test_bad_input import run_cli


def test_point_metrics_equal_simulate_of_the_same_overrides(scenario, tmp_path):
    spec, ctx = build_spec(scenario, ["steps=3"], ["workload.prompts_per_step=4,8"], None, [], 2)
    outcome = run_sweep(spec, ctx, tmp_path / "s", jobs=2)
    assert (outcome.points, outcome.done, outcome.failed) == (4, 4, 0)
    rows = read_results(tmp_path / "s").to_pylist()
    assert [r["point"] for r in rows] == [0, 1, 2, 3]
    for row in rows:
        overrides = ["steps=3", f"workload.prompts_per_step={row['workload.prompts_per_step']}"]
        if row["replicate"]:
            overrides.append(f"seed={row['seed']}")
        want = flatten_metrics(simulate(*load_scenario(scenario, overrides)).summary)
        got = {k: v for k, v in row.items() if k in want}
        assert got == want
        assert "wall_s" not in row and row["error"] is None
    # Replicates differ (their own seeds); the same replicate is reproducible.
    assert rows[0]["step_time_s.mean"] != rows[1]["step_time_s.mean"]


def test_columns_named_by_key_and_typed(scenario, tmp_path):
    spec, ctx = build_spec(scenario, [], ["workload.prompts_per_step=4,8",
                                          "reward.latency.sigma=0.5,1"], None, [], 1)
    run_sweep(spec, ctx, tmp_path / "s", jobs=2)
    table = pq.read_table(tmp_path / "s" / "results")
    names = table.column_names
    assert names[:6] == ["point", "replicate", "seed", "workload.prompts_per_step",
                         "reward.latency.sigma", "error"]
    assert table.schema.field("workload.prompts_per_step").type == pa.int64()
    assert table.schema.field("reward.latency.sigma").type == pa.float64()
    for metric in ("step_time_s.mean", "phase_time_s.gen", "throughput.samples_per_s",
                   "gpu_util.cluster", "cost.usd_per_1k_samples", "staleness.mean"):
        assert table.schema.field(metric).type == pa.float64(), metric
    assert table.schema.field("events").type == pa.int64()
    assert all(t in (pa.int64(), pa.float64()) for t in table.schema.types[6:])
    assert "wall_s" not in names and not any(n.startswith("profiles") for n in names)


def test_invalid_point_is_an_error_row_and_parts_share_one_schema(scenario, tmp_path):
    # The invalid value comes first and jobs=1, so its row is written before any metric
    # column is known: the store must widen it afterwards.
    spec, ctx = build_spec(scenario, [], ["rollout.tp=16,1"], None, [], 1)
    outcome = run_sweep(spec, ctx, tmp_path / "s", jobs=1)
    assert (outcome.done, outcome.failed) == (2, 1)
    bad, good = outcome.table.to_pylist()
    assert bad["rollout.tp"] == 16 and "rollout.tp" in bad["error"]
    assert "\n" not in bad["error"] and bad["step_time_s.mean"] is None
    assert good["error"] is None and good["step_time_s.mean"] > 0
    schemas = {str(pq.read_schema(p)) for p in (tmp_path / "s" / "results").iterdir()}
    assert len(schemas) == 1


def test_store_widens_types_and_adds_columns(tmp_path):
    columns = [("point", "int64"), ("replicate", "int64"), ("seed", "int64"), ("k", "string"),
               ("error", "string")]
    store = ResultStore.open(tmp_path / "s", {"x": 1}, columns, resume=False)
    base = {"replicate": 0, "seed": 0, "k": "a", "error": None}
    store.write({**base, "point": 0, "m": 0})          # an int ...
    store.write({**base, "point": 1, "m": 2.5, "n": 1})  # ... then a float, and a new metric
    store.write({**base, "point": 2, "error": "x: bad"})
    table = pq.read_table(tmp_path / "s" / "results").sort_by("point")
    assert table.schema.field("m").type == pa.float64()
    assert table.column("m").to_pylist() == [0.0, 2.5, None]
    assert table.column("n").to_pylist() == [None, 1, None]
    reopened = ResultStore.open(tmp_path / "s", {"x": 1}, columns, resume=True)
    assert reopened.done == {0, 1, 2} and reopened.schema() == table.schema


def test_resume_with_a_different_spec_exits_2(scenario, tmp_path, monkeypatch, capsys):
    out = tmp_path / "s"
    base = ["sweep", str(scenario), "--out", str(out), "--grid", "steps=1,2"]
    assert run_cli([*base, "--json"], monkeypatch, capsys)[0] == 0
    before = sorted(p.name for p in (out / "results").iterdir())
    code, _, err = run_cli(["sweep", str(scenario), "--out", str(out), "--grid", "steps=1,3",
                            "--resume"], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--resume" in err and "grid" in err and '"3"' in err
    code, _, err = run_cli([*base, "--reps", "2", "--resume"], monkeypatch, capsys)
    assert code == 2 and "reps" in err
    scenario.write_text(scenario.read_text() + "\n# edited\n")
    code, _, err = run_cli([*base, "--resume"], monkeypatch, capsys)
    assert code == 2 and "scenario_sha256" in err
    assert sorted(p.name for p in (out / "results").iterdir()) == before


def test_out_with_results_needs_resume(scenario, tmp_path, monkeypatch, capsys):
    out = tmp_path / "s"
    args = ["sweep", str(scenario), "--out", str(out), "--grid", "steps=1,2"]
    assert run_cli(args, monkeypatch, capsys)[0] == 0
    code, _, err = run_cli(args, monkeypatch, capsys)
    assert code == 2 and "use --resume or another --out" in err
    assert len(err.strip().splitlines()) == 1
    # --resume of a finished sweep runs nothing and succeeds.
    code, stdout, _ = run_cli([*args, "--resume", "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(stdout)["done"] == 2
    code, _, err = run_cli(["sweep", str(scenario), "--out", str(tmp_path / "new"),
                            "--grid", "steps=1,2", "--resume"], monkeypatch, capsys)
    assert code == 2 and "--resume" in err and "sweep.json" in err


def test_json_is_the_only_stdout(scenario, tmp_path, monkeypatch, capsys):
    out = tmp_path / "s"
    code, stdout, err = run_cli(["sweep", str(scenario), "--out", str(out), "--grid",
                                 "workload.prompts_per_step=4,8", "--grid", "steps=1,2",
                                 "--jobs", "2", "--json"], monkeypatch, capsys)
    assert code == 0, err
    assert json.loads(stdout) == {"schema_version": 1, "out": str(out), "points": 4,
                                  "done": 4, "failed": 0,
                                  "interrupted": False, "partial": False, "failures": []}
    assert "4 of 4 points done (0 failed)" in err
    assert str(out / "results") in err and "throughput.tokens_per_s (max)" in err
    spec = json.loads((out / "sweep.json").read_text())
    assert spec["points"] == 4 and spec["keys"] == ["workload.prompts_per_step", "steps"]
    assert spec["grid"] == {"workload.prompts_per_step": ["4", "8"], "steps": ["1", "2"]}
    assert json.loads((out / "status.json").read_text())["state"] == "complete"
    code, stdout, _ = run_cli(["sweep", str(scenario), "--out", str(tmp_path / "t"), "--grid",
                               "steps=1,2"], monkeypatch, capsys)
    assert code == 0 and stdout == ""


def test_failed_points_exit_1_and_are_listed(scenario, tmp_path, monkeypatch, capsys):
    """Regression: a sweep whose points failed exited 0 with only a count."""
    out = tmp_path / "s"
    code, stdout, err = run_cli(["sweep", str(scenario), "--out", str(out), "--grid",
                                 "rollout.tp=1,16", "--grid", "steps=1,2", "--jobs", "2",
                                 "--json"], monkeypatch, capsys)
    assert code == 1
    got = json.loads(stdout)
    assert (got["done"], got["failed"], got["partial"]) == (4, 2, False)
    listed = [line for line in err.splitlines() if line.startswith("failed: point")]
    assert [line.split(":")[1] for line in listed] == [" point 2 (rollout.tp=16, steps=1)",
                                                       " point 3 (rollout.tp=16, steps=2)"]
    assert all("TP 16" in line or "rollout.tp" in line.split(")", 1)[1] for line in listed)
    assert err.strip().splitlines()[-1].startswith("rlsim: error: sweep: 2 of 4 points failed")
    assert read_results(out).num_rows == 4  # the finished points are kept


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers inherit the patch")
def test_a_point_that_raises_does_not_stop_the_others(scenario, tmp_path, monkeypatch,
                                                      capsys):
    """Regression: the first point that raised (PointFailed) stopped the whole sweep."""
    import rlsim.sweep.worker as worker

    real = worker.simulate

    def flaky(job):  # point with 2 prompts per step hits a "bug"
        if job.scenario.workload.prompts_per_step == 2:
            raise ZeroDivisionError("simulated bug\nsecond line")
        return real(job)

    monkeypatch.setattr(worker, "simulate", flaky)  # forked workers inherit it
    out = tmp_path / "s"
    args = ["sweep", str(scenario), "--out", str(out), "--grid",
            "workload.prompts_per_step=2,4,8", "--jobs", "1"]
    code, _, err = run_cli(args, monkeypatch, capsys)
    assert code == 1
    assert "failed: point 0 (workload.prompts_per_step=2): ZeroDivisionError: simulated bug" \
        in err.splitlines()
    assert "--resume" in err.strip().splitlines()[-1]
    assert sorted(read_results(out).column("point").to_pylist()) == [1, 2]
    status = json.loads((out / "status.json").read_text())
    assert status["state"] == "partial" and status["failed"] == 1
    monkeypatch.setattr(worker, "simulate", real)  # "fixed": --resume runs only that point
    code, _, err = run_cli([*args, "--resume"], monkeypatch, capsys)
    assert code == 0, err
    assert read_results(out).column("point").to_pylist() == [0, 1, 2]


@pytest.mark.parametrize("jobs", [1, 2])
def test_rows_do_not_depend_on_jobs(scenario, tmp_path, jobs):
    spec, ctx = build_spec(scenario, [], ["steps=1,2,3"], 2, ["reward.latency.sigma=0.2:1"], 1)
    run_sweep(spec, ctx, tmp_path / "ref", jobs=1)
    run_sweep(spec, ctx, tmp_path / "s", jobs=jobs)
    assert read_results(tmp_path / "s").equals(read_results(tmp_path / "ref"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers inherit the patch")
def test_a_worker_that_dies_fails_its_point_and_the_rest_run(scenario, tmp_path, monkeypatch):
    """Regression: a dead worker (out of memory, killed) broke the pool and stopped the
    sweep; now its point fails and a fresh pool runs the rest."""
    import os

    import rlsim.sweep.worker as worker

    real = worker.simulate

    def dies(job):
        if job.scenario.workload.prompts_per_step == 4:
            os._exit(9)  # as the OOM killer would leave it
        return real(job)

    monkeypatch.setattr(worker, "simulate", dies)
    spec, ctx = build_spec(scenario, [], ["workload.prompts_per_step=2,4,8,16"], None, [], 1)
    outcome = run_sweep(spec, ctx, tmp_path / "s", jobs=1)
    assert [f.point for f in outcome.crashed] == [1]
    assert "worker process died" in outcome.crashed[0].why
    assert outcome.table.column("point").to_pylist() == [0, 2, 3] and outcome.partial


def test_resume_after_a_named_file_changed_exits_2(tmp_path, monkeypatch, capsys):
    """A trace the scenario names is part of what --resume compares (issue 39's leftover):
    an edited trace would otherwise mix results of two inputs in one sweep."""
    import shutil
    from pathlib import Path

    from tests.scenarios import tiny, write

    trace = tmp_path / "trace"
    shutil.copytree(Path(__file__).parents[2] / "traces/polytrace/deepcoder-14b-16k", trace)
    scenario = write(tmp_path, tiny(workload__response_len=None,
                                    workload__max_response_len=16000,
                                    workload__trace={"path": "trace", "order": "shuffle"}),
                     "traced.yaml")
    out = tmp_path / "s"
    args = ["sweep", str(scenario), "--out", str(out), "--grid", "steps=1,2"]
    assert run_cli([*args, "--json"], monkeypatch, capsys)[0] == 0
    stored = json.loads((out / "sweep.json").read_text())
    assert sorted(Path(p).name for p in stored["files"]) == sorted(
        p.name for p in trace.iterdir())
    assert run_cli([*args, "--resume", "--json"], monkeypatch, capsys)[0] == 0  # unchanged
    step = trace / "packed_lengths_step_0.jsonl"
    step.write_text(step.read_text() + "\n")
    code, _, err = run_cli([*args, "--resume"], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--resume" in err and "files" in err
