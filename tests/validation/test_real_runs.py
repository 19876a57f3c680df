"""The real-runs harness (calibration/realruns): loader, translator, table arithmetic.

Runs on the project's corpus (validation/real_runs/*.jsonl), never ../shared.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from calibration.realruns.lengths import capped_lognormal_mean, median_for_capped_mean
from calibration.realruns.records import (
    CORPUS_DIR,
    TIMING_KEYS,
    load_records,
    parse_record,
)
from calibration.realruns.table import (
    Row,
    median_abs,
    phase_pairs,
    rel_error,
    summary_lines,
    where_error_lines,
    with_remainder,
)
from calibration.realruns.translate import (
    note_facts,
    resolve_gpu,
    translate,
    verl_release,
    verl_release_default,
)
from rlsim.config.errors import ScenarioError
from rlsim.config.scenario import Scenario


@pytest.fixture(scope="module")
def records():
    return {r.id: r for r in load_records()}


# ---------------------------------------------------------------- loader
def test_loader_reads_every_record_typed(records) -> None:
    first = load_records(CORPUS_DIR / "runs.jsonl")   # the first 40, unchanged
    assert len(first) == 40
    assert sum(r.complete for r in first) == 6
    assert {r.id for r in first} <= set(records)
    for r in records.values():
        assert set(r.timing_s) <= set(TIMING_KEYS)
    llama = records["nemorl-v0.5-llama31_8b-grpo-on-16xH100"]
    assert (llama.gpu, llama.gpus_total, llama.rollout_n, llama.max_response_len) == (
        "H100", 16, 32, 4096)
    assert llama.timing_s == {"step": 92.8} and llama.response_len_mean == 1019.0
    assert not llama.complete and llama.missing


def _raw(**extra):
    return {"id": "x", "source_url": "https://example.org", "framework": "verl", **extra}


def test_loader_refuses_logprobs_with_its_parts() -> None:
    rec = {"id": "x", "source_url": "u", "framework": "nemo-rl",
           "timing": {"step": 10.0, "logprobs": 3.0, "ref": 1.0}}
    with pytest.raises(ScenarioError, match="logprobs"):
        parse_record(rec, "t.jsonl:1")


def test_loader_names_an_unknown_timing_key() -> None:
    with pytest.raises(ScenarioError, match=r"unknown timing key\(s\) genn"):
        parse_record(_raw(timing={"genn": 3.0}))


def test_loader_names_a_mistyped_field_and_repeated_ids(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="'gpus_total' should be int"):
        parse_record(_raw(gpus_total="16"))
    with pytest.raises(ScenarioError, match=r"timing\.step should be seconds"):
        parse_record(_raw(timing={"step": -1}))
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(_raw()) + "\n" + json.dumps(_raw()) + "\n")
    with pytest.raises(ScenarioError, match=r"runs\.jsonl:2: record id 'x' repeats the "
                       r"record at .*runs\.jsonl:1"):
        load_records(path)


# ---------------------------------------------------------------- translator
def test_verl_colocated_record_maps_its_fields_and_script(records) -> None:
    t = translate(records["verl-onestepoff-readme-7b-dapo-colocate-16xH20-fsdp2"])
    s = t.scenario
    assert s is not None and t.reason is None
    Scenario.model_validate(s)
    assert s["model"] == "qwen2.5-7b"
    assert s["pools"] == [{"name": "cluster", "gpu": "H20", "nodes": 2, "gpus_per_node": 8}]
    w = s["workload"]
    assert (w["prompts_per_step"], w["samples_per_prompt"]) == (512, 12)
    assert (w["max_response_len"], w["max_prompt_len"]) == (20480, 2048)
    assert s["policy"] == {"name": "sync", "placement": "colocated"}
    # the companion script: gen_tp=2, no KL (so no reference pass), 0.80 of GPU memory
    assert s["rollout"]["tp"] == 2 and s["rollout"]["gpu_memory_utilization"] == 0.8
    assert s["train"]["tp"] == 1  # FSDP: no tensor parallelism
    assert not s["train"]["ref_logprob"] and s["train"]["old_logprob"]
    assert any("dapo_7b_math_fsdp2_colocate.sh:53" in x for x in t.taken)
    assert "not stated" in t.lengths


def test_verl_one_step_off_record_splits_its_gpus(records) -> None:
    t = translate(records["verl-onestepoff-readme-7b-dapo-async-4gen12train-H20-megatron"])
    s = t.scenario
    assert s is not None
    Scenario.model_validate(s)
    assert s["policy"] == {"name": "one_off", "placement": "disaggregated"}
    assert (s["rollout"]["gpus"], s["train"]["gpus"]) == (4, 12)
    assert (s["train"]["tp"], s["train"]["pp"]) == (2, 2)


def test_nemo_rl_record_takes_the_table_layout_then_the_recipe(records) -> None:
    t = translate(records["nemorl-v0.5-qwen3-32b-grpo-1stepoff-64xH100"])
    s = t.scenario
    assert s is not None
    Scenario.model_validate(s)
    assert s["model"] == "qwen3-32b" and s["pools"][0]["nodes"] == 8
    assert (s["train"]["tp"], s["train"]["pp"], s["train"]["cp"]) == (4, 4, 1)
    assert s["rollout"]["tp"] == 4
    assert s["policy"] == {"name": "async", "placement": "disaggregated",
                           "asynchronous": {"alpha": 1}}
    assert (s["rollout"]["gpus"], s["train"]["gpus"]) == (32, 32)   # 4 generation nodes
    assert s["rollout"]["max_running_seqs"] == 1024                 # vLLM's H100 default
    # the recipe's force_on_policy_ratio needs T-GBS == G-GBS; the run states T-GBS 512 of
    # 2048 samples, so it computed the previous-policy log-probs (nemo_rl grpo.py:700-706)
    assert s["train"]["ref_logprob"] and s["train"]["old_logprob"]
    # the stated mean response length is the capped lognormal's mean
    rl, cap = s["workload"]["response_len"], s["workload"]["max_response_len"]
    assert capped_lognormal_mean(rl["median"], rl["sigma"], cap) == pytest.approx(3252, rel=1e-3)


def test_verl_fsdp2_colocated_knobs_land_in_the_framework_fields(records) -> None:
    t = translate(records["verl-onestepoff-readme-7b-dapo-colocate-16xH20-fsdp2"])
    s = t.scenario
    assert s is not None
    Scenario.model_validate(s)
    tr = s["train"]
    assert tr["backend"] == "fsdp2" and tr["cp"] == 4          # Ulysses sp_size=4
    assert tr["ppo_mini_batch_size"] == 32 and tr["ppo_epochs"] == 1
    assert tr["max_token_len_per_gpu"] == 20480                  # use_dynamic_bsz
    assert tr["log_prob_max_token_len_per_gpu"] == 30720
    assert "micro_batch_size_per_gpu" not in tr                  # dynamic, not fixed
    assert tr["param_offload"] and tr["optimizer_offload"] and tr["recompute"] == "full"
    r = s["rollout"]
    # eager: the README's runs used veRL's default of their day (503ea75f5)
    assert (r["cuda_graphs"], r["dtype"], r["kv_cache_dtype"], r["ep"]) == (
        False, "bf16", "auto", 1)
    assert s["weight_sync"] == {"scheme": "bucketed", "bucket_size": 2048 * 2**20,
                                "engine_sleep_level": 2, "framework": "verl"}
    assert "weight_sync.framework = verl (default (not stated))" in t.taken
    assert any("fsdp2_colocate.sh:50,83" in x for x in t.taken)
    assert not any("use_dynamic_bsz" in d for d in t.dropped)


def test_verl_megatron_one_step_off_knobs_land_in_the_framework_fields(records) -> None:
    t = translate(records["verl-onestepoff-readme-7b-dapo-async-4gen12train-H20-megatron"])
    s = t.scenario
    assert s is not None
    Scenario.model_validate(s)
    tr = s["train"]
    assert tr["backend"] == "megatron"
    # dynamic batching is commented out in the Megatron script: fixed micro-batches
    assert tr["micro_batch_size_per_gpu"] == 2 and tr["log_prob_micro_batch_size_per_gpu"] == 4
    assert "max_token_len_per_gpu" not in tr
    assert not (tr["param_offload"] or tr["optimizer_offload"] or tr["grad_offload"])
    assert tr["recompute"] == "none" and not tr["recompute_activations"]  # mcore default
    # one NCCL broadcast per tensor; no bucket, no sleep level (disaggregated)
    assert s["weight_sync"] == {"scheme": "broadcast", "framework": "verl"}
    # Megatron's THD packing is the backend's own behaviour: nothing dropped for it
    assert not any("use_remove_padding" in d for d in t.dropped)


def test_nemo_rl_recipe_batching_lands_in_the_framework_fields(records) -> None:
    t = translate(records["nemorl-v0.6-qwen3-30b3a-grpo-1stepoff-32xH100"])
    s = t.scenario
    assert s is not None
    Scenario.model_validate(s)
    tr = s["train"]
    assert tr["backend"] == "megatron" and tr["ep"] == 8 and tr["pp"] == 2
    assert tr["ppo_mini_batch_size"] == 16       # T-GBS 512 / 32 generations: 4 steps
    assert tr["old_logprob"]                     # force_on_policy impossible at 4 steps
    # sequence packing: max_total_sequence_length 4096 x train_micro_batch_size 1 (and x
    # logprob_batch_size 2) tokens per micro-batch
    assert tr["max_token_len_per_gpu"] == 4096
    assert tr["log_prob_max_token_len_per_gpu"] == 8192
    assert tr["recompute"] == "none"
    assert s["rollout"]["cuda_graphs"] and s["rollout"]["dtype"] == "bf16"
    # disaggregated refit: NCCL packed broadcast, buckets of min(0.02 x GPU memory, 5 GiB)
    ws = s["weight_sync"]
    assert ws["scheme"] == "bucketed"
    assert ws["bucket_size"] == int(0.02 * 85520809984)
    assert ws["framework"] == "nemo_rl"          # Megatron-Bridge full export on every rank
    assert not any("optimizer steps" in d for d in t.dropped)


def test_nemo_rl_colocated_refit_is_the_nemo_rl_framework_with_its_measured_buffer(
        records) -> None:
    s = translate(records["nemorl-v0.6-deepseekv3-grpo-on-256xH100"]).scenario
    assert s is not None
    Scenario.model_validate(s)
    # CUDA IPC to the engine on the rank's own GPU, buffers of 0.3 x free memory / 2: the
    # one measured figure, DeepSeek-V3 on H100, 1.65 GiB (nemo_rl/models/policy/utils.py)
    assert s["weight_sync"] == {"scheme": "bucketed", "framework": "nemo_rl",
                                "bucket_size": int(1.65 * 2**30), "engine_sleep_level": 1}


def test_verls_default_rollout_tp_does_not_exceed_a_one_gpu_record(records) -> None:
    """veRL's default TP 2 cannot have run on one GPU: the record of one A100 runs TP 1,
    and the scenario says why."""
    t = translate(records["verlgaudi-bench-qwen2.5-0.5b-grpo-gsm8k-1xA100-80GB-step2"])
    assert t.scenario is not None and t.scenario["rollout"]["tp"] == 1
    assert any(x.startswith("rollout.tp = 1 (the record's 1 GPU") for x in t.taken)
    two = translate(records["verl-onestepoff-readme-7b-dapo-colocate-16xH20-fsdp2"])
    assert two.scenario is not None and two.scenario["rollout"]["tp"] == 2


def _verl_record(**fields) -> dict:
    rec = {"id": "x", "source_url": "https://example.org", "framework": "verl",
           "gpu": "H100", "gpus_total": 8, "model": "Qwen/Qwen2.5-7B-Instruct",
           "algorithm": "grpo", "train_batch_size": 64, "rollout_n": 4,
           "max_prompt_len": 512, "max_response_len": 1024, "response_len_mean": 400,
           "timing": {"step": 60.0}}
    rec.update(fields)
    return rec


@pytest.mark.parametrize(("version", "release"), [
    ("0.5.0", (0, 5, 0)), ("v0.5.0 (commit 8fdc4d3)", (0, 5, 0)),
    ("release/v0.7.1", (0, 7, 1)), ("0.9.0.dev0", (0, 9, 0)),
    ("verl 0.6.1 (patched)", (0, 6, 1)), ("0.3", (0, 3, 0)),
    ("commit f252da3", None), (None, None)])
def test_verl_release_is_read_from_the_stated_version(version, release) -> None:
    rec = parse_record(_verl_record(framework_version=version), "t.jsonl:1")
    assert verl_release(rec) == release


def test_verl_defaults_follow_the_release_the_record_states() -> None:
    """enforce_eager was true up to v0.5.x, use_remove_padding false up to v0.6.x,
    max_num_seqs 1024 up to v0.7.0; a record without a release takes veRL's defaults at the
    pinned commit (graphs, packed, 256)."""
    def defaults(version):
        rec = parse_record(_verl_record(framework_version=version), "t.jsonl:1")
        return tuple(verl_release_default(rec, name)[0].value
                     for name in ("enforce_eager", "use_remove_padding", "max_num_seqs"))
    assert defaults("0.4.1") == (True, False, 1024)
    assert defaults("0.5.0") == (True, False, 1024)
    assert defaults("0.6.0") == (False, False, 1024)
    assert defaults("0.7.0") == (False, True, 1024)
    assert defaults("0.9.0.dev0") == (False, True, 256)
    assert defaults(None) == (False, True, 256)


def test_verl_fsdp_without_remove_padding_pads_every_sample(records) -> None:
    """veRL's FSDP workers without use_remove_padding run [n, max_prompt + max_response]:
    stated (the play-verl PPO log) or the release's default (verl-gaudi's 0.5.0)."""
    ppo = translate(records["playverl-log-qwen2.5-0.5b-ppo-gsm8k-8xH100"]).scenario
    assert ppo is not None and ppo["train"]["pad_to"] == 512 + 256
    assert ppo["rollout"]["cuda_graphs"] is False  # the log's enforce_eager: True
    gaudi = translate(records["verlgaudi-bench-qwen2.5-0.5b-grpo-gsm8k-1xA100-80GB-step2"])
    assert gaudi.scenario is not None and gaudi.scenario["train"]["pad_to"] == 512 + 1024
    assert gaudi.scenario["train"]["backend"] == "fsdp"  # veRL's actor strategy default
    assert any("v0.5.0" in x and "use_remove_padding" in x for x in gaudi.taken)
    packed = translate(records["playverl-log-qwen2.5-0.5b-grpo-gsm8k-8xH100"]).scenario
    assert packed is not None and "pad_to" not in packed["train"]
    # Megatron packs whatever the flag: no pads
    mega = translate(parse_record(_verl_record(
        framework_version="0.4.1", train_backend="megatron"), "t.jsonl:1")).scenario
    assert mega is not None and "pad_to" not in mega["train"]
    assert mega["rollout"]["cuda_graphs"] is False  # 0.4.1 ran vLLM eager by default


def test_one_step_off_readme_runs_ran_vllm_eager(records) -> None:
    """The README's runs predate veRL's switch to CUDA graphs (#2956, 2025-08-08)."""
    for key in ("colocate-16xH20-fsdp2", "async-4gen12train-H20-megatron"):
        t = translate(records[f"verl-onestepoff-readme-7b-dapo-{key}"])
        assert t.scenario is not None and t.scenario["rollout"]["cuda_graphs"] is False
        assert any("503ea75f5" in x for x in t.taken)
        assert t.scenario["rollout"]["max_running_seqs"] == 1024  # veRL's of that day
    fa = translate(records["verl-fullyasync-doc-7b-dapo-colocate-32xH20"]).scenario
    assert fa is not None and fa["rollout"]["cuda_graphs"] is True


def test_a_record_without_phases_gets_no_remainder_and_one_with_gets_it() -> None:
    assert with_remainder({}, 100.0, 80.0) == {}
    pairs = with_remainder({"gen": (60.0, 40.0), "update_actor": (30.0, 25.0)}, 100.0, 70.0)
    assert pairs["remainder"] == (10.0, 5.0)
    row = Row("a", "verl", "m", "8 x H100", "sync", measured_step_s=100.0,
              simulated_step_s=70.0, phases=pairs, side="validate")
    text = "\n".join(where_error_lines([row]))
    assert "| remainder | 1 (0 / 1) | - / -50% / -50% | 50% | `a` -5 |" in text
    assert "| gen | 1 (0 / 1) | - / -33% / -33% | 33% | `a` -20 |" in text


def test_garbled_table_layout_falls_back_to_the_recipe(records) -> None:
    rec = records["nemorl-v0.5-llama31_8b-grpo-on-16xH100"]
    assert "training" not in note_facts(rec.notes)   # "[1,1,1,1,1,2,n/a] (sic)"
    s = translate(rec).scenario
    assert s is not None and s["train"]["pp"] == 2   # grpo-llama3.1-8b-instruct-2n8g.yaml:25


def test_a_model_outside_the_catalogue_is_not_simulated(records) -> None:
    t = translate(records["verl-issue7203-qwen3.5-9b-vl-geo3k-8xH800-sglang-megatron"])
    assert t.scenario is None and t.reason is not None
    assert t.reason.startswith("model missing: Qwen/Qwen3.5-9B")
    raw = dict(records["nemorl-v0.5-qwen3-32b-grpo-on-32xH100"].raw, model="Acme/Unknown-7B")
    t = translate(parse_record(raw))
    assert t.scenario is None and "model missing: Acme/Unknown-7B" in (t.reason or "")


def test_gpu_names_resolve_only_when_unambiguous() -> None:
    assert resolve_gpu("H100") == "H100" and resolve_gpu("A100 80GB") == "A100"
    for text in ("Ascend 910B (NPU, not NVIDIA)", "GH200 (aarch64)",
                 "H100 (reported as '140G', i.e. likely H200-class memory)", None):
        assert resolve_gpu(text) is None


def test_capped_lognormal_mean_closed_form() -> None:
    median, sigma = 400.0, 0.9
    assert capped_lognormal_mean(median, sigma, 1e12) == pytest.approx(
        median * math.exp(sigma**2 / 2))
    draws = np.minimum(np.random.default_rng(0).lognormal(math.log(median), sigma, 400_000),
                       1000.0)
    assert capped_lognormal_mean(median, sigma, 1000.0) == pytest.approx(draws.mean(), rel=3e-3)
    assert median_for_capped_mean(capped_lognormal_mean(median, sigma, 1000.0), sigma,
                                  1000.0) == pytest.approx(median, rel=1e-6)
    with pytest.raises(ValueError, match="cannot be reached under a cap"):
        median_for_capped_mean(1000.0, sigma, 1000.0)


# ---------------------------------------------------------------- table arithmetic
def test_relative_error_and_median() -> None:
    assert rel_error(125.0, 100.0) == pytest.approx(0.25)
    assert rel_error(80.0, 100.0) == pytest.approx(-0.2)
    assert median_abs([0.1, -0.3, 0.2]) == pytest.approx(0.2)
    assert median_abs([0.1, -0.3]) == pytest.approx(0.2)
    assert median_abs([]) is None
    with pytest.raises(ValueError, match="measured time must be > 0"):
        rel_error(1.0, 0.0)


def test_phase_pairs_compare_only_like_with_like() -> None:
    timing = {"gen": 100.0, "old_log_prob": 30.0, "ref": 20.0, "update_actor": 50.0,
              "step": 200.0}
    sim = {"gen": 90.0, "ref": 40.0, "train": 60.0, "weight_sync": 1.0, "switch": 2.0}
    both = phase_pairs(timing, sim, {"old_log_prob": True, "ref": True}, "sync")
    assert both == {"gen": (100.0, 90.0), "logprob": (50.0, 40.0),
                    "update_actor": (50.0, 60.0)}
    # no reference pass in the run: the log-prob phase is the old-policy pass alone;
    # under one_off the record's gen is not rlsim's gen
    off = phase_pairs(timing, sim, {"old_log_prob": True, "ref": False}, "one_off")
    assert off == {"logprob": (30.0, 40.0), "update_actor": (50.0, 60.0)}
    # a pass rlsim computes but the record does not time: nothing to compare
    assert "logprob" not in phase_pairs({"old_log_prob": 3.0}, sim,
                                        {"old_log_prob": True, "ref": True}, "sync")
    # the log-prob passes timed together (NeMo-RL) compare with rlsim's ref phase
    together = {"gen": 100.0, "logprobs": 45.0, "step": 200.0}
    assert phase_pairs(together, sim, {"old_log_prob": True, "ref": True}, "sync")[
        "logprob"] == (45.0, 40.0)
    # veRL's hybrid engine up to v0.7.0 times its weight sync, wake-up and sleep in gen
    held = phase_pairs(timing, sim, {"old_log_prob": True, "ref": True}, "sync",
                       gen_with_sync=True)
    assert held["gen"] == (100.0, 90.0 + 1.0 + 2.0)


def test_verl_gen_holds_the_weight_sync_up_to_v070(records) -> None:
    """Up to v0.7.0 veRL's gen timer wraps the rollout sharding manager (weight sync,
    wake-up, sleep); #5031 timed update_weights apart."""
    assert translate(records["playverl-log-qwen2.5-0.5b-grpo-gsm8k-8xH100"]).gen_with_sync
    assert translate(records["verl-onestepoff-readme-7b-dapo-colocate-16xH20-fsdp2"]
                     ).gen_with_sync
    # disaggregated: the engines have their own GPUs, gen is not compared with the sync
    assert not translate(records["verl-onestepoff-readme-7b-dapo-async-4gen12train-H20-fsdp2"]
                         ).gen_with_sync
    late = translate(parse_record(_verl_record(framework_version="0.9.0.dev0"), "t.jsonl:1"))
    assert late.scenario is not None and not late.gen_with_sync
    timed = translate(parse_record(_verl_record(
        framework_version="0.5.0", timing={"step": 60.0, "gen": 20.0, "update_weights": 2.0}),
        "t.jsonl:1"))
    assert timed.scenario is not None and not timed.gen_with_sync
    old = translate(parse_record(_verl_record(framework_version="0.5.0"), "t.jsonl:1"))
    assert old.gen_with_sync


def test_summary_medians_split_by_framework_and_model_kind() -> None:
    rows = [
        Row("a", "nemo-rl", "m", "8 x H100", "sync", moe=False, measured_step_s=100.0,
            simulated_step_s=110.0),
        Row("b", "nemo-rl", "m", "8 x H100", "sync", moe=True, measured_step_s=100.0,
            simulated_step_s=70.0),
        Row("c", "verl", "m", "8 x H100", "sync", moe=False, measured_step_s=100.0,
            simulated_step_s=120.0),
        Row("d", "verl", "m", "?", "-", measured_step_s=50.0, reason="model missing: x"),
    ]
    text = "\n".join(summary_lines(rows))
    assert "| all records | 20% over 3 |" in text
    assert "| nemo-rl only | 20% over 2 |" in text
    assert "| verl only | 20% over 1 |" in text
    assert "| dense models | 15% over 2 |" in text
    assert "| MoE models | 30% over 1 |" in text
    assert "3 of 4 records simulated." in text


def test_a_scenario_that_does_not_load_is_not_shipped(records) -> None:
    """make real-runs writes scenarios/real-runs/ files only for translations that pass the
    scenario schema (every shipped scenario loads); the report keeps the refusal."""
    import dataclasses

    from calibration.realruns.__main__ import _loads

    good = translate(records["playverl-log-qwen2.5-0.5b-grpo-gsm8k-8xH100"])
    assert good.scenario is not None and _loads(good)
    # A layout the schema refuses (pipeline parallelism under FSDP2) is not shipped.
    bad = dataclasses.replace(good, scenario={
        **good.scenario, "train": {**good.scenario["train"], "backend": "fsdp2", "pp": 2}})
    assert not _loads(bad)
    # DTensor TP under FSDP2 loads now (it was the refused example before 2026-12-05).
    assert _loads(translate(records["nemorl-v0.3-blog-llama31-70b-base-dtensor-64xH100"]))
    # refused later (at preparation: the weights do not fit) still ships with its refusal
    assert _loads(translate(records["nemorl-v0.6-deepseekv3-grpo-1stepoff-512xH100-fp8"]))


def test_nemo_rl_refit_compares_with_the_switch_to_rollout(records) -> None:
    """NeMo-RL's refit holds the state's copy to host and the weight transfer, not the copy
    back: its update_weights is compared with weight_sync + the switch to rollout."""
    from calibration.realruns.harness import simulate_row

    t = translate(records["nemorl-v0.3-blog-llama31-8b-instruct-megatron-8xH100"])
    assert t.refit_one_way and not t.gen_with_sync
    row = simulate_row(t)
    _, sim = row.phases["update_weights"]
    both = row.sim_phase_s["weight_sync"] + row.sim_phase_s["switch"]
    assert row.sim_phase_s["weight_sync"] < sim < both
    # the step is unchanged: what update_weights leaves out goes to the remainder
    assert sum(s for _, s in row.phases.values()) == pytest.approx(row.simulated_step_s)
    assert not translate(records["nemorl-v0.4-qwen3-32b-grpo-on-32xH100"]).refit_one_way
