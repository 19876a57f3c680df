"""Benchmark: the HTML report of a record stream of a million spans, on one core.

Target (issue 5): a million spans still produce a report; the page says its timelines are
downsampled. Prints one JSON line: render seconds, HTML size, peak memory. The records are
the synthetic stream of tests/report/synthetic.py (64 engines, 2,000 steps, per-request
spans, counters and response records).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> dict[str, float]:
    from rlsim.report.html import render_runs
    from rlsim.report.metrics import summarize
    from rlsim.report.rundata import RunData
    from tests.report.synthetic import big_recorder

    rec = big_recorder(1_000_000)
    data = RunData("big", summarize(rec, 0.0, 0), rec, {"name": "big"})
    t0 = time.perf_counter()
    html = render_runs([data])
    wall = time.perf_counter() - t0
    out = {
        "benchmark": "report_1m_spans",
        "spans": len(rec.spans),
        "render_s": round(wall, 2),
        "html_mb": round(len(html.encode()) / 1e6, 1),
        "downsampled_note": int("timeline downsampled" in html),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
