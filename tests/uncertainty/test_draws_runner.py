"""Draws on the sweep runner (rlsim.draws.spec/run/summary; issue 39, point 5): the same
answer whatever the workers or interruptions, a journal that --resume continues, the
model-error multipliers in closed form, and the options' bad input in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from rlsim.config.errors import ScenarioError
from rlsim.draws import build_draw_spec, collect, compare_doc, interval_doc, run_draws
from rlsim.sweep.store import RESULTS_DIR
from tests.scenarios import tiny, write

UNKNOWNS = {"workload.prompts_per_step": {"low": 4, "high": 12},
            "reward.latency.median": {"low": 0.001, "high": 0.05}}
VARIANTS = [[], ["policy.placement=disaggregated", "rollout.gpus=4", "train.gpus=4"]]


def _plans(path: Path) -> list[tuple[Path, list[str], str]]:
    return [(path, v, f"v{i}") for i, v in enumerate(VARIANTS)]


def test_the_answer_is_the_same_for_one_or_two_workers_and_after_a_resume(tmp_path):
    path = write(tmp_path, tiny(steps=2, unknowns=UNKNOWNS))
    spec, ctx = build_draw_spec(_plans(path), 6)
    assert spec.n_points == 12
    one = compare_doc(run_draws(spec, ctx, tmp_path / "one", jobs=1).collected)
    two = compare_doc(run_draws(spec, ctx, tmp_path / "two", jobs=2).collected)
    assert one == two
    # lose some journaled runs, as a kill would: --resume runs exactly those again
    parts = sorted((tmp_path / "two" / RESULTS_DIR).iterdir())
    kept = {p.name: p.stat().st_mtime_ns for p in parts[::2]}
    for p in parts[1::2]:
        p.unlink()
    again = run_draws(spec, ctx, tmp_path / "two", jobs=2, resume=True)
    assert compare_doc(again.collected) == one
    assert {p.name: p.stat().st_mtime_ns for p in parts[::2]} == kept  # none rerun


def test_every_variant_and_setting_runs_the_same_draws_on_the_same_seed(tmp_path):
    path = write(tmp_path, tiny(steps=1, unknowns=UNKNOWNS))
    spec, _ = build_draw_spec(_plans(path), 3, grids=["reward.workers=4,8"])
    assert spec.n_points == 2 * 3 * 2
    points = spec.points()
    by_draw: dict[int, set[tuple[str, ...]]] = {}
    for point in points:
        _, draw, plan = spec.index(point.id)
        assert point.values[:2] == (draw, plan) and point.seed == 0
        drawn = tuple(o for o in point.overrides if o.startswith(("workload.", "reward.lat")))
        by_draw.setdefault(draw, set()).add(drawn)
    assert all(len(s) == 1 for s in by_draw.values())  # common random numbers


def test_a_run_without_metrics_is_named_and_left_out(tmp_path):
    path = write(tmp_path, tiny(steps=1, unknowns=UNKNOWNS))
    spec, ctx = build_draw_spec(_plans(path), 4)
    rows = [{"point": 0, "error": None, "step_time_s.mean": 2.0,
             "throughput.samples_per_s": 1.0},
            {"point": 1, "error": "rollout.tp: too large"}]
    c = collect(spec, ctx, pa.Table.from_pylist(rows), crashed={2: "MemoryError"})
    assert c.failures[0] == "draw 0 (v1): rollout.tp: too large" and list(c.rows) == [0]
    assert c.failures[1] == "draw 1 (v0): MemoryError"
    assert len(c.failures) == 8 - 1
    doc = compare_doc(c)
    assert doc["ran"] == 0 and doc["runs"][0]["metrics"]["step_time_s.mean"] is None
    single = interval_doc(c)
    assert single["ran"] == 0  # draw 0 lacks tokens/s and the rest


def _fixed_verl(**extra: Any) -> dict[str, Any]:
    # every knob off the profile's value: only the profile's discrepancy is drawn
    return tiny(steps=1, framework={"name": "verl", "train_speed": 0.5, "rollout_speed": 0.5,
                                    "step_overhead": 1.0, **extra})


def test_the_profiles_discrepancy_multiplies_the_time_in_closed_form(tmp_path):
    from rlsim.config.frameworks import profiles

    sigma = profiles()["verl"].predictive_log_sd
    path = write(tmp_path, _fixed_verl())
    spec, ctx = build_draw_spec([(path, [], "verl")], 8)
    assert list(spec.unknowns) == ["error.discrepancy"]
    doc = interval_doc(run_draws(spec, ctx, jobs=1).collected)
    steps = [d["metrics"]["step_time_s.mean"] for d in doc["draws"]]
    z = [d["values"]["error.discrepancy"] for d in doc["draws"]]
    base = steps[0] / math.exp(sigma * z[0])
    for step, zi in zip(steps, z, strict=True):  # the same run, scaled by exp(sigma z)
        assert step == pytest.approx(base * math.exp(sigma * zi), rel=1e-9)
    rates = [d["metrics"]["throughput.samples_per_s"] * math.exp(sigma * zi)
             for d, zi in zip(doc["draws"], z, strict=True)]
    assert np.ptp(rates) == pytest.approx(0.0, abs=1e-9 * rates[0])
    with pytest.raises(ScenarioError, match="declares no unknowns"):  # nothing left
        build_draw_spec([(path, [], "verl")], 8, profile=False)


def test_a_fitted_scenario_out_of_its_regime_widens_by_the_stated_allowance(tmp_path):
    from rlsim.config.regime import REGIME_CHANGE_REL

    on = {"policy": "sync", "placement": "colocated", "gpus": 8, "rollout_gpus": 8,
          "train_gpus": 8, "gpu": "H100", "model": "qwen2.5-0.5b"}
    data = tiny(steps=1, framework={"fitted_on": on},
                unknowns={"reward.latency.median": {"low": 0.001, "high": 0.002}})
    path = write(tmp_path, data)
    plans = [(path, [], "in"), (path, ["pools.0.nodes=2"], "out")]
    spec, ctx = build_draw_spec(plans, 16)
    assert [k for k in spec.unknowns if k.startswith("error.")] == ["error.regime.0",
                                                                   "error.regime.1"]
    c = run_draws(spec, ctx, jobs=1).collected
    sigma = math.log(1 + REGIME_CHANGE_REL) / 1.96  # one change: GPUs 8 -> 16
    z = np.asarray([v["error.regime.1"] for v in spec.values])
    factor = c.metrics[0, 1, :, 0] / np.median(c.metrics[0, 1, :, 0])
    # the in-regime plan is not scaled; the other by exp(sigma z), its own 95% = +-10%
    assert np.corrcoef(np.log(factor), z)[0, 1] > 0.99
    assert np.std(np.log(factor)) == pytest.approx(sigma, rel=0.35)
    spread_in = np.ptp(np.log(c.metrics[0, 0, :, 0]))
    assert spread_in < 0.2 * np.ptp(np.log(factor))


def test_cli_draws_journal_and_resume(tmp_path, monkeypatch, capsys):
    from tests.cli.test_bad_input import run_cli

    path = write(tmp_path, tiny(steps=1, unknowns=UNKNOWNS))
    out = tmp_path / "d"
    args = ["compare", str(path), "--variant", "name=a", "--variant", "name=b",
            "--draws", "4", "--jobs", "1", "--out", str(out), "--json"]
    code, first, _ = run_cli(args, monkeypatch, capsys)
    assert code == 0
    stored = json.loads((out / "draws.json").read_text())
    assert stored == json.loads(first)
    code, again, err = run_cli([*args, "--resume"], monkeypatch, capsys)
    assert code == 0 and json.loads(again) == stored
    code, _, err = run_cli(args, monkeypatch, capsys)
    assert code == 2 and "already holds a sweep; use --resume" in err


@pytest.mark.parametrize(("args", "message"), [
    (["run", "{p}", "--draws", "2", "--resume"],
     "--resume: give the --out folder of the draws to continue"),
    (["run", "{p}", "--jobs", "2"], "--jobs: give --draws N as well"),
    (["sweep", "{p}", "--out", "{t}/s", "--draws", "2", "--reps", "2"],
     "--draws: draws replace --random/--range and --reps"),
    (["sweep", "{p}", "--out", "{t}/s", "--draws", "2", "--grid",
      "workload.prompts_per_step=4,8"], "--grid: 'workload.prompts_per_step' is drawn"),
    (["run", "{p}", "--draws", "20000"], "over the limit of 10,000"),
])
def test_bad_draw_options_get_one_line(tmp_path, monkeypatch, capsys, args, message):
    from tests.cli.test_bad_input import run_cli

    path = write(tmp_path, tiny(steps=1, unknowns=UNKNOWNS))
    argv = [a.format(p=path, t=tmp_path) for a in args]
    code, _, err = run_cli(argv, monkeypatch, capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_the_draws_report_shows_each_part(tmp_path, monkeypatch, capsys):
    from rlsim.report.draws_report import is_draws_dir, render_draws
    from tests.cli.test_bad_input import run_cli

    path = write(tmp_path, tiny(steps=1, unknowns=UNKNOWNS))
    out = tmp_path / "r"
    code, _, _ = run_cli(["run", str(path), "--draws", "8", "--sensitivity", "--jobs", "1",
                          "--out", str(out)], monkeypatch, capsys)
    assert code == 0 and is_draws_dir(out) and (out / "report.html").is_file()
    page = render_draws(out)
    for heading in ("Intervals", "Which unknown matters", "Runs without metrics"):
        assert f"<h2>{heading}</h2>" in page
    (out / "report.html").unlink()
    code, _, _ = run_cli(["report", str(out)], monkeypatch, capsys)
    assert code == 0 and (out / "report.html").is_file()
    (out / "draws.json").unlink()  # an unfinished set of draws: one line, exit 2
    code, _, err = run_cli(["report", str(out)], monkeypatch, capsys)
    assert code == 2 and "--resume" in err and len(err.strip().splitlines()) == 1


def test_the_indices_are_the_same_for_one_or_two_workers(tmp_path):
    from rlsim.draws import sensitivity_doc

    path = write(tmp_path, tiny(steps=1, unknowns=UNKNOWNS))
    spec, ctx = build_draw_spec([(path, [], "s")], 8, sensitivity=True)
    one = run_draws(spec, ctx, tmp_path / "one", jobs=1).collected
    two = run_draws(spec, ctx, tmp_path / "two", jobs=2).collected
    assert sensitivity_doc(one) == sensitivity_doc(two)
    assert interval_doc(one) == interval_doc(two)


def test_a_comparisons_ratios_get_indices_and_a_twins_ratio_has_none(tmp_path, monkeypatch,
                                                                      capsys):
    from tests.cli.test_bad_input import run_cli

    path = write(tmp_path, tiny(steps=1, unknowns=UNKNOWNS))
    code, out, _ = run_cli(["compare", str(path), "--variant", "name=a", "--variant", "name=b",
                            "--variant", "reward.workers=2", "--draws", "16", "--sensitivity",
                            "--jobs", "1", "--json"], monkeypatch, capsys)
    assert code == 0
    sens = json.loads(out)["draws"]["sensitivity"]
    assert sorted(sens["runs"]) == ["2", "a", "b"] and sorted(sens["ratios"]) == ["2", "b"]
    twin = sens["ratios"]["b"]["throughput.samples_per_s"]
    assert all(t["total"] == 0 and t["first"] == 0 for t in twin)  # b / a is 1 in every run
    assert {t["unknown"] for t in sens["ratios"]["2"]["throughput.tokens_per_s"]} == set(UNKNOWNS)


def test_a_variant_that_sets_a_drawn_field_keeps_its_value(tmp_path):
    path = write(tmp_path, tiny(steps=1, unknowns={
        "reward.latency.median": {"low": 0.001, "high": 0.05}}))
    plans = [(path, [], "drawn"), (path, ["reward.latency.median=0.2"], "fixed")]
    spec, ctx = build_draw_spec(plans, 4)
    assert spec.dims[0].plans == frozenset({0})
    for point in spec.points():
        drawn = [o for o in point.overrides if o.startswith("reward.latency.median=")]
        assert drawn == (["reward.latency.median=0.2"] if point.plan else drawn[:1])
    c = run_draws(spec, ctx, jobs=1).collected
    steps = c.metrics[0, 1, :, 0]
    assert np.ptp(steps) == 0  # the fixed variant is the same run at every draw
    assert np.ptp(c.metrics[0, 0, :, 0]) > 0


def test_two_frameworks_draw_their_own_profiles_and_errors(tmp_path):
    from rlsim.config.frameworks import profiles

    path = write(tmp_path, tiny(steps=1))
    plans = [(path, ["framework.name=verl"], "verl"),
             (path, ["framework.name=nemo-rl"], "nemo-rl")]
    spec, _ = build_draw_spec(plans, 4)
    by_key = {d.key: d for d in spec.dims}
    assert by_key["error.discrepancy@verl"].plans == frozenset({0})
    assert by_key["error.discrepancy@nemo-rl"].plans == frozenset({1})
    assert by_key["framework.train_speed@nemo-rl"].fields == ("framework.train_speed",
                                                               "framework.rollout_speed")
    nemo = profiles()["nemo-rl"].params["speed"]
    for point in spec.points():
        if point.plan == 1:
            speeds = [float(o.split("=")[1]) for o in point.overrides
                      if o.startswith("framework.train_speed=")]
            # nemo-rl's own speed interval (a lognormal over its 95% interval)
            assert len(speeds) == 1 and nemo.ci95[0] / 2 < speeds[0] < nemo.ci95[1] * 2
            assert not any(o.startswith("framework.step_overhead=") and "verl" in o
                           for o in point.overrides)


def test_resume_refuses_draws_whose_named_files_changed(tmp_path):
    """A trace a plan names (here through its overrides) is part of what --resume
    compares: edited, the draws are refused rather than mixed (issue 39's leftover)."""
    import shutil

    from rlsim.sweep.store import SPEC_FILE

    trace = tmp_path / "trace"
    shutil.copytree(Path(__file__).parents[2] / "traces/polytrace/deepcoder-14b-16k", trace)
    path = write(tmp_path, tiny(steps=1, unknowns=UNKNOWNS, workload__response_len=None,
                                workload__max_response_len=16000,
                                workload__trace={"path": "elsewhere", "order": "shuffle"}))
    plans = [(path, ["workload.trace.path=trace"], "traced")]
    spec, ctx = build_draw_spec(plans, 2)
    files = spec.to_json()["plans"][0]["files"]
    assert sorted(Path(p).name for p in files) == sorted(p.name for p in trace.iterdir())
    run_draws(spec, ctx, tmp_path / "d", jobs=1)
    assert json.loads((tmp_path / "d" / SPEC_FILE).read_text())["plans"][0]["files"] == files
    again, ctx = build_draw_spec(plans, 2)
    assert run_draws(again, ctx, tmp_path / "d", jobs=1, resume=True).collected is not None
    step = trace / "packed_lengths_step_0.jsonl"
    step.write_text(step.read_text() + "\n")
    edited, ctx = build_draw_spec(plans, 2)
    with pytest.raises(ScenarioError, match="plans"):
        run_draws(edited, ctx, tmp_path / "d", jobs=1, resume=True)


def test_sensitivity_leaves_out_the_base_rows_of_runs_without_metrics(tmp_path):
    """A run without metrics drops its base row from the indices, not every index (issue
    39's leftover); with fewer than two rows left, one line names the failures."""
    from rlsim.draws import METRICS, sensitivity_base_rows, sensitivity_doc

    path = write(tmp_path, tiny(steps=1, unknowns=UNKNOWNS))
    spec, ctx = build_draw_spec([(path, [], "s")], 32, sensitivity=True)
    n = spec.base
    assert n == 8 and spec.n_points == 32

    def rows(failed: set[int]) -> pa.Table:
        return pa.Table.from_pylist(
            [{"point": p, "error": "rollout.tp: too large"} if p in failed else
             {"point": p, "error": None, **{k: 1.0 + p % 7 + i for i, (k, _) in
                                            enumerate(METRICS)}}
             for p in range(spec.n_points)])

    whole = collect(spec, ctx, rows(set()))
    one = collect(spec, ctx, rows({n + 3}))  # f(B) of base row 3
    assert sensitivity_base_rows(whole) == {"used": 8, "of": 8}
    assert sensitivity_base_rows(one) == {"used": 7, "of": 8}
    doc = sensitivity_doc(one)
    assert set(doc) == {k for k, _ in METRICS} and all(len(v) == 2 for v in doc.values())
    with pytest.raises(ScenarioError, match="1 of 8 base rows"):
        sensitivity_doc(collect(spec, ctx, rows({p for p in range(2 * n, 3 * n) if p != 2 * n})))
