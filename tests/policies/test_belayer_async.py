"""The Belayer scenarios under async with partial rollout and redundant environments (the
report's async side): both schemes run, recover every kind of fault they inject, train
every step's batch within the staleness bound, and Belayer's shadow still recovers an
engine at least 40x faster than a cold restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsim.api import simulate_file
from tests.scenarios import load_script

HERE = Path(__file__).resolve().parents[2] / "scenarios" / "belayer"
ASYNC = load_script(HERE / "make_report.py", "belayer_make_report_async").ASYNC


@pytest.mark.parametrize("name", ["swe-qwen3-8b-baseline", "swe-qwen3-8b-belayer"])
def test_the_belayer_scenarios_run_under_async(name: str) -> None:
    crashes = "faults.engine=[{times: [100.05 s, 300.13 s], targets: [0, 3]}]"
    result = simulate_file(HERE / f"{name}.yaml", ["steps=3", "faults.scale=4", crashes,
                                                   *ASYNC])
    s = result.summary
    assert s["policy"] == "async" and s["steps"] == 3
    trains = [x for x in result.recorder.spans if x.track == "controller"
              and x.name == "train"]
    assert [x.attrs["samples"] for x in trains] == [16 * 8] * 3
    assert max(x.attrs["staleness_max"] for x in trains) <= 1
    by_kind = s["faults"]["by_kind"]
    assert by_kind["engine"]["injected"] == by_kind["engine"]["recovered"] == 2
    assert by_kind["env"]["recovered"] > 0
    assert s["attempts"]["cancelled"] > 0  # redundant trajectories were cut
    assert sum(x.attrs["resumed"] for x in result.recorder.spans if x.name == "step") > 0
    engine = by_kind["engine"]["recovery_s"]["mean"]
    assert (engine < 1.5) == name.endswith("belayer")


def test_over_age_replacement_under_faults() -> None:
    """A point of reports/belayer.md's sweep (seed 1, twice the failure rate) in which a
    group completes while one of its redundant slots has never started (it waited for a
    replaced trajectory) and is then replaced as over-age: the slot is simply not handed
    on (it raised KeyError once)."""
    res = simulate_file(HERE / "swe-qwen3-8b-baseline.yaml",
                        ["seed=1", *ASYNC, "faults.scale=2"])
    assert any(i.name == "decision" and i.attrs.get("what") == "async_replace"
               for i in res.recorder.instants)
    assert res.summary["attempts"]["trained"] == 10 * 16 * 8  # every step trains its batch
