"""`Workload.batch` arguments: defaults, sizes, and misuse that must raise."""

from __future__ import annotations

import pytest

from rlsim.workload.generator import CHUNK_PROMPTS
from tests.workload.helpers import make_workload


def test_defaults_and_sizes() -> None:
    w = make_workload(prompts_per_step=12, samples_per_prompt=5)
    groups = w.batch(0)
    assert len(groups) == 12 and {len(g.response_tokens) for g in groups} == {5}
    assert w.batch(0, 0) == []
    assert [len(g.response_tokens) for g in w.batch(0, 2, 17)] == [17, 17]
    assert w.trace_prompts is None


@pytest.mark.parametrize(
    ("args", "message"),
    [((-1,), "step must be >= 0"), ((0, -1), "n_prompts must be in"),
     ((0, 1_000_001), "n_prompts must be in"), ((0, 4, 0), "n_samples must be >= 1")],
)
def test_misuse_raises(args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_workload().batch(*args)


AGENTIC = {"turns": {"dist": "lognormal", "median": 4, "sigma": 0.5}, "max_turns": 9,
           "env_step": {"dist": "normal", "mean": 2, "std": 1},
           "env_reset": {"dist": "lognormal", "median": 1, "sigma": 0.5},
           "obs_tokens": {"dist": "lognormal", "median": 50, "sigma": 0.4}}


@pytest.mark.parametrize("fields", [{}, {"agentic": AGENTIC},
                                    {"agentic": {**AGENTIC, "max_context_len": 3000}}],
                         ids=["single-turn", "agentic", "agentic-capped"])
def test_first_gives_the_tail_of_the_same_batch(fields: dict) -> None:
    """`first=k` is the batch's groups from k on, exactly (an async replacement draws the
    next prompts of a step without building the ones before them again)."""
    w = make_workload(**fields)
    whole = w.batch(2, 40, 6)
    for k in (0, 1, 17, 39, 40):
        tail = w.batch(2, 40, 6, first=k)
        assert tail == whole[k:] and repr(tail) == repr(whole[k:])


TASKS = [{"name": "math", "share": 0.3, "response_len": {"dist": "lognormal", "median": 900,
                                                         "sigma": 0.7}},
         {"name": "code", "share": 0.7}]


@pytest.mark.parametrize("fields", [{}, {"agentic": AGENTIC}, {"tasks": TASKS}],
                         ids=["single-turn", "agentic", "tasks"])
def test_first_past_a_chunk_draws_only_its_chunks_and_gives_the_same_tail(fields: dict) -> None:
    """Prompts are drawn in chunks of CHUNK_PROMPTS: `first` in a later chunk draws from
    that chunk on, and its groups are still exactly the tail of the whole batch."""
    w = make_workload(**fields)
    n = 2 * CHUNK_PROMPTS + 5
    whole = w.batch(1, n, 2)
    for k in (CHUNK_PROMPTS - 1, CHUNK_PROMPTS, CHUNK_PROMPTS + 7, 2 * CHUNK_PROMPTS, n - 1):
        assert w.batch(1, n, 2, first=k) == whole[k:]
