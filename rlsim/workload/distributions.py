"""Length distributions as quantile functions of a standard-normal score.

Owns turning a `LengthDist` into `q(x)`, the length whose CDF value is Phi(x), for x a
standard-normal score; `to_tokens` then rounds to whole tokens and clamps to [1, cap].
Feeding q with N(0, 1) scores reproduces the configured marginal exactly, and feeding it
with correlated scores (the Gaussian copula in `rlsim.workload.generator`) correlates the
lengths without changing the marginal. Closed forms serve fixed, normal and lognormal; the
Gaussian mixture uses an inverse-CDF table built once; empirical uses order statistics.
Also owns reading empirical length files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from rlsim.config.workload import (
    EmpiricalLength,
    FixedLength,
    GmmLength,
    LengthDist,
    LognormalLength,
    NormalLength,
)
from rlsim.workload.portable import exp

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Quantile = Callable[[FloatArray], FloatArray]
"""Maps standard-normal scores (any shape) to lengths in tokens (same shape, unrounded)."""

# The GMM table spans scores with |x| <= 8.5: Phi(-8.5) ~ 1e-17, below one draw in the
# lifetime of any simulation, so clamping scores there changes no realistic sample.
GMM_TABLE_Z_MAX = 8.5
# Grid step 17/4096 ~ 0.004 in score: linear interpolation errs by well under one token
# for component stds up to ~1e5 tokens.
GMM_TABLE_POINTS = 4097
_BISECTION_ROUNDS = 60
# The bisection bracket reaches this many component stds beyond the extreme means.
_BRACKET_STDS = 12.0
# exp() overflows above ~709; lengths that large are clamped to the cap anyway.
_MAX_LOG_LENGTH = 700.0


def to_tokens(lengths: FloatArray, cap: int) -> IntArray:
    """Round to whole tokens and clamp to [1, cap]."""
    return np.clip(np.rint(lengths), 1, cap).astype(np.int64)


def quantile_function(dist: LengthDist, base_dir: Path, allow_zero: bool = False) -> Quantile:
    """The score-to-length map of `dist`; reads an empirical `path` relative to base_dir
    (`allow_zero`: the file may hold zeros, as a latency or token count that can be 0)."""
    if isinstance(dist, FixedLength):
        value = float(dist.value)
        return lambda x: np.full(np.shape(x), value)
    if isinstance(dist, NormalLength):
        mean, std = dist.mean, dist.std
        return lambda x: mean + std * x
    if isinstance(dist, LognormalLength):
        log_median, sigma = math.log(dist.median), dist.sigma
        return lambda x: exp(np.minimum(log_median + sigma * x, _MAX_LOG_LENGTH))
    if isinstance(dist, GmmLength):
        return _gmm_quantile(dist)
    if isinstance(dist, EmpiricalLength):
        if dist.values is not None:
            values = np.asarray(dist.values, dtype=np.float64)
        else:
            assert dist.path is not None  # the schema guarantees exactly one source
            values = load_length_file(resolve_path(dist.path, base_dir), allow_zero)
        return _empirical_quantile(values)
    raise TypeError(f"unknown length distribution {type(dist).__name__}")  # schema drift


def resolve_path(path: Path, base_dir: Path) -> Path:
    """`path` as written in a scenario: absolute, or relative to the scenario's directory."""
    return path if path.is_absolute() else base_dir / path


def gmm_table(dist: GmmLength) -> tuple[FloatArray, FloatArray]:
    """Scores x on a grid and the mixture's quantile at Phi(x), by vectorized bisection.

    Below the median the bisection matches the CDF and above it the survival function, so
    both tails keep full floating-point precision (1 - Phi(8) rounds to 0 in doubles).
    """
    from scipy.special import ndtr  # lazy: scipy costs ~0.1 s of every command's start

    weights = np.asarray(dist.weights)
    means = np.asarray(dist.means)
    stds = np.asarray(dist.stds)
    scores = np.linspace(-GMM_TABLE_Z_MAX, GMM_TABLE_Z_MAX, GMM_TABLE_POINTS)
    lower = scores <= 0
    side = np.where(lower, 1.0, -1.0)[:, None]  # +1: match the CDF, -1: the survival function
    target = ndtr(np.where(lower, scores, -scores))  # probability in the near tail
    lo = np.full_like(scores, float(np.min(means - _BRACKET_STDS * stds)))
    hi = np.full_like(scores, float(np.max(means + _BRACKET_STDS * stds)))
    for _ in range(_BISECTION_ROUNDS):
        mid = 0.5 * (lo + hi)
        # A product and a sum, not `@`: BLAS picks its kernel (and so its order of
        # additions) by CPU, and the table must be the same on every machine.
        tail = (ndtr(side * (mid[:, None] - means) / stds) * weights).sum(axis=1)
        below = np.where(lower, tail < target, tail > target)
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return scores, 0.5 * (lo + hi)


