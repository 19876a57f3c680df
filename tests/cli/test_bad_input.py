"""Bad input: each malformed scenario gives one line on stderr naming the field, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rlsim import cli
from tests.scenarios import tiny, write

ROOT = Path(__file__).resolve().parents[2]


def run_cli(args: list[str], monkeypatch, capsys) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["rlsim", *args])
    with pytest.raises(SystemExit) as exc:
        cli.main()
        raise SystemExit(0)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


CASES = {
    # name: (scenario data or raw text, expected field path fragment in the message)
    "unknown_key": (tiny(modle="qwen2.5-7b"), "modle"),
    "unknown_nested_key": (tiny(rollout__tpp=2), "rollout.tpp"),
    "wrong_unit": (tiny(reward__timeout="30 GB"), "reward.timeout"),
    "bad_unit_string": (tiny(reward__latency={"median": "fast"}), "reward.latency.median"),
    "negative_count": (tiny(pools__0__nodes=-1), "pools.0.nodes"),
    "zero_prompts": (tiny(workload__prompts_per_step=0), "workload.prompts_per_step"),
    "wrong_type": (tiny(steps="many"), "steps"),
    "unknown_gpu": (tiny(pools__0__gpu="H999"), "pools.0.gpu"),
    "unknown_model": (tiny(model="gpt-9"), "model"),
    "tp_larger_than_node": (tiny(rollout__tp=16), "rollout.tp"),
    "tp_not_power_of_two": (tiny(rollout__tp=3), "rollout.tp"),
    "model_does_not_fit": (tiny(model="qwen2.5-72b"), "rollout.tp"),
    "missing_pool": (tiny(rollout__pool="nope"), "rollout.pool"),
    "colocated_two_pools": (
        tiny(pools=[{"name": "a", "gpu": "H100", "nodes": 1},
                    {"name": "b", "gpu": "H100", "nodes": 1}],
             rollout__pool="a", train__pool="b"), "train.pool"),
    "one_off_colocated": (tiny(policy={"name": "one_off", "placement": "colocated"}),
                          "policy.placement"),
    "train_gpus_not_divisible": (tiny(train__tp=2, train__pp=2, train__gpus=6,
                                      policy__placement="disaggregated", rollout__gpus=2),
                                 "train"),
    "missing_trace": (tiny(workload__trace={"path": "no/such/trace"}), "workload.trace.path"),
    "missing_required": (tiny(model=None), "model"),
    "gmm_weights": (tiny(workload__response_len={"dist": "gmm", "weights": [0.5, 0.2],
                                                 "means": [100, 200], "stds": [10, 20]}),
                    "workload.response_len"),
    "unknown_dist": (tiny(workload__response_len={"dist": "zipf"}), "workload.response_len"),
    "sequence_exceeds_kv": (tiny(model="qwen2.5-7b", workload__max_response_len=3_000_000),
                            "max_response_len"),
    "duplicate_pools": (tiny(pools=[{"name": "a", "gpu": "H100", "nodes": 1},
                                    {"name": "a", "gpu": "H100", "nodes": 1}]), "pools"),
    "judge_without_section": (tiny(reward={"kind": "judge"}), "reward"),
    "missing_profile": (tiny(pools__0__profile="nope.json"), "pools.0.profile"),
    "profile_not_json": (tiny(pools__0__profile="s.yaml"), "pools.0.profile"),
    "pool_without_gpu_or_profile": (tiny(pools__0__gpu=None), "pools.0"),
    "utilization_out_of_range": (tiny(rollout__gpu_memory_utilization=1.5),
                                 "rollout.gpu_memory_utilization"),
    "tp_does_not_divide_heads": (tiny(rollout__tp=4), "rollout.tp"),
    "infinite_bandwidth": (tiny(link={"bandwidth": ".inf"}), "link.bandwidth"),
    "infinite_number": (tiny(reward__latency={"median": float("inf")}),
                        "reward.latency.median"),
    "judge_gpus_do_not_fit": (
        tiny(reward={"kind": "judge", "judge": {"model": "qwen2.5-0.5b", "pool": "cluster",
                                                "gpus": 2}}), "reward.judge.gpus"),
    "judge_kv_too_small": (
        tiny(pools=[{"name": "cluster", "gpu": "H100", "nodes": 1},
                    {"name": "j", "gpu": "H100", "nodes": 1}],
             reward={"kind": "judge", "judge": {"model": "qwen2.5-72b", "pool": "j",
                                                "gpus": 2, "tp": 2}},
             workload__max_response_len=16_000, model="qwen2.5-0.5b"),  # within its context
        "reward.judge"),
    "not_a_mapping": ("- just\n- a list\n", ""),
    "invalid_yaml": ("model: [unclosed\n", "line"),
    "empty_file": ("", "empty"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_scenario_one_line_exit_2(name, tmp_path, monkeypatch, capsys):
    data, field = CASES[name]
    path = write(tmp_path, data)
    code, out, err = run_cli(["run", str(path), "--out", str(tmp_path / "out")],
                             monkeypatch, capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert field in lines[0], lines[0]
    assert out == ""
    assert not (tmp_path / "out" / "summary.json").exists()


def test_missing_scenario_file(tmp_path, monkeypatch, capsys):
    code, _, err = run_cli(["run", str(tmp_path / "none.yaml")], monkeypatch, capsys)
    assert code == 2 and "not found" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("override,field", [
    ("rollout.tp", "--set"),  # no '='
    ("rollout.tp=banana", "rollout.tp"),
    ("pools.nope.nodes=2", "pools.nope"),
    ("pools.7.nodes=2", "pools.7"),
    ("name='unclosed", "--set"),
    ("workload.response_len={dist: fixed, value: 3", "--set"),
])
def test_bad_overrides(override, field, tmp_path, monkeypatch, capsys):
    path = write(tmp_path, tiny())
    code, _, err = run_cli(["run", str(path), "--set", override], monkeypatch, capsys)
    assert code == 2, err
    assert field in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args,field", [
    (["--gpu", "H999", "--model", "qwen2.5-7b"], "--gpu"),
    (["--gpu", "H100", "--model", "nope"], "--model"),
    (["--gpu", "H100", "--model", "missing.yaml"], "--model"),
    (["--gpu", "H100", "--model", "qwen2.5-7b", "--batch", "-1"], "--batch"),
])
def test_estimate_bad_input(args, field, monkeypatch, capsys):
    code, _, err = run_cli(["estimate", *args], monkeypatch, capsys)
    assert code == 2 and field in err and len(err.strip().splitlines()) == 1


def test_real_process_exit_code_and_no_traceback(tmp_path):
    path = write(tmp_path, tiny(rollout__tp=16))
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "run", str(path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "rollout.tp" in proc.stderr


def test_out_that_is_a_file(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, tiny())
    code, _, err = run_cli(["run", str(path), "--out", str(path)], monkeypatch, capsys)
    assert code == 2 and "--out" in err and len(err.strip().splitlines()) == 1


def test_apostrophe_inside_a_value_is_plain_text(tmp_path, monkeypatch, capsys):
    import json

    path = write(tmp_path, tiny())
    code, out, _ = run_cli(["run", str(path), "--json", "--set", "name=it's,steps=3"],
                           monkeypatch, capsys)
    assert code == 0 and json.loads(out)["steps"] == 3


def test_validate_rejects_an_unknown_mode(monkeypatch, capsys, tmp_path):
    code, _, err = run_cli(["validate", "--mode", "tail_batching", "--out", str(tmp_path / "v")],
                           monkeypatch, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--mode" in lines[0] and "sync, one_off, async or all" in lines[0]
    assert not (tmp_path / "v").exists()  # nothing written for a bad command line


# Issue 18: hostile inputs that exited 1 ("internal error"), hung, or were accepted silently.
HOSTILE = {
    "duplicate_key": ("steps: 2\nsteps: 3\n", "duplicate key 'steps'"),
    "bool_steps": (tiny(steps=True), "steps"),
    "bool_nested_number": (tiny(rollout__gpu_memory_utilization=True),
                           "rollout.gpu_memory_utilization"),
    "bool_in_length_dist": (tiny(workload__response_len={"dist": "fixed", "value": True}),
                            "workload.response_len.value"),
    "bool_pool_nodes": (tiny(pools__0__nodes=False), "pools.0.nodes"),
    "deeply_nested": ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper"),
    "alias_bomb": ("a: &a [1]\n" + "".join(f"b{i}: &b{i} [*{'a' if i == 0 else f'b{i-1}'}]\n"
                                           for i in range(1200)), "aliases"),
    "huge_prompts_per_step": (tiny(workload__prompts_per_step=100_000_000),
                              "workload.prompts_per_step"),
    "steps_1e9": (tiny(steps=1_000_000_000), "steps"),
    "prompts_1e8_as_yaml_text": (tiny(workload__prompts_per_step="1e8"), "100000000"),
    "gpus_1e11": (tiny(pools__0__nodes=15_625_000_000), "pools"),
    "reward_workers_1e14": (tiny(reward__workers=100_000_000_000_000), "reward.workers"),
    "negative_empirical_value": (
        tiny(workload__response_len={"dist": "empirical", "values": [100, -5]}),
        "workload.response_len"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_scenario_one_line_exit_2(name, tmp_path, monkeypatch, capsys):
    data, fragment = HOSTILE[name]
    path = write(tmp_path, data)
    code, out, err = run_cli(["run", str(path), "--out", str(tmp_path / "out")],
                             monkeypatch, capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlsim: error: "), err
    assert fragment in lines[0], lines[0]
    assert out == "" and not (tmp_path / "out").exists()


def test_too_large_names_the_estimate_and_the_override_flag(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, tiny(steps=1_000_000_000))
    code, _, err = run_cli(["compare", str(path), str(path)], monkeypatch, capsys)
    assert code == 2
    assert "--allow-large" in err and "events" in err and "GiB" in err


@pytest.mark.parametrize("args", [
    ["--foo"], ["frob"], ["run", "--foo"], ["run", "--set"], ["run", "--out"], ["estimate"],
    ["estimate", "--gpu", "H100", "--model", "qwen2.5-7b", "--batch", "many"], ["list"],
    ["compare"], ["report"], ["sweep"], ["validate", "--repeats", "0"], ["-x"],
])
def test_usage_errors_exit_2_with_one_line(args, monkeypatch, capsys):
    code, out, err = run_cli(args, monkeypatch, capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlsim: error: "), err
    assert "internal error" not in err and out == ""


def test_version(monkeypatch, capsys):
    from rlsim import __version__

    code, out, err = run_cli(["--version"], monkeypatch, capsys)
    assert code == 0 and out.strip() == f"rlsim {__version__}" and err == ""


def test_dev_zero_is_refused_without_reading_it(monkeypatch, capsys):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    code, _, err = run_cli(["run", "/dev/zero"], monkeypatch, capsys)
    assert code == 2 and "not a regular file" in err and len(err.strip().splitlines()) == 1


def test_oversized_scenario_file(tmp_path, monkeypatch, capsys):
    from rlsim.config.loading import MAX_SCENARIO_BYTES

    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * MAX_SCENARIO_BYTES + "\n")
    code, _, err = run_cli(["run", str(path)], monkeypatch, capsys)
    assert code == 2 and "MiB" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("content,where,allow", [
    ("100\n200\n-5\n", ":3:", "> 0"),
    ("100\n0\n", ":2:", "> 0"),
    ("[100, -3]", "item 2", "> 0"),
])
def test_empirical_length_file_values(content, where, allow, tmp_path, monkeypatch, capsys):
    (tmp_path / "lengths.txt").write_text(content)
    path = write(tmp_path, tiny(workload__response_len={"dist": "empirical",
                                                        "path": "lengths.txt"}))
    code, _, err = run_cli(["run", str(path)], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "lengths.txt" + where in err or ("lengths.txt" in err and where in err), err
    assert allow in err


def test_empirical_seconds_file_may_hold_zeros(tmp_path, monkeypatch, capsys):
    """Environment-step seconds of 0 are valid (only negatives are refused there)."""
    (tmp_path / "env.txt").write_text("0\n0.5\n2\n")
    agentic = {"turns": {"dist": "fixed", "value": 2},
               "env_step": {"dist": "empirical", "path": "env.txt"}}
    path = write(tmp_path, tiny(workload__agentic=agentic, steps=1))
    code, _, err = run_cli(["run", str(path), "--json"], monkeypatch, capsys)
    assert code == 0, err


def _fleet(tmp_path: Path, trace_csv: str | None = None, **fields) -> Path:
    data = {"kind": "fleet", "name": "f",
            "pools": [{"name": "h20", "gpu": "H20", "nodes": 2}],
            "templates": {"t": {"model": "qwen2.5-7b", "steps": 1}}}
    data.update(fields)
    if trace_csv is not None:
        (tmp_path / "jobs.csv").write_bytes(trace_csv.encode("latin-1"))
        data["trace"] = {"path": "jobs.csv"}
    return write(tmp_path, data, "fleet.yaml")


@pytest.mark.parametrize("csv_text,fragment", [
    ("name,arrival_s,template\njob0,abc,t\n", "arrival"),
    ("name,arrival_s,template\njob0,1,t,extra\n", "trace row 1"),
    ("name,arrival_s,template,steps\njob0,1,t,1.5\n", "steps"),
    ("name,arrival_s,template,duration_h\njob0,1,t,soon\n", "duration_h"),
    ("\xff\xfe garbage", "UTF-8"),
    ("name,arrival_s,template\njob0,1,nope\n", "template"),
])
def test_malformed_fleet_trace(csv_text, fragment, tmp_path, monkeypatch, capsys):
    path = _fleet(tmp_path, csv_text)
    code, _, err = run_cli(["run", str(path)], monkeypatch, capsys)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and fragment in err, err


@pytest.mark.parametrize("fields,fragment", [
    ({"templates": "/dev/zero"}, "templates"),
    ({"templates": {"t": 5}, "jobs": [{"name": "j", "template": "t"}]}, "templates.t"),
    ({"trace": {"path": "table.parquet"}}, "Parquet"),
])
def test_malformed_fleet_files(fields, fragment, tmp_path, monkeypatch, capsys):
    (tmp_path / "table.parquet").write_bytes(b"PAR1 not a table")
    path = _fleet(tmp_path, **fields)
    code, _, err = run_cli(["run", str(path)], monkeypatch, capsys)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and fragment in err, err


def test_duplicate_key_in_a_fleet_file(tmp_path, monkeypatch, capsys):
    path = tmp_path / "fleet.yaml"
    path.write_text("kind: fleet\nname: a\nname: b\n")
    code, _, err = run_cli(["run", str(path)], monkeypatch, capsys)
    assert code == 2 and "duplicate key 'name'" in err and len(err.strip().splitlines()) == 1
