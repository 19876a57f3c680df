"""The fitter: known knobs come back from a synthetic run, the log decides what is
identified, lengths replay by their closed form, and the report files parse."""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import load_scenario
from rlsim.config.scenario import Scenario
from rlsim.fit import report as fit_report
from rlsim.fit.fitter import (
    REGIME_CHANGE_REL,
    FitResult,
    fit,
    lognormal_from_mean_max,
    median_max_z,
    prediction_uncertainty,
    regime_changes,
    regime_warning,
)
from rlsim.fit.logs import MeasuredRun, StepRecord
from rlsim.fit.report import fit_json, write_fit
from rlsim.trace import CONTROLLER
from tests.scenarios import tiny

TRUTH = {"train_speed": 1.6, "rollout_speed": 0.7, "weight_sync_overhead": 4.0,
         "step_overhead": 3.0, "update_overhead": 2.0}
ALL_KEYS = ("gen", "old_log_prob", "ref", "update_actor", "update_weights", "step")


def toy(**changes: Any) -> dict[str, Any]:
    """A 7B model on 8 H100 at TP 2, fixed 1,500-token responses and fixed reward latency:
    every phase is large enough for its knob to move it, and a run takes ~25 ms."""
    base: dict[str, Any] = {
        "steps": 4, "model": "qwen2.5-7b", "train__tp": 2, "rollout__tp": 2,
        "workload__response_len": {"dist": "fixed", "value": 1500},
        "workload__prompts_per_step": 16, "workload__samples_per_prompt": 8,
        "reward__latency": {"median": "10 ms", "sigma": 0},
    }
    return tiny(**{**base, **changes})


def measured_run(data: dict[str, Any], framework: dict[str, Any],
                 keys: tuple[str, ...] = ALL_KEYS,
                 lengths: dict[str, float] | None = None,
                 hybrid: bool = False) -> MeasuredRun:
    """Simulate `data` with `framework` knobs and log its steps as a veRL run would: the
    log's keys from rlsim's phases (update_weights = weight_sync + switch, the log-prob
    passes from the trainer's spans inside each step, the driver's copies of the `ref`
    phase with the old log-prob: veRL times each call's transfer inside its call).
    `hybrid`: as veRL's hybrid engine up to v0.7.0 logs a colocated run: gen holds the
    weight sync and switch, generate_sequences the generation alone, no update_weights."""
    truth = {**data, "framework": framework}
    rec = simulate(Scenario.model_validate(truth)).recorder
    steps: dict[int, dict[str, float]] = {}
    for s in rec.spans:
        if s.track != CONTROLLER:
            continue
        k = int(s.attrs["step"])
        ph = steps.setdefault(k, {})
        ph[s.name] = ph.get(s.name, 0.0) + (s.t1 - s.t0)
    # The trainer's forward passes, in order: the k-th of each kind belongs to step k.
    seen = {"ref_logprob": 0, "old_logprob": 0}
    for s in sorted(rec.spans, key=lambda s: s.t0):
        if not s.track.startswith("train.") or s.name not in seen:
            continue
        steps[seen[s.name]][s.name] = s.t1 - s.t0
        seen[s.name] += 1
    records = []
    for k, ph in sorted(steps.items()):
        if "step" not in ph:  # one_off: the next step's generation, after the last step
            continue
        driver = ph["ref"] - ph["old_logprob"] - ph["ref_logprob"]
        logged = {"gen": ph["gen"], "old_log_prob": ph["old_logprob"] + driver,
                  "ref": ph["ref_logprob"],
                  "update_actor": ph["train"],
                  "update_weights": ph["weight_sync"] + ph.get("switch", 0.0),
                  "step": ph["step"]}
        if hybrid:
            logged["generate_sequences"] = logged["gen"]
            logged["gen"] += logged.pop("update_weights")
        records.append(StepRecord(
            step=k + 1, phases_s={key: logged[key] for key in keys},
            response_len=dict(lengths or {}), prompt_len={}, throughput=None, mfu=None,
            validation=False, line=k + 1, warmup=k == 0))
    return MeasuredRun(source="synthetic.log", format="verl-console", steps=records)


@pytest.fixture(scope="module")
def recovered() -> FitResult:
    data = toy()
    return fit(Scenario.model_validate(data), measured_run(data, TRUTH))


