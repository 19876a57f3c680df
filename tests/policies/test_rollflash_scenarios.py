"""The ROLL Flash scenarios (issues 7 and 22) load and run, each async scenario keeps
its sync baseline's model, workload and total GPU count, and the report tables (make_report.py
and agentic.py, the paper's own agentic setups) are computed from the runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsim.api import simulate
from rlsim.config.loading import load_scenario
from tests.scenarios import load_script

DIR = Path(__file__).resolve().parents[2] / "scenarios" / "rollflash"
PAIRS = [("rlvr-qwen3-8b-128gpu-sync", "rlvr-qwen3-8b-128gpu-async"),
         ("alfworld-sync", "alfworld-async-redundant"),
         ("swe-sync", "swe-async-redundant"),
         ("agentic/shop-sync", "agentic/shop-async-redundant")]


@pytest.mark.parametrize(("sync", "async_"), PAIRS)
def test_pair_shares_model_workload_and_gpus_and_runs(sync, async_):
    a, base = load_scenario(DIR / f"{sync}.yaml", ["steps=2"])
    b, _ = load_scenario(DIR / f"{async_}.yaml", ["steps=2"])
    assert a.model == b.model and a.workload == b.workload and a.reward == b.reward
    assert sum(p.gpus for p in a.pools) == sum(p.gpus for p in b.pools)
    assert a.policy.name == "sync" and b.policy.name == "async"
    for sc in (a, b):
        res = simulate(sc, base)
        assert res.summary["steps"] == 2


def test_report_tables_are_computed_from_the_runs():
    """make_report.py's markdown on fake runs: the sections written by their modules in the
    paper's order around Fig. 3a, and the Search-R1 speedup = sync step / async step."""
    mod = load_script(DIR / "make_report.py", "rollflash_report")
    phases = dict.fromkeys(("gen", "reward", "ref", "train", "weight_sync", "switch"), 1.0)

    def step_s(job):
        return 80.0 if job[0].endswith("sync") and "async" not in job[0] else 40.0

    results = {job: mod.Run(step_s(job), phases, {0: 6, 1: 2},
                            {"trained": 8, "stale": 3, "cancelled": 1, "leftover": 2})
               for job in mod.jobs()}
    sections = {name: f"## {name} section\n" for name in (*mod.BEFORE_BUDGET, *mod.AFTER_BUDGET)}
    text = mod.markdown(results, sections)
    order = [text.index(f"## {name} section") for name in (*mod.BEFORE_BUDGET, *mod.AFTER_BUDGET)]
    assert order == sorted(order)
    assert "| async alpha 1, 4 rollout / 12 train | 40.0 | 1.0 | 1.0 | 1.0 | 2.00x |" in text


def test_agentic_section_is_computed_from_the_runs():
    """agentic.py's markdown on fake step times: Fig. 9 speedups against the paper's points,
    Fig. 11 hours per 50 steps (mean step x 50), the sync + redundant row (tail_batching
    without long rounds) and the sensitivity rows."""
    mod = load_script(DIR / "agentic.py", "rollflash_agentic")

    def step_s(job):
        name, overrides = job
        if name == mod.FIG9:
            return 200.0 if "policy.env_interaction=batched" in overrides else 100.0
        if "policy.name=tail_batching" in overrides:
            return 270.0
        if ("sync" in name and "async" not in name) or "policy.name=sync" in overrides:
            return 360.0 if "policy.env_interaction=per_trajectory" in overrides else 720.0
        plain = "policy.asynchronous.extra_groups=0" in overrides
        return 240.0 if plain else 180.0

    text = mod.markdown({job: step_s(job) for job in mod.jobs()})
    assert "| 512 | 10 | 200 | 100 | 2.00x | 2.46x | -19% | missed |" in text
    assert "| 64 | 5 | 200 | 100 | 2.00x | 1.86x | +8% | met |" in text
    assert "| SWE | sync + batch rollout | 10.22 | 10.00 | -2% | met |" in text
    # 270 s x 50 = 3.75 h
    assert "| ALFWorld | sync + env-level + redundant | 7.85 | 3.75 |" in text
    assert "| ShopSimulator | async + env-level + redundant | 1.67x | 4.00x | +140% | missed |" \
        in text
    assert "| ALFWorld | GPU H20 | RollArt's other cluster [P-RA 7.1] | 2.00x | 3.00x | 4.00x |" \
        in text
