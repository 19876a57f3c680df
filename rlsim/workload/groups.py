"""The unit of work a workload hands to a policy: one prompt and its group of responses.

Owns `PromptGroup`, an immutable record of lengths in tokens. Response lengths are final:
already capped at the job's max response length, so an engine generates exactly that many
tokens unless a policy aborts the response early.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PromptGroup:
    """One prompt of a training step with the lengths of its GRPO responses."""

    prompt_id: int
    """Unique across all steps of a run: step * 1_000_000 + index within the step."""
    prompt_tokens: int
    """Prompt length in tokens (>= 1, capped at max_prompt_len)."""
    response_tokens: tuple[int, ...]
    """Length in tokens of each response (>= 1, capped at max_response_len)."""
    max_response_tokens: int
    """The cap the responses were clamped to (the engine's max_tokens)."""

    @property
    def capped(self) -> int:
        """How many responses stopped at the cap rather than finishing on their own."""
        cap = self.max_response_tokens
        return sum(1 for n in self.response_tokens if n >= cap)

    @property
    def total_response_tokens(self) -> int:
        """Tokens generated for the whole group."""
        return sum(self.response_tokens)
