"""The RollMux 200-job trace generator (scenarios/rollmux/make_trace.py) and its files."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from rlsim.config.fleet_loading import load_fleet
from tests.scenarios import load_script

ROLLMUX = Path(__file__).resolve().parents[2] / "scenarios" / "rollmux"
mt = load_script(ROLLMUX / "make_trace.py", "rollmux_make_trace")


def test_rows_are_seeded() -> None:
    p = mt.TraceParams(jobs=50)
    assert mt.rows(p, 3) == mt.rows(p, 3)
    assert mt.rows(p, 3) != mt.rows(p, 4)


def test_maxent_weights_meet_the_stated_mean_cap() -> None:
    caps = np.array([k.cap_k for k in mt.MENU])
    w = mt.kind_weights(mt.TraceParams())
    assert w.sum() == pytest.approx(1.0)
    assert float(w @ caps) == pytest.approx(12.1, abs=1e-6)
    u = mt.kind_weights(mt.TraceParams(weights="uniform"))
    assert float(u @ caps) == pytest.approx(11.2)
    with pytest.raises(ValueError, match="mean_cap_k"):
        mt.kind_weights(mt.TraceParams(mean_cap_k=40.0))


def test_large_samples_reach_the_paper_aggregates() -> None:
    agg = mt.aggregates(mt.rows(mt.TraceParams(jobs=20000), 0))
    assert agg["mean_cap_k"] == pytest.approx(12.1, rel=0.02)
    assert agg["mean_duration_h"] == pytest.approx(27.9, rel=0.03)
    assert agg["slo_mean"] == pytest.approx(1.5, abs=0.01)
    lo, hi = agg["slo_range"]
    assert lo >= 1.0 and hi <= 2.0
    assert agg["arrival_span_h"] <= 14 * 24
    assert set(agg["kinds"]) == {k.template for k in mt.MENU}
    fixed = mt.aggregates(mt.rows(mt.TraceParams(jobs=30, duration_sigma=0.0), 1))
    assert fixed["mean_duration_h"] == pytest.approx(27.9)
    diurnal = mt.rows(mt.TraceParams(jobs=2000, arrivals="diurnal"), 0)
    hours = np.array([float(r["arrival_s"]) / 3600 % 24 for r in diurnal])
    assert np.mean((hours > 8) & (hours < 20)) > 0.75  # busiest around 14:00


def test_open_choices_become_row_overrides() -> None:
    base = mt.TraceParams(jobs=100)
    assert all(set(r) == {"name", "arrival_s", "template", "slo", "duration_h"}
               for r in mt.rows(base, 0))
    kinds = {k.template: k for k in mt.MENU}
    for r in mt.rows(replace(base, gpu_scale=2), 0):
        assert r["rollout.gpus"] == r["train.gpus"]  # Solo-D's 1:1 stays 1:1
        assert r["rollout.gpus"] == (32 if kinds[r["template"]].model_b == 32 else 16)
    for r in mt.rows(replace(base, mt_batch="prompts"), 0):
        k = kinds[r["template"]]
        assert ("workload.prompts_per_step" in r) == k.multi_turn
        if k.multi_turn:  # Table 3's Bsz as prompts: D 256, E 64
            assert r["workload.prompts_per_step"] == (256 if k.cap_k <= 8 else 64)
    for r in mt.rows(replace(base, lengths="code"), 0):
        assert (ROLLMUX / r["workload.response_len.path"]).is_file()


def test_templates_cover_the_menu_with_paper_constants() -> None:
    templates = yaml.safe_load((ROLLMUX / "trace-job-types.yaml").read_text())
    for kind in mt.MENU:
        t = templates[kind.template]
        assert t["workload"]["max_response_len"] == kind.cap_k * 1024
        assert ("agentic" in t["workload"]) == kind.multi_turn
        assert t["rollout"]["gpus"] == t["train"]["gpus"] == (16 if kind.model_b == 32 else 8)
        assert set(t["switch"]) == {"rollout_cold", "rollout_warm", "train_cold", "train_warm"}
        assert set(t["host_footprint"]) == {"rollout", "train"}


# What a trace kind may change from its job-types.yaml type: the rest must be equal.
BY_KIND = {"rollout": {"gpus", "tp"}, "train": {"gpus", "tp", "pad_to", "ref_pad_to"},
           "workload": {"max_response_len", "response_len", "agentic"}}
QWEN3_CONTEXT = 40960  # max_position_embeddings of Qwen3-4B/8B


def test_kinds_take_their_table3_type_settings() -> None:
    """Each kind is its job-types.yaml type (A/B/C by size, D for per-turn caps to 8K, E
    above) with only model, cap, GPUs, TP and the cap-derived padding changed."""
    templates = yaml.safe_load((ROLLMUX / "trace-job-types.yaml").read_text())
    types = yaml.safe_load((ROLLMUX / "job-types.yaml").read_text())
    assert {k.template: k.table3_type for k in mt.MENU if k.cap_k in (8, 16)} == {
        "st-7b-8k": "type-a", "st-14b-8k": "type-b", "st-32b-8k": "type-c",
        "mt-8b-8k": "type-d", "mt-4b-8k": "type-d", "mt-8b-16k": "type-e",
        "mt-4b-16k": "type-e"}
    for kind in mt.MENU:
        t, ty = templates[kind.template], types[kind.table3_type]
        for section, free in BY_KIND.items():
            ours = {k: v for k, v in t[section].items() if k not in free}
            theirs = {k: v for k, v in ty[section].items() if k not in free}
            assert ours == theirs, (kind.template, section)
        assert t["reward"] == ty["reward"]
        family = "qwen3" if kind.multi_turn else "qwen2.5"
        assert t["model"] == f"{family}-{kind.model_b}b"
        # TP by size [P Weave Table 2]: 3B row for 4B, 7B row for 8B
        assert t["rollout"]["tp"] == (2 if kind.model_b == 32 else 1)
        assert t["train"]["tp"] == {4: 1, 7: 2, 8: 2, 14: 2, 32: 8}[kind.model_b]
        w = t["workload"]
        assert w["response_len"]["path"] == \
            f"../rollpacker/lengths-math-{max(kind.cap_k, 8)}k.txt"
        if kind.multi_turn:
            # pad_to = max_context_len = turns x per-turn cap (D 16384, E 32768), capped
            # at the model's context
            a, ta = w["agentic"], ty["workload"]["agentic"]
            assert {k: v for k, v in a.items() if k != "max_context_len"} == \
                {k: v for k, v in ta.items() if k != "max_context_len"}
            turns = a["turns"]["value"]
            for job, work in ((t, w), (ty, ty["workload"])):
                ctx = min(turns * work["max_response_len"], QWEN3_CONTEXT)
                assert job["train"]["pad_to"] == work["agentic"]["max_context_len"] == ctx
            assert w["prompts_per_step"] * w["samples_per_prompt"] == \
                mt.prompts_reading(kind)  # trajectories: Table 3's Bsz
        else:
            # ref_pad_to = ROLL's sequence_length = prompt cap + response cap (A: 10240)
            for job, work in ((t, w), (ty, ty["workload"])):
                assert job["train"]["ref_pad_to"] == \
                    work["max_prompt_len"] + work["max_response_len"]


def test_committed_trace_is_the_seed_0_sample(tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    mt.main(["--out", str(out)])
    assert out.read_text() == (ROLLMUX / "trace-200-jobs.csv").read_text()
    scenario, _ = load_fleet(ROLLMUX / "trace-200-jobs.yaml")
    assert len(scenario.jobs) == 200
    prices = {p.name: p.usd_per_gpu_hour for p in scenario.pools}
    assert prices == {"h20": 1.85, "h800": 5.28}  # [P Weave Table 1]
    assert all(j.switch is not None and j.host_footprint is not None for j in scenario.jobs)
    with out.open() as f:
        assert len(list(csv.DictReader(f))) == 200
