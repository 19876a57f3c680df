"""Whether a log can be fitted to a scenario, and whether a fit's values are believable.

Owns two checks of `rlsim fit` (docs/fit.md, "Checks"):

- `mismatches(scenario, measured)`: the ways the log says it ran another job than the
  scenario describes, each one line naming both sides: the framework (the log's key
  vocabulary against `framework.name`), the lengths (responses or prompts longer than the
  scenario's caps), the GPU count and the batch (from veRL's `perf/total_num_tokens` and
  `perf/throughput`, where the log has them). The CLI refuses the fit on any of them (exit
  2) unless `--force`, and then fit.md carries them as warnings.
- `implausible(params)`: fitted values so far from what is expected that the log and the
  scenario more likely describe different jobs than rlsim missing a cost. A speed's range
  is its framework profile's interval widened by its discrepancy (`speed_range`), or
  `SPEED_RANGE` around rlsim's own model for a scenario without a profile; an overhead may
  be at most `OVERHEAD_SHARE` of the measured step.

Only `measured` (the log's summary, `rlsim.fit.logs.summary`) and the scenario are read.
"""

from __future__ import annotations

import math
from typing import Any

from rlsim.config.frameworks import profiles
from rlsim.config.scenario import Scenario
from rlsim.fit.fitter import ParamFit, regime_of

LENGTH_SLACK = 1.01
"""A logged maximum length up to 1% over the scenario's cap is rounding, not a mismatch."""

COUNT_TOLERANCE = 0.25
"""How far the GPU count and the batch derived from a log may be from the scenario's before
they are a mismatch: the derivation divides logged medians (tokens, throughput, step
seconds, mean lengths), rounded as the framework prints them, and a DAPO-style filtered
batch may be trimmed."""

SPEED_RANGE = (1 / 3, 3.0)
"""Fitted speeds outside this range (rlsim's model more than 3x off the measured
framework) are flagged. The corpus's own fits (reports/real-runs-fit.md) range 0.28-1.35
except a MoE trainer (0.13), whose 8x says what rlsim's MoE training misses, not what the
framework pays; a log of another job lands far outside (a ROLL log fitted to a veRL
scenario came out at `rollout_speed` 0.13, issue 37)."""

PROFILE_WIDEN = 3.0
"""With a framework profile, a fitted speed is plausible within the profile's 95% interval
widened by 3 discrepancies (its log-space sd per residual) on each side."""

OVERHEAD_SHARE = 0.5
"""A fitted overhead that is more than this share of the measured step is flagged: the fit
then explains most of the step by time rlsim does not price."""

FRAMEWORK_WORDS = {"verl": "veRL (timing_s/* keys)", "roll": "ROLL (time/* keys)"}


def mismatches(scenario: Scenario, measured: dict[str, Any]) -> list[str]:
    """Each way the log's job differs from the scenario's, one line each (empty: none)."""
    out = []
    name = scenario.framework.name
    logged = measured.get("framework")
    if name is not None and logged is not None and logged != name:
        out.append(f"framework: the log is {FRAMEWORK_WORDS.get(logged, logged)}; the "
                   f"scenario's framework.name is {name}")
    wl = scenario.workload
    for which, key, cap in (("response", "response_len", wl.max_response_len),
                            ("prompt", "prompt_len", wl.max_prompt_len)):
        longest = measured.get(key, {}).get("max")
        if longest is not None and longest > cap * LENGTH_SLACK:
            out.append(f"lengths: the log's {which}s reach {longest:.0f} tokens (median of "
                       f"the steps' max); the scenario caps them at {cap} "
                       f"(workload.max_{which}_len)")
    gpus = measured.get("gpus")
    regime = regime_of(scenario)
    if gpus is not None and _off(gpus, regime.gpus):
        out.append(f"GPUs: the log's throughput says {gpus:.1f} GPUs ran it "
                   "(perf/total_num_tokens / (perf/throughput x step s)); the scenario has "
                   f"{regime.gpus}")
    total = measured.get("total_tokens")
    mean_len = (measured.get("response_len", {}).get("mean", 0.0)
                + measured.get("prompt_len", {}).get("mean", 0.0))
    if total is not None and mean_len > 0:
        samples = total / mean_len
        batch = wl.prompts_per_step * wl.samples_per_prompt
        if _off(samples, batch):
            out.append(f"batch: the log trained {samples:.0f} samples a step "
                       "(perf/total_num_tokens / mean prompt + response length); the "
                       f"scenario trains {wl.prompts_per_step} x {wl.samples_per_prompt} = "
                       f"{batch} (workload.prompts_per_step x samples_per_prompt)")
    return out


def _off(derived: float, stated: float) -> bool:
    return abs(derived - stated) > COUNT_TOLERANCE * stated


def speed_range(framework: str | None, knob: str) -> tuple[float, float, str]:
    """The plausible range of a fitted speed and where it comes from: the framework
    profile's 95% interval widened by PROFILE_WIDEN times its discrepancy (log sd) on each
    side, where the scenario names a framework whose profile has the knob; else
    SPEED_RANGE."""
    prof = profiles().get(framework or "")
    param = None if prof is None else (prof.params.get(knob) or prof.params.get("speed"))
    if prof is None or param is None:
        return (*SPEED_RANGE, "rlsim's own model")
    widen = math.exp(PROFILE_WIDEN * prof.discrepancy_log_sd)
    return (param.ci95[0] / widen, param.ci95[1] * widen,
            f"the {prof.name} profile's {param.name} {param.value:.3g}")


def implausible(params: dict[str, ParamFit], step_s: float,
                framework: str | None = None) -> list[str]:
    """Each fitted knob outside its plausible range, one line each (empty: none);
    `framework`: the scenario's `framework.name`, whose profile sets the speeds' range."""
    out = []
    for p in params.values():
        if p.name in ("train_speed", "rollout_speed", "speed"):
            lo, hi, what = speed_range(framework, p.name)
            if not lo <= p.value <= hi:
                ref = math.sqrt(lo * hi)
                slower = p.value < ref
                factor = ref / p.value if slower else p.value / ref
                out.append(f"{p.name} {p.value:.3g}: the measured run is {factor:.1f}x "
                           f"{'slower' if slower else 'faster'} than {what} prices it, "
                           f"outside {lo:.2f}-{hi:.2f}; the log and the scenario may describe "
                           "different jobs (model, GPUs, lengths, engine settings)")
        elif p.name.endswith("_overhead") and step_s > 0 and p.value > OVERHEAD_SHARE * step_s:
            out.append(f"{p.name} {p.value:.3g} s is {p.value / step_s:.0%} of the measured "
                       f"step ({step_s:.3g} s): the fit explains most of the step by time "
                       "rlsim does not price")
    return out
