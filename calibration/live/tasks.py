"""The live job's verifiable tasks: prompts, reference answers and exact-match scoring.

Three kinds, mixed in one job so response lengths are long-tailed and some trajectories are
multi-turn:
- `ct`  count through the alphabet: "ct:c,h>" -> "cdefgh"
- `cp`  copy a short string:        "cp:hey>" -> "hey"
- `get` agentic lookup:             "get:q>" -> "$cat q" | env "=c,h\n" | "cdefgh": the
  `$cat NAME` turn is executed for real in the trajectory's sandbox directory (rlsim's
  environment step), and the final turn counts through the range the file holds.
Count spans are lognormal (median 4 letters), so most responses are short and a few are
long; a policy that fails to stop runs on to the length cap, as real ones do. The skills
(a successor rule, a stop condition, short copies) are ones a tiny transformer picks up in
a short supervised warm-up, so RL starts with reward to improve on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

KINDS = ("ct", "cp", "get")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Problem:
    """One prompt: its text, the exact answer that earns reward 1, and sandbox files."""

    kind: str
    prompt: str
    answer: str
    files: dict[str, str] = field(default_factory=dict)

    @property
    def multi_turn(self) -> bool:
        return self.kind == "get"

    def transcript(self) -> list[tuple[str, str]]:
        """The reference trajectory as (role, text) pieces: 'model' turns and 'env' turns."""
        if not self.multi_turn:
            return [("model", self.answer)]
        out: list[tuple[str, str]] = []
        for name in self.files:
            out.append(("model", f"$cat {name}"))
            out.append(("env", observation(self.files[name])))
        out.append(("model", self.answer))
        return out


@dataclass(frozen=True)
class TaskMix:
    """How prompts are drawn: kind weights (ct, cp, get) and the count-span distribution."""

    weights: tuple[float, float, float] = (0.5, 0.2, 0.3)
    median_span: float = 4.0
    sigma: float = 0.8
    max_copy: int = 3


DEFAULT_MIX = TaskMix()


def _span(rng: np.random.Generator, mix: TaskMix) -> str:
    """A range 'a,b' with b >= a: lognormal length, start uniform where it fits."""
    n = min(max(round(mix.median_span * math.exp(mix.sigma * rng.standard_normal())), 1),
            len(LETTERS))
    start = int(rng.integers(0, len(LETTERS) - n + 1))
    return f"{LETTERS[start]},{LETTERS[start + n - 1]}"


def count(spec: str) -> str:
    """'c,h' -> 'cdefgh'."""
    a, b = spec.split(",")
    return LETTERS[LETTERS.index(a): LETTERS.index(b) + 1]


def draw(rng: np.random.Generator, mix: TaskMix = DEFAULT_MIX) -> Problem:
    kind = KINDS[int(rng.choice(len(KINDS), p=np.array(mix.weights) / sum(mix.weights)))]
    if kind == "ct":
        spec = _span(rng, mix)
        return Problem(kind, f"ct:{spec}>", count(spec))
    if kind == "cp":
        n = int(rng.integers(1, mix.max_copy + 1))
        s = "".join(LETTERS[i] for i in rng.integers(0, len(LETTERS), n))
        return Problem(kind, f"cp:{s}>", s)
    name = LETTERS[int(rng.integers(0, len(LETTERS)))]
    spec = _span(rng, mix)
    return Problem("get", f"get:{name}>", count(spec), {name: spec})


def draw_batch(seed: int, step: int, n: int, mix: TaskMix = DEFAULT_MIX) -> list[Problem]:
    """The n prompts of step `step`; a pure function of (seed, step)."""
    rng = np.random.default_rng([seed, step])
    return [draw(rng, mix) for _ in range(n)]


def observation(stdout: str) -> str:
    """What the environment appends after a command: '=' + output + newline."""
    return f"={stdout}\n"


def score(answer: str, response: str) -> float:
    """Exact match of the final response."""
    return 1.0 if response == answer else 0.0
