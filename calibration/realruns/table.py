"""The comparison arithmetic and the markdown table of measured runs against rlsim.

Owns which rlsim phase answers which measured timing key, the relative error, the medians
over records, and the rendering. SimPy-free: it reads summaries, not runs.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from rlsim.fit.fitter import GEN_WITH_SWITCH

# A record's timing key(s) -> the rlsim phases (docs/metrics.md) that price the same work.
# rlsim's `ref` phase holds both log-prob forwards (reference and old policy) and, under
# PPO, the critic's values; its `train` phase the actor's update and, under PPO, the
# critic's; `switch` (colocated wake-up/offload) counts with the weight sync, as veRL's
# update_weights includes the engine's wake-up and resharding.
PHASES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "gen": (("gen",), ("gen",)),
    "logprob": (("old_log_prob", "ref", "values"), ("ref",)),
    "update_actor": (("update_actor", "update_critic"), ("train",)),
    "update_weights": (("update_weights",), ("weight_sync", "switch")),
}
# Passes only a PPO run (train.critic) computes: left out of a phase unless `computed`
# says the run has them.
CRITIC_KEYS = ("values", "update_critic")


def rel_error(simulated: float, measured: float) -> float:
    """(simulated - measured) / measured: +0.25 is rlsim 25% slow."""
    if measured <= 0:
        raise ValueError(f"measured time must be > 0 s, got {measured}")
    return (simulated - measured) / measured


def median_abs(errors: Sequence[float]) -> float | None:
    """Median of |error|; None for no errors."""
    return statistics.median(abs(e) for e in errors) if errors else None


@dataclass
class Row:
    """One record in the table: measured, simulated (if it ran) and why not (if it did not)."""

    id: str
    framework: str
    model: str
    gpus: str
    mode: str
    moe: bool | None = None
    measured_step_s: float | None = None
    simulated_step_s: float | None = None
    phases: dict[str, tuple[float, float]] = field(default_factory=dict)  # key -> (meas, sim)
    sim_phase_s: dict[str, float] = field(default_factory=dict)  # rlsim's phase_time_s
    reason: str | None = None
    lengths: str = ""
    source_url: str = ""
    side: str = ""  # "calibrate" or "validate" (validation/real_runs/split.json)

    @property
    def simulated(self) -> bool:
        return self.simulated_step_s is not None and self.measured_step_s is not None

    @property
    def step_error(self) -> float | None:
        if not self.simulated:
            return None
        assert self.simulated_step_s is not None and self.measured_step_s is not None
        return rel_error(self.simulated_step_s, self.measured_step_s)

    def phase_error(self, key: str) -> float | None:
        if key not in self.phases:
            return None
        measured, sim = self.phases[key]
        return rel_error(sim, measured) if measured > 0 else None


def phase_pairs(timing_s: dict[str, float], phase_time_s: dict[str, float],
                computed: dict[str, bool], policy: str, gen_with_sync: bool = False
                ) -> dict[str, tuple[float, float]]:
    """(measured, simulated) per comparable phase. A phase is compared only if the record
    times every pass rlsim computes in it (`computed`: which record keys rlsim runs; the
    critic's passes only when it says so); gen only under sync, where both sides mean
    generation (under one_off/async a record's gen and rlsim's gen are different things,
    docs/metrics.md). `gen_with_sync`: the record's gen timer also holds the colocated
    engine's weight sync, wake-up and sleep (veRL's hybrid engine up to v0.7.0, whose
    generate_sequences runs inside the rollout sharding manager), so rlsim's weight_sync
    and switch count with its gen."""
    pairs: dict[str, tuple[float, float]] = {}
    for key, (measured_keys, sim_phases) in PHASES.items():
        if key == "logprob" and "logprobs" in timing_s:
            # the passes timed together (NeMo-RL): rlsim's ref phase holds them all
            pairs[key] = (timing_s["logprobs"], sum(phase_time_s.get(p, 0.0)
                                                    for p in sim_phases))
            continue
        keys = [k for k in measured_keys if computed.get(k, k not in CRITIC_KEYS)]
        if not keys or any(k not in timing_s for k in keys):
            continue
        if key == "gen" and policy != "sync":
            continue
        if key == "gen" and gen_with_sync:
            sim_phases = GEN_WITH_SWITCH
        pairs[key] = (sum(timing_s[k] for k in keys),
                      sum(phase_time_s.get(p, 0.0) for p in sim_phases))
    return pairs


def with_remainder(pairs: dict[str, tuple[float, float]], measured_step_s: float,
                   simulated_step_s: float) -> dict[str, tuple[float, float]]:
    """`pairs` plus "remainder": the step less the phases both sides time, on each side
    (the controller, reward, waits and whatever else the phases leave out). Only when at
    least one phase is compared: otherwise the remainder is the step itself."""
    if not pairs:
        return dict(pairs)
    out = dict(pairs)
    out["remainder"] = (measured_step_s - sum(m for m, _ in pairs.values()),
                        simulated_step_s - sum(x for _, x in pairs.values()))
    return out


DIAGNOSED = (*PHASES, "remainder")


def where_error_lines(rows: Sequence[Row]) -> list[str]:
    """Per phase (and the step's remainder): the median error over the records that time
    it, on each side of the split and in all, and the records whose seconds miss most,
    largest first."""
    lines = [r"| phase | records (calibrate / validate) | median error (calibrate / "
             r"validate / all) | median \|error\| | largest misses (rlsim - measured, s) |",
             "|---|---|---|---|---|"]
    for key in DIAGNOSED:
        sel = [r for r in rows if r.simulated and key in r.phases]
        errs = [e for r in sel if (e := r.phase_error(key)) is not None]
        if not sel:
            lines.append(f"| {key} | 0 | | | |")
            continue
        misses = sorted(sel, key=lambda r: -abs(r.phases[key][1] - r.phases[key][0]))
        worst = "; ".join(f"`{r.id}` {r.phases[key][1] - r.phases[key][0]:+.0f}"
                          for r in misses[:3])
        by_side = {s: [e for r in sel if r.side == s and (e := r.phase_error(key)) is not None]
                   for s in ("calibrate", "validate")}
        meds = [_pct(statistics.median(e)) if e else "-" for e in (*by_side.values(), errs)]
        mabs = median_abs(errs)
        lines.append(f"| {key} | {len(sel)} ({len(by_side['calibrate'])} / "
                     f"{len(by_side['validate'])}) | {' / '.join(meds)} | "
                     f"{'' if mabs is None else format(mabs, '.0%')} | "
                     f"{worst} |")
    step_only = [r for r in rows if r.simulated and not r.phases]
    if step_only:
        lines += ["", "Records that time only the step (e.g. NeMo-RL's performance table): "
                  "rlsim's own split of its step, s (under async gen is the trainer's wait; "
                  "under one_off generation runs beside training, so the phases can add up "
                  "to more than the step and 'other' is then negative):", "",
                  "| record | error | gen | log-prob | train | weight sync + switch | other |",
                  "|---|---|---|---|---|---|---|"]
        for r in step_only:
            ph = r.sim_phase_s
            parts = [ph.get("gen", 0.0), ph.get("ref", 0.0), ph.get("train", 0.0),
                     ph.get("weight_sync", 0.0) + ph.get("switch", 0.0)]
            assert r.simulated_step_s is not None
            other = r.simulated_step_s - sum(parts)
            lines.append(f"| `{r.id}` | {_pct(r.step_error)} | "
                         + " | ".join(f"{x:.1f}" for x in (*parts, other)) + " |")
    return lines


def _pct(e: float | None) -> str:
    return "" if e is None else f"{e:+.0%}"


def _s(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}"


def framework_family(framework: str) -> str:
    """A record's framework without its qualifiers: "verl (dapo recipe)" -> "verl"."""
    return re.split(r"[\s(]", framework.strip().lower(), maxsplit=1)[0]


def summary_lines(rows: Sequence[Row]) -> list[str]:
    """The medians: overall, per framework, dense and MoE, with their counts."""
    def med(sel: Sequence[Row]) -> str:
        errs = [r.step_error for r in sel if r.step_error is not None]
        m = median_abs(errs)
        return f"{m:.0%} over {len(errs)}" if m is not None else f"- (0 of {len(sel)})"

    sim = [r for r in rows if r.simulated]
    families = sorted({framework_family(r.framework) for r in sim})
    groups = (
        ("all records", sim),
        ("calibration side (may be fitted to)", [r for r in sim if r.side == "calibrate"]),
        ("validation side (never fitted to)", [r for r in sim if r.side == "validate"]),
        *((f"{fam} only", [r for r in sim if framework_family(r.framework) == fam])
          for fam in families),
        ("dense models", [r for r in sim if r.moe is False]),
        ("MoE models", [r for r in sim if r.moe]),
    )
    lines = ["| records | median \\|step error\\| |", "|---|---|"]
    lines += [f"| {name} | {med(sel)} |" for name, sel in groups]
    lines.append(f"\n{len(sim)} of {len(rows)} records simulated.")
    return lines


def render_table(rows: Sequence[Row]) -> list[str]:
    """One markdown row per record, in file order."""
    head = ("| record | side | GPUs | model | rlsim policy | measured step s | rlsim step s "
            "| error | gen | log-prob | update_actor | update_weights | remainder "
            "| not simulated because |")
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        cells = [f"`{r.id}`", r.side, r.gpus, r.model, r.mode, _s(r.measured_step_s),
                 _s(r.simulated_step_s), _pct(r.step_error)]
        for key in DIAGNOSED:
            if key in r.phases:
                m, s = r.phases[key]
                cells.append(f"{m:.1f} / {s:.1f} ({_pct(r.phase_error(key))})")
            else:
                cells.append("")
        cells.append(r.reason or "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def corpus_table(rows: Sequence[Row]) -> list[str]:
    """Every record with its source, whether rlsim simulates it (and why not) and the step
    error: the table docs/validation.md carries (generated, never edited by hand)."""
    lines = ["| record | side | source | framework | GPUs | measured step s | rlsim step s "
             "| error | simulated / why not |", "|" + "---|" * 9]
    for r in rows:
        status = "yes" if r.simulated else (r.reason or "no measured step time")
        cells = [f"`{r.id}`", r.side, f"[link]({r.source_url})" if r.source_url else "",
                 r.framework, r.gpus, _s(r.measured_step_s), _s(r.simulated_step_s),
                 _pct(r.step_error), status.replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
