"""The RollPacker reproduction scenarios load, share everything but the policy, and run;
their length files are what derive_lengths.py writes (P75 ~ 0.96k, longest at the cap)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsim.api import simulate
from rlsim.config.loading import load_scenario
from rlsim.workload.distributions import load_length_file
from tests.scenarios import load_script

DIR = Path(__file__).resolve().parents[2] / "scenarios" / "rollpacker"
PAIRS = ["qwen2.5-7b-8k", "qwen2.5-14b-16k", "qwen2.5-32b-32k"]


@pytest.mark.parametrize("key", PAIRS)
def test_pair_differs_only_in_policy_and_runs(key):
    verl, base = load_scenario(DIR / f"verl-{key}.yaml", ["steps=2"])
    packer, _ = load_scenario(DIR / f"rollpacker-{key}.yaml", ["steps=2"])
    a, b = verl.dump(), packer.dump()
    for d in (a, b):
        d.pop("name"), d.pop("description"), d.pop("policy")
        d["reward"]["judge"].pop("placement")  # the judge's co-location is part of the system
    assert a == b
    assert verl.reward.judge is not None and packer.reward.judge is not None
    assert (verl.reward.judge.placement, packer.reward.judge.placement) == ("time_shared", "mps")
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
    mod = load_script(DIR / "make_report.py", "make_report")
    phases = dict.fromkeys(("gen", "reward", "ref", "train", "switch", "weight_sync"), 1.0)
    rounds = {"short": {"step": 40.0, "gen": 10.0, "ref": 5.0, "train": 15.0},
              "long": {"step": 90.0, "gen": 80.0}}
    results = {job: mod.Run(100.0 if job[0].startswith("verl") else 50.0, phases, 0, 0, 3, 1,
                            rounds) for job in mod.jobs()}
    text = mod.markdown(results)
    assert "| 7B / 8k | 100.0 | 50.0 | 2.00x | 2.03x | -1% |" in text
    assert "**32B / 32k**: 2.00x vs 2.56x (-22%)" in text
    assert "**7B / 8k**" not in text.split("## Gaps")[1].split("Known")[0]
    assert "misses its target** (+-15% of the paper's speedup) at 32B / 32k;" in text
    assert "7B / 8k: 3 executions cut early, 1 of them would have completed" in text
    assert "| 32B / 32k | short | 40 (261) | 10 (69) | 0 (2) | 20 (163) | 0 (27) |" in text
    assert "| 32B / 32k | long | 90 (771) | 80 (568) | 0 (3) | 0 (171) | 0 (29) |" in text
    # code only, 14B: rollout 1 s and reward 1 s of a 100 s step
    assert "| 1% / 1% / 98% | 66% / 13% / 21% |" in text
    assert "| veRL mean step (s), +-15% | 100.0 vs 233.5 (-57% MISSED) |" in text
    assert "| speedup [P Table 2], +-15% | 2.00 vs 2.03 (-1% within) |" in text
    # weak scaling: samples/s = prompts x 8 / step, over veRL's on 32 GPUs (1024 / 100 s)
    assert "| 64 | 256 | 2.00 | 1.42 | +41% MISSED | 4.00 | 3.37 | +19% within | 100.0 | 50.0 |" \
        in text
    assert ("| weak scaling [P Fig. 14]: veRL on 32 GPUs / 128 prompts, throughput vs veRL on "
            "32, +-20% | - | 1.00 vs 1.0 (normalisation) | - |") in text


def test_weak_scaling_grows_the_pool_and_the_batch_together():
    """[P §6.7]: 32 -> 64 GPUs doubles the prompts per step; the base point is the committed
    pair itself (no overrides, so the report runs it once)."""
    mod = load_script(DIR / "make_report.py", "make_report")
    base, double = mod.weak_scaling_points(gpus=(32, 64))
    assert base.overrides == () and (base.prompts, base.samples_per_step) == (128, 1024)
    assert (double.prompts, double.samples_per_step) == (256, 2048)
    for path, overrides in double.jobs():
        sc = load_scenario(DIR / path, list(overrides))[0]
        assert (sc.pools[0].gpus, sc.workload.prompts_per_step) == (64, 256)
        assert (sc.rollout.tp, sc.train.tp, sc.train.pp, sc.train.cp) == (2, 2, 2, 2)
    assert base.jobs()[1] in mod.jobs() and len(set(mod.jobs())) == len(mod.jobs())


def test_trainer_is_priced_per_kernel_without_a_fitted_mfu():
    """Issue 19: no scenario carries train.mfu; all six use the Megatron backend with the
    artifact's batching (micro-batches of one sequence, full recompute)."""
    for s in ("verl", "rollpacker"):
        for k in PAIRS:
            train = load_scenario(DIR / f"{s}-{k}.yaml")[0].train
            assert train.mfu is None and train.backend == "megatron"
            assert train.micro_batch_size_per_gpu == 1 and train.recompute == "full"
