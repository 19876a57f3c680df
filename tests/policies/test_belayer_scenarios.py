"""The Belayer scenarios: the same job and faults under two sets of recovery schemes, and
the issue's targets that hold by mechanism (worker recovery, failure-free overhead)."""

from __future__ import annotations

from pathlib import Path

import yaml

from rlsim.api import simulate_file
from tests.scenarios import load_script

HERE = Path(__file__).resolve().parents[2] / "scenarios" / "belayer"
BASELINE, BELAYER = HERE / "swe-qwen3-8b-baseline.yaml", HERE / "swe-qwen3-8b-belayer.yaml"


def test_the_scenarios_differ_only_in_recovery() -> None:
    a, b = (yaml.safe_load(p.read_text()) for p in (BASELINE, BELAYER))
    assert a["faults"] == b["faults"]
    assert a["recovery"]["engine"]["scheme"] == "cold_restart"
    assert b["recovery"]["engine"]["scheme"] == "shadow"
    assert a["recovery"]["env"]["scheme"] == "restart"
    assert b["recovery"]["env"]["scheme"] == "checkpoint"
    assert b["recovery"]["env"]["checkpoints"]["policy"] == "adaptive"
    for key in ("name", "description", "recovery"):
        a.pop(key), b.pop(key)
    assert a == b


def test_a_shadow_brings_an_engine_back_at_least_40x_faster_than_a_cold_start() -> None:
    crashes = ["--set", "steps=1", "--set", "faults.env=[]",
               "--set", "faults.engine=[{times: [100.05 s, 300.13 s], targets: [0, 3]}]"]
    times = []
    for path in (BASELINE, BELAYER):
        result = simulate_file(path, [c for c in crashes if c != "--set"])
        rec = [i.attrs["recovery_s"] for i in result.recorder.instants
               if i.track == "faults" and i.name == "recovered"]
        assert len(rec) == 2
        times.append(sum(rec) / len(rec))
    assert times[0] / times[1] >= 40


def test_the_belayer_schemes_cost_under_2_percent_without_faults() -> None:
    steps = []
    for path in (BASELINE, BELAYER):
        result = simulate_file(path, ["steps=2", "faults.scale=0"])
        steps.append(result.summary["step_time_s"]["mean"])
        assert result.summary["faults"]["injected"] == 0
    assert steps[1] / steps[0] - 1 < 0.02


def test_the_report_script_loads() -> None:
    mod = load_script(HERE / "make_report.py", "belayer_make_report")
    assert mod.SCALES[0] == 0.0 and "adaptive" in dict(mod.POLICIES)


def test_with_belayers_environment_fault_model_checkpoints_recover_1_5_to_3_5x_faster(
        ) -> None:
    """Golden: the Belayer scenarios run with Qwen3-32B at rollout TP 8 (Belayer's
    environment-fault runs), seed 0; reports/belayer.md has the three-seed mean."""
    mod = load_script(HERE / "make_report.py", "belayer_make_report_env")
    times = []
    for path in (BASELINE, BELAYER):
        summary = simulate_file(path, list(mod.ENV_SETUP)).summary
        times.append(summary["faults"]["by_kind"]["env"]["recovery_s"]["mean"])
    assert 1.5 <= times[0] / times[1] <= 3.5
