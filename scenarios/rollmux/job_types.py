"""RollMux's micro-benchmark job types [P Weave Table 3] as rlsim's cost model prices them.

Owns the derivation of the five job types' phase times (job-types.yaml): each type is
profiled alone with `rlsim.fleet.profile_jobs` (the single-job model, no number taken from
the paper), and the profiled rollout and training phases are set against what the paper
reports of them, as CHECKS only (nothing here or in job-types.yaml is tuned to them):
- the phase ratios T_roll ~ 2.5 T_train for Type-D and ~ 6 T_train for Type-E [P Weave 6.2];
- the phase durations of the Gantt charts [P RollMux Fig. 10] (PAPER-FACTS section 2): the
  temporal pair's (Type-A) rollouts ~125-152 s and training ~99-117 s; in the rollout-heavy
  trio, D's rollouts ~294-336 s, E's ~666-917 s, training ~115-149 s. A range is compared by
  its midpoint ("within 15%": |rlsim / midpoint - 1| <= 0.15) and by whether rlsim falls in it.
It also shows how the phase ratios move when each value the paper leaves open changes
(`SENSITIVITY`). Importable by the report (micro.py); runnable alone:
`.venv/bin/python scenarios/rollmux/job_types.py` prints the tables (about 20 s).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlsim.config.fleet_loading import fleet_from_dict
from rlsim.fleet import JobProfile, profile_jobs

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "job-types.yaml"
TOLERANCE = 0.15
# (template, label, model, interaction) [P Weave Table 3]
TYPES = (("type-a", "A", "Qwen2.5-7B", "single-turn, 8K"),
         ("type-b", "B", "Qwen2.5-14B", "single-turn, 8K"),
         ("type-c", "C", "Qwen2.5-32B", "single-turn, 8K"),
         ("type-d", "D", "Qwen3-8B", "multi-turn, 8K per turn"),
         ("type-e", "E", "Qwen3-14B", "multi-turn, 16K per turn"),
         ("type-d-16", "D (spatial)", "Qwen3-8B", "as D on 16 H800 [P Weave 6.2]"))
# T_roll / T_train [P Weave 6.2]
RATIOS = {"type-d": 2.5, "type-e": 6.0}
# Gantt phase durations, seconds [P RollMux Fig. 10]: (template, phase, low, high)
GANTT = (("type-a", "rollout", 125.0, 152.0), ("type-a", "train", 99.0, 117.0),
         ("type-d", "rollout", 294.0, 336.0), ("type-d", "train", 115.0, 149.0),
         ("type-e", "rollout", 666.0, 917.0), ("type-e", "train", 115.0, 149.0))
PAPER_GPUS = {"h20": 1.85, "h800": 5.28}  # $/GPU-hour [P Weave Table 1]

Patch = dict[str, dict[str, Any]]
"""Per template, dotted job field -> value, applied on top of job-types.yaml."""

# What the paper leaves open, one change at a time (job-types.yaml's header says where each
# chosen value comes from). Each row re-profiles the types it touches.
SENSITIVITY: tuple[tuple[str, Patch], ...] = (
    ("as chosen (job-types.yaml)", {}),
    ("single-turn Bsz counts responses: 32 prompts x 8",
     {t: {"workload.prompts_per_step": 32} for t in ("type-a", "type-b", "type-c")}),
    ("single-turn trainer packs samples unpadded (rlsim's Megatron default)",
     {t: {"train.micro_batch_size_per_gpu": None, "train.pad_to_multiple_of": None,
          "train.ref_pad_to": None} for t in ("type-a", "type-b", "type-c")}),
    ("multi-turn trainer packs trajectories unpadded (no pad to sequence_length)",
     {t: {"train.pad_to": None} for t in ("type-d", "type-e")}),
    ("multi-turn: 1 turn (no tool call)",
     {t: {"workload.agentic.turns.value": 1} for t in ("type-d", "type-e")}),
    ("multi-turn: 4 turns (Intern-S1 tool sessions' mean, 3.9 calls; sequence_length 4 caps)",
     {"type-d": {"workload.agentic.turns.value": 4, "workload.agentic.max_context_len": 32768,
                 "train.pad_to": 32768},
      "type-e": {"workload.agentic.turns.value": 4, "workload.agentic.max_context_len": 65536,
                 "train.pad_to": 65536}}),
    ("multi-turn: Bsz counts prompts (x 8 trajectories)",
     {"type-d": {"workload.prompts_per_step": 256}, "type-e": {"workload.prompts_per_step": 64}}),
    ("multi-turn: tool call at ROLL's 5 s timeout",
     {t: {"workload.agentic.env_step": {"dist": "fixed", "value": 5}}
      for t in ("type-d", "type-e")}),
    ("multi-turn: 16K length distribution per turn for D",
     {"type-d": {"workload.response_len.path": "../rollpacker/lengths-math-16k.txt"}}),
)


def _set(job: dict[str, Any], dotted: str, value: Any) -> None:
    *head, last = dotted.split(".")
    node = job
    for key in head:
        node = node.setdefault(key, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value


def fleet_data(templates: list[str], patch: Patch | None = None) -> dict[str, Any]:
    """A fleet mapping with one job per template (named after it), `patch` applied; pools
    large enough for any one type, at the paper's prices."""
    with TEMPLATES.open() as f:
        known = yaml.safe_load(f)
    jobs = []
    for name in templates:
        # deepcopy: the YAML's anchors share objects between templates
        job = copy.deepcopy(known[name])
        for dotted, value in (patch or {}).get(name, {}).items():
            _set(job, dotted, copy.deepcopy(value))
        jobs.append({"name": name, **job})
    return {"kind": "fleet", "name": "job-types",
            "pools": [{"name": p, "gpu": p.upper(), "nodes": 2, "usd_per_gpu_hour": usd}
                      for p, usd in PAPER_GPUS.items()],
            "jobs": jobs}


