"""Derive the RollPacker reproduction's response-length distribution (one file per cap).

RollPacker trains on a uniform mix of math (DeepMath), code (KodCode) and multi-subject QA
[P §6] whose response lengths are long-tailed: "P75 ranging between 755 and 1.1k tokens,
the longest responses can extend up to 16k" [P §2.2, Fig. 2a]. rlsim takes one length
task of a mixed workload (`workload.tasks`), so each domain is written as an empirical
quantile grid of its own:

- each domain is a lognormal body (median, log-sigma) read off Fig. 2a's per-domain CDFs
  (docs/research/rollpacker.md, section 5), plus a "runaway" share of responses
  log-uniform on [cap/8, 1.5 cap] whose part above the cap is clipped to the cap: a single
  lognormal cannot give both P75 ~ 0.9k and a longest response at the cap (section 7);
- the scenarios weigh the three domains one third each (the paper's uniform mix); the mixture
  of the three has P75 ~ 0.96k at every cap;
- the within-group correlation is the scenario's `workload.group_correlation` (0.5,
  checked against the paper's Fig. 11 in section 7), not part of these files.

Writes lengths-{math,code,qa}-{8,16,32}k.txt beside this script: 4,096 quantiles of each
domain, one per line. Run it again after changing a parameter:
`python scenarios/rollpacker/derive_lengths.py`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy.special import ndtr

HERE = Path(__file__).resolve().parent
# name: (body median tokens, body log-sigma, runaway share), fitted by eye to Fig. 2a.
DOMAINS = {"math": (600.0, 0.75, 0.07), "code": (640.0, 0.55, 0.045),
           "qa": (450.0, 0.75, 0.012)}
CAPS = {"8k": 8192, "16k": 16384, "32k": 32768}
QUANTILES = 4096


def domain_cdf(tokens: np.ndarray, cap: int, domain: str) -> np.ndarray:
    median, sigma, runaway = DOMAINS[domain]
    lo, hi = cap / 8.0, 1.5 * cap
    body = ndtr(np.log(tokens / median) / sigma)
    tail = np.clip(np.log(tokens / lo) / math.log(hi / lo), 0.0, 1.0)
    return (1.0 - runaway) * body + runaway * tail


def quantile_grid(cap: int, domain: str) -> np.ndarray:
    """Quantiles at (i + 0.5) / QUANTILES of one domain, clipped to the cap."""
    tokens = np.exp(np.linspace(0.0, math.log(4.0 * cap), 400_001))
    probs = (np.arange(QUANTILES) + 0.5) / QUANTILES
    return np.minimum(np.interp(probs, domain_cdf(tokens, cap, domain), tokens), cap)


def main() -> None:
    for label, cap in CAPS.items():
        grids = []
        for domain in DOMAINS:
            grid = quantile_grid(cap, domain)
            grids.append(grid)
            path = HERE / f"lengths-{domain}-{label}.txt"
            header = (f"RollPacker {domain} response lengths, cap {cap}: {QUANTILES} "
                      "quantiles (scenarios/rollpacker/derive_lengths.py)")
            np.savetxt(path, np.round(grid, 1), fmt="%.1f", header=header)
            p50, p75 = np.percentile(grid, [50, 75])
            print(f"{path.name}: P50 {p50:.0f}, P75 {p75:.0f}, "
                  f"at the cap {np.mean(grid >= cap):.2%}")
        mix = np.concatenate(grids)
        p50, p75, p99 = np.percentile(mix, [50, 75, 99])
        print(f"  uniform mix at {label}: P50 {p50:.0f}, P75 {p75:.0f}, P99 {p99:.0f}, "
              f"at the cap {np.mean(mix >= cap):.2%}")


if __name__ == "__main__":
    main()
