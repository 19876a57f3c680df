"""rlsim.fit.checks: a log that is not the scenario's job, and fitted values to distrust."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rlsim.config.loading import scenario_from_dict
from rlsim.fit.checks import SPEED_RANGE, implausible, mismatches
from rlsim.fit.fitter import ParamFit
from tests.cli.test_bad_input import run_cli
from tests.cli.test_byo import LOGS, _verl_job
from tests.scenarios import tiny


def _param(name: str, value: float) -> ParamFit:
    return ParamFit(name, value, None, (0.05, 4.0), 1.0, value, 1.0, False)


def _measured(**over) -> dict:
    base = {"framework": "verl", "response_len": {"mean": 300.0, "max": 1000.0},
            "prompt_len": {"mean": 100.0, "max": 200.0}, "gpus": 8.0,
            "total_tokens": 400.0 * 8 * 4}
    return base | over


def _scenario(**changes):
    return scenario_from_dict(tiny(framework={"name": "verl"}, **changes))[0]


def test_a_matching_log_has_no_mismatch():
    assert mismatches(_scenario(), _measured()) == []


@pytest.mark.parametrize("over, start", [
    ({"framework": "roll"}, "framework: the log is ROLL"),
    ({"response_len": {"mean": 300.0, "max": 4100.0}}, "lengths: the log's responses reach "
                                                       "4100"),
    ({"prompt_len": {"mean": 100.0, "max": 9000.0}}, "lengths: the log's prompts reach 9000"),
    ({"gpus": 16.0}, "GPUs: the log's throughput says 16.0 GPUs"),
    ({"total_tokens": 400.0 * 64}, "batch: the log trained 64 samples"),
])
def test_each_mismatch_is_one_line_naming_both_sides(over, start):
    [line] = mismatches(_scenario(), _measured(**over))
    assert line.startswith(start) and "\n" not in line


def test_what_the_log_or_scenario_does_not_state_is_not_checked():
    sc = scenario_from_dict(tiny())[0]  # no framework.name
    assert mismatches(sc, _measured(framework="roll", gpus=None, total_tokens=None)) == []
    # within the stated tolerance (25%) and the cap's rounding (1%)
    assert mismatches(_scenario(), _measured(gpus=9.5, total_tokens=400.0 * 38,
                                             response_len={"mean": 300.0,
                                                           "max": 4000 * 1.005})) == []


def test_speeds_outside_the_range_and_overheads_over_half_the_step_are_flagged():
    lo, hi = SPEED_RANGE
    params = {"rollout_speed": _param("rollout_speed", 0.13),
              "train_speed": _param("train_speed", 0.5),
              "step_overhead": _param("step_overhead", 60.0),
              "weight_sync_overhead": _param("weight_sync_overhead", 5.0)}
    lines = implausible(params, step_s=100.0)
    assert len(lines) == 2
    assert lines[0].startswith("rollout_speed 0.13: the measured run is 7.7x slower")
    assert lines[1].startswith("step_overhead 60 s is 60% of the measured step")
    assert implausible({"speed": _param("speed", hi * 1.01)}, 100.0)
    assert not implausible({"speed": _param("speed", lo * 1.01)}, 100.0)


def test_a_fit_far_off_the_model_is_flagged_in_the_cli_and_fit_md(tmp_path: Path,
                                                                   monkeypatch, capsys):
    # The gsm8k log with every step's generation 8x longer (the step and the throughput
    # moved with it): rollout_speed comes out near 1/8 of the untouched log's fit.
    def slower(line: str) -> str:
        gen = re.search(r"timing_s/gen:([0-9.]+)", line)
        step = re.search(r"timing_s/step:([0-9.]+)", line)
        if gen is None or step is None:
            return line
        g, s = float(gen.group(1)), float(step.group(1))
        new_step = s + 7 * g
        for key, value in (("timing_s/gen", 8 * g), ("timing_s/step", new_step),
                           ("perf/time_per_step", new_step)):
            line = re.sub(rf"{key}:[0-9.]+", f"{key}:{value:.2f}", line)
        return re.sub(r"perf/throughput:([0-9.]+)",
                      lambda m: f"perf/throughput:{float(m.group(1)) * s / new_step:.3f}", line)

    log = tmp_path / "slow_gen.log"
    log.write_text("".join(slower(line) for line in
                           (LOGS / "verl_console_gsm8k.log").read_text().splitlines(True)))
    job = _verl_job(tmp_path, monkeypatch, capsys, "data.train_batch_size=512")
    out = tmp_path / "fit"
    code, stdout, err = run_cli(["fit", str(job), "--log", str(log), "--out", str(out),
                                 "--json"], monkeypatch, capsys)
    assert code == 0
    result = json.loads(stdout)
    assert result["params"]["rollout_speed"]["value"] < SPEED_RANGE[0]
    assert any(m.startswith("rollout_speed ") for m in result["implausible"])
    assert "warning: implausible rollout_speed" in err
    md = (out / "fit.md").read_text()
    assert "## Warnings" in md and "Implausible: rollout_speed" in md
