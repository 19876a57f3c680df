"""When to checkpoint an environment: the policies of Belayer's full checkpoint/restore.

A checkpoint can only be taken at an action boundary (an execution has just returned), and
it runs while the next LLM call does, so only the part of the snapshot past that call's
response is visible. `take_checkpoint` is the decision at one boundary.
"""

from __future__ import annotations

from collections.abc import Sequence

from rlsim.config.faults import CheckpointPolicyConfig


def take_checkpoint(cfg: CheckpointPolicyConfig, execs_since: int, work_since_s: float,
                    checkpoint_s: float, llm_calls_s: Sequence[float]) -> bool:
    """Whether to snapshot now.

    `execs_since`: executions since the last checkpoint (or the start), this one included;
    `work_since_s`: seconds of LLM calls and executions a failure would redo;
    `llm_calls_s`: durations of the LLM calls finished so far in the run (the adaptive
    policy's estimate of how long the next one runs; none yet: it is assumed to outlast
    the snapshot).

    adaptive (Belayer's adaptive risk, as the issue states it): p_fail x P(the next LLM
    call is still running when the snapshot ends) x the work a failure would redo, against
    the snapshot's expected visible part E[max(0, checkpoint_s - LLM call)]; without
    `weigh_by_llm`, the rule of Belayer's code, which leaves out the probability.
    """
    if cfg.policy == "never":
        return False
    if cfg.policy == "always":
        return True
    if cfg.policy == "every_k":
        return execs_since >= cfg.k
    if execs_since < cfg.min_steps or work_since_s < cfg.min_work_s:
        return False
    if not llm_calls_s:
        return True
    n = len(llm_calls_s)
    still_running = (sum(1 for t in llm_calls_s if t > checkpoint_s) / n
                     if cfg.weigh_by_llm else 1.0)
    visible = sum(checkpoint_s - t for t in llm_calls_s if t < checkpoint_s) / n
    return cfg.p_fail * still_running * work_since_s > visible
