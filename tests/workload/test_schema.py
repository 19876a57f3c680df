"""The workload schema: discriminated length families, ranges and error locations."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from rlsim.config.workload import LognormalLength, TraceConfig, WorkloadConfig

BASE: dict[str, Any] = {
    "prompts_per_step": 8,
    "samples_per_prompt": 4,
    "max_response_len": 4096,
}


def _errors(**fields: Any) -> list[dict[str, Any]]:
    with pytest.raises(ValidationError) as info:
        WorkloadConfig.model_validate({**BASE, **fields})
    return info.value.errors()  # type: ignore[return-value]


def _locs(**fields: Any) -> list[tuple[Any, ...]]:
    return [tuple(e["loc"]) for e in _errors(**fields)]


def test_every_family_parses() -> None:
    for dist in (
        {"dist": "fixed", "value": 100},
        {"dist": "normal", "mean": 1000, "std": 200},
        {"dist": "lognormal", "median": 1000, "sigma": 0.8},
        {"dist": "gmm", "weights": [0.3, 0.3, 0.4], "means": [1, 2, 3], "stds": [1, 1, 1]},
        {"dist": "empirical", "values": [1, 2, 3]},
        {"dist": "empirical", "path": "lengths.txt"},
    ):
        cfg = WorkloadConfig.model_validate({**BASE, "response_len": dist})
        assert cfg.response_len is not None and cfg.response_len.dist == dist["dist"]


def test_gmm_weights_must_sum_to_one() -> None:
    errors = _errors(
        response_len={"dist": "gmm", "weights": [0.5, 0.4], "means": [1, 2], "stds": [1, 1]}
    )
    assert [tuple(e["loc"]) for e in errors] == [("response_len", "gmm", "weights")]
    assert "sum to 1" in errors[0]["msg"]


def test_gmm_weights_within_tolerance_pass() -> None:
    third = 1 / 3
    WorkloadConfig.model_validate({**BASE, "response_len": {
        "dist": "gmm", "weights": [third, third, third + 5e-7], "means": [1, 2, 3],
        "stds": [1, 1, 1]}})


def test_gmm_lists_must_match_weights() -> None:
    locs = _locs(
        response_len={"dist": "gmm", "weights": [0.5, 0.5], "means": [1], "stds": [1, 1]}
    )
    assert locs == [("response_len", "gmm", "means")]


def test_gmm_std_must_be_positive() -> None:
    locs = _locs(
        response_len={"dist": "gmm", "weights": [0.5, 0.5], "means": [1, 2], "stds": [1, -1]}
    )
    assert locs == [("response_len", "gmm", "stds", 1)]


def test_negative_std_names_the_field() -> None:
    assert _locs(response_len={"dist": "normal", "mean": 10, "std": -1}) == [
        ("response_len", "normal", "std")
    ]
    assert _locs(prompt_len={"dist": "lognormal", "median": 10, "sigma": -0.5}) == [
        ("prompt_len", "lognormal", "sigma")
    ]


def test_unknown_dist_names_the_field() -> None:
    errors = _errors(response_len={"dist": "weibull", "shape": 2})
    assert [tuple(e["loc"]) for e in errors] == [("response_len",)]
    assert errors[0]["type"] == "union_tag_invalid"
    assert "weibull" in errors[0]["msg"]


def test_nan_is_rejected() -> None:
    assert _locs(response_len={"dist": "normal", "mean": math.nan, "std": 1}) == [
        ("response_len", "normal", "mean")
    ]


def test_empirical_needs_exactly_one_source() -> None:
    for dist in ({"dist": "empirical"},
                 {"dist": "empirical", "values": [1.0], "path": "x.txt"}):
        errors = _errors(response_len=dist)
        assert errors[0]["loc"][0] == "response_len"
        assert "exactly one" in errors[0]["msg"]


def test_response_len_required_without_trace() -> None:
    errors = _errors()
    assert "response_len is required unless trace is set" in errors[0]["msg"]
    cfg = WorkloadConfig.model_validate({**BASE, "trace": {"path": "polytrace/x"}})
    assert cfg.trace is not None and cfg.trace.order == "sequential"


def test_ranges() -> None:
    dist = {"dist": "fixed", "value": 10}
    assert _locs(response_len=dist, group_correlation=1.0) == [("group_correlation",)]
    assert _locs(response_len=dist, group_correlation=-0.1) == [("group_correlation",)]
    assert _locs(response_len=dist, difficulty_length_correlation=1.5) == [
        ("difficulty_length_correlation",)
    ]
    assert _locs(response_len=dist, samples_per_prompt=0) == [("samples_per_prompt",)]
    assert _locs(response_len=dist, max_response_len=0) == [("max_response_len",)]
    assert _locs(response_len={"dist": "fixed", "value": 0}) == [
        ("response_len", "fixed", "value")
    ]


def test_unknown_field_and_frozen() -> None:
    dist = {"dist": "fixed", "value": 10}
    assert _locs(response_len=dist, prompt_count=3) == [("prompt_count",)]
    cfg = WorkloadConfig.model_validate({**BASE, "response_len": dist})
    with pytest.raises(ValidationError):
        cfg.prompts_per_step = 3  # type: ignore[misc]


def test_trace_order_is_checked() -> None:
    with pytest.raises(ValidationError) as info:
        TraceConfig.model_validate({"path": "x", "order": "random"})
    assert info.value.errors()[0]["loc"] == ("order",)


def test_lognormal_from_mean_std() -> None:
    d = LognormalLength.from_mean_std(1000.0, 500.0)
    assert d.median * math.exp(d.sigma**2 / 2) == pytest.approx(1000.0)
    assert math.sqrt(math.exp(d.sigma**2) - 1) == pytest.approx(0.5)


def test_every_field_has_help_text() -> None:
    schema = WorkloadConfig.model_json_schema()
    models = [schema, *schema.get("$defs", {}).values()]
    for model in models:
        for name, prop in model.get("properties", {}).items():
            assert prop.get("description"), f"{model.get('title')}.{name} has no description"
