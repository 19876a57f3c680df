"""Framework profiles: a scenario naming its framework takes the profile's knobs, the
profiles were fitted on calibration records only, and `rlsim list frameworks` shows them."""

from __future__ import annotations

import json

import pytest

from rlsim.config.frameworks import PROFILES_PATH, profiles
from rlsim.config.loading import scenario_from_dict
from rlsim.fit.checks import speed_range
from tests.cli.test_bad_input import run_cli
from tests.scenarios import tiny


def _framework(**section):
    return scenario_from_dict(tiny(framework=section))[0].framework


def test_a_named_framework_takes_its_profiles_knobs_unless_set():
    verl = profiles()["verl"]
    fw = _framework(name="verl")
    for knob, value in verl.knobs().items():
        assert getattr(fw, knob) == pytest.approx(value)
    assert _framework(name="verl", train_speed=0.9).train_speed == 0.9  # the file wins
    off = _framework(name="verl", profile=False)
    assert (off.train_speed, off.rollout_speed, off.step_overhead) == (1.0, 1.0, 0.0)
    plain = _framework()
    assert (plain.train_speed, plain.rollout_speed, plain.step_overhead) == (1.0, 1.0, 0.0)


def test_one_speed_sets_both_and_a_framework_without_profile_changes_nothing():
    nemo = profiles()["nemo-rl"]
    fw = _framework(name="nemo-rl")
    assert fw.train_speed == fw.rollout_speed == pytest.approx(nemo.params["speed"].value)
    roll = _framework(name="roll")
    assert "roll" not in profiles() and roll.train_speed == 1.0


def test_profiles_are_fitted_on_calibration_records_only():
    from calibration.realruns.split import MUST_SHOW, load_split

    split = load_split()
    doc = json.loads(PROFILES_PATH.read_text())
    assert doc["frameworks"]
    for name, prof in doc["frameworks"].items():
        assert prof["calibration_records"], name
        for rid in prof["calibration_records"]:
            assert split[rid] == "calibrate", rid
            assert not rid.startswith(MUST_SHOW), rid
        assert len(prof["params"]) <= 6
        for p in prof["params"].values():
            lo, hi = p["ci95"]
            assert lo <= p["value"] <= hi


def test_a_profile_sets_the_plausible_speed_range():
    verl = profiles()["verl"]
    lo, hi, what = speed_range("verl", "train_speed")
    p = verl.params["train_speed"]
    assert lo < p.ci95[0] <= p.value <= p.ci95[1] < hi and "verl profile" in what
    assert speed_range(None, "train_speed")[:2] == (1 / 3, 3.0)


def test_list_frameworks(monkeypatch, capsys):
    code, out, _ = run_cli(["list", "frameworks"], monkeypatch, capsys)
    assert code == 0
    for name, prof in profiles().items():
        [line] = [x for x in out.splitlines() if x.startswith(name + " ")]
        assert all(f"{p} " in line for p in prof.params)
        assert f"{len(prof.calibration_records)} calibration records" in line


def test_check_says_which_knobs_are_in_force_and_where_they_come_from(tmp_path, monkeypatch,
                                                                      capsys):
    from tests.scenarios import write

    path = write(tmp_path, tiny(framework={"name": "verl"}))
    code, out, _ = run_cli(["check", str(path)], monkeypatch, capsys)
    assert code == 0
    [line] = [x for x in out.splitlines() if x.startswith("framework: ")]
    assert line.startswith("framework: verl; knobs: train_speed ")
    assert "come from its profile" in line
    code, out, _ = run_cli(["check", str(path), "--json"], monkeypatch, capsys)
    fw = json.loads(out)["framework"]
    assert fw["name"] == "verl" and fw["profile"] is True
    assert fw["knobs"]["train_speed"] == pytest.approx(profiles()["verl"].knobs()["train_speed"])
    code, out, _ = run_cli(["check", str(write(tmp_path, tiny(), "plain.yaml"))],
                           monkeypatch, capsys)
    assert not any(x.startswith("framework: ") for x in out.splitlines())
