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
    assert sw.main_metrics()[:4] == ["throughput.samples_per_s", "goodput_samples_per_s",
                                     "step_time_s.mean", "cost.usd_per_1k_samples"]
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


def _write(root, keys: dict, metrics: dict, spec: dict | None = None):
    """A sweep folder with one row per setting: `keys` and `metrics` are columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (root / "results").mkdir(parents=True)
    n = len(next(iter(keys.values())))
    (root / "sweep.json").write_text(json.dumps({"keys": list(keys), "reps": 1, "points": n,
                                                 **(spec or {})}))
    pq.write_table(pa.table({"point": list(range(n)), "replicate": [0] * n, "seed": [0] * n,
                             **keys, "error": pa.array([None] * n, pa.string()), **metrics}),
                   root / "results" / "part-000000.parquet")
    return root


def test_tokens_per_s_first_and_fault_sweeps_rank_by_goodput(tmp_path):
    """Regression: step time was the first metric; tokens/s is the default, goodput first
    in a fault sweep (whose step time leaves restarts out)."""
    tokens = {"throughput.tokens_per_s": [900.0, 1000.0, 800.0],
              "step_time_s.mean": [3.0, 2.0, 1.0], "goodput_samples_per_s": [3.0, 2.0, 1.0]}
    root = _write(tmp_path / "a", {"rollout.tp": [1, 2, 4]}, tokens)
    assert load_sweep(root).main_metrics()[0] == "throughput.tokens_per_s"
    assert "point (sorted by tokens/s)" in render_sweep(root)
    root = _write(tmp_path / "b", {"faults.scale": [1.0, 2.0, 4.0]}, tokens)
    sw = load_sweep(root)
    assert sw.fault and sw.main_metrics()[0] == "goodput_samples_per_s"
    html = render_sweep(root)
    best = html[html.index("Best per metric"):]
    best = best[:best.index("</ul>")]
    assert "Fault sweep: ranked by goodput" in best
    items = best.split("<li>")[1:]
    assert items[0].startswith("goodput") and not any("step time" in i for i in items)


def test_ties_are_named_as_ties(tmp_path):
    root = _write(tmp_path / "t", {"faults.scale": [0.0, 1.0, 2.0]},
                  {"throughput.tokens_per_s": [5.0, 5.0, 5.0],
                   "goodput_samples_per_s": [3.0, 2.0, 2.0]})
    html = render_sweep(root)
    assert "all 3 settings tie" in html  # tokens/s: no single best
    assert "faults.scale=0 at 3 " in html.replace("</li>", " ")


def test_scale_keys_on_a_log_axis_with_zero_as_a_reference(tmp_path):
    """Regression: faults.scale=0,0.5,1,2,4 was linear; and 1..100 (a 100x span) too."""
    root = _write(tmp_path / "f", {"faults.scale": [0.0, 0.5, 1.0, 2.0, 4.0]},
                  {"goodput_samples_per_s": [5.0, 4.0, 3.0, 2.0, 1.0]})
    fig = next(f for f in _figures(render_sweep(root))
               if f["layout"]["xaxis"]["title"]["text"] == "faults.scale"
               and "goodput" in f["layout"]["yaxis"]["title"]["text"])
    assert fig["layout"]["xaxis"]["type"] == "log"
    line, zero = fig["data"]
    assert line["x"] == [0.5, 1.0, 2.0, 4.0] and line["y"] == [4.0, 3.0, 2.0, 1.0]
    assert zero["y"] == [5.0, 5.0] and zero["line"]["dash"] == "dash"
    assert "faults.scale=0" in zero["name"]
    for values, log in (([1, 10, 100], True), ([1, 2, 4, 8], False), ([-1, 10, 100], False)):
        root = _write(tmp_path / f"k{len(values)}{values[0]}", {"workload.batch": values},
                      {"throughput.tokens_per_s": [float(v) + 1 for v in range(len(values))]})
        fig = next(f for f in _figures(render_sweep(root))
                   if f["layout"]["xaxis"]["title"]["text"] == "workload.batch")
        assert (fig["layout"]["xaxis"].get("type") == "log") == log, values


def test_flat_heatmap_says_so_and_keeps_its_colours_calm(tmp_path):
    """Regression: cells differing by 0.2% spanned the whole colour scale."""
    keys = {"rollout.tp": [1, 1, 2, 2], "workload.batch": [32, 64, 32, 64]}
    root = _write(tmp_path / "h", keys, {"throughput.tokens_per_s": [1000.0, 1001.0,
                                                                     1002.0, 1000.5],
                                         "step_time_s.mean": [1.0, 2.0, 3.0, 4.0]})
    html = render_sweep(root)
    heat = {f["data"][0]["z"][0][0]: f for f in _figures(html)
            if f["data"][0]["type"] == "heatmap"}
    flat, steep = heat[1000.0], heat[1.0]
    trace = flat["data"][0]
    span = trace["zmax"] - trace["zmin"]
    assert (1002.0 - 1000.0) / span < 0.05  # the difference takes a sliver of the scale
    assert "within 0.2% of each other" in flat["layout"]["title"]["text"]
    assert "tokens/s (flat: within 0.2%)" in html
    assert "zmin" not in steep["data"][0] and "title" not in steep["layout"]


def test_partial_sweep_is_marked(tmp_path):
    root = _write(tmp_path / "p", {"rollout.tp": [1, 2]}, {"throughput.tokens_per_s": [1.0, 2.0]},
                  {"points": 5})
    assert "2 of 5 points done" in render_sweep(root)


def test_a_scale_sweep_shows_the_mtbf_it_gives(tmp_path):
    """Regression (issue 38): the report showed faults.scale, not the MTBF the user set."""
    from tests.scenarios import tiny

    scenario = tmp_path / "s.yaml"
    scenario.write_text(json.dumps(tiny(faults={"gpu": [{"mtbf": "20 h"}]})))
    root = _write(tmp_path / "m", {"faults.scale": [0.0, 4.0, 16.0]},
                  {"goodput_samples_per_s": [3.0, 2.0, 1.0]},
                  {"scenario": str(scenario), "overrides": ["faults.scale=2"]})
    sw = load_sweep(root)
    assert sw.label("faults.scale", 4.0) == "faults.scale=4 (gpu MTBF 5.0 h)"
    assert sw.label("faults.scale", 0.0) == "faults.scale=0 (no rate-based faults)"
    html = render_sweep(root)
    assert "faults.scale=16 (gpu MTBF 75 min)" in html
    fig = next(f for f in _figures(html) if "goodput" in f["layout"]["yaxis"]["title"]["text"])
    assert fig["layout"]["xaxis"]["title"]["text"] == "gpu MTBF (faults.scale: 20.0 h / scale)"
    assert fig["layout"]["xaxis"]["ticktext"] == ["5.0 h", "75 min"]
    # the scenario gone: the scale alone, as before
    scenario.unlink()
    assert load_sweep(root).label("faults.scale", 4.0) == "faults.scale=4"
