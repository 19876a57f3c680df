"""The rollout driver's per-request work (`calibration.live.driver`): its microbenchmark on the
live job's own workers, and the seconds per request event the derived scenario gets."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")

from calibration.live.driver import DriverCosts, measure_driver_costs
from calibration.live.model import LMConfig
from calibration.live.runner import LiveConfig
from calibration.live.tokenizer import Tokenizer


def test_per_event_seconds_spread_the_driver_work_over_admissions_and_finishes() -> None:
    c = DriverCosts(submit_s=1.0, finish_s=2.0, env_submit_s=10.0, env_take_s=40.0,
                    reward_submit_s=30.0, reward_take_s=20.0)
    # 4 samples, 6 environment steps: 10 requests, 20 events. Work: 4 first submits (4),
    # 10 finishes (20), 6 steps x 50 (300); async adds 4 reward jobs x 50 (200).
    assert c.request_overhead_s(4, 6, async_mode=False) == pytest.approx(324 / 20)
    assert c.request_overhead_s(4, 6, async_mode=True) == pytest.approx(524 / 20)
    # Single-turn samples: a submit and a finish per request, two events.
    assert c.request_overhead_s(8, 0, async_mode=False) == pytest.approx(3.0 / 2)
    assert c.request_overhead_s(0, 0, async_mode=True) == 0.0


def test_the_benchmark_times_every_operation_of_the_driver_on_the_live_workers() -> None:
    cfg = LiveConfig(env_workers=1, reward_workers=1, max_running=4, max_len=40,
                     lm=LMConfig(vocab=Tokenizer().vocab_size, hidden=16, layers=1, heads=2, ffn=32,
                                 max_positions=40))
    costs = measure_driver_costs(cfg, None, repeats=5)
    for name, secs in costs.as_json().items():
        # microseconds to a few milliseconds on any machine, never 0
        assert math.isfinite(secs) and 0 < secs < 0.05, (name, secs)
