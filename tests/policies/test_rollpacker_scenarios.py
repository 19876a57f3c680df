"""The RollPacker reproduction scenarios load, share everything but the policy, and run;
their length files are what derive_lengths.py writes (P75 ~ 0.96k, longest at the cap)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsim.api import simulate
from rlsim.config.loading import load_scenario
from rlsim.workload.distributions import load_length_file

DIR = Path(__file__).resolve().parents[2] / "scenarios" / "rollpacker"
PAIRS = ["qwen2.5-7b-8k", "qwen2.5-14b-16k", "qwen2.5-32b-32k"]


@pytest.mark.parametrize("key", PAIRS)
def test_pair_differs_only_in_policy_and_runs(key):
    verl, base = load_scenario(DIR / f"verl-{key}.yaml", ["steps=2"])
    packer, _ = load_scenario(DIR / f"rollpacker-{key}.yaml", ["steps=2"])
    a, b = verl.dump(), packer.dump()
    for d in (a, b):
        d.pop("name"), d.pop("description"), d.pop("policy")
    assert a == b
    assert verl.policy.name == "sync" and verl.policy.placement == "colocated"
    assert packer.policy.name == "tail_batching"
    res = simulate(packer, base)
    assert res.summary["steps"] == 2


@pytest.mark.parametrize(("label", "cap"), [("8k", 8192), ("16k", 16384), ("32k", 32768)])
def test_length_files_match_the_papers_statistics(label, cap):
    grids = [load_length_file(DIR / f"lengths-{d}-{label}.txt") for d in ("math", "code", "qa")]
    mix = np.concatenate(grids)  # the scenarios' uniform mix
    assert 755 <= np.percentile(mix, 75) <= 1100  # [P RollPacker 2.2]: P75 755 to 1.1k
    assert all(g.max() == cap for g in grids)  # the longest responses reach the cap
