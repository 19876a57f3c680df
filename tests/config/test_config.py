"""Scenario schema: units, overrides, help text, catalogues."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import GPUS, MODELS
from rlsim.config.loading import apply_override, scenario_from_dict, split_overrides
from rlsim.config.scenario import Scenario
from rlsim.config.units import parse_bandwidth, parse_duration, parse_size
from tests.scenarios import tiny


@pytest.mark.parametrize("text,seconds", [
    ("250 ms", 0.25), ("1.5 s", 1.5), ("2 min", 120.0), ("10us", 1e-5), (3, 3.0), ("1h", 3600),
])
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text,value", [
    ("80 GiB", 80 * 2**30), ("80 GB", 80e9), ("512 MB", 512e6), (1024, 1024.0),
])
def test_sizes(text, value):
    assert parse_size(text) == pytest.approx(value)


@pytest.mark.parametrize("text,value", [
    ("400 Gb/s", 50e9), ("900 GB/s", 900e9), ("20 Gbps", 2.5e9), ("3.35 TB/s", 3.35e12),
])
def test_bandwidths(text, value):
    assert parse_bandwidth(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["30 GB", "fast", "", "1 parsec", True, [1]])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


@given(st.floats(0, 1e6, allow_nan=False), st.sampled_from(["s", "ms", "us", "min"]))
def test_duration_roundtrip(x, unit):
    scale = {"s": 1, "ms": 1e-3, "us": 1e-6, "min": 60}[unit]
    assert parse_duration(f"{x!r} {unit}") == pytest.approx(x * scale)


def test_split_overrides_respects_brackets():
    assert split_overrides("a=1,b=[1,2],c='x,y'") == ["a=1", "b=[1,2]", "c='x,y'"]


def test_override_paths():
    data = tiny()
    apply_override(data, "rollout.tp=2")
    apply_override(data, "pools.cluster.nodes=2")
    apply_override(data, "pools.0.gpu=H800")
    apply_override(data, "reward.latency.median=20 ms")
    s, _ = scenario_from_dict(data)
    assert s.rollout.tp == 2 and s.pools[0].nodes == 2 and s.pools[0].gpu == "H800"
    assert s.reward.latency.median == pytest.approx(0.02)


def test_scenario_is_frozen():
    s, _ = scenario_from_dict(tiny())
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        s.steps = 5  # type: ignore[misc]


def test_every_schema_field_has_help_text():
    schema = Scenario.model_json_schema()
    missing = []
    for name, model in [("Scenario", schema), *schema.get("$defs", {}).items()]:
        for field, spec in model.get("properties", {}).items():
            if "description" not in spec:
                missing.append(f"{name}.{field}")
    assert not missing, missing


def test_catalogues():
    assert set(GPUS) == {"H100", "H800", "H20", "H200", "A100", "B200", "GB200", "MI300X"}
    for name in ["qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b", "qwen3-8b",
                 "qwen3-14b", "qwen3-32b", "llama-2-7b", "llama-2-70b", "llama-3-8b",
                 "llama-3-70b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3"]:
        assert name in MODELS
    # parameter counts against the published sizes
    expect = {"qwen2.5-7b": 7.6e9, "qwen2.5-72b": 72.7e9, "llama-2-7b": 6.7e9,
              "llama-2-70b": 69e9, "llama-3-8b": 8.0e9, "qwen3-8b": 8.2e9, "qwen3-32b": 32.8e9,
              "qwen3-14b": 14.8e9, "qwen3-30b-a3b": 30.5e9, "qwen3-235b-a22b": 235e9,
              "deepseek-v3": 671e9, "llama-2-13b": 13.0e9}
    for name, params in expect.items():
        assert MODELS[name].params == pytest.approx(params, rel=0.03), name
    assert MODELS["llama-2-7b"].kv_bytes_per_token() == 2 * 32 * 4096 * 2


def test_inline_model_and_gpu():
    data = tiny(model={"name": "mini", "layers": 4, "hidden": 512, "heads": 8, "kv_heads": 8,
                       "ffn": 2048, "vocab": 1000},
                pools=[{"name": "cluster", "nodes": 1, "gpu": {
                    "name": "X1", "bf16_tflops": 100, "hbm": "24 GB", "hbm_bandwidth": "1 TB/s",
                    "nvlink_bandwidth": "100 GB/s", "pcie_bandwidth": "32 GB/s", "sm_count": 60,
                    "usd_per_gpu_hour": 0.5}}])
    s, _ = scenario_from_dict(data)
    assert s.model_spec.name == "mini" and s.pools[0].gpu_spec.name == "X1"


def test_disaggregated_split_of_one_pool():
    from rlsim.config.placement import resolve_placement

    s, _ = scenario_from_dict(tiny(policy__placement="disaggregated",
                                   pools__0__nodes=2))
    p = resolve_placement(s)
    assert (p.rollout_gpus, p.train_gpus, p.engines) == (8, 8, 8)
    with pytest.raises(ScenarioError):
        scenario_from_dict(tiny(policy__placement="disaggregated", rollout__gpus=6,
                                train__gpus=6))


def test_scenario_reference_doc_is_current():
    from pathlib import Path

    from rlsim.config.reference import markdown

    doc = Path(__file__).resolve().parents[2] / "docs" / "scenario.md"
    assert doc.read_text() == markdown(), "regenerate: rlsim schema --markdown > docs/scenario.md"


def test_pool_profile_with_device_becomes_the_pool_gpu(tmp_path):
    import json

    device = {"name": "local-cpu", "bf16_tflops": 0.2, "hbm": 24e9, "hbm_bandwidth": 10e9,
              "nvlink_bandwidth": 5e9, "pcie_bandwidth": 10e9, "sm_count": 2,
              "gpus_per_node": 1, "usd_per_gpu_hour": 0.0}
    from rlsim.config.hardware import lookup_gpu
    from rlsim.cost.profile import builtin_profile

    base = json.loads(builtin_profile(lookup_gpu("H100")).model_dump_json())
    base.update({"gpu": "local-cpu", "device": device})
    (tmp_path / "cpu.json").write_text(json.dumps(base))
    data = tiny(pools=[{"name": "cluster", "profile": "cpu.json", "nodes": 1}])
    s, _ = scenario_from_dict(data, base_dir=tmp_path)
    assert s.pools[0].gpu_spec.name == "local-cpu"
    assert s.pools[0].profile == str((tmp_path / "cpu.json").resolve())
