"""`calibration.live.corun`: the live job's two devices measured alone and side by side."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from calibration.live import corun  # noqa: E402
from calibration.live.model import LMConfig  # noqa: E402
from calibration.live.tokenizer import Tokenizer  # noqa: E402

SMALL = LMConfig(vocab=Tokenizer().vocab_size, hidden=32, layers=2, heads=2, ffn=64,
                 max_positions=64)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs sched_setaffinity and two cores")
def test_each_side_alone_and_beside_the_other(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corun, "TRAIN_TOKENS", 128)
    monkeypatch.setattr(corun.live_engine, "TRACE_REQUESTS_QUICK", 6)
    before = os.sched_getaffinity(0)
    r = corun.measure(SMALL, rounds=2, reps=1)
    assert os.sched_getaffinity(0) == before  # the caller's cores given back
    for side in ("train", "engine"):
        assert r[side]["alone_s"] > 0 and r[side]["beside_s"] > 0
        assert r[side]["ratio"] == pytest.approx(r[side]["beside_s"] / r[side]["alone_s"])


def test_without_two_cores_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(corun, "placement", lambda: None)
    assert corun.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs two cores" in err
