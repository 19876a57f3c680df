"""The ROLL Flash scenarios (drafts, issue 7) load and run, and each async scenario keeps
its sync baseline's model, workload and total GPU count."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsim.api import simulate
from rlsim.config.loading import load_scenario

DIR = Path(__file__).resolve().parents[2] / "scenarios" / "rollflash"
PAIRS = [("rlvr-qwen3-8b-128gpu-sync", "rlvr-qwen3-8b-128gpu-async"),
         ("alfworld-sync", "alfworld-async-redundant"),
         ("swe-sync", "swe-async-redundant")]


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