def test_a_hybrid_engine_log_fits_the_switch_apart_from_generation() -> None:
    """veRL's colocated gen holds the switch: with generate_sequences logged, the fit puts
    the difference on switch_overhead (which a dedicated placement does not pay), not on
    rollout_speed."""
    data = toy()
    truth = {"train_speed": 1.6, "rollout_speed": 0.7, "switch_overhead": 6.0,
             "step_overhead": 3.0}
    keys = ("gen", "generate_sequences", "old_log_prob", "ref", "update_actor", "step")
    result = fit(Scenario.model_validate(data),
                 measured_run(data, truth, keys=keys, hybrid=True))
    for name, value in truth.items():
        assert result.params[name].value == pytest.approx(value, rel=0.03), name
    assert result.phases["switch"].minus_keys == ("generate_sequences",)
    assert result.phases["gen"].measured_keys == ("generate_sequences",)
    assert "weight_sync_overhead" in result.unidentified
    # Without generate_sequences the switch cannot be told from generation: gen is compared
    # with rlsim's generation, weight sync and switch together.
    alone = fit(Scenario.model_validate(data),
                measured_run(data, truth, keys=ALL_KEYS[:1] + keys[2:], hybrid=True))
    assert alone.phases["gen"].sim_phases == ("gen", "weight_sync", "switch")
    assert "switch_overhead" in alone.unidentified
    assert any("generate_sequences to tell them apart" in n for n in alone.notes)


def test_recovers_known_knobs(recovered: FitResult) -> None:
    for name, value in TRUTH.items():
        p = recovered.params[name]
        assert p.value == pytest.approx(value, rel=0.03), name
        assert p.ci95 is not None and p.ci95[0] <= p.value <= p.ci95[1]
        assert p.start == (1.0 if name.endswith("speed") else 0.0)  # fitted from defaults
    assert recovered.unidentified.keys() == {"micro_batch_overhead", "switch_overhead"}
    # The fitted phases match the measured ones; before the fit they did not.
    for p in [*recovered.phases.values(), recovered.step]:
        assert abs(p.residual) < 0.01, p.name
    assert abs(recovered.step.residual_before) > 0.2
    assert recovered.simulations < 60


def test_fitted_scenario_reproduces_the_measured_run(recovered: FitResult) -> None:
    sc = recovered.fitted_scenario()
    assert sc.framework.train_speed == recovered.params["train_speed"].value
    assert sc.steps == 4 and sc.output.warmup_steps == 1  # the input's, not the fit's
    sim = simulate(sc).summary
    assert sim["step_time_s"]["mean"] == pytest.approx(recovered.step.measured_s, rel=0.01)


def test_no_update_weights_leaves_weight_sync_unidentified() -> None:
    data = toy()
    keys = tuple(k for k in ALL_KEYS if k != "update_weights")
    # A colocated veRL run without update_weights: its gen holds the sync (hybrid engine).
    res = fit(Scenario.model_validate(data), measured_run(data, TRUTH, keys, hybrid=True))
    assert "weight_sync_overhead" not in res.params
    assert "update_weights" in res.unidentified["weight_sync_overhead"]
    assert res.scenario["framework"]["weight_sync_overhead"] == 0.0
    assert "update_weights" not in res.phases
    # gen takes the sync's overhead (compared with rlsim's gen + weight_sync + switch), so
    # the step's remainder is the controller's alone.
    assert res.phases["gen"].sim_phases == ("gen", "weight_sync", "switch")
    assert res.params["step_overhead"].value == pytest.approx(TRUTH["step_overhead"],
                                                              rel=0.05)
    assert abs(res.step.residual) < 0.01


def test_step_only_log_fits_one_speed_of_trainer_and_engines() -> None:
    """One number identifies one knob: the compute phases' common speed."""
    data = toy()
    res = fit(Scenario.model_validate(data), measured_run(
        data, {"train_speed": 0.7, "rollout_speed": 0.7}, ("step",)))
    assert list(res.params) == ["speed"]
    assert res.params["speed"].value == pytest.approx(0.7, rel=0.03)
    fw = res.fitted_scenario().framework
    assert fw.train_speed == fw.rollout_speed == res.params["speed"].value
    assert fw.step_overhead == 0
    assert set(res.unidentified) == {"train_speed", "rollout_speed", "weight_sync_overhead",
                                     "step_overhead", "micro_batch_overhead",
                                     "switch_overhead", "update_overhead"}


