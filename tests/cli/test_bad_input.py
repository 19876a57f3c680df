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
                                                "gpus": 4, "tp": 4}},
             workload__max_response_len=900_000, model="qwen2.5-0.5b"),
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
