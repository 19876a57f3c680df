"""A sweep's size is checked before anything runs: too many points, or a point too large."""

from __future__ import annotations

import pytest

from rlsim.config.errors import ScenarioError
from rlsim.sweep import build_spec, run_sweep
from rlsim.sweep.runner import DEFAULT_MAX_POINTS
from tests.cli.test_bad_input import run_cli

MILLION = ["--grid", "workload.prompts_per_step=" + ",".join(str(i) for i in range(1, 101)),
           "--grid", "reward.workers=" + ",".join(str(i) for i in range(1, 101)),
           "--grid", "steps=" + ",".join(str(i) for i in range(1, 101))]


def test_a_million_point_grid_is_refused_up_front(scenario, tmp_path, monkeypatch, capsys):
    """Regression: a 10^6-point grid was expanded and started (hours, a million files)."""
    out = tmp_path / "s"
    code, stdout, err = run_cli(["sweep", str(scenario), "--out", str(out), *MILLION],
                                monkeypatch, capsys)
    assert code == 2 and stdout == ""
    [line] = err.strip().splitlines()
    assert line.startswith("rlsim: error: --max-points: the sweep has 1,000,000 points")
    assert "of simulation on one core" in line and "--max-points 1000000" in line
    assert not out.exists()  # nothing written


def test_max_points_overrides_the_limit(scenario, tmp_path):
    spec, ctx = build_spec(scenario, [], ["steps=1,2,3"], None, [], 1)
    with pytest.raises(ScenarioError) as err:
        run_sweep(spec, ctx, tmp_path / "s", jobs=1, max_points=2)
    assert err.value.field == "--max-points" and "3 points" in err.value.message
    assert run_sweep(spec, ctx, tmp_path / "s", jobs=1, max_points=3).done == 3


def test_cli_default_is_the_documented_limit():
    import inspect

    from rlsim import cli

    default = inspect.signature(cli.sweep).parameters["max_points"].default
    assert default == DEFAULT_MAX_POINTS == 10_000


def test_a_point_over_the_run_size_limits_is_refused(scenario, tmp_path, monkeypatch, capsys):
    """The largest point is checked as `rlsim run` checks a scenario (config.limits)."""
    out = tmp_path / "s"
    args = ["sweep", str(scenario), "--out", str(out), "--grid", "steps=2,1000000000"]
    code, _, err = run_cli(args, monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "point 1 (steps=1000000000)" in err and "--allow-large" in err
    assert not out.exists()
