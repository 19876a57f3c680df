"""The sweep report: metrics against keys, heatmaps, failed rows, from a fake results set."""

from __future__ import annotations

import json
import re

import pytest

from rlsim.config.errors import ScenarioError
from rlsim.report.html import is_sweep_dir, render_sweep, write_sweep_report
from rlsim.report.sweep_report import load_sweep
from tests.report.synthetic import write_fake_sweep


def _figures(html: str) -> list[dict]:
    return [json.loads(t) for t in re.findall(
        r'<script type="application/json" id="plot-\d+-json">(.*?)</script>', html, re.S)]


def test_two_keys_lines_per_other_key_heatmap_and_errors(tmp_path):
    root = write_fake_sweep(tmp_path / "sw")
    assert is_sweep_dir(root) and not is_sweep_dir(tmp_path)
    sw = load_sweep(root)
    assert sw.main_metrics()[:3] == ["step_time_s.mean", "throughput.samples_per_s",
                                     "cost.usd_per_1k_samples"]
    assert "staleness.max" not in sw.metrics()  # constant: nothing to plot
    html = render_sweep(root)
    assert "Metrics vs rollout.tp" in html and "Metrics vs workload.batch" in html
    assert "rollout.tp × workload.batch" in html
    figs = _figures(html)
    vs_tp = next(f for f in figs if f["layout"]["xaxis"]["title"]["text"] == "rollout.tp"
                 and "step time mean" in f["layout"]["yaxis"]["title"]["text"])
    assert sorted(t["name"] for t in vs_tp["data"]) == [
        "workload.batch=128", "workload.batch=32", "workload.batch=64"]
    line = vs_tp["data"][0]
    assert line["x"] == [1, 2, 4, 8] and len(line["error_y"]["array"]) == 4
    heat = [f for f in figs if f["data"][0]["type"] == "heatmap"]
    assert heat and len(heat[0]["data"][0]["z"]) == 3  # batch values on y
    assert "ScenarioError: rollout.tp: too large" in html
    assert any(f["layout"].get("updatemenus") for f in figs)  # the other-metrics chooser


def test_one_key_no_heatmap(tmp_path):
    html = render_sweep(write_fake_sweep(tmp_path / "sw", keys=("rollout.tp",), reps=3,
                                         with_error=False))
    assert "Heatmaps" not in html and "No failed rows." in html


def test_categorical_key(tmp_path):
    html = render_sweep(write_fake_sweep(tmp_path / "sw", keys=("policy.name", "rollout.tp")))
    fig = next(f for f in _figures(html) if f["layout"]["xaxis"]["title"]["text"]
               == "policy.name")
    assert fig["layout"]["xaxis"]["type"] == "category"


def test_continuous_key_is_a_scatter(tmp_path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "rand"
    (root / "results").mkdir(parents=True)
    (root / "sweep.json").write_text(json.dumps({"keys": ["reward.latency.median"], "reps": 1}))
    x = np.random.default_rng(0).uniform(0.1, 5, 40)
    pq.write_table(pa.table({"point": np.arange(40), "replicate": np.zeros(40, int),
                             "seed": np.zeros(40, int), "reward.latency.median": x,
                             "error": pa.array([None] * 40, pa.string()),
                             "step_time_s.mean": 100 + 10 * x}), root / "results" / "a.parquet")
    fig = next(f for f in _figures(render_sweep(root))
               if f["layout"]["xaxis"]["title"]["text"] == "reward.latency.median")
    assert fig["data"][0]["mode"] == "markers" and len(fig["data"][0]["x"]) == 40


def test_not_a_sweep_and_no_results(tmp_path):
    with pytest.raises(ScenarioError) as err:
        render_sweep(tmp_path)
    assert err.value.field == "SWEEP_DIR"
    (tmp_path / "sweep.json").write_text(json.dumps({"keys": ["rollout.tp"], "reps": 1}))
    assert "No results yet" in render_sweep(tmp_path)
    write_sweep_report(tmp_path, tmp_path / "report.html")
    assert (tmp_path / "report.html").is_file() and not list(tmp_path.glob("*.partial"))


def test_random_keys_get_no_heatmap(tmp_path):
    root = write_fake_sweep(tmp_path / "sw")
    spec = json.loads((root / "sweep.json").read_text())
    spec["ranges"] = {"workload.batch": [32, 128]}  # as if drawn by --random
    (root / "sweep.json").write_text(json.dumps(spec))
    html = render_sweep(root)
    assert "Metrics vs workload.batch" in html
    assert "rollout.tp × workload.batch" not in html


def test_nothing_varies_still_shows_the_values(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = write_fake_sweep(tmp_path / "sw", with_error=False)
    for part in (root / "results").glob("*.parquet"):
        table = pq.read_table(part)
        for name in table.column_names:
            if name not in ("point", "replicate", "seed", "error", "rollout.tp",
                            "workload.batch"):
                i = table.column_names.index(name)
                table = table.set_column(i, name, pa.array([7.5] * table.num_rows))
        pq.write_table(table, part)
    html = render_sweep(root)
    assert "made no difference" in html
    assert "7.5" in html and "Metrics vs rollout.tp" not in html
