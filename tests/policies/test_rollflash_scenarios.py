"""The ROLL Flash scenarios (issue 7) load and run, and each async scenario keeps
its sync baseline's model, workload and total GPU count."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsim.api import simulate
from rlsim.config.loading import load_scenario
from tests.scenarios import load_script

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


def test_report_tables_are_computed_from_the_runs():
    """make_report.py's markdown on fake runs: speedup = sync step / async step, error
    against the target, the GPU, batch and alpha sweeps, the agentic mechanisms and the
    staleness histogram."""
    mod = load_script(DIR / "make_report.py", "rollflash_report")
    phases = dict.fromkeys(("gen", "reward", "ref", "train", "weight_sync", "switch"), 1.0)

    def step_s(job):
        name, overrides = job
        if "policy.env_interaction=per_trajectory" in overrides:
            return 50.0
        if "policy.name=sync" in overrides:
            return 80.0
        return 100.0 if name.endswith("sync") and "async" not in name else 40.0

    results = {job: mod.Run(step_s(job), phases, {0: 6, 1: 2},
                            {"trained": 8, "stale": 3, "cancelled": 1, "leftover": 2})
               for job in mod.jobs()}
    text = mod.markdown(results)
    assert "| RLVR, 128 GPUs | 100.0 | 40.0 | 2.50x | 2.24x |" in text
    assert "| +12% | 80.0 | 2.00x |" in text  # the disaggregated sync baseline
    assert "| 16 | 100.0 | 40.0 | 2.50x |" in text
    assert "| 2 | 40.0 | 2.50x | 0.25 | 3 |" in text
    assert "| 0: 6, 1: 2 | 8 / 3 / 1 / 2 |" in text
    # batch sweep: the best split (ties: the first), speedups and scaling per batch
    assert ("| 2048 | 100.0 | 40.0 (4 train) | 100.0 | 40.0 (32 train) | 2.50x | 2.50x | "
            "1.00x | 1.00x |") in text
    assert "Within +-15% of 2.24x: 128 prompts, 512 prompts" in text
    # agentic mechanisms over the lock-step sync job, and the [S] factors beside them
    assert "| ALFWorld-like | 5 | 100 | 2.00x | 2.50x | 2.50x | 1.00x |" in text
    assert "| ALFWorld-like, [S] | | | 1.58x | 2.27x | 2.72x | 1.20x |" in text
    assert "| async alpha 1, 4 rollout / 12 train | 40.0 |" in text
