"""RollPacker's adaptive sandbox timeout: cut doomed code executions early, per problem.

A fixed sandbox timeout (30 s) lets the executions that will never finish hold a worker,
and the step, for the whole 30 s. RollPacker [P §4.3] keeps, per test case, T_anchor: the
longest execution seen so far among the problem's correct responses; a later response of
the same problem is cut at

    T_timeout = min(max(floor, lambda * T_anchor), cap)     (floor 2 s, lambda 1.5, cap 30 s)

and scored zero. Before any execution of the problem has completed the cap applies.

rlsim has no model of which responses are correct. It counts every execution that ends
before the fixed timeout as correct for the anchor, so its T_anchor is at least the
paper's and it cuts no more than the paper would (docs/design.md). An execution that the
draw says would end before the cap but that the adaptive timeout cuts is a *false cut*: a
correct response scored zero, which the paper's lambda > 1 exists to make rare; both kinds
of cut are counted so a report can show the price of the speed.

The anchor is causal: an execution counts only once its scoring has ended, and anchors
persist across steps, so a prompt queued for a long round keeps what its short round
learned.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class AdaptiveTimeout:
    """Per-problem anchors and the cut counters of one run."""

    lam: float
    floor_s: float
    # prompt id -> (scoring end time, execution seconds) of its completed executions
    _runs: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    cut: int = 0  # executions cut before the fixed timeout (doomed ones among them)
    false_cut: int = 0  # of those, executions that would have completed: scored zero wrongly

    def anchor_s(self, prompt_id: int, now_s: float) -> float | None:
        """Longest completed execution of the problem whose scoring ended by `now_s`."""
        runs = self._runs.get(prompt_id)
        if not runs:
            return None
        done = [x for end, x in runs if end <= now_s]
        return max(done) if done else None

    def timeout_s(self, prompt_id: int, now_s: float, cap_s: float) -> float:
        """The timeout a response of the problem submitted at `now_s` runs under."""
        anchor = self.anchor_s(prompt_id, now_s)
        if anchor is None:
            return cap_s
        return min(max(self.floor_s, self.lam * anchor), cap_s)

    def charge(self, prompt_id: int, latency_s: float, now_s: float, cap_s: float) -> float:
        """Seconds a worker spends on an execution of `latency_s` (already cut at the fixed
        `cap_s`: equal to it means doomed) submitted now."""
        limit = self.timeout_s(prompt_id, now_s, cap_s)
        if latency_s <= limit:
            return latency_s
        if limit < cap_s:
            self.cut += 1
            if latency_s < cap_s:
                self.false_cut += 1
        return limit

    def record(self, prompt_id: int, latency_s: float, charged_s: float, end_s: float,
               cap_s: float) -> None:
        """Remember an execution scored until `end_s`; only a completed one (not cut, not at
        the fixed timeout) can become the problem's anchor."""
        if charged_s >= latency_s and latency_s < cap_s:
            self._runs.setdefault(prompt_id, []).append((end_s, latency_s))