def test_gen_of_an_off_policy_run_is_not_generation() -> None:
    data = toy(policy={"name": "one_off", "placement": "disaggregated"})
    res = fit(Scenario.model_validate(data), measured_run(data, {"train_speed": 1.3}))
    assert "rollout_speed" in res.unidentified
    assert "one_off" in res.unidentified["rollout_speed"]
    assert "gen" not in res.phases
    assert "train_speed" in res.params


# ----- lengths


@pytest.mark.parametrize(("mean", "largest", "n"), [(1000, 8000, 1024), (400, 900, 32),
                                                    (2500, 3100, 512)])
def test_lognormal_closed_form(mean: float, largest: float, n: int) -> None:
    median, sigma, _ = lognormal_from_mean_max(mean, largest, n)
    z = median_max_z(n)
    assert median * math.exp(sigma**2 / 2) == pytest.approx(mean, rel=1e-9)
    assert median * math.exp(sigma * z) == pytest.approx(largest, rel=1e-9)
    # Monte Carlo: the median over many steps of a step's largest sample is the max.
    rng = np.random.default_rng(0)
    draws = rng.lognormal(math.log(median), sigma, size=(2000, n))
    assert float(np.median(draws.max(axis=1))) == pytest.approx(largest, rel=0.03)
    assert float(draws.mean()) == pytest.approx(mean, rel=0.03)


def test_clipped_lognormal_matches_clip_ratio_and_mean() -> None:
    cap, mean, clip = 16000, 6000.0, 0.15
    median, sigma, how = lognormal_from_mean_max(mean, cap, 1024, cap, clip)
    assert "clip_ratio" in how
    rng = np.random.default_rng(1)
    x = rng.lognormal(math.log(median), sigma, size=400_000)
    assert float(np.mean(x >= cap)) == pytest.approx(clip, rel=0.03)
    assert float(np.minimum(x, cap).mean()) == pytest.approx(mean, rel=0.01)


def test_measured_lengths_are_replayed() -> None:
    data = toy(workload__response_len={"dist": "lognormal", "median": 800, "sigma": 0.6},
               workload__max_response_len=8000)
    lengths = {"mean": 1200.0, "max": 5000.0, "min": 40.0}
    run = measured_run(data, {}, ("gen", "update_actor", "step"), lengths)
    res = fit(Scenario.model_validate(data), run)
    dist = res.scenario["workload"]["response_len"]
    median, sigma, _ = lognormal_from_mean_max(1200.0, 5000.0, 16 * 8)
    assert dist == {"dist": "lognormal", "median": pytest.approx(median),
                    "sigma": pytest.approx(sigma)}
    assert res.replayed["response_len"]["replayed"] is True
    assert res.replayed["prompt_len"]["replayed"] is False
    assert "prompt" in res.replayed["prompt_len"]["why"]


def test_no_kept_step_is_an_error() -> None:
    data = toy()
    run = measured_run(data, {})
    run.steps = run.steps[:1]  # the warm-up alone
    with pytest.raises(ScenarioError):
        fit(Scenario.model_validate(data), run)


# ----- report and JSON


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.external += [v for k, v in attrs if k in ("src", "href") and v]


def test_report_files_exist_and_parse(recovered: FitResult, tmp_path: Path) -> None:
    out = tmp_path / "fit"
    write_fit(recovered, out)
    assert sorted(p.name for p in out.iterdir()) == ["fit.html", "fit.md", "fitted.yaml"]
    text = (out / "fitted.yaml").read_text()
    assert text.startswith("# Fitted by `rlsim fit` from the log synthetic.log")
    assert "fitted:   framework.train_speed" in text
    assert "default:  framework.micro_batch_overhead" in text
    assert yaml.safe_load(text)["framework"]["rollout_speed"] == pytest.approx(0.7, rel=0.03)
    sc, _ = load_scenario(out / "fitted.yaml")  # validates as a scenario file
    assert sc.framework.step_overhead == recovered.params["step_overhead"].value
    md = (out / "fit.md").read_text()
    for heading in ("## Measured against simulated", "## Fitted knobs",
                    "## Knobs the log could not identify", "## Replayed lengths",
                    "## Predicting other regimes"):
        assert heading in md
    assert "| update_weights | update_weights | weight_sync + switch |" in md
    checker = _Checker()
    checker.feed((out / "fit.html").read_text())
    assert checker.tags.count("table") == 4
    assert "script" not in checker.tags and checker.external == []


