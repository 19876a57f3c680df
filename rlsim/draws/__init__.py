"""Draws over a scenario's unknowns: `rlsim run|compare|sweep --draws N` (issue 39).

A scenario's `unknowns:` (rlsim.config.unknowns), its framework profile's calibrated
intervals and the model's own error are drawn N times, space-filling and seeded; every
draw runs each variant on the sweep runner, and the answer is each headline metric's
median with its 80% and 95% intervals, each ratio's interval, the probability that each
variant is best, and (with `--sensitivity`) which unknown the spread comes from.
docs/uncertainty.md is the user's guide.

Modules, one job each:
- `design`: what is drawn (`design_unknowns`) and the draws' values (Latin hypercube or
  Saltelli design), as `--set` assignments.
- `spec`: `DrawSpec`, the draws as sweep points (grid x draws x plans), journaled and
  resumable like a sweep.
- `run`: `run_draws` through the sweep runner's executors.
- `summary`: the rows back as arrays (`collect`, model error applied) and the documents.
"""

from rlsim.draws.design import design_unknowns, draw_values, with_profile_unknowns
from rlsim.draws.run import DrawsOutcome, run_draws
from rlsim.draws.spec import DrawSpec, build_draw_spec
from rlsim.draws.summary import (
    METRICS,
    Collected,
    collect,
    compare_doc,
    compare_sensitivity_doc,
    interval_doc,
    sensitivity_base_rows,
    sensitivity_doc,
    sweep_doc,
)

__all__ = ["METRICS", "Collected", "DrawSpec", "DrawsOutcome", "build_draw_spec", "collect",
           "compare_doc", "compare_sensitivity_doc", "design_unknowns", "draw_values",
           "interval_doc", "run_draws", "sensitivity_base_rows", "sensitivity_doc",
           "sweep_doc",
           "with_profile_unknowns"]
