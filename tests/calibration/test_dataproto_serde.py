"""The controller's serialization bench (calibration/benchmarks/dataproto_serde.py) at a
tiny batch: the bytes are veRL's padded tensors' and every step is timed."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from calibration.benchmarks import dataproto_serde


def test_a_tiny_batch_is_timed_step_by_step() -> None:
    size, sec = dataproto_serde.run(n=16, prompt=8, response=24, workers=4, reps=1)
    # int64: ids, mask, positions of [n, P+R], prompts [n, P], responses and mask [n, R]
    assert size == 16 * 8 * (3 * 32 + 8 + 2 * 24)
    assert set(sec) == set(dataproto_serde.STEPS)
    assert all(s > 0 for s in sec.values())
