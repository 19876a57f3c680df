"""Job profiles from the single-job model: measured switch and footprint overrides, the
worst-case admission profile (multi-turn too), the run's iterations on a stream of their
own, and the two-stage weight sync over the per-GPU inter-cluster link."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlsim.config.errors import ScenarioError
from rlsim.config.fleet import CrossLinkConfig, FleetScenario
from rlsim.config.fleet_loading import fleet_from_dict
from rlsim.config.hardware import lookup_model
from rlsim.fleet import flat_sync_s, model_constants, profile_jobs, simulate_fleet, sync_s
from rlsim.fleet.placement import Demand
from rlsim.fleet.runtime import FleetRun
from rlsim.trace import Recorder
from tests.fleet.toy import job

GB = 1e9


def _job(name: str, **extra: Any) -> dict[str, Any]:
    """A small single-turn job whose lengths vary (so iterations differ)."""
    j = job(name, **{k: extra.pop(k) for k in ("slo", "steps", "arrival") if k in extra})
    j["workload"] = {"prompts_per_step": 4, "samples_per_prompt": 8, "max_response_len": 2048,
                     "response_len": {"dist": "lognormal", "median": 128, "sigma": 0.8}}
    j.update(extra)
    return j


def _agentic(name: str, **extra: Any) -> dict[str, Any]:
    j = _job(name, **extra)
    j["workload"] = {**j["workload"], "agentic": {
        "turns": {"dist": "lognormal", "median": 3, "sigma": 0.5}, "max_turns": 8,
        "env_step": {"dist": "fixed", "value": 1}}}
    return j


def _fleet(jobs: list[dict[str, Any]], **top: Any) -> FleetScenario:
    data: dict[str, Any] = {
        "kind": "fleet", "name": "small",
        "pools": [{"name": "r", "gpu": "H20", "nodes": 4, "host_memory": "2 TB"},
                  {"name": "t", "gpu": "H800", "nodes": 4, "host_memory": "2 TB"}],
        "jobs": jobs}
    data.update(top)
    scenario, _ = fleet_from_dict(data)
    return scenario


# ------------------------------------------------------------------ overrides
def test_measured_switch_and_footprint_replace_the_cost_model() -> None:
    sc = _fleet([_job("a"), _job("b", switch={"rollout_cold": "38.8 s", "train_warm": 4.1},
                                     host_footprint={"rollout": "275.7 GB"})])
    priced = model_constants(sc, sc.jobs[0])
    p = profile_jobs(sc)
    a, b = p["a"], p["b"]
    # unset: the cost model's values
    assert (a.cold_roll_s, a.warm_roll_s, a.cold_train_s, a.warm_train_s) == pytest.approx(
        (priced.cold_roll_s, priced.warm_roll_s, priced.cold_train_s, priced.warm_train_s))
    assert a.host_roll_bytes == pytest.approx(priced.host_roll_bytes)
    assert a.host_train_bytes == pytest.approx(priced.host_train_bytes)
    # set: the measurement; the fields left unset keep the cost model's
    assert b.cold_roll_s == 38.8 and b.warm_train_s == 4.1
    assert b.host_roll_bytes == pytest.approx(275.7 * GB)
    assert b.warm_roll_s == pytest.approx(priced.warm_roll_s)
    assert b.cold_train_s == pytest.approx(priced.cold_train_s)
    assert b.host_train_bytes == pytest.approx(priced.host_train_bytes)


@pytest.mark.parametrize(("extra", "field", "fix"), [
    ({"switch": {"rollout_cold": "-3 s"}}, "jobs.0.switch.rollout_cold",
     "greater than or equal to 0"),
    ({"switch": {"cold": "3 s"}}, "jobs.0.switch.cold", "unknown field"),
    ({"switch": {"train_warm": "fast"}}, "jobs.0.switch.train_warm", "duration"),
    ({"host_footprint": {"rollout": "lots"}}, "jobs.0.host_footprint.rollout", "size"),
    ({"host_footprint": {"train": 0}}, "jobs.0.host_footprint.train", "greater than 0"),
])
def test_bad_switch_or_footprint_is_one_clear_error(extra: dict[str, Any], field: str,
                                                    fix: str) -> None:
    with pytest.raises(ScenarioError) as err:
        _fleet([_job("a", **extra)])
    assert err.value.field == field
    assert fix in err.value.message


def test_a_measured_footprint_sets_the_residency_limit() -> None:
    """Two jobs whose measured footprints (600 GB) twice exceed a 1 TB node share no node:
    a second group, or rollout scaling when the train footprint fits twice; at 400 GB they
    share the train node as without a limit."""
    free = {"rollout_cold": 0, "rollout_warm": 0, "train_cold": 0, "train_warm": 0}
    roll_big = {"switch": free, "host_footprint": {"rollout": "600 GB", "train": "100 GB"}}
    big = {"switch": free, "host_footprint": {"rollout": "600 GB", "train": "600 GB"}}
    small = {"switch": free, "host_footprint": {"rollout": "400 GB", "train": "400 GB"}}
    pools = [{"name": "r", "gpu": "H20", "nodes": 4, "host_memory": "1 TB"},
             {"name": "t", "gpu": "H800", "nodes": 4, "host_memory": "1 TB"}]
    for extra, kinds in ((big, {"new": 2}), (roll_big, {"new": 1, "scale": 1}),
                         (small, {"new": 1, "scale": 1})):  # (rollout-heavy: no pack)
        sc = _fleet([_job("a", slo=2.0, **extra), _job("b", slo=2.0, **extra)], pools=pools)
        assert simulate_fleet(sc).summary["placements"] == kinds


# ------------------------------------------------------------------ admission vs run
def test_admission_defaults_to_the_papers_worst_case_check() -> None:
    sc = _fleet([_job("a")])
    assert sc.policy.multiplex.slo_check == "worst"
    p = profile_jobs(sc)["a"]
    assert p.adm_roll_s == ()  # no typical admission run under the paper's check
    run = FleetRun(sc, {"a": p}, Recorder())
    d: Demand = run._demand(run.runs[0])
    # admission sees the worst case only: nothing of the iterations the run replays
    assert d.roll_seq == () and d.train_seq == ()
    assert (d.roll_mean_s, d.train_mean_s) == (p.roll_worst_s, p.train_worst_s)
    assert d.iter_s(False) == pytest.approx(p.iter_worst_s)
    assert p.roll_worst_s > max(p.roll_s) and p.train_worst_s > max(p.train_s)


def test_the_runs_iterations_are_not_the_admission_profiles() -> None:
    sc = _fleet([_job("a")], policy={"name": "multiplex",
                                     "multiplex": {"slo_check": "worst_and_mean"}})
    p = profile_jobs(sc)["a"]
    assert len(p.roll_s) == sc.profile_steps == len(p.adm_roll_s)
    assert len(set(p.roll_s)) == len(p.roll_s)  # the run's iterations vary
    assert not set(p.roll_s) & set(p.adm_roll_s)  # and are not the ones admission checks
    assert p.roll_worst_s not in p.roll_s
    run = FleetRun(sc, {"a": p}, Recorder())
    d = run._demand(run.runs[0])
    assert d.roll_seq == p.adm_roll_s and d.train_seq == p.adm_train_s


def test_profiles_lent_to_a_worst_and_mean_fleet_get_its_typical_run() -> None:
    jobs = [_job("a", slo=2.0, steps=5), _job("b", slo=2.0, steps=5)]
    lent = profile_jobs(_fleet(jobs))  # the paper's check: no typical run
    assert lent["a"].adm_roll_s == ()
    mean = _fleet(jobs, policy={"name": "multiplex",
                                "multiplex": {"slo_check": "worst_and_mean"}})
    res = simulate_fleet(mean, profiles=lent)
    assert res.profiles["a"].adm_roll_s == profile_jobs(mean)["a"].adm_roll_s
    assert res.profiles["a"].roll_s == lent["a"].roll_s


def test_multi_turn_worst_case_is_simulated_at_the_per_turn_max() -> None:
    """A multi-turn job's admission profile runs every turn at the max length (not the
    longest iteration the run will replay)."""
    sc = _fleet([_agentic("a")])
    p = profile_jobs(sc)["a"]
    assert p.roll_worst_s > 1.5 * max(p.roll_s)
    assert p.roll_worst_s not in p.roll_s and p.train_worst_s not in p.train_s


def test_same_scenario_and_seed_same_summary_another_seed_other_iterations() -> None:
    jobs = [_job("a", slo=2.0, steps=6), _agentic("b", slo=2.0, steps=6, arrival=50.0)]
    drop = {"wall_s", "decision_s"}

    def summary(seed: int) -> tuple[dict[str, Any], tuple[float, ...]]:
        sc = _fleet(jobs, seed=seed)
        res = simulate_fleet(sc)
        return ({k: v for k, v in res.summary.items() if k not in drop},
                res.profiles["a"].roll_s)

    first, roll = summary(0)
    again, roll_again = summary(0)
    assert first == again and roll == roll_again
    _, other = summary(1)
    assert other != roll


# ------------------------------------------------------------------ the link
def test_sync_streams_one_copy_over_one_20_gbps_stream_per_gpu() -> None:
    link = CrossLinkConfig()
    w = 15.2 * GB
    lanes = 8 * 20e9 / 8  # 8 GPUs, one 20 Gb/s stream each [P Weave 5.2, 6.1]
    assert sync_s(w, (1, 8), (1, 8), link) == pytest.approx(w / lanes + 2 * link.latency)
    # twice the GPUs on both sides, twice the streams; the fabric stage (400 Gb/s per GPU)
    # is pipelined with it, so the slower stage sets the time
    assert sync_s(w, (2, 8), (2, 8), link) == pytest.approx(
        max(w / (2 * lanes), w / link.fabric_bandwidth) + 2 * link.latency)
    # the smaller side sets the streams
    assert sync_s(w, (2, 8), (1, 8), link) == sync_s(w, (1, 8), (1, 8), link)
    # veRL's flat sync: every rollout GPU fetches its own copy
    assert flat_sync_s(w, (1, 8), (1, 8), link) == pytest.approx(
        8 * w / lanes + 2 * link.latency)
    assert sync_s(w, (1, 8), (0, 8), link) == 0.0


def test_a_per_node_cap_reproduces_one_link_per_node() -> None:
    """`bandwidth_per_node` caps a node's streams: at 20 Gb/s it is rlsim's earlier reading
    (one 20 Gb/s link per train node)."""
    link = CrossLinkConfig.model_validate({"bandwidth_per_node": "20 Gb/s"})
    w = 15.2 * GB
    assert sync_s(w, (2, 8), (3, 8), link) == pytest.approx(w / (2 * 2.5e9) + 2 * link.latency)


def test_fig13_single_node_syncs_within_20_percent() -> None:
    """A check of the per-GPU reading against [P Weave Fig. 13], not a fit: 8 H800 -> 8 H20
    (7B, 14B, 32B) 0.9 / 1.7 / 3.9 s; veRL 7.5 / 13.8 / 30.7 s."""
    link = CrossLinkConfig()
    for model, paper, verl in (("qwen2.5-7b", 0.9, 7.5), ("qwen2.5-14b", 1.7, 13.8),
                               ("qwen2.5-32b", 3.9, 30.7)):
        w = lookup_model(model).weight_bytes(2)  # bf16, as the trainer syncs it
        assert sync_s(w, (1, 8), (1, 8), link) == pytest.approx(paper, rel=0.2)
        assert flat_sync_s(w, (1, 8), (1, 8), link) == pytest.approx(verl, rel=0.2)


def test_profile_uses_the_per_gpu_link() -> None:
    sc = _fleet([_job("a")])
    p = profile_jobs(sc)["a"]
    w = model_constants(sc, sc.jobs[0]).weight_bytes
    assert p.sync_s == pytest.approx(sync_s(w, (1, 8), (1, 8), sc.link))


def test_constants_section_runs_and_shows_every_size() -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scenarios" / "rollmux" / "constants.py"
    spec = importlib.util.spec_from_file_location("rollmux_constants", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = "\n".join(mod.section())
    for size in ("3B", "7B", "14B", "32B"):
        assert f"Qwen2.5-{size}" in text
    assert "16 H800 -> 16 H20" in text
    assert mod.residency_limit(2e12, 490.3e9) == 4
