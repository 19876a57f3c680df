"""`rlsim estimate`: the fit checks of `rlsim run` (exit 2, one line), and what it reports."""

from __future__ import annotations

import json

import pytest

from rlsim.config.hardware import lookup_gpu, lookup_model
from rlsim.cost import InferenceCost, builtin_profile
from tests.cli.test_bad_input import run_cli
from tests.scenarios import tiny, write


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlsim: error: "), err
    return lines[0]


def test_model_too_large_is_refused_with_advice(monkeypatch, capsys):
    code, out, err = run_cli(["estimate", "--gpu", "H100", "--model", "qwen2.5-72b"],
                             monkeypatch, capsys)
    assert code == 2 and out == ""
    line = one_line_error(err)
    assert "--tp" in line and "qwen2.5-72b does not fit" in line
    assert "use tp >= " in line and "a node has 8 H100s" in line and "H200 at tp >= " in line


def test_context_beyond_the_model_is_refused(monkeypatch, capsys):
    code, _, err = run_cli(["estimate", "--gpu", "H100", "--model", "llama-3-8b",
                            "--context", "9000"], monkeypatch, capsys)
    assert code == 2
    line = one_line_error(err)
    assert "--context" in line and "8192" in line


def test_batch_beyond_the_kv_cache_is_refused(monkeypatch, capsys):
    code, _, err = run_cli(["estimate", "--gpu", "H100", "--model", "llama-3-8b",
                            "--batch", "4096", "--context", "8000"], monkeypatch, capsys)
    assert code == 2
    line = one_line_error(err)
    assert "--batch" in line and "at most" in line


@pytest.mark.parametrize("util", ["0", "1.5"])
def test_bad_memory_utilization(util, monkeypatch, capsys):
    code, _, err = run_cli(["estimate", "--gpu", "H100", "--model", "qwen2.5-7b",
                            "--gpu-memory-utilization", util], monkeypatch, capsys)
    assert code == 2 and "--gpu-memory-utilization" in one_line_error(err)


def test_reports_throughput_kv_and_largest_batch(monkeypatch, capsys):
    args = ["estimate", "--gpu", "H100", "--model", "qwen2.5-7b", "--tp", "2",
            "--batch", "256", "--context", "2048"]
    code, out, _ = run_cli([*args, "--json"], monkeypatch, capsys)
    assert code == 0
    data = json.loads(out)
    gpu, model = lookup_gpu("H100"), lookup_model("qwen2.5-7b")
    cost = InferenceCost(model, gpu, 2, builtin_profile(gpu))
    assert data["kv_capacity_tokens"] == cost.kv_capacity_tokens(0.9)
    assert data["max_batch_at_context"] == data["kv_capacity_tokens"] // 2048
    step = cost.step(256, 256 * 2048, 0).total_s
    assert data["step_s"]["total_s"] == pytest.approx(step)
    assert data["tokens_per_s_per_engine"] == pytest.approx(256 / step)
    assert data["tokens_per_s_per_gpu"] == pytest.approx(256 / step / 2)
    code, text, _ = run_cli(args, monkeypatch, capsys)
    assert code == 0
    assert "per engine" in text and "per GPU" in text
    assert f"{data['kv_capacity_tokens']:,d} tokens" in text
    assert f"{data['max_batch_at_context']:,d} sequences" in text


def test_run_refuses_the_same_configuration(tmp_path, monkeypatch, capsys):
    """`run` and `estimate` share the fit check: same advice, each naming its own field."""
    path = write(tmp_path, tiny(model="qwen2.5-72b", workload__max_response_len=1000))
    code, _, err = run_cli(["run", str(path)], monkeypatch, capsys)
    assert code == 2
    line = one_line_error(err)
    assert "rollout.tp" in line and "qwen2.5-72b does not fit" in line
    assert "a node has 8 H100s" in line and "H200 at tp >= " in line
    path = write(tmp_path, tiny(model="llama-3-8b", workload__max_response_len=8000,
                                workload__max_prompt_len=1024), "ctx.yaml")
    code, _, err = run_cli(["run", str(path)], monkeypatch, capsys)
    assert code == 2
    line = one_line_error(err)
    assert "workload.max_response_len" in line and "max context of 8192" in line


def test_list_gpus_shows_gib_and_gb(monkeypatch, capsys):
    code, out, _ = run_cli(["list", "gpus"], monkeypatch, capsys)
    assert code == 0
    h100 = next(line for line in out.splitlines() if line.startswith("H100"))
    gpu = lookup_gpu("H100")
    assert f"{gpu.hbm / 2**30:.1f} GiB" in h100 and f"{gpu.hbm / 1e9:.1f} GB" in h100