def test_failed_write_leaves_no_fitted_yaml(recovered: FitResult, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "fit"
    write_fit(recovered, out)
    real = fit_report._write

    def failing(path: Path, text: str) -> None:
        if path.name == "fit.html":
            raise OSError(28, "No space left on device")
        real(path, text)

    monkeypatch.setattr(fit_report, "_write", failing)
    with pytest.raises(ScenarioError) as err:
        write_fit(recovered, out)
    assert err.value.field == "--out"
    assert not (out / "fitted.yaml").exists()
    assert not [p for p in out.iterdir() if "partial" in p.name]


def test_fit_json_shape(recovered: FitResult) -> None:
    j = fit_json(recovered)
    json.dumps(j)  # plain JSON
    assert set(j) >= {"phases", "step", "params", "unidentified"}
    assert set(j["phases"]) == {"gen", "logprob", "update_actor", "update_weights"}
    for entry in [*j["phases"].values(), j["step"]]:
        assert entry["measured_s"] > 0 and entry["simulated_s"] > 0
    assert set(j["params"]) == set(TRUTH)
    lo, hi = j["params"]["train_speed"]["ci95"]
    assert lo <= j["params"]["train_speed"]["value"] <= hi
    assert j["unidentified"] == {k: recovered.unidentified[k]
                                 for k in ("micro_batch_overhead", "switch_overhead")}
    assert all(entry["log_keys_subtracted"] == [] for entry in j["phases"].values())


# ----- predicting other regimes


def test_regime_warning(recovered: FitResult) -> None:
    fitted = recovered.fitted_scenario()
    assert regime_warning(fitted, fitted) is None
    base = recovered.scenario
    other = Scenario.model_validate({**base, "policy": {"name": "one_off",
                                                        "placement": "disaggregated"}})
    warning = regime_warning(fitted, other)
    assert warning is not None
    assert regime_changes(fitted, other) == [
        "policy sync -> one_off", "placement colocated -> disaggregated",
        "split 8 rollout + 8 train -> 4 + 4"]
    assert all(c in warning for c in regime_changes(fitted, other))
    assert "+/-30%" in warning
    bigger = Scenario.model_validate({**base, "pools": [{**base["pools"][0], "nodes": 2}]})
    warning = regime_warning(fitted, bigger)
    assert warning is not None and "GPUs 8 -> 16" in warning
    assert recovered.step_ci95_rel is not None
    assert prediction_uncertainty(recovered, other) == pytest.approx(
        recovered.step_ci95_rel + 3 * REGIME_CHANGE_REL)
    assert prediction_uncertainty(recovered, fitted) == recovered.step_ci95_rel


def test_a_fitted_scenario_carries_its_regime_and_intervals(recovered: FitResult,
                                                             tmp_path) -> None:
    """Issue 39: a fitted scenario warns when it runs outside its regime, and its knobs'
    intervals are its unknowns (draws carry them)."""
    from rlsim.api import simulate
    from rlsim.config.loading import scenario_from_dict

    data = recovered.scenario
    assert data["framework"]["fitted_on"]["policy"] == "sync"
    for name, p in recovered.params.items():
        if p.ci95 is not None and not p.at_bound and p.ci95[0] < p.ci95[1]:
            key = ("framework.train_speed" if name == "speed" else f"framework.{name}")
            u = data["unknowns"][key]
            assert (u["dist"], u["low"], u["high"]) == ("triangular", *p.ci95)
    same, base = scenario_from_dict(data)  # the unknowns fit the knobs' bounds
    assert not any("fitted regime" in w for w in simulate(same, base).summary["warnings"])
    other, base = scenario_from_dict({**data, "steps": 2, "policy": {
        "name": "one_off", "placement": "disaggregated"}})
    warnings = simulate(other, base).summary["warnings"]
    assert any(w.startswith("prediction outside the fitted regime (policy sync -> one_off")
               for w in warnings)
