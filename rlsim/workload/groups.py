"""The unit of work a workload hands to a policy: one prompt and its group of responses.

Owns `PromptGroup`, an immutable record of lengths in tokens, `Turn`, one turn of a
multi-turn sample, and `Turns`, a sample's turns as columns. Response lengths are final:
already capped at the job's max response length (per turn for multi-turn samples), so an
engine generates exactly that many tokens unless a policy aborts the response early.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import NamedTuple, overload


class Turn(NamedTuple):
    """One turn of a multi-turn sample: a generated response, then (unless it is the last
    turn) an environment step that takes `env_s` seconds and appends `obs_tokens` tokens of
    observation to the context.

    A named tuple, not a dataclass: `Turns` builds one on demand in C (`tuple.__new__`), and
    `Turn(...)`, as recorded traces call it, takes about half the time of a frozen
    dataclass's interpreted `__init__` (357 against ~640 ns here)."""

    response_tokens: int
    # Tokens generated in this turn (>= 1, capped at max_response_len).
    env_s: float = 0.0
    # Latency of the environment step after this turn, in seconds (0 for the last turn).
    obs_tokens: int = 0
    # Observation tokens the environment step appends (0 for the last turn).


_NEW = tuple.__new__
# Bytes a turn in `Turns.packed` and a rollout's buffer (`rollout.pack_turns`): int32
# response and observation tokens, then the float64 environment step, little-endian.
TURN_ROW_BYTES = 16
_ROW = struct.Struct("<iid")  # one turn in those bytes
assert _ROW.size == TURN_ROW_BYTES


class Turns(Sequence[Turn]):
    """A sample's turns, in order, kept as three columns (a tuple each) rather than a
    `Turn` per turn: a synthetic agentic batch holds ~85,000 turns, and a rollout reads one
    number a turn. It is a sequence of `Turn` (indexing builds one; a slice is a `Turns`)
    and equals a tuple of the same turns. The last turn's `env_s` and `obs_tokens` are 0.
    `packed`: the same turns as a rollout keeps them (`rollout.pack_turns`), when whoever
    made the columns packed them too (the synthetic agentic workload does, from its
    arrays, while they are in the CPU's caches); else None. Made `from_packed`, only the
    packed turns are kept and the columns are read out of them when first asked for."""

    __slots__ = ("_env_s", "_obs_tokens", "_response_tokens", "packed")

    def __init__(self, response_tokens: tuple[int, ...], env_s: tuple[float, ...],
                 obs_tokens: tuple[int, ...], packed: bytes | None = None) -> None:
        if not len(response_tokens) == len(env_s) == len(obs_tokens):
            raise ValueError(f"turn columns of different lengths: {len(response_tokens)} "
                             f"responses, {len(env_s)} env_s, {len(obs_tokens)} obs_tokens")
        if packed is not None and len(packed) != TURN_ROW_BYTES * len(response_tokens):
            raise ValueError(f"{len(packed)} packed bytes for {len(response_tokens)} turns: "
                             f"{TURN_ROW_BYTES} a turn")
        self._response_tokens: tuple[int, ...] | None = response_tokens
        self._env_s: tuple[float, ...] | None = env_s
        self._obs_tokens: tuple[int, ...] | None = obs_tokens
        self.packed = packed

    @classmethod
    def from_packed(cls, packed: bytes) -> Turns:
        """Turns kept only as `packed` rows (`TURN_ROW_BYTES` a turn: response and
        observation tokens as little-endian int32, the environment step as a float64): no
        number object is made for a turn until a column is read (issue 40: a synthetic
        agentic batch's ~90,000 turns were ~10 MB of numbers, made and freed out of the
        CPU's caches, that a run never reads)."""
        if len(packed) % TURN_ROW_BYTES:
            raise ValueError(f"{len(packed)} packed bytes: not whole turns of "
                             f"{TURN_ROW_BYTES} bytes")
        turns = cls.__new__(cls)
        turns._response_tokens = turns._env_s = turns._obs_tokens = None
        turns.packed = packed
        return turns

    def _columns(self) -> tuple[tuple[int, ...], tuple[float, ...], tuple[int, ...]]:
        """(response_tokens, env_s, obs_tokens), read out of `packed` the first time."""
        if self._response_tokens is None or self._env_s is None or self._obs_tokens is None:
            assert self.packed is not None
            rows = list(_ROW.iter_unpack(self.packed))
            self._response_tokens = tuple(r[0] for r in rows)
            self._obs_tokens = tuple(r[1] for r in rows)
            self._env_s = tuple(r[2] for r in rows)
        return self._response_tokens, self._env_s, self._obs_tokens

    @property
    def response_tokens(self) -> tuple[int, ...]:
        """Each turn's response tokens."""
        return self._columns()[0]

    @property
    def env_s(self) -> tuple[float, ...]:
        """The environment step after each turn, in seconds (0 after the last)."""
        return self._columns()[1]

    @property
    def obs_tokens(self) -> tuple[int, ...]:
        """The observation tokens each environment step adds (0 after the last turn)."""
        return self._columns()[2]

    @classmethod
    def of(cls, turns: Iterable[Turn]) -> Turns:
        """The columns of `turns` (a `Turns` is returned as it is)."""
        if isinstance(turns, Turns):
            return turns
        rows = tuple(turns)
        return cls(tuple(t.response_tokens for t in rows), tuple(t.env_s for t in rows),
                   tuple(t.obs_tokens for t in rows))

    def __len__(self) -> int:
        if self._response_tokens is None:
            assert self.packed is not None
            return len(self.packed) // TURN_ROW_BYTES
        return len(self._response_tokens)

    @overload
    def __getitem__(self, i: int) -> Turn: ...
    @overload
    def __getitem__(self, i: slice) -> Turns: ...
    def __getitem__(self, i: int | slice) -> Turn | Turns:
        if isinstance(i, slice):
            return Turns(self.response_tokens[i], self.env_s[i], self.obs_tokens[i])
        return _NEW(Turn, (self.response_tokens[i], self.env_s[i], self.obs_tokens[i]))

    def __iter__(self) -> Iterator[Turn]:
        return map(_NEW, repeat(Turn), zip(self.response_tokens, self.env_s,
                                               self.obs_tokens, strict=True))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Turns):
            return (self.response_tokens == other.response_tokens
                    and self.env_s == other.env_s and self.obs_tokens == other.obs_tokens)
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))  # as the tuple it equals

    def __repr__(self) -> str:
        return f"Turns({list(self)!r})"

    def __reduce__(self) -> tuple[type[Turns], tuple[tuple[int, ...], tuple[float, ...],
                                                     tuple[int, ...]]]:
        return Turns, (self.response_tokens, self.env_s, self.obs_tokens)


