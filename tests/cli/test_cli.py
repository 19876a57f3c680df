"""The command line: outputs, JSON mode, listing, schema, estimate."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import yaml

from rlsim import cli
from tests.cli.test_bad_input import run_cli
from tests.scenarios import tiny, write

SUMMARY_KEYS = {"steps", "sim_time_s", "step_time_s", "phase_time_s", "throughput", "gpu_util",
                "cost", "staleness", "faults", "goodput_samples_per_s", "gen_critical_path_s",
                "effective_training_time_ratio", "slo_attainment", "controller",
                "attempts", "profiles", "wall_s", "events",
                "policy", "steady_state", "whole_run", "warnings"}
# what summary.json and `run --json` add to the summary: the output contract's stamp
STAMP_KEYS = {"schema_version", "rlsim"}


def test_run_writes_outputs(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, tiny())
    out = tmp_path / "run"
    code, stdout, _ = run_cli(["run", str(path), "--out", str(out)], monkeypatch, capsys)
    assert code == 0
    assert "step time" in stdout
    for name in ("scenario.resolved.yaml", "summary.json", "records.parquet", "trace.json"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == SUMMARY_KEYS | STAMP_KEYS
    assert summary["steps"] == 2
    resolved = yaml.safe_load((out / "scenario.resolved.yaml").read_text())
    assert resolved["rollout"]["max_running_seqs"] == 256  # defaults are written out
    table = pq.read_table(out / "records.parquet")
    assert {"kind", "track", "name", "t0", "t1"} <= set(table.column_names)
    trace = json.loads((out / "trace.json").read_text())
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"engine0 (TP 1)", "controller"} <= names
    assert any(n.startswith("trainer (") for n in names)
    assert not list(out.glob("*.partial"))


def test_run_json_is_only_json(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, tiny())
    code, stdout, _ = run_cli(["run", str(path), "--json"], monkeypatch, capsys)
    assert code == 0
    assert set(json.loads(stdout)) == SUMMARY_KEYS | STAMP_KEYS


def test_set_override_changes_the_run(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, tiny())
    _, a, _ = run_cli(["run", str(path), "--json"], monkeypatch, capsys)
    _, b, _ = run_cli(["run", str(path), "--json", "--set", "steps=3"], monkeypatch, capsys)
    assert json.loads(a)["steps"] == 2 and json.loads(b)["steps"] == 3


def test_compare_json_in_argument_order(tmp_path, monkeypatch, capsys):
    a = write(tmp_path, tiny(steps=2), "a.yaml")
    b = write(tmp_path, tiny(steps=3), "b.yaml")
    code, stdout, _ = run_cli(["compare", str(b), str(a), "--json"], monkeypatch, capsys)
    assert code == 0
    runs = json.loads(stdout)["runs"]
    assert [r["steps"] for r in runs] == [3, 2]


def test_compare_variants_table_and_folders(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, tiny())
    out = tmp_path / "cmp"
    code, stdout, _ = run_cli(
        ["compare", str(path), "--variant", "policy.placement=colocated",
         "--variant", "policy.name=one_off,policy.placement=disaggregated",
         "--out", str(out)], monkeypatch, capsys)
    assert code == 0
    assert "speedup vs first" in stdout and "one_off" in stdout
    assert len([p for p in out.iterdir() if (p / "summary.json").is_file()]) == 2


def test_list_and_schema(monkeypatch, capsys):
    for what, needle in (("gpus", "H800"), ("models", "qwen2.5-7b"), ("policies", "one_off"),
                         ("scenarios", "quickstart.yaml")):
        code, out, _ = run_cli(["list", what], monkeypatch, capsys)
        assert code == 0 and needle in out
    code, out, _ = run_cli(["schema"], monkeypatch, capsys)
    schema = json.loads(out)
    assert "rollout" in schema["properties"]
    # help text on every field of the top level
    assert all("description" in v for v in schema["properties"].values())


def test_estimate_json_keys(tmp_path, monkeypatch, capsys):
    code, out, _ = run_cli(["estimate", "--gpu", "H100", "--model", "llama-2-7b", "--tp", "2",
                            "--batch", "64", "--context", "1024", "--json"], monkeypatch, capsys)
    assert code == 0
    data = json.loads(out)["step_s"]
    assert set(data) == {"linear_s", "attention_s", "other_s", "comm_s", "overhead_s", "total_s"}
    assert abs(sum(v for k, v in data.items() if k != "total_s") - data["total_s"]) < 1e-12
    arch = tmp_path / "m.yaml"
    arch.write_text(yaml.safe_dump({"layers": 4, "hidden": 512, "heads": 8, "kv_heads": 8,
                                    "ffn": 2048, "vocab": 1000}))
    code, out, _ = run_cli(["estimate", "--gpu", "A100", "--model", str(arch), "--batch", "8",
                            "--context", "100", "--json"], monkeypatch, capsys)
    assert code == 0 and json.loads(out)["step_s"]["total_s"] > 0


def test_progress_plain_lines_only_after_two_seconds_and_few(monkeypatch):
    """Not a terminal: nothing before ~2 s, then the first line, then one per 30 s and the
    last, never one per step."""
    import io

    now = [0.0]
    monkeypatch.setattr(cli.time, "perf_counter", lambda: now[0])
    stream = io.StringIO()
    bar = cli._ProgressBar("run", 1000, stream=stream)  # t0 = 0
    bar(1, 1000)  # 0 s: silent
    assert stream.getvalue() == ""
    for step in range(2, 1001):  # 1000 steps over 100 s
        now[0] = step * 0.1
        bar(step, 1000)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("run: step 20/1000") and "ETA" in lines[0]
    assert lines[-1].startswith("run: step 1000/1000")
    assert 3 <= len(lines) <= 6, lines


def test_progress_on_a_terminal_is_a_rich_bar_that_ticks(monkeypatch):
    """On a terminal the bar appears by a timer (before any step ends) and rich refreshes
    it on its own; close() stops it."""
    import io

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(cli._ProgressBar, "DELAY_S", 0.05)
    stream = Tty()
    bar = cli._ProgressBar("tinyrun", 4, stream=stream)
    deadline = cli.time.perf_counter() + 10
    while "tinyrun" not in stream.getvalue() and cli.time.perf_counter() < deadline:
        cli.time.sleep(0.05)
    bar(1, 4)
    bar.close()
    text = stream.getvalue()
    assert "tinyrun" in text and "step" in text and "ETA" in text
    assert bar.where() == "step 2 of 4"


def test_summary_identical_across_processes(tmp_path):
    import os
    import subprocess
    import sys

    path = write(tmp_path, tiny())
    outs = []
    for hashseed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "run", str(path), "--json"],
                              capture_output=True, text=True, env=env, check=True)
        summary = json.loads(proc.stdout)
        summary.pop("wall_s")
        outs.append(json.dumps(summary, sort_keys=True))
    assert outs[0] == outs[1]


def test_quickstart_on_the_calibrated_cpu_profile(monkeypatch, capsys):
    # The calibrated CPU "device" is this 2-core, 24 GB machine in float32: the quickstart's
    # Qwen2.5-7B (28 GiB of fp32 weights per device) does not fit and says so; with a model
    # that fits, the quickstart runs and records the profile's hash.
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    quickstart = str(root / "scenarios" / "quickstart.yaml")
    profile = str(root / "calibration" / "profiles" / "cpu.json")
    code, _, err = run_cli(["run", quickstart, "--set", f"pools.cluster.profile={profile}"],
                           monkeypatch, capsys)
    assert code == 2 and "does not fit" in err and len(err.strip().splitlines()) == 1
    code, out, _ = run_cli(["run", quickstart, "--json", "--set",
                            f"pools.cluster.profile={profile},model=qwen2.5-0.5b,steps=1"],
                           monkeypatch, capsys)
    assert code == 0
    summary = json.loads(out)
    from rlsim.cost.profile import load_profile

    assert summary["profiles"]["cluster"]["hash"] == load_profile(profile).content_hash()
    assert summary["profiles"]["cluster"]["source"].endswith("cpu.json")


def test_a_run_alone_prints_no_speedup_rows(tmp_path, monkeypatch, capsys):
    """A single run's table has nothing to compare against: no all-1.00x speedup rows."""
    path = write(tmp_path, tiny())
    code, stdout, _ = run_cli(["run", str(path)], monkeypatch, capsys)
    assert code == 0
    assert "step time mean" in stdout and "speedup" not in stdout and "1.00x" not in stdout


def test_list_scenarios_leaves_out_model_files(monkeypatch, capsys):
    code, stdout, _ = run_cli(["list", "scenarios"], monkeypatch, capsys)
    assert code == 0
    assert "quickstart.yaml" in stdout and ".model.yaml" not in stdout
