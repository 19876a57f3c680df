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


def test_report_tables_are_computed_from_the_runs():
    """make_report.py's markdown: speedup = veRL step / RollPacker step, error against the
    paper's Table 2, every gap above 10% listed (fake runs, so no simulation here)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_report", DIR / "make_report.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    phases = dict.fromkeys(("gen", "reward", "ref", "train", "switch", "weight_sync"), 1.0)
    results = {job: (100.0 if job[0].startswith("verl") else 50.0, phases, 0, 0)
               for job in mod.jobs()}
    text = mod.markdown(results)
    assert "| 7B / 8k | 100.0 | 50.0 | 2.00x | 2.03x | -1% |" in text
    assert "**32B / 32k**: 2.00x vs 2.56x (-22%)" in text
    assert "**7B / 8k**" not in text.split("## Gaps")[1].split("Modelling")[0]