@dataclass(frozen=True, slots=True)
class PromptGroup:
    """One prompt of a training step with the lengths of its GRPO responses."""

    prompt_id: int
    """Unique across all steps of a run: step * 1_000_000 + index within the step."""
    prompt_tokens: int
    """Prompt length in tokens (>= 1, capped at max_prompt_len)."""
    response_tokens: tuple[int, ...]
    """Length in tokens of each response (>= 1, capped at max_response_len). For a
    multi-turn sample: its whole trajectory after the prompt, i.e. the sum of its turns'
    responses and observations (which may exceed max_response_len)."""
    max_response_tokens: int
    """The cap the responses were clamped to (the engine's max_tokens)."""
    turns: tuple[Sequence[Turn], ...] | None = None
    """Multi-turn samples only (recorded rollouts, multi-turn traces, synthetic agentic
    trajectories): the turns of each sample, in order (a tuple of `Turn`, or `Turns`);
    None otherwise (every sample is then one turn of response_tokens)."""
    reward_s: tuple[float | None, ...] | None = None
    """Recorded rollouts only: each sample's measured reward latency in seconds (None where
    the recording has none); None when no sample of the group has one."""
    reset_s: tuple[float, ...] | None = None
    """Synthetic agentic trajectories only: each sample's environment reset before its first
    turn, in seconds; None: no reset."""
    task: str | None = None
    """The task of a mixed workload (workload.tasks) this prompt belongs to; None without
    a mix."""

    @property
    def capped(self) -> int:
        """How many responses stopped at the cap rather than finishing on their own (for a
        multi-turn sample: any of its turns)."""
        cap = self.max_response_tokens
        if self.turns is not None:
            return sum(1 for turns in self.turns if any(t.response_tokens >= cap for t in turns))
        return sum(1 for n in self.response_tokens if n >= cap)

    @property
    def total_response_tokens(self) -> int:
        """Response tokens of the whole group (trajectories after the prompt, observations
        included, for multi-turn samples)."""
        return sum(self.response_tokens)
