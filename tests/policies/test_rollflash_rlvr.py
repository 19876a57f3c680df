"""ROLL Flash's RLVR scaling (Fig. 1b, issue 22): the scenarios state their sources, keep
the paper's setup across the three series and four GPU counts, the 128-GPU headline pair
equals the series files at 128 GPUs, and the report section computes its tables from the
runs (fake runs here; no simulation)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rlsim.config.loading import load_scenario
from tests.scenarios import load_script, unsourced_lines

DIR = Path(__file__).resolve().parents[2] / "scenarios" / "rollflash"
MODELS = ("think", "base")
SERIES = ("async", "sync-roll", "sync-naive")
FILES = [f"rlvr/{m}-{s}" for m in MODELS for s in SERIES] + [
    "rlvr-qwen3-8b-128gpu-sync", "rlvr-qwen3-8b-128gpu-async"]
# Fields whose value must carry a source comment ([P-RF ...], [C ...], [T], [D] or 'silent').
SOURCED = ("model:", "gpu:", "nodes:", "tp:", "recompute:", "max_token_len_per_gpu:",
           "prompts_per_step:", "samples_per_prompt:", "response_len:", "max_response_len:",
           "max_prompt_len:", "alpha:", "placement:", "routing:", "queue_scheduling:",
           "prompt_replication:", "max_running_requests:", "log_prob_pad_to:")
TAG = re.compile(r"#.*(\[(P-RF|P-RA|P-RP|C|T|D)\b|silent)")


@pytest.fixture(scope="module")
def mod():
    return load_script(DIR / "rlvr.py", "rollflash_rlvr")


@pytest.mark.parametrize("name", FILES)
def test_scenario_cites_a_source_for_each_setup_value(name):
    text = (DIR / f"{name}.yaml").read_text(encoding="utf-8")
    assert "Fig. 1b" in text and "PAPER-FACTS" in text
    missing = unsourced_lines(text, SOURCED, TAG)
    assert not missing, f"{name}: no source for {missing!r}"


@pytest.mark.parametrize("model", MODELS)
def test_series_share_the_paper_setup_at_every_gpu_count(mod, model):
    mean = {"think": 11000, "base": 2000}[model]
    for n in mod.GPUS:
        loaded = {s: load_scenario(DIR / "rlvr" / f"{stem}.yaml", list(ov))[0]
                  for s in SERIES for stem, ov in [mod.job(model, s, n)]}
        ref = loaded["async"]
        w = ref.workload
        assert (w.prompts_per_step, w.samples_per_prompt) == (256, 16)
        assert (w.max_prompt_len, w.max_response_len) == (2048, 30720)
        rl = w.response_len
        assert rl.median * 2.718281828 ** (rl.sigma ** 2 / 2) == pytest.approx(mean, rel=2e-3)
        for s, sc in loaded.items():
            assert sum(p.gpus for p in sc.pools) == n, (s, n)
            assert sc.model == ref.model and sc.workload == ref.workload
            assert sc.train == ref.train.model_copy(update={"pool": sc.train.pool})
            assert sc.rollout == ref.rollout.model_copy(update={"pool": sc.rollout.pool})
            assert sc.reward == ref.reward
        gpus = {p.name: p.gpus for p in ref.pools}
        assert gpus == {"rollout": n // 2, "train": n // 2}  # 1:1 [P-RF 3.2]
        assert ref.policy.name == "async" and ref.policy.asynchronous.alpha == 2
        naive, roll = loaded["sync-naive"], loaded["sync-roll"]
        assert naive.policy.placement == roll.policy.placement == "colocated"
        assert naive.policy.schedule.is_default
        assert roll.policy.schedule.queue_scheduling and roll.policy.schedule.prompt_replication


@pytest.mark.parametrize(("headline", "series"), [("rlvr-qwen3-8b-128gpu-sync", "sync-naive"),
                                                  ("rlvr-qwen3-8b-128gpu-async", "async")])
def test_headline_pair_is_the_think_series_at_128_gpus(mod, headline, series):
    a, _ = load_scenario(DIR / f"{headline}.yaml")
    stem, ov = mod.job("think", series, 128)
    b, _ = load_scenario(DIR / "rlvr" / f"{stem}.yaml", list(ov))
    skip = {"name", "description"}
    assert {k: v for k, v in a.dump().items() if k not in skip} == \
        {k: v for k, v in b.dump().items() if k not in skip}


def test_section_is_computed_from_the_runs(mod):
    """Fake runs: Async steps 100 / n*16 s, sync twice Async's; the tables normalise to
    Async@16, give the headline ratio with its error and verdict, and every sensitivity
    row."""
    phases = {"gen": 10.0, "ref": 5.0, "train": 4.0}

    def run(job):
        stem, ov = job
        n = next(int(o.split("=")[1]) for o in ov if ".nodes=" in o)
        gpus = n * 16 if stem.endswith("async") else n * 8
        step = 1600.0 / gpus * (1 if stem.endswith("async") else 2)
        return mod.Run(step, phases)

    results = {j: run(j) for j in mod.jobs()}
    text = mod.markdown(results)
    assert text.startswith("## ROLL Flash Fig. 1b")
    assert "| Async | 16 | 1.00 | 1.00 | - | (the reference) | 100 | 10 / 5 / 4 |" in text
    assert "| Async | 128 | 7.60 | 8.00 | +5% | met | 12 |" in text
    assert "| Sync-Naive | 128 | 3.57 | 4.00 | +12% | met | 25 |" in text
    assert "| Think | H800 (scenarios) | 2.13x | 2.00x | -6% | met |" in text
    assert "| Base | H800 (scenarios) | 2.24x | 2.00x | -11% | met |" in text
    for label, _ in mod.SENSITIVITY:
        assert text.count(f"| {label} |") == 2  # one row per model
    assert "| Async | 16 | 4326 | 100 | -98% |" in text  # the Fig. 3a cross-check
