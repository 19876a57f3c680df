"""Write arrivals.csv: the STAND-IN for the Philly segment of the scheduler simulation.

[P Weave 6.5] takes arrivals and durations from "a 300-job, 580-hour segment of the
Microsoft Philly multi-tenant training cluster trace ... the average job duration is 14.4
hours, and the longest is 142.9 hours". The public Philly trace (msr-fiddle/philly-traces)
keeps its job log in `trace-data.tar.gz`, stored on GitHub as a Git LFS pointer only, and no
other public copy of the per-job table was found (README.md lists the search). So this is a
clearly labelled stand-in built from the three published statistics, not the trace:

- arrivals: a Poisson process conditioned on 300 arrivals in 580 h (sorted uniform times);
- durations: a seeded lognormal sample, then d -> a * d**b with a and b solved so that the
  300 durations have exactly the published mean (14.4 h) and maximum (142.9 h). The
  lognormal's sigma (1.05) is the one whose expected 300-sample maximum is 142.9 h at mean
  14.4 h, so the transform is mild (b near 1). The shape between mean and maximum (how many
  short jobs) is the stand-in's, not Philly's.

Run: `python scenarios/rollmux/appendix/make_arrivals.py` (deterministic; seed below).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

HERE = Path(__file__).resolve().parent
N_JOBS = 300
SPAN_H = 580.0
MEAN_H = 14.4
MAX_H = 142.9
SIGMA = 1.05  # solves ln(MAX/MEAN) = z*s - s^2/2 with z = Phi^-1(1 - 1/300) = 2.71
SEED = 20251215  # the arXiv version's date; any fixed seed would do


def durations_h(rng: np.random.Generator) -> np.ndarray:
    mu = np.log(MEAN_H) - SIGMA**2 / 2
    raw = rng.lognormal(mu, SIGMA, N_JOBS)
    top = raw.max()

    def mean_gap(b: float) -> float:  # a is fixed by the maximum: a * top**b = MAX_H
        return float(np.mean(MAX_H * (raw / top) ** b)) - MEAN_H

    b = brentq(mean_gap, 0.2, 5.0)
    return MAX_H * (raw / top) ** b


def main() -> None:
    rng = np.random.default_rng(SEED)
    arrival_h = np.sort(rng.uniform(0.0, SPAN_H, N_JOBS))
    arrival_h -= arrival_h[0]  # the segment starts with its first job
    dur = durations_h(rng)
    with (HERE / "arrivals.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "arrival_s", "duration_h"])
        for i, (a, d) in enumerate(zip(arrival_h, dur, strict=True)):
            w.writerow([f"j{i:03d}", f"{a * 3600:.0f}", f"{d:.4f}"])
    print(f"{N_JOBS} jobs, last arrival {arrival_h[-1]:.1f} h, mean duration "
          f"{dur.mean():.2f} h, max {dur.max():.2f} h, median {np.median(dur):.2f} h")


if __name__ == "__main__":
    main()
