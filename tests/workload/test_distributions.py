"""Each length family's marginal matches its configuration; rounding, caps and files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from tests.workload.helpers import make_workload, responses

STEPS = 10  # x 1024 prompts x 8 samples = 81,920 lengths per check
PROMPTS = 1024


def _sample(dist: dict[str, object], cap: int = 10**6, rho: float = 0.0) -> np.ndarray:
    w = make_workload(prompts_per_step=PROMPTS, response_len=dist, max_response_len=cap,
                      group_correlation=rho)
    return responses(w, STEPS).ravel()


def test_lengths_are_ints_at_least_one() -> None:
    w = make_workload(response_len={"dist": "normal", "mean": 0, "std": 5})
    for g in w.batch(0):
        assert isinstance(g.prompt_tokens, int) and g.prompt_tokens >= 1
        assert all(isinstance(n, int) and n >= 1 for n in g.response_tokens)
    lengths = responses(w, 3)
    # Half the normal's mass is below 1 and is clamped there.
    assert np.mean(lengths == 1) == pytest.approx(stats.norm.cdf(1.5, 0, 5), abs=0.03)


def test_fixed() -> None:
    assert set(_sample({"dist": "fixed", "value": 777}).tolist()) == {777}


def test_normal_marginal() -> None:
    x = _sample({"dist": "normal", "mean": 5000, "std": 1000})
    assert x.mean() == pytest.approx(5000, abs=15)
    assert x.std() == pytest.approx(1000, rel=0.02)
    for q in (0.05, 0.5, 0.95):
        assert np.quantile(x, q) == pytest.approx(stats.norm.ppf(q, 5000, 1000), abs=20)


def test_lognormal_marginal() -> None:
    x = _sample({"dist": "lognormal", "median": 1000, "sigma": 1.0})
    logs = np.log(x)
    assert np.median(x) == pytest.approx(1000, rel=0.02)
    assert logs.std() == pytest.approx(1.0, rel=0.02)
    assert x.mean() == pytest.approx(1000 * np.exp(0.5), rel=0.03)
    assert np.quantile(x, 0.99) == pytest.approx(1000 * np.exp(stats.norm.ppf(0.99)), rel=0.05)


def test_marginal_unchanged_by_group_correlation() -> None:
    # Correlated groups shrink the effective sample size; use a looser tolerance.
    x = _sample({"dist": "lognormal", "median": 1000, "sigma": 1.0}, rho=0.9)
    assert np.median(x) == pytest.approx(1000, rel=0.06)
    assert np.log(x).std() == pytest.approx(1.0, rel=0.06)


def test_gmm_marginal() -> None:
    w, mu, sd = np.array([0.5, 0.3, 0.2]), np.array([2000, 8000, 14000]), np.array([500, 1500, 800])
    x = _sample({"dist": "gmm", "weights": w.tolist(), "means": mu.tolist(), "stds": sd.tolist()})
    mean = float(w @ mu)
    std = float(np.sqrt(w @ (sd**2 + mu**2) - mean**2))
    assert x.mean() == pytest.approx(mean, rel=0.01)
    assert x.std() == pytest.approx(std, rel=0.01)

    def cdf(v: np.ndarray) -> np.ndarray:
        return np.sum(w * stats.norm.cdf((np.asarray(v)[..., None] - mu) / sd), axis=-1)

    assert stats.kstest(x, cdf).statistic < 0.01
    # Component masses: the share below the gap between components is the first weight.
    assert np.mean(x < 4500) == pytest.approx(0.5, abs=0.01)


def test_empirical_values_resampled_exactly() -> None:
    x = _sample({"dist": "empirical", "values": [10, 20, 20, 30, 1000]})
    values, counts = np.unique(x, return_counts=True)
    assert values.tolist() == [10, 20, 30, 1000]
    assert (counts / x.size).tolist() == pytest.approx([0.2, 0.4, 0.2, 0.2], abs=0.01)


@pytest.mark.parametrize("text", ["5\n# comment\n\n7\n7\n9\n", "[5, 7, 7, 9]"])
def test_empirical_file_relative_to_base_dir(tmp_path: Path, text: str) -> None:
    (tmp_path / "lengths").mkdir()
    (tmp_path / "lengths" / "l.txt").write_text(text)
    w = make_workload(base_dir=tmp_path, prompts_per_step=PROMPTS,
                      response_len={"dist": "empirical", "path": "lengths/l.txt"})
    x = responses(w, 2).ravel()
    assert set(x.tolist()) == {5, 7, 9}
    assert np.mean(x == 7) == pytest.approx(0.5, abs=0.02)


@pytest.mark.parametrize(
    ("text", "where"),
    [("", "l.txt: line 1"), ("5\nabc\n", "l.txt:2"), ("[1, 2", "l.txt:1"),
     ('["a"]', "l.txt: line 1"), ("# only a comment\n", "l.txt: line 1")],
)
def test_empirical_file_errors_name_file_and_line(tmp_path: Path, text: str, where: str) -> None:
    (tmp_path / "l.txt").write_text(text)
    with pytest.raises(ValueError, match=re.escape(where)):
        make_workload(base_dir=tmp_path, response_len={"dist": "empirical", "path": "l.txt"})


def test_empirical_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.txt"):
        make_workload(base_dir=tmp_path, response_len={"dist": "empirical", "path": "nope.txt"})


def test_cap_respected_and_hit_fraction() -> None:
    cap = 2000
    x = _sample({"dist": "lognormal", "median": 1000, "sigma": 1.0}, cap=cap)
    assert x.max() == cap
    # Lengths of 1999.5 or more round to the cap.
    expected = stats.norm.sf((np.log(cap - 0.5) - np.log(1000)) / 1.0)
    assert np.mean(x == cap) == pytest.approx(expected, abs=0.01)


def test_capped_property_counts_responses_at_cap() -> None:
    w = make_workload(response_len={"dist": "fixed", "value": 5000}, max_response_len=4096)
    g = w.batch(0)[0]
    assert g.response_tokens == (4096,) * 8
    assert g.capped == 8
    assert g.total_response_tokens == 8 * 4096


def test_prompt_length_marginal_and_cap() -> None:
    w = make_workload(prompts_per_step=PROMPTS)  # default prompt_len: lognormal 256, 0.5
    prompts = np.array([g.prompt_tokens for k in range(STEPS) for g in w.batch(k)])
    assert np.median(prompts) == pytest.approx(256, rel=0.03)
    assert np.log(prompts).std() == pytest.approx(0.5, rel=0.03)
    capped = make_workload(prompts_per_step=PROMPTS, max_prompt_len=300)
    prompts = np.array([g.prompt_tokens for g in capped.batch(0)])
    assert prompts.max() == 300
    assert np.mean(prompts == 300) == pytest.approx(
        stats.norm.sf(np.log(299.5 / 256) / 0.5), abs=0.03
    )


def test_json_list_with_bools_rejected(tmp_path: Path) -> None:
    (tmp_path / "l.json").write_text(json.dumps([1, True]))
    with pytest.raises(ValueError, match="non-empty JSON list of numbers"):
        make_workload(base_dir=tmp_path, response_len={"dist": "empirical", "path": "l.json"})
