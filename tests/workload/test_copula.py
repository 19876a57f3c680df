"""Within-group correlation (the Gaussian copula) and prompt-length correlation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import rankdata

from rlsim.workload import load_polytrace, summary
from tests.workload.helpers import DAPO, make_workload, responses


def _normal_scores(x: np.ndarray) -> np.ndarray:
    return ndtri((rankdata(x) - 0.5) / x.size)


@pytest.mark.parametrize("rho", [0.0, 0.3, 0.9])
def test_group_correlation_recovered(rho: float) -> None:
    w = make_workload(prompts_per_step=1024, group_correlation=rho, max_response_len=10**6,
                      response_len={"dist": "normal", "mean": 10000, "std": 1000})
    lengths = responses(w, 4).astype(float)
    # Pearson between two samples of a group; the normal marginal keeps it equal to rho.
    assert np.corrcoef(lengths[:, 0], lengths[:, 1])[0, 1] == pytest.approx(rho, abs=0.04)
    groups = [g for k in range(4) for g in w.batch(k)]
    assert summary(groups)["latent_group_correlation"] == pytest.approx(rho, abs=0.03)


def test_high_correlation_makes_groups_homogeneous() -> None:
    dist = {"dist": "lognormal", "median": 1000, "sigma": 1.0}
    cv = {
        rho: summary(make_workload(group_correlation=rho, response_len=dist).batch(0, 1024))[
            "intra_group_cv_mean"
        ]
        for rho in (0.0, 0.9)
    }
    assert cv[0.9] < 0.5 * cv[0.0]


def test_dapo_intra_group_cv_reproduced() -> None:
    """The DAPO trace's marginal plus its measured latent rho give its intra-group CV."""
    trace = load_polytrace(DAPO)
    lengths = [n for _, r in trace for n in r]
    from rlsim.workload.stats import trace_groups

    measured = summary(trace_groups(DAPO, max(lengths)))
    assert measured["intra_group_cv_mean"] == pytest.approx(0.60, abs=0.01)  # REFERENCES.md
    w = make_workload(
        prompts_per_step=1024, max_response_len=max(lengths),
        group_correlation=round(measured["latent_group_correlation"], 2),
        response_len={"dist": "empirical", "values": lengths},
    )
    simulated = summary([g for k in range(4) for g in w.batch(k)])
    assert simulated["intra_group_cv_mean"] == pytest.approx(
        measured["intra_group_cv_mean"], abs=0.05
    )


@pytest.mark.parametrize("c", [0.0, 0.7, -0.5])
def test_difficulty_length_correlation(c: float) -> None:
    rho = 0.9
    w = make_workload(prompts_per_step=1024, group_correlation=rho, difficulty_length_correlation=c)
    groups = [g for k in range(4) for g in w.batch(k)]
    prompt = _normal_scores(np.array([g.prompt_tokens for g in groups], dtype=float))
    first = _normal_scores(np.array([g.response_tokens[0] for g in groups], dtype=float))
    # Prompt score = c z + noise; a response score = sqrt(rho) z + noise.
    assert np.corrcoef(prompt, first)[0, 1] == pytest.approx(c * np.sqrt(rho), abs=0.04)


def test_redraw_keeps_the_prompts_difficulty_and_draws_new_responses() -> None:
    normal = {"dist": "normal", "mean": 10000, "std": 1000}
    # rho near 1: a group's lengths are its difficulty alone, so a redraw gives the same
    same = make_workload(group_correlation=1 - 1e-8, max_response_len=10**6,
                         response_len=normal)
    for g in same.batch(3):
        redrawn = same.redraw(g, 8).response_tokens
        assert all(abs(a - b) <= 2 for a, b in zip(redrawn, g.response_tokens, strict=True))
    # rho = 0.5: new responses, still correlated with the prompt's first ones through z
    w = make_workload(prompts_per_step=1024, group_correlation=0.5, max_response_len=10**6,
                      response_len=normal)
    groups = w.batch(2)
    again = [w.redraw(g, 8) for g in groups]
    assert again == [w.redraw(g, 8) for g in groups]  # deterministic
    assert all(a.response_tokens != g.response_tokens for a, g in zip(again, groups, strict=True))
    assert all(a.prompt_id == g.prompt_id and a.prompt_tokens == g.prompt_tokens
               for a, g in zip(again, groups, strict=True))
    first = np.array([g.response_tokens[0] for g in groups], dtype=float)
    fresh = np.array([a.response_tokens[0] for a in again], dtype=float)
    assert np.corrcoef(first, fresh)[0, 1] == pytest.approx(0.5, abs=0.08)
    assert w.redraw(groups[0], 8, attempt=2) != again[0]  # another attempt, other draws
    assert len(w.redraw(groups[0], 3).response_tokens) == 3


def test_redraw_of_a_trace_reuses_its_first_responses() -> None:
    w = make_workload(trace={"path": str(DAPO), "format": "polytrace"})
    g = w.batch(0)[0]
    assert w.redraw(g, 4).response_tokens == g.response_tokens[:4]
