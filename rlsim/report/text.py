"""Plain-text tables for the terminal.

Owns aligning a table of strings: first column left, the rest right, a rule under the
header row.
"""

from __future__ import annotations

from typing import Any


def aligned(table: list[list[str]]) -> str:
    """`table[0]` is the header; every row has the same number of cells."""
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(r, widths, strict=True))) for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def horizon_lines(h: dict[str, Any]) -> list[str]:
    """The horizon's answers (summary["horizon"], rlsim.horizon) as lines: each figure's
    mean, the mean's 95% confidence interval and the replicates' 5th-95th percentiles."""

    def fig(label: str, key: str, fmt: str) -> list[str]:
        x = h[key]
        return [label, format(x["mean"], fmt),
                f"[{format(x['ci95_low'], fmt)}, {format(x['ci95_high'], fmt)}]",
                f"[{format(x['p5'], fmt)}, {format(x['p95'], fmt)}]"]

    days = h["span_s"]["mean"] / 86400.0
    head = (f"horizon: {days:.3g} days x {h['replicates']} replicates of the fault process, "
            f"on a steady step of {h['steady_step_s']:.1f} s")
    table = [["figure", "mean", "95% CI of mean", "5th-95th pct"],
             fig("ETTR", "ettr", ".4f"),
             fig("goodput (samples/s)", "goodput_samples_per_s", ".3f"),
             fig("steps", "steps", ".0f"),
             fig("job restarts", "restarts", ".1f"),
             fig("faults ridden through", "penalty_faults", ".1f"),
             fig("lost GPU-hours (faults + checkpoints)", "lost_gpu_hours", ",.0f"),
             fig("failure GPU-hours", "failure_gpu_hours", ",.0f"),
             fig("failure $/day", "failure_usd_per_day", ",.0f"),
             fig("failure $/1k steps", "failure_usd_per_1k_steps", ",.0f")]
    lines = [head, aligned(table)]
    every = h["checkpoint_every"]
    iv = h["checkpoint_intervals"]
    if iv:
        lines.append(f"checkpoint every {every or 'never'} steps ({h['checkpoint_write_s']:.1f} s "
                     f"a write); job restarts every {h['job_restart_mtbf_s'] / 3600:.1f} h: "
                     f"Young's interval {iv['young_steps']:.1f} steps, Daly's "
                     f"{iv['daly_steps']:.1f}")
    scan = h.get("checkpoint_scan")
    if scan:
        tried = ", ".join(f"{c['every']}: {c['ettr']:.4f}" for c in scan["curve"])
        lines.append(f"best checkpoint interval of those tried (same faults): every "
                     f"{scan['best_every']} steps, ETTR {scan['best_ettr']:.4f} ({tried})")
    for c in h["classes"]:
        what = "restarts the job" if c["restarts_job"] else "the job rides through"
        lines.append(f"  {c['name']}: {c['per_day']:.3g} per day, {what}, "
                     f"{c['cost_s']:.0f} s each")
    return lines
