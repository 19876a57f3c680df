"""Prompt and response-length generators: distributions, a Gaussian copula, trace replay.

Owns what a training step asks of its rollouts (how many prompts, how long each prompt and
each of its responses, and for recorded multi-turn rollouts each turn with its environment
step and reward latency) and nothing about how they are served. Uses only `rlsim.config`.
"""

from rlsim.workload.generator import Workload
from rlsim.workload.groups import PromptGroup, Turn, Turns
from rlsim.workload.polytrace import load_polytrace
from rlsim.workload.rollouts import load_rollouts
from rlsim.workload.stats import summary

__all__ = ["PromptGroup", "Turn", "Turns", "Workload", "load_polytrace", "load_rollouts", "summary"]
