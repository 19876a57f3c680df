"""Sweep expansion: grid order, typed values, random points, replicate seeds, bad options."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import yaml

from rlsim.config.errors import ScenarioError
from rlsim.sweep import build_spec, replicate_seed
from rlsim.sweep.spec import yaml_number
from tests.cli.test_bad_input import run_cli
from tests.scenarios import tiny, write


def test_grid_product_count_and_order(scenario):
    spec, ctx = build_spec(scenario, [], ["workload.prompts_per_step=4,8",
                                          "policy.placement=colocated,disaggregated,x"],
                           None, [], 2)
    points = spec.points()
    assert spec.n_points == len(points) == 2 * 3 * 2
    assert [p.id for p in points] == list(range(12))
    assert ctx.keys == spec.keys == ("workload.prompts_per_step", "policy.placement")
    # First grid slowest, replicate fastest.
    assert [(p.values, p.replicate) for p in points[:4]] == [
        ((4, "colocated"), 0), ((4, "colocated"), 1),
        ((4, "disaggregated"), 0), ((4, "disaggregated"), 1)]
    assert points[6].values == (8, "colocated")
    assert points[5].overrides == ("workload.prompts_per_step=4", "policy.placement=x",
                                   f"seed={points[5].seed}")


def test_values_are_yaml_scalars_with_one_type_per_column(scenario):
    spec, _ = build_spec(scenario, ["steps=3"], ["rollout.tp=1,2", "x.f=0.5,1",
                                                 "policy.name=sync,one_off", "y.b=true,false"],
                         None, [], 1)
    assert [(a.key, a.dtype) for a in spec.grid] == [
        ("rollout.tp", "int64"), ("x.f", "float64"), ("policy.name", "string"),
        ("y.b", "bool")]
    assert spec.grid[1].values == (0.5, 1.0)
    assert all(isinstance(v, float) for v in spec.grid[1].values)
    assert spec.points()[0].overrides[0] == "steps=3"  # --set first, then the point


def test_random_points_within_ranges_and_deterministic(scenario):
    args = (scenario, [], ["rollout.tp=1,2"], 6,
            ["workload.prompts_per_step=2:9", "reward.latency.sigma=0.1:0.9"], 1)
    spec, _ = build_spec(*args)
    points = spec.points()
    assert len(points) == 2 * 6
    ints = [p.values[1] for p in points]
    floats = [p.values[2] for p in points]
    assert all(isinstance(v, int) and 2 <= v <= 9 for v in ints)
    assert all(isinstance(v, float) and 0.1 <= v <= 0.9 for v in floats)
    assert len(set(floats)) == 6  # six distinct random points, reused for each grid value
    assert floats[:6] == floats[6:]
    assert build_spec(*args)[0].points() == points  # what --resume regenerates
    # The override text reads back (as --set reads it) as the drawn value.
    for p in points:
        assert yaml.safe_load(p.overrides[2].split("=", 1)[1]) == p.values[2]
    other = write(scenario.parent, tiny(seed=5), "other.yaml")
    assert [p.values for p in build_spec(other, *args[1:])[0].points()] != \
        [p.values for p in points]


def test_replicate_seeds_common_random_numbers(tmp_path):
    path = write(tmp_path, tiny(seed=7))
    spec, _ = build_spec(path, [], ["rollout.tp=1,2", "steps=2,3"], None, [], 3)
    seeds: dict[int, set[int]] = {}
    for p in spec.points():
        seeds.setdefault(p.replicate, set()).add(p.seed)
    assert all(len(s) == 1 for s in seeds.values())  # one seed per replicate (CRN)
    assert seeds[0] == {7}  # replicate 0 is the scenario's own seed
    assert len({next(iter(s)) for s in seeds.values()}) == 3
    expected = int(np.random.SeedSequence([7, 2]).generate_state(1, np.uint64)[0]) >> 1
    assert seeds[2] == {expected} == {replicate_seed(7, 2)}
    # --set seed=N moves the base seed.
    spec, _ = build_spec(path, ["seed=11"], [], None, [], 1)
    assert spec.points()[0].seed == 11 and spec.n_points == 1


@pytest.mark.parametrize("value", [1e-05, 2.5e20, 0.1, 3.0, 12345.678, 7])
def test_yaml_number_round_trips(value):
    assert yaml.safe_load(yaml_number(value)) == value


@pytest.mark.parametrize("args,field", [
    (["--grid", "rollout.tp"], "--grid"),
    (["--grid", "rollout.tp="], "--grid"),
    (["--grid", "rollout.tp=1,,2"], "--grid"),
    (["--grid", "=1,2"], "--grid"),
    (["--grid", "seed=1,2"], "--grid"),
    (["--grid", "rollout.tp=1,2", "--grid", "rollout.tp=4"], "--grid"),
    (["--random", "3"], "--random"),
    (["--random", "0", "--range", "steps=1:2"], "--random"),
    (["--range", "steps=1:3"], "--range"),
    (["--random", "3", "--range", "steps=5:1"], "--range"),
    (["--random", "3", "--range", "steps=a:b"], "--range"),
    (["--random", "3", "--range", "steps=4"], "--range"),
    (["--reps", "0"], "--reps"),
    (["--jobs", "0"], "--jobs"),
    (["--executor", "dask"], "--executor"),
    (["--address", "10.0.0.1:6379"], "--address"),
    (["--grid", "rollout.tpp=1,2"], "rollout.tpp"),          # every point: unknown key
    (["--set", "nope=1", "--grid", "rollout.tp=1,2"], "nope"),  # every point: bad --set
])
def test_bad_options_one_line_exit_2(args, field, scenario, tmp_path, monkeypatch, capsys):
    out = tmp_path / "sweep"
    code, stdout, err = run_cli(["sweep", str(scenario), "--out", str(out), *args],
                                monkeypatch, capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rlsim: error: ") and field in lines[0], lines[0]
    assert "Traceback" not in err and stdout == ""
    assert not out.exists()  # nothing written for a sweep that cannot run


def test_ray_executor_without_ray(scenario, tmp_path, monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ray" else real(name, *a))
    code, _, err = run_cli(["sweep", str(scenario), "--out", str(tmp_path / "s"),
                            "--grid", "steps=1,2", "--executor", "ray"], monkeypatch, capsys)
    assert code == 2
    assert "--executor" in err and "pip install 'rlsim[ray]'" in err
    assert len(err.strip().splitlines()) == 1


def test_build_spec_rejects_points_with_mixed_sources(scenario):
    with pytest.raises(ScenarioError) as exc:
        build_spec(scenario, [], ["steps=1,2"], 2, ["steps=1:3"], 1)
    assert exc.value.field == "--range" and "twice" in exc.value.message


def test_spec_json_tells_int_ranges_from_float_ranges(scenario):
    ints = build_spec(scenario, [], [], 2, ["steps=1:2"], 1)[0].to_json()
    floats = build_spec(scenario, [], [], 2, ["steps=1:2.0"], 1)[0].to_json()
    assert ints["ranges"] == floats["ranges"]  # 2 == 2.0 in JSON terms ...
    assert ints["columns"] != floats["columns"]  # ... so the column types are compared too


def test_scientific_notation_is_a_number(scenario):
    """YAML 1.1 reads 5e-1 as a string; `--set` (pydantic) takes it as a number, so a sweep
    over learning-rate-like values must too."""
    spec, _ = build_spec(scenario, [], ["x.lr=1e-5,3e-5", "y.u=5e-1,0.9"], 2,
                         ["reward.latency.sigma=1e-1:9e-1"], 1)
    assert [(a.key, a.dtype) for a in spec.grid] == [("x.lr", "float64"), ("y.u", "float64")]
    assert spec.grid[0].values == (1e-5, 3e-5)
    assert all(0.1 <= p.values[2] <= 0.9 for p in spec.points())
