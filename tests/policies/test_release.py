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


ASYNC_AGENTIC = {
    "policy": {"name": "async", "placement": "disaggregated",
               "asynchronous": {"alpha": 1, "extra_groups": 2}},
    "pools": [{"name": "rollout", "gpu": "H100", "nodes": 1},
              {"name": "train", "gpu": "H100", "nodes": 1}],
    "rollout": {"pool": "rollout", "tp": 1, "prefix_caching": True},
    "train": {"pool": "train", "tp": 1},
    # Wide spread of turns: some trajectories straggle for steps (stale, reissued).
    "workload__agentic": {**AGENTIC, "turns": {"dist": "lognormal", "median": 3, "sigma": 1.0},
                          "max_turns": 12},
    "env": {"workers": 64},
}


def test_async_frees_what_it_trained(no_collector: None) -> None:
    """The async policy keeps no step's groups once they are over (trained, cancelled as
    redundant, replaced), and the engines' prefix caches hold keys, not rollouts: with the
    collector off, the rollouts alive at the last step are at most those of the batches
    still in flight (alpha + 1 of them), not every step's."""
    alive: list[int] = []

    def progress(step: int, steps: int) -> None:
        alive.append(sum(1 for o in gc.get_objects() if isinstance(o, Rollout)))

    scenario, base = scenario_from_dict(tiny(steps=12, **ASYNC_AGENTIC))
    per_batch = (8 + 2) * 4
    result = simulate(scenario, base, progress)
    assert result.summary["steps"] == 12
    assert result.summary["attempts"]["stale"] > 0  # stragglers were there to keep
    assert max(alive) <= 3 * per_batch, alive
    assert alive[-1] <= alive[3] + per_batch  # flat, not one batch more per step