def _gmm_quantile(dist: GmmLength) -> Quantile:
    _, lengths = gmm_table(dist)
    steps = np.diff(lengths)
    per_score = (GMM_TABLE_POINTS - 1) / (2 * GMM_TABLE_Z_MAX)
    last = GMM_TABLE_POINTS - 1

    def quantile(x: FloatArray) -> FloatArray:
        # Linear interpolation on the uniform grid by index arithmetic: ~10x faster than
        # np.interp's binary search. Scores beyond the table take its end values.
        pos = np.clip((np.asarray(x) + GMM_TABLE_Z_MAX) * per_score, 0.0, last)
        i = np.minimum(pos.astype(np.int64), last - 1)
        return lengths[i] + (pos - i) * steps[i]

    return quantile


def _empirical_quantile(values: FloatArray) -> Quantile:
    from scipy.special import ndtr  # lazy, as in gmm_table

    ordered = np.sort(values)
    n = ordered.size
    # Inverse of the empirical CDF: each observed value has probability 1/n, so the
    # marginal is exactly resampling the observations with replacement.
    return lambda x: ordered[np.minimum((ndtr(x) * n).astype(np.int64), n - 1)]


# A length file is a few MB at most (a million lengths); the cap stops `/dev/zero` or a
# mistyped path to a huge file from being read until memory runs out.
MAX_LENGTH_FILE_BYTES = 64 * 2**20


def load_length_file(path: Path, allow_zero: bool = False) -> FloatArray:
    """Lengths from a file: a JSON list, or one number per line (blank and # lines skipped).

    Every value must be > 0 (>= 0 with `allow_zero`); a bad one is named by file:line."""
    if not path.is_file():
        raise FileNotFoundError(f"length file {path} not found (or not a regular file)")
    with path.open("rb") as f:
        raw = f.read(MAX_LENGTH_FILE_BYTES + 1)
    if len(raw) > MAX_LENGTH_FILE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_LENGTH_FILE_BYTES // 2**20} MiB; give a "
                         "file of lengths, one number per line")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text; give one number per line or a JSON "
                         "list") from None
    if not text.strip():
        raise ValueError(f"{path}: line 1: empty length file; expected numbers")
    if text.lstrip().startswith("["):
        return _lengths_from_json(path, text, allow_zero)
    values: list[float] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        item = line.strip()
        if not item or item.startswith("#"):
            continue
        try:
            value = float(item)
        except ValueError:
            raise ValueError(f"{path}:{lineno}: expected one number per line, got {item!r}") \
                from None
        if not math.isfinite(value):
            raise ValueError(f"{path}:{lineno}: length must be finite, got {item!r}")
        _check_sign(value, allow_zero, f"{path}:{lineno}")
        values.append(value)
    if not values:
        raise ValueError(f"{path}: line 1: no numbers in length file")
    return np.asarray(values, dtype=np.float64)


def _check_sign(value: float, allow_zero: bool, where: str) -> None:
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{where}: a length must be {bound}, got {value:g}; remove or fix "
                         "the value")


def _lengths_from_json(path: Path, text: str, allow_zero: bool) -> FloatArray:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{err.lineno}: malformed JSON ({err.msg})") from None
    ok = isinstance(data, list) and all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in data
    )
    if not ok or not data:
        raise ValueError(f"{path}: line 1: expected a non-empty JSON list of numbers")
    for i, v in enumerate(data):
        _check_sign(float(v), allow_zero, f"{path}: item {i + 1} of the JSON list")
    return np.asarray(data, dtype=np.float64)
