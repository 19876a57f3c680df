"""Descriptive statistics of prompt groups, for tests, docs and calibrating a workload.

Owns `summary(groups)`: response-length moments and tail, the cap-hit fraction, the mean
intra-group coefficient of variation, and an estimate of the latent within-group
correlation (the copula's rho). Also `markdown_table`, the per-trace table that
`python -m rlsim.workload TRACE_PATH...` prints and docs/workload.md shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rlsim.workload.groups import PromptGroup
from rlsim.workload.polytrace import load_polytrace


def summary(groups: Sequence[PromptGroup]) -> dict[str, float]:
    """Statistics of the groups' lengths in tokens; see the keys below.

    - n_groups, n_responses: counts.
    - prompt_tokens_mean: mean prompt length.
    - response_tokens_{mean,p50,p99,max}: over all responses (percentiles interpolate).
    - response_max_over_p50: tail heaviness, max / median.
    - cap_hit_fraction: responses at the cap / all responses.
    - intra_group_cv_mean: mean over groups (of >= 2 responses) of std / mean (population std).
    - latent_group_correlation: intraclass correlation of the responses' normal scores
      (ranks mapped through the inverse normal CDF); estimates the copula's rho. NaN unless
      all groups have the same number (>= 2) of responses.
    """
    if not groups:
        raise ValueError("summary needs at least one prompt group")
    responses = np.concatenate([np.asarray(g.response_tokens, dtype=np.float64) for g in groups])
    p50 = float(np.percentile(responses, 50))
    caps = np.concatenate([np.full(len(g.response_tokens), g.max_response_tokens) for g in groups])
    cvs = [
        float(np.std(g.response_tokens) / np.mean(g.response_tokens))
        for g in groups
        if len(g.response_tokens) >= 2
    ]
    return {
        "n_groups": float(len(groups)),
        "n_responses": float(responses.size),
        "prompt_tokens_mean": float(np.mean([g.prompt_tokens for g in groups])),
        "response_tokens_mean": float(responses.mean()),
        "response_tokens_p50": p50,
        "response_tokens_p99": float(np.percentile(responses, 99)),
        "response_tokens_max": float(responses.max()),
        "response_max_over_p50": float(responses.max()) / p50,
        "cap_hit_fraction": float(np.mean(responses >= caps)),
        "intra_group_cv_mean": float(np.mean(cvs)) if cvs else float("nan"),
        "latent_group_correlation": _latent_correlation(groups),
    }


def _latent_correlation(groups: Sequence[PromptGroup]) -> float:
    sizes = {len(g.response_tokens) for g in groups}
    if len(sizes) != 1 or (k := sizes.pop()) < 2 or len(groups) < 2:
        return float("nan")
    # scipy takes 0.1-1 s to import: only this statistic needs it, so not every CLI start.
    from scipy.special import ndtri
    from scipy.stats import rankdata

    lengths = np.array([g.response_tokens for g in groups], dtype=np.float64)
    # Normal scores undo any monotone marginal, so this is comparable to the copula's rho
    # whatever the length distribution (ties, e.g. at the cap, share their mean rank).
    scores = ndtri((rankdata(lengths.ravel()) - 0.5) / lengths.size).reshape(lengths.shape)
    # One-way ANOVA intraclass correlation ICC(1).
    n = len(groups)
    ms_between = k * float(np.var(scores.mean(axis=1), ddof=1))
    ms_within = float(np.sum((scores - scores.mean(axis=1, keepdims=True)) ** 2)) / (n * (k - 1))
    return (ms_between - ms_within) / (ms_between + (k - 1) * ms_within)


def trace_groups(path: str | Path, max_response_tokens: int) -> list[PromptGroup]:
    """Every training prompt of a PolyTrace trace as groups, unmodified (for statistics)."""
    return [
        PromptGroup(i, prompt, responses, max_response_tokens)
        for i, (prompt, responses) in enumerate(load_polytrace(path))
    ]


def markdown_table(paths: Sequence[str | Path]) -> str:
    """A Markdown table of `summary` for each trace; the cap is taken as its longest response."""
    header = (
        "| trace | prompts | responses | prompt mean | resp mean | p50 | p99 | max | max/p50 "
        "| at max | intra-group CV | latent rho |"
    )
    lines = [header, "|" + "---|" * 12]
    for path in paths:
        longest = max(max(r) for _, r in load_polytrace(path))
        s = summary(trace_groups(path, longest))
        lines.append(
            f"| {Path(path).name} | {s['n_groups']:.0f} | {s['n_responses']:.0f} "
            f"| {s['prompt_tokens_mean']:.0f} | {s['response_tokens_mean']:.0f} "
            f"| {s['response_tokens_p50']:.0f} | {s['response_tokens_p99']:.0f} "
            f"| {s['response_tokens_max']:.0f} | {s['response_max_over_p50']:.1f} "
            f"| {s['cap_hit_fraction']:.1%} | {s['intra_group_cv_mean']:.2f} "
            f"| {s['latent_group_correlation']:.2f} |"
        )
    return "\n".join(lines)
