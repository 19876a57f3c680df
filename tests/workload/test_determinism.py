"""Common random numbers: same seed and step give the same prompts, in any call order."""

from __future__ import annotations

from functools import cache

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.workload import Workload
from rlsim.workload.generator import CHUNK_PROMPTS, PROMPT_ID_STRIDE, SAMPLE_BLOCK
from tests.workload.helpers import DEEPCODER, make_workload

GMM = {"dist": "gmm", "weights": [0.6, 0.4], "means": [800, 6000], "stds": [300, 2500]}


def test_same_seed_same_batches() -> None:
    a, b = make_workload(seed=7, response_len=GMM), make_workload(seed=7, response_len=GMM)
    for step in range(3):
        assert a.batch(step) == b.batch(step)


def test_different_seed_differs() -> None:
    a, b = make_workload(seed=7, response_len=GMM), make_workload(seed=8, response_len=GMM)
    assert a.batch(0) != b.batch(0)
    assert a.batch(0) != a.batch(1)


def test_order_independence() -> None:
    a, b = make_workload(seed=3), make_workload(seed=3)
    a3, a1 = a.batch(3), a.batch(1)
    b1, b3 = b.batch(1), b.batch(3)
    assert (a1, a3) == (b1, b3)
    assert a.batch(3) == a3  # asking again changes nothing


def test_spawned_children_are_independent_streams() -> None:
    root = np.random.SeedSequence(11)
    first, second = root.spawn(2)
    cfg = make_workload().cfg
    base = DEEPCODER.parent
    assert Workload(cfg, first, base).batch(0) != Workload(cfg, second, base).batch(0)
    assert Workload(cfg, first, base).batch(0) == Workload(
        cfg, np.random.SeedSequence(11, spawn_key=(0,)), base
    ).batch(0)


def test_global_rng_untouched() -> None:
    np.random.seed(123)
    before = np.random.get_state(legacy=False)["state"]
    make_workload(response_len=GMM).batch(0)
    make_workload(trace={"path": "polytrace/deepcoder-14b-16k", "order": "shuffle"},
                  response_len=None, max_response_len=16000).batch(0)
    after = np.random.get_state(legacy=False)["state"]
    assert np.array_equal(after["key"], before["key"]) and after["pos"] == before["pos"]


def test_prompt_ids_unique_across_steps() -> None:
    w = make_workload()
    ids = [g.prompt_id for step in (0, 1, 2, 999) for g in w.batch(step, 100)]
    assert len(set(ids)) == len(ids)
    assert w.batch(2)[5].prompt_id == 2 * PROMPT_ID_STRIDE + 5


@cache
def _workload(kind: str) -> Workload:
    if kind == "trace":
        return make_workload(seed=5, trace={"path": "polytrace/dapo-qwen2.5-32b",
                                            "order": "shuffle"},
                             response_len=None, max_response_len=16000)
    return make_workload(seed=5, response_len=GMM, difficulty_length_correlation=0.5)


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["synthetic", "trace"]),
    step=st.integers(0, 50),
    m=st.integers(0, 2 * CHUNK_PROMPTS + 10),
    extra=st.integers(0, CHUNK_PROMPTS + 10),
    s=st.integers(1, SAMPLE_BLOCK),
    extra_samples=st.integers(0, 2 * SAMPLE_BLOCK + 1),
)
def test_prefix_stability(
    kind: str, step: int, m: int, extra: int, s: int, extra_samples: int
) -> None:
    w = _workload(kind)
    t = s + extra_samples if kind == "synthetic" else SAMPLE_BLOCK
    small = w.batch(step, m, s)
    large = w.batch(step, m + extra, t)
    assert len(small) == m and len(large) == m + extra
    for a, b in zip(small, large[:m], strict=True):
        assert (a.prompt_id, a.prompt_tokens) == (b.prompt_id, b.prompt_tokens)
        assert a.response_tokens == b.response_tokens[:s]


def test_default_batch_is_prefix_of_overprovisioned() -> None:
    w = make_workload(prompts_per_step=128)
    assert w.batch(4) == w.batch(4, 160)[:128]
    assert w.batch(4) == w.batch(4, 128, 8)
