"""The corpus plumbing of calibration/realruns: the folder loader, a record's inline
`config`, frameworks without cited tables, `rlsim validate --real-runs` output and the
generated table of docs/validation.md."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from calibration.realruns.cli import run_real_runs
from calibration.realruns.docsblock import BEGIN, DOCS_PATH, END, block_lines, replace_block
from calibration.realruns.lengths import capped_lognormal_mean
from calibration.realruns.records import CORPUS_DIR, load_records, parse_record
from calibration.realruns.translate import translate
from rlsim.config.errors import ScenarioError
from rlsim.config.scenario import Scenario


def _entry(value: Any, line: int) -> dict[str, Any]:
    return {"value": value, "source": f"https://example.org/openrlhf/train.sh:{line}",
            "quote": f"--setting {value}"}


def _record(id_: str = "r1", **extra: Any) -> dict[str, Any]:
    """A complete record of a framework rlsim has no tables for."""
    rec: dict[str, Any] = {
        "id": id_, "source_url": "https://example.org/openrlhf/issue/1",
        "framework": "OpenRLHF", "gpu": "H100", "gpus_total": 16,
        "model": "Qwen/Qwen2.5-7B-Instruct", "train_batch_size": 64, "rollout_n": 8,
        "max_prompt_len": 1024, "max_response_len": 4096, "response_len_mean": 1200.0,
        "rollout_tp": 2, "train_backend": "fsdp2", "timing": {"step": 300.0},
    }
    rec.update(extra)
    return rec


def _write(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------- loader
def test_loader_reads_every_jsonl_file_of_the_folder_in_name_order(tmp_path: Path) -> None:
    _write(tmp_path / "b.jsonl", _record("b1"), _record("b2"))
    _write(tmp_path / "a.jsonl", _record("a1"))
    (tmp_path / "notes.txt").write_text("not a corpus file\n")
    records = load_records(tmp_path)
    assert [r.id for r in records] == ["a1", "b1", "b2"]
    assert records[2].where.endswith("b.jsonl:2")


def test_a_duplicate_id_across_files_names_both_places(tmp_path: Path) -> None:
    _write(tmp_path / "a.jsonl", _record("x"), _record("y"))
    _write(tmp_path / "b.jsonl", _record("z"), _record("y"))
    with pytest.raises(ScenarioError) as err:
        load_records(tmp_path)
    assert err.value.field.endswith("b.jsonl:2")
    assert "record id 'y' repeats the record at" in err.value.message
    assert err.value.message.rstrip().split(" at ")[1].startswith(str(tmp_path / "a.jsonl:2"))


def test_a_bad_json_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(_record("ok")) + "\n\n" + '{"id": "cut", "framework": \n')
    with pytest.raises(ScenarioError, match="malformed JSON") as err:
        load_records(tmp_path)
    assert err.value.field == f"{path}:3"
    path.write_text("[1, 2]\n")
    with pytest.raises(ScenarioError, match="a JSON object per line") as err:
        load_records(path)
    assert err.value.field == f"{path}:1"


def test_an_empty_or_missing_corpus_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"no \*\.jsonl file"):
        load_records(tmp_path)
    with pytest.raises(ScenarioError, match="no such corpus"):
        load_records(tmp_path / "absent")


def test_the_project_corpus_loads_with_unique_ids() -> None:
    records = load_records()
    assert len(records) >= 40
    assert len({r.id for r in records}) == len(records)
    assert all(r.source_url.startswith("http") for r in records)
    assert (CORPUS_DIR / "README.md").exists()


@pytest.mark.parametrize(("config", "message"), [
    ({"max_num_seq": _entry(1, 1)}, "unknown config name 'max_num_seq'"),
    ({"max_num_seqs": {"value": 64, "source": "x"}}, r"config.max_num_seqs.quote is required"),
    ({"max_num_seqs": {"value": 64, "source": "x", "quote": "q", "qoute": "q"}},
     r"unknown key\(s\) qoute"),
    ({"placement": _entry("hybrid", 1)}, "should be \"colocated\" or \"disaggregated\""),
    ({"gpu_memory_utilization": _entry(1.5, 1)}, r"should be a fraction in \(0, 1\]"),
    ({"param_offload": _entry("yes", 1)}, "should be true or false"),
    ({"max_num_seqs": 64}, r"should be an object \{\"value\""),
    ({"max_prompt_len": _entry(2048, 1)}, r"contradicts the record's max_prompt_len \(1024\)"),
])
def test_a_bad_config_entry_names_the_record_and_key(config: dict[str, Any],
                                                     message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as err:
        parse_record(_record(config=config), "c.jsonl:7")
    assert err.value.field == "c.jsonl:7 (r1)"


# ---------------------------------------------------------------- translation
def test_inline_config_translates_to_the_scenario_fields_with_their_sources() -> None:
    config = {
        "placement": _entry("disaggregated", 10), "policy": _entry("async", 11),
        "async_alpha": _entry(2, 12), "rollout_gpus": _entry(8, 13),
        "max_num_seqs": _entry(512, 14), "max_num_batched_tokens": _entry(16384, 15),
        "gpu_memory_utilization": _entry(0.7, 16), "enforce_eager": _entry(True, 17),
        "train_cp": _entry(2, 18), "recompute": _entry("selective", 19),
        "ppo_mini_batch_size": _entry(16, 20), "ppo_epochs": _entry(2, 21),
        "max_token_len_per_gpu": _entry(12288, 22), "param_offload": _entry(True, 23),
        "use_kl": _entry(False, 24), "old_logprob": _entry(False, 25),
        "prompt_len_mean": _entry(300, 26), "response_len_median": _entry(900, 27),
        "response_len_sigma": _entry(0.6, 28),
    }
    t = translate(parse_record(_record(config=config)))
    s = t.scenario
    assert s is not None and t.reason is None, t.reason
    Scenario.model_validate(s)
    assert s["model"] == "qwen2.5-7b"
    assert s["pools"] == [{"name": "cluster", "gpu": "H100", "nodes": 2, "gpus_per_node": 8}]
    assert s["policy"] == {"name": "async", "placement": "disaggregated",
                           "asynchronous": {"alpha": 2}}
    r, tr, w = s["rollout"], s["train"], s["workload"]
    assert (r["gpus"], tr["gpus"]) == (8, 8)
    assert (r["tp"], r["max_running_seqs"], r["max_batched_tokens"]) == (2, 512, 16384)
    assert r["gpu_memory_utilization"] == 0.7 and r["cuda_graphs"] is False
    assert (tr["backend"], tr["tp"], tr["cp"]) == ("fsdp2", 1, 2)
    assert tr["recompute"] == "selective" and tr["recompute_activations"]
    assert (tr["ppo_mini_batch_size"], tr["ppo_epochs"], tr["max_token_len_per_gpu"]) == (
        16, 2, 12288)
    assert tr["param_offload"] and not tr["optimizer_offload"]
    assert tr["ref_logprob"] is False and tr["old_logprob"] is False
    assert w["response_len"] == {"dist": "lognormal", "median": 900.0, "sigma": 0.6}
    assert (w["max_prompt_len"], w["max_response_len"]) == (1024, 4096)
    pl = w["prompt_len"]
    assert capped_lognormal_mean(pl["median"], pl["sigma"], 1024) == pytest.approx(300, 1e-4)
    # every config entry is listed with its source; what nothing states is rlsim's default
    for key, line in (("rollout.max_running_seqs = 512", 14), ("policy.asynchronous.alpha = 2",
                                                               12)):
        assert f"{key} (record config: https://example.org/openrlhf/train.sh:{line})" in t.taken
    assert "weight_sync.scheme = bucketed (default (not stated))" in t.taken
    assert "rollout.dtype = bf16 (default (not stated))" in t.taken
    assert not any(x.startswith("train.ppo_epochs") and "default" in x for x in t.taken)
    assert "median 900 as stated, sigma 0.600 as stated" in t.lengths


def test_config_comes_before_the_framework_tables() -> None:
    raw = next(r.raw for r in load_records(CORPUS_DIR / "runs.jsonl")
               if r.id == "verl-onestepoff-readme-7b-dapo-colocate-16xH20-fsdp2")
    t = translate(parse_record({**raw, "config": {"gpu_memory_utilization": _entry(0.6, 3),
                                                  "max_token_len_per_gpu": _entry(9000, 4)}}))
    assert t.scenario is not None
    assert t.scenario["rollout"]["gpu_memory_utilization"] == 0.6   # script says 0.80
    assert t.scenario["train"]["max_token_len_per_gpu"] == 9000      # script says 20480
    assert not any("fsdp2_colocate.sh:98" in x for x in t.taken)
    assert any("record config: https://example.org/openrlhf/train.sh:3" in x for x in t.taken)


def test_a_record_without_response_lengths_is_not_simulated_and_says_so() -> None:
    t = translate(parse_record(_record(response_len_mean=None)))
    assert t.scenario is None
    assert t.reason == ("response length not stated (neither response_len_mean nor "
                        "config.response_len_median)")
    # the veRL one-step-off README runs keep the DAPO trace's lengths (first harness)
    keep = next(r for r in load_records(CORPUS_DIR / "runs.jsonl")
                if r.id == "verl-onestepoff-readme-7b-dapo-async-4gen12train-H20-fsdp2")
    kept = translate(keep)
    assert kept.scenario is not None and "DAPO trace" in kept.lengths


def test_an_off_policy_mode_in_words_needs_config_policy() -> None:
    t = translate(parse_record(_record(mode="fully async, disaggregated")))
    assert t.scenario is None and "state config.policy and config.placement" in (t.reason or "")
    t = translate(parse_record(_record(
        mode="fully async, disaggregated",
        config={"policy": _entry("async", 1), "placement": _entry("disaggregated", 2)})))
    assert t.scenario is None and t.reason == ("disaggregated run: the rollout/train GPU "
                                               "split is not stated")


def test_gpus_that_are_not_whole_nodes_need_the_node_count() -> None:
    assert "not whole nodes" in (translate(parse_record(_record(gpus_total=12))).reason or "")
    s = translate(parse_record(_record(gpus_total=12, nodes=3))).scenario
    assert s is not None and s["pools"][0]["nodes"] == 3 and s["pools"][0]["gpus_per_node"] == 4


# ---------------------------------------------------------------- validate --real-runs
def test_run_real_runs_json_shape_on_a_tiny_corpus(tmp_path: Path) -> None:
    small = _record("tiny", gpus_total=8, model="Qwen/Qwen2.5-0.5B-Instruct",
                    train_batch_size=8, rollout_n=4, max_response_len=512,
                    response_len_mean=200.0, rollout_tp=1,
                    timing={"gen": 4.0, "update_actor": 2.0, "step": 8.0})
    unknown = {"id": "no-gpu", "source_url": "https://example.org/2", "framework": "slime",
               "timing": {"step": 5.0}}
    _write(tmp_path / "a.jsonl", small, unknown)
    out = io.StringIO()
    assert run_real_runs(True, corpus=tmp_path, out=out) == 0
    doc = json.loads(out.getvalue())
    assert set(doc) == {"schema_version", "records", "median_abs_error",
                        "median_abs_error_by_side"}
    assert next(iter(doc)) == "schema_version"
    ran, skipped = doc["records"]
    assert set(ran) == {"id", "side", "step_s", "sim_step_s", "error", "phases"}
    assert ran["side"] is None  # a corpus of its own: not in validation/real_runs/split.json
    assert ran["id"] == "tiny" and ran["step_s"] == 8.0 and ran["sim_step_s"] > 0
    assert ran["error"] == pytest.approx((ran["sim_step_s"] - 8.0) / 8.0, abs=1e-3)
    assert set(ran["phases"]) == {"gen", "update_actor", "remainder"}
    assert set(ran["phases"]["gen"]) == {"measured_s", "sim_s", "error"}
    assert set(skipped) == {"id", "side", "step_s", "sim_step_s", "error", "phases", "reason"}
    assert skipped["sim_step_s"] is None and skipped["error"] is None
    assert "GPU type not stated" in skipped["reason"]
    assert doc["median_abs_error"] == pytest.approx(abs(ran["error"]), abs=1e-4)

    text = io.StringIO()
    assert run_real_runs(False, corpus=tmp_path, out=text) == 0
    lines = text.getvalue().splitlines()
    assert any(line.startswith("tiny ") and "gen 4.0/" in line for line in lines)
    assert any(line.startswith("no-gpu") and "not simulated: GPU type" in line
               for line in lines)
    total = next(i for i, line in enumerate(lines) if line.startswith("median |step error|:"))
    assert "over 1 simulated of 2" in lines[total]
    assert [line.split(" side")[0].strip() for line in lines[total + 1:]] == [
        "calibrate", "validate"]  # both empty here: the tiny corpus is not in the split


# ---------------------------------------------------------------- docs/validation.md
def test_the_docs_block_is_replaced_between_its_markers_only() -> None:
    text = f"intro\n{BEGIN}\nold row\n{END}\nafter\n"
    new = replace_block(text, ["| a |", "| b |"])
    assert new == f"intro\n{BEGIN}\n| a |\n| b |\n{END}\nafter\n"
    assert block_lines(new) == ["| a |", "| b |"]
    with pytest.raises(ValueError, match="markers"):
        replace_block("no markers", ["x"])


def test_docs_validation_lists_every_corpus_record() -> None:
    """The generated table in docs/validation.md has a row per record of the corpus: a
    record added since the last `make real-runs` fails here until it is rerun."""
    rows = "\n".join(block_lines(DOCS_PATH.read_text(encoding="utf-8")))
    missing = [r.id for r in load_records() if f"| `{r.id}` |" not in rows]
    assert not missing, f"rerun `make real-runs`: docs/validation.md lacks {missing}"


# ---------------------------------------------------------------- PPO
def test_ppo_runs_a_critic_and_its_passes_join_the_phases() -> None:
    from calibration.realruns.table import phase_pairs

    s = translate(parse_record(_record(algorithm="PPO"))).scenario
    assert s is not None and s["train"]["critic"] is True
    s = translate(parse_record(_record(algorithm="grpo"))).scenario
    assert s is not None and s["train"]["critic"] is False
    timing = {"old_log_prob": 10.0, "ref": 5.0, "values": 4.0, "update_actor": 20.0,
              "update_critic": 15.0, "step": 100.0}
    sim = {"ref": 18.0, "train": 30.0}
    ppo = {"old_log_prob": True, "ref": True, "values": True, "update_critic": True}
    assert phase_pairs(timing, sim, ppo, "sync") == {"logprob": (19.0, 18.0),
                                                     "update_actor": (35.0, 30.0)}
    # a PPO record that does not time the critic's update: update_actor is not compared
    no_critic_time = {k: v for k, v in timing.items() if k != "update_critic"}
    assert "update_actor" not in phase_pairs(no_critic_time, sim, ppo, "sync")
    # without a critic the critic's timings are not added in
    grpo = {"old_log_prob": True, "ref": True}
    assert phase_pairs(timing, sim, grpo, "sync")["update_actor"] == (20.0, 30.0)


def _corpus(id_: str) -> Any:
    return next(r for r in load_records(CORPUS_DIR) if r.id == id_)


def test_fully_async_rows_take_their_companion_scripts() -> None:
    # fully_async.md's 7B table: the 16:16 row runs dapo_7b_math_fsdp2_16_16.sh (rollout
    # TP 4, Ulysses 4, no actor offload, the rollout's log-probs: no old-log-prob pass)
    a = translate(_corpus("verl-fullyasync-doc-7b-dapo-async-16r16t-H20"))
    assert a.scenario is not None, a.reason
    tr, ro = a.scenario["train"], a.scenario["rollout"]
    assert (ro["tp"], ro["gpus"], tr["gpus"]) == (4, 16, 16)
    assert (tr["cp"], tr["old_logprob"], tr["ref_logprob"]) == (4, False, False)
    assert tr["max_token_len_per_gpu"] == (2048 + 28 * 1024) * 2
    assert tr["param_offload"] is False and tr["optimizer_offload"] is False
    assert any("use_rollout_log_probs" in x for x in a.taken)
    # the colocated rows name no script: the same settings, offload as colocation has it
    c = translate(_corpus("verl-fullyasync-doc-7b-dapo-colocate-128xH20"))
    assert c.scenario is not None and c.scenario["train"]["param_offload"] is True
    assert c.scenario["train"]["old_logprob"] is True and "DAPO trace" in c.lengths
    assert any("estimate" in x for x in c.taken)
    # a 128-GPU ablation row states no split, the 30B rows run other scripts: unmapped
    for id_ in ("verl-fullyasync-doc-7b-dapo-async-stale0.1-partial-128xH20",
                "verl-fullyasync-doc-7b-dapo-validate-colocate-16xH20"):
        assert translate(_corpus(id_)).scenario is None
