"""Rewards scored as responses finish (RollPacker's reward scheduler, async RL).

Owns `Scorer`: a finished response goes at once to the reward pool (with the latency drawn
for its launch slot, under the adaptive sandbox timeout if any) or, for a judged task, to
the least-loaded judge engine; and `sandbox_caps`, each sandbox task's fixed timeout.
"""

from __future__ import annotations

from collections.abc import Callable

import simpy

from rlsim.config.scenario import Scenario
from rlsim.entities.engine import Request
from rlsim.policies.adaptive_timeout import AdaptiveTimeout
from rlsim.policies.phases import Phases


def sandbox_caps(sc: Scenario) -> dict[str | None, float]:
    """Fixed sandbox timeout of each task scored in a sandbox (None: an untasked workload)."""
    r = sc.reward
    caps: dict[str | None, float] = {t: spec.timeout for t, spec in r.by_task.items()
                                     if spec.kind == "sandbox"}
    if r.kind == "sandbox":
        caps[None] = r.timeout
        for task in sc.workload.tasks or ():
            if task.name not in r.by_task:
                caps[task.name] = r.timeout
    return caps


class Scorer:
    """Scores responses as they finish: on the reward pool, each with the latency drawn for
    its launch slot, under the adaptive timeout if any; or, for judged tasks, on the
    least-loaded judge engine. While `half_judges()` says so (RollPacker's stream trainer
    holds the second half of the rollout GPUs), the judges there take no new work."""

    def __init__(self, ph: Phases, latencies_s: list[float | None],
                 adaptive: AdaptiveTimeout | None, caps: dict[str | None, float],
                 half_judges: Callable[[], bool] | None = None) -> None:
        self.ph = ph
        self.latencies_s = latencies_s
        self.adaptive = adaptive
        self.caps = caps
        self.half_judges = half_judges
        self.judging: dict[int, simpy.Event] = {}  # response rid -> its verdict

    def judge(self, rid: int, response_tokens: int) -> None:
        """Send a finished response to a judge engine; `judging[rid]` fires at its verdict."""
        ph = self.ph
        jc = ph.cluster.scenario.reward.judge
        assert jc is not None
        judges = ph.cluster.judges
        if self.half_judges is not None and self.half_judges():
            judges = judges[: max(1, len(judges) // 2)]
        verdict = ph.env.event()
        self.judging[rid] = verdict
        def given(_req: Request) -> None:
            verdict.succeed()

        req = Request(ph.next_rid(), response_tokens + jc.prompt_overhead_tokens,
                      jc.output_tokens, on_done=given)
        min(judges, key=lambda e: e.load).submit(req)

    def submit(self, slot: int, prompt_id: int, task: str | None) -> float | None:
        """When the reward of the response in launch `slot` is done; None if it is judged
        (`judge` sends it)."""
        lat = self.latencies_s[slot]
        if lat is None:
            return None
        cap = self.caps.get(task)
        if cap is None or self.adaptive is None:
            return self.ph.cluster.reward.submit(lat)
        now = self.ph.env.now
        charged = self.adaptive.charge(prompt_id, lat, now, cap)
        end = self.ph.cluster.reward.submit(charged)
        self.adaptive.record(prompt_id, lat, charged, end, cap)
        return end
