"""Write trace-200-jobs.csv: the generated job-arrival trace of trace-200-jobs.yaml.

What the paper states of its two-week, 200-job production trace [P Weave 6.4]: Qwen models
3B-32B, single- and multi-turn jobs, max response 4k-32k tokens with a mean of 12.1k, mean
job duration 27.9 h, SLO slowdowns drawn from U(1, 2). What it does not state, chosen here
and documented: arrivals are Poisson over 14 days; model sizes are uniform over 3B, 7B, 14B
and 32B; 60% of jobs are single-turn; the cap is 4k, 8k, 16k or 32k with probabilities
0.3, 0.3, 0.25, 0.15 (mean 12.4k); durations are lognormal with sigma 1 and mean 27.9 h.
A job's duration is its run time alone (Solo-D), converted to iterations with its profile.
Qwen2.5-3B's context is 32,768 tokens (config.json max_position_embeddings), so a 3B job
drawn with the 32k cap gets 32,768 - 2,048 (its max prompt) = 30,720: vLLM refuses a longer
max_model_len, and so does rlsim.
Run: `python scenarios/rollmux/make_trace.py [--jobs N] [--days D] [--out FILE] [--seed S]`.
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DAYS = 14
SIZES = ("3b", "7b", "14b", "32b")
CAPS = (4096, 8192, 16384, 32768)
CAP_P = (0.3, 0.3, 0.25, 0.15)
# the longest response each size's context leaves after a 2,048-token prompt
CONTEXT_CAP = {"3b": 32768 - 2048}
SINGLE_TURN = 0.6
MEAN_H, SIGMA = 27.9, 1.0


def rows(jobs: int, seed: int, days: float = DAYS) -> list[dict[str, object]]:
    """The trace's rows; `days` spreads the arrivals (Poisson: uniform given the count)."""
    rng = np.random.default_rng(seed)
    arrivals = np.sort(rng.uniform(0, days * 86400, jobs))
    median_h = MEAN_H / math.exp(SIGMA**2 / 2)
    out = []
    for i, t in enumerate(arrivals):
        size = SIZES[int(rng.integers(len(SIZES)))]
        single = rng.random() < SINGLE_TURN
        drawn = int(rng.choice(CAPS, p=CAP_P))
        cap = min(drawn, CONTEXT_CAP.get(size, drawn))
        row: dict[str, object] = {
            "name": f"job{i:04d}",
            "arrival_s": round(float(t), 1),
            "template": f"{'st' if single else 'mt'}-{size}",
            "slo": round(float(rng.uniform(1.0, 2.0)), 3),
            "duration_h": round(float(rng.lognormal(math.log(median_h), SIGMA)), 2),
            "workload.max_response_len": cap,
            # the single-turn lengths file of the cap (4k reuses 8k's, capped)
            "workload.response_len.path": (
                f"../rollpacker/lengths-math-{max(drawn, 8192) // 1024}k.txt" if single else ""),
        }
        out.append(row)
    return out


def write(data: list[dict[str, object]], out: Path) -> None:
    tmp = out.with_name(out.name + ".partial")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(data[0]))
        w.writeheader()
        w.writerows(data)
    tmp.replace(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--days", type=float, default=DAYS)
    ap.add_argument("--out", type=Path, default=HERE / "trace-200-jobs.csv")
    args = ap.parse_args()
    data = rows(args.jobs, args.seed, args.days)
    write(data, args.out)
    print(f"wrote {args.out} ({len(data)} jobs)")


if __name__ == "__main__":
    main()
