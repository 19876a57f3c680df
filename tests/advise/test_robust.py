"""`rlsim advise --draws N` (rlsim/advise/robust.py; issue 39, point 4): the threshold the
best configuration depends on, the robust order deciding the recommendation, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rlsim.advise.robust import _about, depends, stump
from rlsim.advise.run import AdviseOptions, advise
from tests.cli.test_bad_input import run_cli
from tests.scenarios import tiny, write

UNKNOWNS = {"reward.latency.median": {"low": 0.001, "high": 0.05}}


def test_a_stump_finds_the_threshold_between_two_winners() -> None:
    values = np.asarray([7.0, 1.0, 9.0, 3.0, 5.0, 6.0, 2.0, 8.0, 4.0, 10.0])
    winners = ["async" if v > 5.5 else "sync" for v in values]
    assert stump(values, winners) == (5.5, "sync", "async", 10)
    said = depends({"workload.response_len.median": values * 1000}, winners)
    assert said["kind"] == "threshold" and said["threshold"] == 5500
    assert said["text"] == ("async is best if workload.response_len.median is above about "
                            "5,500, sync below it (10 of 10 draws)")
    winners[0] = "sync"  # one draw against the rule: 9 of 10 still explained
    assert depends({"x": values}, winners)["explained"] == pytest.approx(0.9)


def test_the_same_winner_is_robust_and_a_mix_is_joint() -> None:
    values = np.arange(10.0)
    assert depends({"x": values}, ["a"] * 10) == {"kind": "robust", "winner": "a"}
    assert stump(values, ["a"] * 10) is None
    mixed = ["a", "b"] * 5  # alternating: no threshold explains 80%
    assert depends({"x": values}, mixed)["kind"] == "joint"


def test_thresholds_read_as_people_say_them() -> None:
    assert _about(6123.0) == "6,100" and _about(0.04567) == "0.046" and _about(12.3) == "12"


def test_the_robust_order_decides_and_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, tiny(steps=2, unknowns=UNKNOWNS), "job.yaml")
    advice = advise(AdviseOptions(scenario=str(path), out=str(tmp_path / "o"), trials=6,
                                  reps=1, draws=6, jobs=1), log=lambda _: None)
    robust = advice.robust
    assert robust is not None and robust["n"] == 6 and robust["ran"] == 6
    assert robust["configs"][-1]["key"] == "the scenario as given"
    assert robust["order"][0] == advice.recommended["description"]
    shares = [r["p_best"] for r in robust["configs"][:-1]]
    assert sum(shares) == pytest.approx(1.0)
    doc = json.loads((tmp_path / "o" / "advice.json").read_text())
    assert doc["robust"]["order"] == robust["order"]
    assert (tmp_path / "o" / "draws" / "results").is_dir()
    # the draws folder holds its own answer and report, as `compare --draws --out` writes
    draws = json.loads((tmp_path / "o" / "draws" / "draws.json").read_text())["draws"]
    assert [r["label"] for r in draws["runs"]] == [r["key"] for r in robust["configs"]]
    assert draws["ran"] == robust["ran"]
    assert (tmp_path / "o" / "draws" / "report.html").is_file()


@pytest.mark.parametrize(("args", "unknowns", "fragment"), [
    (["--draws", "0"], UNKNOWNS, "--draws: must be >= 1"),
    (["--draws", "4", "--robust", "mean"], UNKNOWNS, "--robust: choose p10 or p_best"),
    (["--robust", "p_best"], UNKNOWNS, "--robust: give --draws N as well"),
    (["--draws", "4"], {}, "--draws: the scenario declares no unknowns"),
    (["--draws", "4"], {"rollout.tp": {"low": 1, "high": 2}},
     "unknowns.rollout.tp is a field advise searches"),
])
def test_bad_draw_options_are_one_line(tmp_path: Path, monkeypatch, capsys, args, unknowns,
                                       fragment) -> None:
    path = write(tmp_path, tiny(unknowns=unknowns), "job.yaml")
    out = tmp_path / "out"
    code, _, err = run_cli(["advise", str(path), "--out", str(out), *args], monkeypatch,
                           capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, err
    assert not out.exists()


def test_a_search_that_improved_late_says_the_budget_may_change_the_answer() -> None:
    from rlsim.advise.objectives import OBJECTIVES
    from rlsim.advise.run import _budget_caveat
    from rlsim.advise.search import Evaluation

    obj = OBJECTIVES["tokens_per_s"]

    def trials(values: list[float]) -> list:
        return [(i, (), Evaluation("k", 0, 0, {"tokens_per_s": v}), None)
                for i, v in enumerate(values)]

    late = _budget_caveat(trials([1, 2, 3, 4]), obj, valid=100)
    assert late and "last improved at trial 4 of 4" in late[0] and "--trials 8" in late[0]
    assert _budget_caveat(trials([4, 1, 2, 3]), obj, valid=100) == []  # found early
    assert _budget_caveat(trials([1, 2, 3, 4]), obj, valid=4) == []    # every point ran


def test_a_threshold_must_beat_the_usual_winner() -> None:
    values = np.arange(32.0)
    winners = ["a"] * 32
    for i in (0, 1, 10, 15, 20, 25):  # b wins 6 of 32, scattered
        winners[i] = "b"
    # "b below 1.5" explains 28 of 32 (87%), but "a always" already explains 26: the
    # threshold must remove at least half of the usual winner's 6 misses
    assert stump(values, winners) == (1.5, "b", "a", 28)
    assert depends({"x": values}, winners)["kind"] == "joint"
    for i in (10, 15, 20, 25):
        winners[i] = "a"
    winners[2] = winners[3] = "b"  # b wins exactly below 3.5
    assert depends({"x": values}, winners)["kind"] == "threshold"


def test_a_model_error_scales_every_time_figure_once() -> None:
    """advise's figures of a run whose time is off by a factor f (the draws' model error,
    applied to the summary once, `scaled`): times x f, rates / f, cost per token x f, the
    rest as they were."""
    from rlsim.advise.objectives import figures
    from rlsim.draws.summary import scaled

    row = {"throughput.tokens_per_s": 1000.0, "throughput.samples_per_s": 2.0,
           "step_time_s.mean": 50.0, "goodput_samples_per_s": 1.5, "cost.usd_per_hour": 36.0,
           "staleness.max": 1.0, "throughput.response_tokens_per_sample": 400.0}
    base, off = figures(row), figures(scaled(row, 1.25))
    for key, power in (("tokens_per_s", -1), ("samples_per_s", -1), ("goodput", -1),
                       ("step_time", 1), ("usd_per_1k_tokens", 1), ("staleness", 0),
                       ("usd_per_hour", 0), ("tokens_per_sample", 0)):
        assert off[key] == pytest.approx(base[key] * 1.25 ** power), key
    assert set(off) == set(base)
