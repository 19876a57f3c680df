"""Exit codes per case (issue 34): a file that is not YAML text, an unknown key (reported
first, with the closest known key) and a sweep whose every point is invalid exit 2 with one
line; a sweep with some invalid points exits 1. Each through a real process, within 10 s."""

from __future__ import annotations

import gzip
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.scenarios import tiny, write

ROOT = Path(__file__).resolve().parents[2]


def rlsim(*args: str, cwd: Path) -> tuple[int, str, str, float]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - t0


NOT_TEXT = {
    "elf": Path(sys.executable).read_bytes()[:300],
    "gzip": gzip.compress(b"steps: 2\n"),
    "control_char": b"steps: 2\x7f\n",
    "latin1": "name: caf\xe9\n".encode("latin-1"),
}


@pytest.mark.parametrize("name", sorted(NOT_TEXT))
def test_a_file_that_is_not_yaml_text_exits_2(name, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(NOT_TEXT[name])
    code, out, err, wall = rlsim("run", str(path), cwd=tmp_path)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "not" in lines[0] and "YAML text" in lines[0], err
    assert "internal error" not in err and out == "" and wall < 10


@pytest.mark.parametrize(("changes", "path", "suggestion"), [
    ({"workload__prompts_per_step": None, "workload__prompts_per_stp": 8},
     "workload.prompts_per_stp", "'prompts_per_step'"),
    ({"rollout__tpp": 2}, "rollout.tpp", "'tp'"),
    ({"pools__0__gpu_per_node": 4}, "pools.0.gpu_per_node", "'gpus_per_node'"),
    ({"modle": "qwen2.5-7b"}, "modle", "'model'"),
])
def test_an_unknown_key_is_reported_first_with_the_closest_known_key(
        changes, path, suggestion, tmp_path):
    scenario = write(tmp_path, tiny(**changes))
    code, _, err, _ = rlsim("run", str(scenario), cwd=tmp_path)
    assert code == 2
    line = err.strip()
    assert "\n" not in line
    assert f"{path}: unknown field; did you mean {suggestion}" in line.replace('"', "'"), line


def test_an_unknown_key_with_nothing_close_names_no_suggestion(tmp_path):
    scenario = write(tmp_path, tiny(zzz=1))
    code, _, err, _ = rlsim("run", str(scenario), cwd=tmp_path)
    assert code == 2 and "zzz: unknown field; check the spelling" in err


def test_a_sweep_whose_every_point_is_invalid_exits_2_writing_nothing(tmp_path):
    scenario = write(tmp_path, tiny())
    code, out, err, wall = rlsim("sweep", str(scenario), "--grid", "rollout.tp=3,5",
                                 "--out", str(tmp_path / "sw"), cwd=tmp_path)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rlsim: error: ") and "rollout.tp" in lines[0]
    assert "every point of the sweep is invalid (2 of 2" in lines[0]
    # the file leads the line, as it does when every point fails the same way
    assert lines[0].startswith(f"rlsim: error: {scenario}: rollout.tp: "), lines[0]
    assert out == "" and not (tmp_path / "sw").exists() and wall < 10


def test_a_sweep_with_some_invalid_points_exits_1_and_keeps_the_others(tmp_path):
    scenario = write(tmp_path, tiny())
    code, _, err, _ = rlsim("sweep", str(scenario), "--grid", "rollout.tp=1,3",
                            "--out", str(tmp_path / "sw"), "--jobs", "1", cwd=tmp_path)
    assert code == 1, err
    assert "1 of 2 points failed" in err
    assert len(list((tmp_path / "sw" / "results").glob("*.parquet"))) == 2