def profile_types(templates: list[str] | None = None,
                  patch: Patch | None = None) -> dict[str, JobProfile]:
    """Each template's profile, keyed by template name."""
    names = templates or [t for t, *_ in TYPES]
    scenario, base = fleet_from_dict(fleet_data(names, patch), base_dir=HERE,
                                     source=str(TEMPLATES))
    return profile_jobs(scenario, base)


@dataclass(frozen=True)
class Check:
    what: str
    paper: str
    paper_value: float
    rlsim: float

    @property
    def error(self) -> float:
        return self.rlsim / self.paper_value - 1

    @property
    def within(self) -> bool:
        return abs(self.error) <= TOLERANCE


def checks(profiles: dict[str, JobProfile]) -> list[Check]:
    out = []
    for name, paper in RATIOS.items():
        p = profiles[name]
        out.append(Check(f"T_roll / T_train, Type-{name[-1].upper()}", f"~{paper:g} [P Weave 6.2]",
                         paper, p.roll_mean_s / p.train_mean_s))
    for name, phase, lo, hi in GANTT:
        p = profiles[name]
        value = p.roll_mean_s if phase == "rollout" else p.train_mean_s
        out.append(Check(f"Type-{name[-1].upper()} {phase} phase (s)",
                         f"{lo:.0f}-{hi:.0f} [P RollMux Fig. 10]", (lo + hi) / 2, value))
    return out


def type_table(profiles: dict[str, JobProfile]) -> list[str]:
    lines = ["| type | model | workload | GPUs (H20 / H800) | rollout (s) | train (s) | "
             "sync (s) | rollout / train | worst case rollout / train (s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    data = fleet_data([t for t, *_ in TYPES])
    gpus = {j["name"]: (j["rollout"]["gpus"], j["train"]["gpus"]) for j in data["jobs"]}
    for name, label, model, what in TYPES:
        if name not in profiles:
            continue
        p = profiles[name]
        r, t = gpus[name]
        lines.append(
            f"| {label} | {model} | {what}, {p.samples} samples | {r} / {t} | "
            f"{p.roll_mean_s:.0f} | {p.train_mean_s:.0f} | {p.sync_s:.1f} | "
            f"{p.roll_mean_s / p.train_mean_s:.2f} | {p.roll_worst_s:.0f} / "
            f"{p.train_worst_s:.0f} |")
    return lines


def check_table(profiles: dict[str, JobProfile]) -> list[str]:
    lines = ["| check | paper | rlsim | error vs paper (range: midpoint) | in range | "
             "within 15% |", "|---|---|---|---|---|---|"]
    for c in checks(profiles):
        lo_hi = c.paper.split(" ")[0].lstrip("~").split("-")
        inside = "-" if len(lo_hi) == 1 else (
            "yes" if float(lo_hi[0]) <= c.rlsim <= float(lo_hi[1]) else "no")
        lines.append(f"| {c.what} | {c.paper} | {c.rlsim:.2f} | {c.error:+.1%} | {inside} | "
                     f"{'yes' if c.within else '**no**'} |")
    return lines


def sensitivity_table() -> list[str]:
    """Phase ratios and the checked phases under each open choice changed alone."""
    lines = ["| choice changed | A roll / train (s) | B roll / train | C roll / train | "
             "D roll / train (ratio) | E roll / train (ratio) |",
             "|---|---|---|---|---|---|"]
    base = TYPES[:5]
    for label, patch in SENSITIVITY:
        names = [t for t, *_ in base if not patch or t in patch]
        prof = profile_types(names, patch)
        cells = []
        for name, *_ in base:
            if name not in prof:
                cells.append("(unchanged)")
                continue
            p = prof[name]
            cells.append(f"{p.roll_mean_s:.0f} / {p.train_mean_s:.0f} "
                         f"({p.roll_mean_s / p.train_mean_s:.2f})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    profiles = profile_types()
    print("\n".join(["Job types (scenarios/rollmux/job-types.yaml), profiled alone; seconds "
                     "per iteration, mean of the profiled iterations:", "",
                     *type_table(profiles), "", "Checks against the paper:", "",
                     *check_table(profiles), "",
                     "Sensitivity (one open choice changed at a time):", "",
                     *sensitivity_table()]))


if __name__ == "__main__":
    main()
