"""Unknowns and draws (rlsim.config.unknowns, rlsim.draws; issue 39): the distributions'
quantiles, the Latin hypercube's strata, determinism, and bad input in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.config.unknowns import Unknown
from rlsim.draws import build_draw_spec, draw_values, interval_doc, run_draws
from tests.scenarios import tiny, write


def draws_doc(path: Path, n: int, **options: Any) -> dict[str, Any]:
    """`rlsim run PATH --draws n` as its document (one worker: the test's process)."""
    spec, ctx = build_draw_spec([(path, [], path.stem)], n)
    return interval_doc(run_draws(spec, ctx, jobs=1, **options).collected)


def test_quantiles_are_the_distributions() -> None:
    assert Unknown(low=2, high=6).value(0.25) == pytest.approx(3.0)
    assert Unknown(dist="loguniform", low=1, high=100).value(0.5) == pytest.approx(10.0)
    assert Unknown(dist="lognormal", median=4, sigma=0.5).value(0.5) == pytest.approx(4.0)
    assert Unknown(dist="normal", mean=3, sd=2).value(0.8413447) == pytest.approx(5.0, rel=1e-6)
    tri = Unknown(dist="triangular", low=0, mode=0, high=1)
    assert tri.value(0.75) == pytest.approx(1 - math.sqrt(0.25))  # F(x) = 1 - (1-x)^2


def test_draws_fill_every_stratum_of_every_unknown_and_repeat_exactly() -> None:
    scenario, _ = scenario_from_dict(tiny(unknowns={
        "workload.prompts_per_step": {"low": 4, "high": 12},
        "reward.latency.median": {"low": 0.001, "high": 0.05}}))
    n = 16
    draws = draw_values(scenario.unknowns, scenario.seed, n)
    for key, (low, high) in (("workload.prompts_per_step", (4, 12)),
                             ("reward.latency.median", (0.001, 0.05))):
        strata = sorted(int((d[key] - low) / (high - low) * n) for d in draws)
        assert strata == list(range(n))  # a Latin hypercube: one draw per stratum
    assert draw_values(scenario.unknowns, scenario.seed, n) == draws


def test_run_draws_sets_each_value_and_summarizes(tmp_path: Path) -> None:
    path = write(tmp_path, tiny(steps=2, unknowns={
        "workload.prompts_per_step": {"low": 4, "high": 12}}))
    doc = draws_doc(path, 6)
    assert all(float(d["values"]["workload.prompts_per_step"]).is_integer()
               for d in doc["draws"])
    q = doc["metrics"]["throughput.samples_per_s"]
    assert q["p2_5"] <= q["p10"] <= q["median"] <= q["p90"] <= q["p97_5"]
    assert doc["n"] == 6 and doc["ran"] == 6 and len(doc["draws"]) == 6
    assert draws_doc(path, 6) == doc  # determinism


@pytest.mark.parametrize(("unknowns", "field", "message"), [
    ({"rollout.gpu_memory_utilization": {"low": 0.9, "high": 0.7}},
     "unknowns.rollout.gpu_memory_utilization", "inverted"),
    ({"policy.name": {"low": 1, "high": 2}}, "unknowns.policy.name", "not a number"),
    ({"rollout.gpu_memory_utilization": {"dist": "normal", "mean": 0.9, "sd": 0.1}},
     "unknowns.rollout.gpu_memory_utilization", "does not accept"),
    ({"rollout.nope": {"low": 1, "high": 2}}, "unknowns.rollout.nope", "not a field"),
])
def test_bad_unknowns_name_the_field(unknowns: dict[str, Any], field: str,
                                     message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as err:
        scenario_from_dict(tiny(unknowns=unknowns))
    assert err.value.field == field


def test_cli_draws_zero_and_json(tmp_path: Path, monkeypatch, capsys) -> None:
    from tests.cli.test_bad_input import run_cli

    path = write(tmp_path, tiny(steps=2, unknowns={
        "workload.prompts_per_step": {"low": 4, "high": 12}}))
    code, _, err = run_cli(["run", str(path), "--draws", "0"], monkeypatch, capsys)
    assert code == 2 and err.strip() == "rlsim: error: --draws: must be >= 1, got 0"
    code, out, _ = run_cli(["run", str(path), "--draws", "3", "--json"], monkeypatch, capsys)
    doc = json.loads(out)
    assert code == 0 and doc["schema_version"] == 1 and doc["draws"]["n"] == 3


def test_cli_sensitivity_names_the_unknown_that_matters(tmp_path: Path, monkeypatch,
                                                         capsys) -> None:
    from tests.cli.test_bad_input import run_cli

    # the batch size drives the step time; the reward's 1-10 ms latency barely does
    path = write(tmp_path, tiny(steps=1, unknowns={
        "workload.prompts_per_step": {"low": 2, "high": 16},
        "reward.latency.median": {"low": 0.001, "high": 0.01}}))
    code, out, _ = run_cli(["run", str(path), "--draws", "32", "--sensitivity", "--json"],
                           monkeypatch, capsys)
    assert code == 0
    top = json.loads(out)["draws"]["sensitivity"]["step_time_s.mean"]
    assert top[0]["unknown"] == "workload.prompts_per_step"
    assert top[0]["total"] > top[1]["total"]
    code, _, err = run_cli(["run", str(path), "--draws", "6", "--sensitivity"],
                           monkeypatch, capsys)
    assert code == 2 and "give at least 8" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["run", str(path), "--sensitivity"], monkeypatch, capsys)
    assert code == 2 and "--sensitivity: give --draws N as well" in err


def test_compare_draws_use_the_same_values_for_every_variant(tmp_path: Path, monkeypatch,
                                                              capsys) -> None:
    from tests.cli.test_bad_input import run_cli

    path = write(tmp_path, tiny(steps=2, unknowns={
        "workload.prompts_per_step": {"low": 4, "high": 12}}))
    # variants a and b differ only in their names: the same runs
    args = ["compare", str(path), "--variant", "name=a", "--variant", "name=b", "--variant",
            "policy.placement=disaggregated,rollout.gpus=4,train.gpus=4", "--draws", "5",
            "--json"]
    code, out, _ = run_cli(args, monkeypatch, capsys)
    assert code == 0
    doc = json.loads(out)["draws"]
    twin = doc["ratios"][doc["runs"][1]["label"]]["throughput.samples_per_s"]
    assert set(twin.values()) == {1.0}  # common random numbers: the same run, ratio 1
    for shares in doc["p_best"].values():
        assert len(shares) == 3 and sum(shares.values()) == pytest.approx(1.0)
        first, second = (shares[r["label"]] for r in doc["runs"][:2])
        assert first == second  # ties are shared
    _, out2, _ = run_cli(args, monkeypatch, capsys)
    assert json.loads(out2) == json.loads(out)  # determinism


def test_a_framework_profiles_intervals_are_unknowns_by_default(tmp_path: Path) -> None:
    from rlsim.config.frameworks import profiles
    from rlsim.draws import with_profile_unknowns

    scenario, _ = scenario_from_dict(tiny(framework={"name": "verl"}))
    drawn = with_profile_unknowns(scenario, True).unknowns
    assert sorted(drawn) == ["framework.rollout_speed", "framework.step_overhead",
                             "framework.train_speed"]
    p = profiles()["verl"].params["train_speed"]
    speed = drawn["framework.train_speed"]
    assert speed.dist == "lognormal" and speed.value(0.5) == pytest.approx(p.value)
    assert speed.value(0.975) == pytest.approx(p.value * math.sqrt(p.ci95[1] / p.ci95[0]),
                                               rel=1e-3)
    assert drawn["framework.step_overhead"].dist == "uniform"  # its interval reaches 0
    assert not with_profile_unknowns(scenario, False).unknowns
    mine, _ = scenario_from_dict(tiny(framework={"name": "verl", "train_speed": 0.5}))
    assert "framework.train_speed" not in with_profile_unknowns(mine, True).unknowns
    # a profile's single speed is one unknown setting both speeds
    nemo, _ = scenario_from_dict(tiny(framework={"name": "nemo-rl"}))
    one = with_profile_unknowns(nemo, True).unknowns["framework.train_speed"]
    assert one.also == ["framework.rollout_speed"]
    path = write(tmp_path, tiny(steps=1, framework={"name": "nemo-rl"}))
    doc = draws_doc(path, 3)
    assert doc["unknowns"] == ["error.discrepancy", "framework.step_overhead",
                               "framework.train_speed"]


def test_a_lognormal_given_by_its_mean_keeps_the_mean_when_sigma_is_drawn() -> None:
    from rlsim.config.workload import LognormalLength

    for sigma in (0.4, 0.9, 1.2):
        dist = LognormalLength.model_validate({"dist": "lognormal", "mean": 2000.0,
                                               "sigma": sigma})
        assert dist.median * math.exp(sigma ** 2 / 2) == pytest.approx(2000.0)
        assert LognormalLength.model_validate(dist.model_dump()) == dist  # round trip
    with pytest.raises(ValueError, match="give the median or the mean, not both"):
        LognormalLength.model_validate({"dist": "lognormal", "mean": 2000.0, "sigma": 0.9,
                                        "median": 100.0})
    scenario, _ = scenario_from_dict(tiny(**{
        "workload__response_len": {"dist": "lognormal", "mean": 500, "sigma": 0.8}},
        unknowns={"workload.response_len.sigma": {"low": 0.4, "high": 1.2}}))
    assert scenario.workload.response_len.mean == 500
