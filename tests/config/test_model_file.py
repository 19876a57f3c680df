"""`model:` in a scenario takes a YAML/JSON model file, relative to the scenario, as
`rlsim estimate --model` does; bad model files are exit 2, one line, naming `model` and the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from rlsim.config.hardware import ModelFileError, load_model_file
from rlsim.config.loading import load_scenario
from tests.cli.test_bad_input import run_cli
from tests.scenarios import tiny, write

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "scenarios" / "examples" / "llama-3.2-3b.model.yaml"
ARCH = {"layers": 4, "hidden": 512, "heads": 8, "kv_heads": 8, "ffn": 2048, "vocab": 1000,
        "max_context": 8192}


def test_example_model_file_is_llama_3_2_3b() -> None:
    spec = load_model_file(str(EXAMPLE))
    assert spec.name == "llama-3.2-3b"
    assert spec.params == pytest.approx(3.21e9, rel=0.01)  # the published parameter count
    assert spec.max_context == 131072


def test_scenario_model_file_is_relative_to_the_scenario(tmp_path, monkeypatch) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "arch.yaml").write_text(yaml.safe_dump(ARCH))
    path = write(tmp_path, tiny(model="models/arch.yaml"))
    monkeypatch.chdir(ROOT)  # not the scenario's folder
    scenario, _ = load_scenario(path)
    assert scenario.model_spec == load_model_file("models/arch.yaml", tmp_path)
    assert scenario.model_spec.name == "arch"  # the file's stem when it names none
    # The resolved scenario carries the architecture inline, so it reloads on its own.
    again, _ = load_scenario(write(tmp_path / "models", scenario.dump(), "resolved.yaml"))
    assert again.model_spec == scenario.model_spec


def test_run_with_the_example_model_file(tmp_path, monkeypatch, capsys) -> None:
    rel = os.path.relpath(EXAMPLE, tmp_path)
    path = write(tmp_path, tiny(model=rel, steps=1))
    code, out, err = run_cli(["run", str(path), "--json"], monkeypatch, capsys)
    assert code == 0, err
    assert json.loads(out)["steps"] == 1


def test_estimate_takes_the_same_file(monkeypatch, capsys) -> None:
    code, out, err = run_cli(["estimate", "--gpu", "H100", "--model", str(EXAMPLE),
                              "--batch", "4", "--context", "100", "--json"], monkeypatch, capsys)
    assert code == 0, err
    assert json.loads(out)["model"] == "llama-3.2-3b"


@pytest.mark.parametrize(("content", "needle"), [
    (None, "not found"),
    ("layers: [1, 2", "not valid YAML/JSON"),
    ("- 1\n- 2\n", "must hold a mapping"),
    (yaml.safe_dump({**ARCH, "layers": -1}), "layers"),
    (yaml.safe_dump({**ARCH, "wings": 2}), "wings"),
    (yaml.safe_dump({k: v for k, v in ARCH.items() if k != "vocab"}), "vocab"),
    (yaml.safe_dump({**ARCH, "heads": 7}), "heads"),
    ("[" * 5000 + "]" * 5000, "not valid YAML/JSON"),  # nesting past the parser's stack
    ("# padding\n" * 20000, "larger than"),
])
def test_bad_model_file_is_exit_2_naming_model_and_file(content, needle, tmp_path, monkeypatch,
                                                         capsys) -> None:
    if content is not None:
        (tmp_path / "arch.yaml").write_text(content)
    path = write(tmp_path, tiny(model="arch.yaml"))
    code, _, err = run_cli(["run", str(path)], monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "model:" in lines[0] and "arch.yaml" in lines[0] and needle in lines[0]
    # The estimate names its option and the same file.
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(["estimate", "--gpu", "H100", "--model", "arch.yaml"], monkeypatch,
                           capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "--model" in lines[0] and "arch.yaml" in lines[0]


def test_unknown_catalogue_name_still_lists_the_catalogue(tmp_path, monkeypatch, capsys) -> None:
    path = write(tmp_path, tiny(model="gpt-9"))
    code, _, err = run_cli(["run", str(path)], monkeypatch, capsys)
    assert code == 2 and "model:" in err and "qwen2.5-7b" in err and "model file" in err


def test_loader_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not found"):
        load_model_file("no/such/file.json")
    assert issubclass(ModelFileError, ValueError)


@pytest.mark.parametrize("name", ["bad\x00name", "x" * 5000, "bad\x00name.yaml"])
def test_unusable_names_are_exit_2(name, monkeypatch, capsys) -> None:
    code, _, err = run_cli(["estimate", "--gpu", "H100", "--model", name], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--model" in err
