"""Framework profiles: each RL framework's `framework` knobs, calibrated on public runs.

Owns the shipped profiles (frameworks.json beside this file, written by
`python -m calibration.frameworks` from the corpus's calibration split: docs/validation.md,
"Framework profiles"), their lookup, and the knob values a scenario takes from them: a
scenario whose `framework.name` has a profile gets the profile's value for every knob it
does not set itself, unless `framework.profile` is false (`FrameworkConfig`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal, get_args

PROFILES_PATH = Path(__file__).with_name("frameworks.json")

FrameworkName = Literal["verl", "roll", "nemo-rl", "openrlhf", "slime"]
"""The frameworks a scenario may name (`framework.name`)."""
FRAMEWORK_NAMES: tuple[str, ...] = get_args(FrameworkName)


@dataclass(frozen=True)
class ProfileParam:
    name: str
    value: float
    ci95: tuple[float, float]
    unit: str  # "s" for an overhead, "" for a speed


@dataclass(frozen=True)
class FrameworkProfile:
    name: str
    params: dict[str, ProfileParam]
    discrepancy_log_sd: float
    calibration_records: tuple[str, ...]
    residuals: int
    # The log-space sd of a calibration record's step error when the profile is fitted
    # without that record (leave one record out): the error to expect on a job the fit never
    # saw. None in a profile file written before it existed.
    discrepancy_oos_log_sd: float | None = None

    @property
    def predictive_log_sd(self) -> float:
        """The model error a draw adds to a run on this profile: out of sample if known."""
        return (self.discrepancy_oos_log_sd if self.discrepancy_oos_log_sd is not None
                else self.discrepancy_log_sd)

    def knobs(self) -> dict[str, float]:
        """The `framework` knob values: the one `speed` of a framework whose records time
        only the step sets both speeds."""
        out: dict[str, float] = {}
        for p in self.params.values():
            if p.name == "speed":
                out["train_speed"] = out["rollout_speed"] = p.value
            else:
                out[p.name] = p.value
        return out


@cache
def profiles(path: Path = PROFILES_PATH) -> dict[str, FrameworkProfile]:
    """Every shipped profile by framework name (none when the file is absent)."""
    if not path.exists():
        return {}
    doc = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    for name, d in doc.get("frameworks", {}).items():
        params = {k: ProfileParam(k, float(v["value"]), (float(v["ci95"][0]),
                                                           float(v["ci95"][1])), v["unit"])
                  for k, v in d["params"].items()}
        oos = d.get("discrepancy_oos_log_sd")
        out[name] = FrameworkProfile(name, params, float(d["discrepancy_log_sd"]),
                                     tuple(d["calibration_records"]), int(d["residuals"]),
                                     None if oos is None else float(oos))
    return out
