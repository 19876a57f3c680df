"""sandbox family: checkpoint and restore of an environment sandbox.

Reads the `sandbox_checkpoint` and `sandbox_restore` points (tree_bytes, files), each on its
own, and fits base + bytes / bandwidth + files x per-file cost: the Profile fields
`sandbox_<kind>_base_s`, `sandbox_<kind>_bandwidth_bytes_per_s` and
`sandbox_<kind>_per_file_s` (`Profile.sandbox_checkpoint_s / sandbox_restore_s`). Needs at
least 3 points per kind and no other stage.
"""

from __future__ import annotations

import numpy as np

from calibration.fitting.context import FitContext, PointPrediction
from calibration.fitting.solvers import Array, arrays, fit_relative
from rlsim.config.hardware import GpuSpec
from rlsim.cost.profile import Profile

BENCHES = ("sandbox_checkpoint", "sandbox_restore")


def fit(ctx: FitContext) -> None:
    """Base, bandwidth and per-file cost of each kind, by relative least squares."""
    for prefix in BENCHES:
        pts = ctx.all(prefix)
        if len(pts) < 3:
            if pts:
                ctx.notes.append(f"fewer than 3 {prefix} points: its constants are defaults")
            continue
        size, files, y = arrays(pts, "tree_bytes", "files")

        def fn(p: Array, size: Array = size, files: Array = files) -> Array:
            out: Array = p[0] + p[1] * size + p[2] * files
            return out

        x = fit_relative(fn, y,
                         [float(np.min(y)) / 2, float(np.max(y) / np.max(size)) / 2, 0.0],
                         [0.0, 0.0, 0.0], [np.inf, np.inf, np.inf])
        ctx.consts[f"{prefix}_base_s"] = float(x[0])
        ctx.consts[f"{prefix}_bandwidth_bytes_per_s"] = 1.0 / max(float(x[1]), 1e-30)
        ctx.consts[f"{prefix}_per_file_s"] = float(x[2])


def prediction(bench: str, prof: Profile, device: GpuSpec,
               ctx: FitContext) -> PointPrediction | None:
    """A sandbox point by `Profile.sandbox_checkpoint_s / sandbox_restore_s`."""
    p = prof
    if bench == "sandbox_checkpoint":
        return lambda m: p.sandbox_checkpoint_s(float(m.params["tree_bytes"]),
                                                int(m.params["files"]))
    if bench == "sandbox_restore":
        return lambda m: p.sandbox_restore_s(float(m.params["tree_bytes"]),
                                             int(m.params["files"]))
    return None
