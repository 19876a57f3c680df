"""A finished batch releases its rollouts' hooks, so a step's rollouts and samples are freed
by reference counting, not left in cycles for the garbage collector (which scanned each of
them first: a tenth of a large sync run's time)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from rlsim.api import simulate
from rlsim.config.loading import scenario_from_dict
from rlsim.entities.rollout import Rollout, Sample
from tests.scenarios import tiny

AGENTIC = {"turns": {"dist": "fixed", "value": 3}, "max_turns": 4,
           "env_step": {"dist": "normal", "mean": 0.5, "std": 0.1},
           "obs_tokens": {"dist": "fixed", "value": 30}}


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def _left_over() -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, Rollout | Sample))


STEPS = 6
LAUNCHED = 12 * 6  # one step's rollouts at most: 8 prompts x 4 samples, x 1.5 each way


@pytest.mark.parametrize("changes", [
    {"policy": {"name": "sync"}},
    {"policy": {"name": "sync", "env_interaction": "batched"},
     "workload__agentic": AGENTIC, "env": {"workers": 4}},
    {"policy": {"name": "tail_batching",
                "tail_batching": {"eta_p": 1.5, "eta_r": 1.5}}},
], ids=["sync", "sync-batched-multi-turn", "tail_batching"])
def test_rollouts_do_not_pile_up_for_the_collector(no_collector: None,
                                                   changes: dict[str, Any]) -> None:
    """With the collector off, what is left after a run is at most what the (cyclic) dead
    cluster still holds of its last step: no step's rollouts pile up in cycles."""
    scenario, base = scenario_from_dict(tiny(steps=STEPS, **changes))
    before = _left_over()  # held by earlier tests, if any
    result = simulate(scenario, base)
    assert result.summary["steps"] == STEPS
    del result
    assert _left_over() - before <= LAUNCHED
