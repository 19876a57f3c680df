"""The Ray executor gives the same rows as the local process pool."""

from __future__ import annotations

import importlib.util

import pytest

from rlsim.sweep import build_spec, read_results, run_sweep

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason="ray not installed (pip install 'rlsim[ray]')")


def test_ray_rows_equal_local_rows(scenario, tmp_path):
    import ray

    spec, ctx = build_spec(scenario, [], ["rollout.tp=1,16", "workload.prompts_per_step=4,8"],
                           None, [], 1)
    run_sweep(spec, ctx, tmp_path / "local", jobs=2)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        outcome = run_sweep(spec, ctx, tmp_path / "ray", executor="ray", jobs=2)
        assert ray.is_initialized()  # a Ray the caller started is left running
    finally:
        ray.shutdown()
    assert (outcome.done, outcome.failed) == (4, 2)
    assert read_results(tmp_path / "ray").equals(read_results(tmp_path / "local"))
