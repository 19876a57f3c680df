"""`summary`: the statistics that tests, docs and calibration read off prompt groups."""

from __future__ import annotations

import math

import pytest

from rlsim.workload import PromptGroup, summary


def test_known_values() -> None:
    groups = [
        PromptGroup(0, 10, (100, 100, 100, 100), 400),
        PromptGroup(1, 30, (100, 300, 400, 400), 400),
    ]
    s = summary(groups)
    assert s["n_groups"] == 2 and s["n_responses"] == 8
    assert s["prompt_tokens_mean"] == 20
    assert s["response_tokens_mean"] == 200
    assert s["response_tokens_p50"] == 100
    assert s["response_tokens_max"] == 400
    assert s["response_max_over_p50"] == 4
    assert s["cap_hit_fraction"] == 2 / 8
    second_cv = math.sqrt(((100 - 300) ** 2 + 0 + 100**2 + 100**2) / 4) / 300
    assert s["intra_group_cv_mean"] == pytest.approx(second_cv / 2)
    assert groups[1].capped == 2


def test_latent_correlation_needs_equal_groups() -> None:
    groups = [PromptGroup(0, 1, (1, 2), 9), PromptGroup(1, 1, (1, 2, 3), 9)]
    assert math.isnan(summary(groups)["latent_group_correlation"])
    single = [PromptGroup(0, 1, (5,), 9), PromptGroup(1, 1, (6,), 9)]
    assert math.isnan(summary(single)["intra_group_cv_mean"])


def test_empty_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one"):
        summary([])
