"""`rlsim import` and `rlsim fit` end to end through the CLI: files written, exit codes, one
line naming the flag or log line on bad input, nothing partial left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.test_bad_input import run_cli

ROOT = Path(__file__).resolve().parents[2]
VERL_SCRIPT = ROOT / "tests/data/importers/verl/run_qwen3-8b.sh"
ROLL_ASYNC = ROOT / "tests/data/importers/roll/qwen2.5-7B-rlvr_megatron/rlvr_config_async.yaml"
LOGS = ROOT / "tests/data/fit"


def test_import_verl_writes_a_scenario_that_runs(tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "job.yaml"
    code, stdout, _ = run_cli(["import", "verl", str(VERL_SCRIPT), "--gpu", "H100",
                               "--response-len-median", "300", "--out", str(out)],
                              monkeypatch, capsys)
    assert code == 0 and "wrote" in stdout
    text = out.read_text()
    data = yaml.safe_load(text)
    assert data["workload"]["samples_per_prompt"] == 5
    assert "# actor_rollout_ref.rollout.n" in text
    assert "# Not used:" in text
    code, stdout, _ = run_cli(["run", str(out), "--set", "steps=2", "--json"],
                              monkeypatch, capsys)
    assert code == 0 and json.loads(stdout)["steps"] == 2


def test_import_roll_async(tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "roll.yaml"
    code, _, _ = run_cli(["import", "roll", str(ROLL_ASYNC), "--gpu", "H800",
                          "--response-len-median", "1500", "--out", str(out)],
                         monkeypatch, capsys)
    assert code == 0
    assert yaml.safe_load(out.read_text())["policy"]["name"] == "async"


@pytest.mark.parametrize("args, field", [
    ([], "--gpu"),                                        # the GPU type is not in configs
    (["--gpu", "X9"], "--gpu"),                           # not a catalogue GPU
    (["--gpu", "H100"], "--response-len-median"),         # lengths are not in configs
])
def test_import_bad_flags_one_line_exit_2(args, field, tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "job.yaml"
    code, _, err = run_cli(["import", "verl", str(VERL_SCRIPT), "--out", str(out), *args],
                           monkeypatch, capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and field in err
    assert not out.exists()


def test_import_keeps_an_existing_file(tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "job.yaml"
    out.write_text("mine\n")
    code, _, err = run_cli(["import", "verl", str(VERL_SCRIPT), "--gpu", "H100",
                            "--response-len-median", "300", "--out", str(out)],
                           monkeypatch, capsys)
    assert code == 2 and "--force" in err and out.read_text() == "mine\n"


@pytest.mark.parametrize("framework, config, gpu, median, pinned", [
    ("verl", VERL_SCRIPT, "H100", "300", "veRL at volcengine/verl@b178a3cd56f5"),
    ("roll", ROLL_ASYNC, "H800", "1500", "ROLL at alibaba/ROLL@8eb27cc2"),
])
def test_import_names_the_framework_defaults_and_the_sets(
        framework, config, gpu, median, pinned, tmp_path, monkeypatch, capsys) -> None:
    out = tmp_path / "job.yaml"
    base = ["import", framework, str(config), "--gpu", gpu, "--response-len-median", median,
            "--out", str(out)]
    code, stdout, _ = run_cli(base, monkeypatch, capsys)
    assert code == 0 and stdout.strip().endswith(f"; defaults of {pinned})")
    header = [line for line in out.read_text().splitlines() if line.startswith("#")][:4]
    assert f"# Defaults of {pinned} fill every key the config does not set." in header
    assert not any("--set" in line for line in header)
    # Two --set: both in the header, in order; each field they set names its own.
    key, other = (("data.train_batch_size", "actor_rollout_ref.rollout.max_num_seqs")
                  if framework == "verl"
                  else ("rollout_batch_size", "num_return_sequences_in_group"))
    code, _, err = run_cli([*base, "--force", "--set", f"{key}=512", "--set", f"{other}=2"],
                           monkeypatch, capsys)
    assert code == 0, err
    text = out.read_text()
    assert (f"# Overridden after the config's own keys: --set {key}=512 --set {other}=2\n"
            in text)
    assert f"  prompts_per_step: 512  # {key} (--set {key}=512)\n" in text
    assert f": 2  # {other} (--set {other}=2)\n" in text


@pytest.mark.parametrize("framework, config", [("verl", VERL_SCRIPT), ("roll", ROLL_ASYNC)])
@pytest.mark.parametrize("word, message", [
    ("rollout.n", "--set: 'rollout.n' is not key=value; write key=value (+key=value adds a "
     "key, ++key=value adds or overrides, ~key removes)"),
    ("=8", "--set: '=8' names no key; write key=value (+key=value adds a key, ++key=value "
     "adds or overrides, ~key removes)"),
    ("++=8", "--set: '++=8' names no key"),
    ("a=1,2", "--set: 'a=1,2': a value with a comma is ambiguous"),
])
def test_import_bad_set_one_line_exit_2(framework, config, word, message, tmp_path,
                                        monkeypatch, capsys) -> None:
    out = tmp_path / "job.yaml"
    code, stdout, err = run_cli(["import", framework, str(config), "--gpu", "H100",
                                 "--response-len-median", "300", "--out", str(out),
                                 "--set", word], monkeypatch, capsys)
    assert code == 2 and not stdout and not out.exists()
    [line] = err.strip().splitlines()
    assert line.startswith(f"rlsim: error: {message}")


@pytest.mark.parametrize("framework, config, word, start", [
    ("verl", VERL_SCRIPT, "actor_rollout_ref.rollout.nme=vllm",
     "actor_rollout_ref.rollout.nme: not a veRL config key rlsim knows"),
    ("verl", VERL_SCRIPT, "+data.train_batch_size=8",
     "data.train_batch_size: veRL's config has it already"),
    ("roll", ROLL_ASYNC, "~no_such_key", "no_such_key: the config does not have it"),
])
def test_import_set_hydra_refuses_names_the_set(framework, config, word, start, tmp_path,
                                                monkeypatch, capsys) -> None:
    out = tmp_path / "job.yaml"
    code, _, err = run_cli(["import", framework, str(config), "--gpu", "H800",
                            "--response-len-median", "300", "--out", str(out), "--set", word],
                           monkeypatch, capsys)
    assert code == 2 and not out.exists()
    [line] = err.strip().splitlines()
    assert line.startswith(f"rlsim: error: --set {word}: {start}")


def _verl_job(tmp_path, monkeypatch, capsys, *sets: str) -> Path:
    """The veRL script imported; `sets`: its --set overrides. The gsm8k log's batch is 2,716
    samples a step (perf/total_num_tokens over the mean prompt + response length) on 8 GPUs,
    so `data.train_batch_size=512` (x rollout.n 5) is its job."""
    job = tmp_path / "job.yaml"
    code, _, _ = run_cli(["import", "verl", str(VERL_SCRIPT), "--gpu", "H100",
                          "--response-len-median", "300", "--out", str(job),
                          *(w for s in sets for w in ("--set", s))], monkeypatch, capsys)
    assert code == 0
    return job


def test_fit_writes_the_fitted_scenario_and_report(tmp_path, monkeypatch, capsys) -> None:
    job = _verl_job(tmp_path, monkeypatch, capsys, "data.train_batch_size=512")
    out = tmp_path / "fit"
    code, stdout, _ = run_cli(["fit", str(job), "--log", str(LOGS / "verl_console_gsm8k.log"),
                               "--out", str(out), "--json"], monkeypatch, capsys)
    assert code == 0
    result = json.loads(stdout)
    assert {"phases", "step", "params", "unidentified"} <= set(result)
    assert next(iter(result)) == "schema_version"
    assert {p.name for p in out.iterdir()} >= {"fitted.yaml", "fit.md", "fit.html"}
    assert result["mismatches"] == []
    fitted = yaml.safe_load((out / "fitted.yaml").read_text())
    assert "framework" in fitted and fitted["framework"]["name"] == "verl"
    # the fitted scenario runs like any other
    code, _, _ = run_cli(["run", str(out / "fitted.yaml"), "--set", "steps=2", "--json"],
                         monkeypatch, capsys)
    assert code == 0


def test_fit_bad_log_names_the_line(tmp_path, monkeypatch, capsys) -> None:
    job = tmp_path / "job.yaml"
    run_cli(["import", "verl", str(VERL_SCRIPT), "--gpu", "H100",
             "--response-len-median", "300", "--out", str(job)], monkeypatch, capsys)
    out = tmp_path / "fit"
    log = LOGS / "verl_issue1208_wrapped.log"
    code, _, err = run_cli(["fit", str(job), "--log", str(log), "--out", str(out)],
                           monkeypatch, capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and f"{log}:" in err
    assert not (out / "fitted.yaml").exists()


def test_fit_refuses_a_log_of_another_framework_in_one_line(tmp_path, monkeypatch,
                                                            capsys) -> None:
    job = _verl_job(tmp_path, monkeypatch, capsys)
    out = tmp_path / "fit"
    code, _, err = run_cli(["fit", str(job), "--log", str(LOGS / "roll_rlvr.log"),
                            "--out", str(out)], monkeypatch, capsys)
    assert code == 2
    [line] = err.strip().splitlines()
    assert "roll_rlvr.log" in line and "framework: the log is ROLL" in line
    assert "framework.name is verl" in line and "--force" in line
    assert not out.exists() or not any(out.iterdir())


def test_fit_names_every_mismatch_and_force_fits_with_a_warning(tmp_path, monkeypatch,
                                                                capsys) -> None:
    # The gsm8k log (8 GPUs, 2,716 samples a step, responses up to 1,011 tokens) on the
    # script's job at 16 GPUs, 1,024 x 5 samples and a 512-token cap.
    job = _verl_job(tmp_path, monkeypatch, capsys, "trainer.nnodes=2",
                    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
                    "data.max_response_length=512")
    out = tmp_path / "fit"
    log = LOGS / "verl_console_gsm8k.log"
    code, _, err = run_cli(["fit", str(job), "--log", str(log), "--out", str(out)],
                           monkeypatch, capsys)
    assert code == 2
    [line] = err.strip().splitlines()
    assert "lengths: the log's responses reach 1011 tokens" in line
    assert "GPUs: the log's throughput says 8.0 GPUs" in line and "scenario has 16" in line
    assert "batch: the log trained 2716 samples" in line and "= 5120" in line
    code, stdout, err = run_cli(["fit", str(job), "--log", str(log), "--out", str(out),
                                 "--force", "--json"], monkeypatch, capsys)
    assert code == 0
    assert len(json.loads(stdout)["mismatches"]) == 3
    assert "warning: fitted anyway (--force): GPUs" in err
    md = (out / "fit.md").read_text()
    assert "## Warnings" in md and "does not match the scenario (fitted anyway: --force)" in md
