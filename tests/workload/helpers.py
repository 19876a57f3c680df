"""Shared paths and builders for the workload tests (plain imports, not fixtures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from rlsim.config.workload import WorkloadConfig
from rlsim.workload import Workload

TESTS_DATA = Path(__file__).resolve().parents[1] / "data"
POLYTRACE = TESTS_DATA / "polytrace"
DEEPCODER = POLYTRACE / "deepcoder-14b-16k"
DAPO = POLYTRACE / "dapo-qwen2.5-32b"
REPO_ROOT = Path(__file__).resolve().parents[2]


def make_workload(seed: int = 0, base_dir: Path = TESTS_DATA, **fields: Any) -> Workload:
    """A Workload from keyword fields (defaults: 64 prompts x 8, cap 16384)."""
    data: dict[str, Any] = {
        "prompts_per_step": 64,
        "samples_per_prompt": 8,
        "max_response_len": 16384,
        "response_len": {"dist": "lognormal", "median": 1000, "sigma": 1.0},
    }
    data.update(fields)
    return Workload(WorkloadConfig.model_validate(data), np.random.SeedSequence(seed), base_dir)


def responses(workload: Workload, steps: int, n_prompts: int | None = None) -> np.ndarray:
    """Response lengths of the first `steps` steps as a (prompts, samples) array."""
    return np.array(
        [g.response_tokens for k in range(steps) for g in workload.batch(k, n_prompts)]
    )


def turn(response: int, env_s: float | None = None, obs: int | None = None) -> dict[str, Any]:
    """One turn of a recorded sample (rollouts format); env_s/obs omitted when None."""
    out: dict[str, Any] = {"response_tokens": response}
    if env_s is not None:
        out["env_s"] = env_s
    if obs is not None:
        out["obs_tokens"] = obs
    return out


def rollouts_line(step: int, prompt: int, samples: list[list[dict[str, Any]]],
                  rewards: list[float | None] | None = None) -> str:
    """One prompt group of a rollouts file: each sample given as its list of turns."""
    out = []
    for i, turns in enumerate(samples):
        sample: dict[str, Any] = {"turns": turns}
        if rewards is not None and rewards[i] is not None:
            sample["reward_s"] = rewards[i]
        out.append(sample)
    return json.dumps({"step": step, "prompt_tokens": prompt, "samples": out})


def write_rollouts(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path
