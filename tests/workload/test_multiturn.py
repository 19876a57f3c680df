"""PolyTrace multi-turn traces (Search-R1): the mapping of turns, tool calls and appended
tokens onto trajectories, group assembly, replay order, and bad files naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import lookup_gpu
from rlsim.config.loading import load_scenario
from rlsim.workload import Turn
from rlsim.workload.multiturn import read_multiturn
from tests.scenarios import tiny, write
from tests.workload.helpers import REPO_ROOT, make_workload

SEARCH_R1 = REPO_ROOT / "traces" / "polytrace" / "search-r1-qwen2.5-7b"


def _sample(group: int, turns: list[tuple[int, int, int]], calls: list[tuple[int, float]],
            step: int = 0, prompt: int = 10, **extra: Any) -> str:
    """One PolyTrace multi-turn line; turns as (completion, prompt_len, total_len_after)."""
    return json.dumps({
        "step": step, "prompt_group_id": group, "prompt_len": prompt,
        "turns": [{"turn": i, "completion_tokens": c, "generation_prompt_len": p,
                   "total_len_after": a} for i, (c, p, a) in enumerate(turns)],
        "tool_calls": [{"turn": t, "latency_s": s} for t, s in calls], **extra})


def _write(tmp_path: Path, lines: list[str], name: str = "multiturn_workload_step_0.jsonl"
           ) -> Path:
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    return tmp_path


def test_shipped_trace_maps_the_first_sample_exactly() -> None:
    trace = read_multiturn(SEARCH_R1, min_samples=8)
    # step 0 holds 256 complete groups of 8; step 5 was cut off: its 39 groups hold 1-3
    assert len(trace.groups) == 256 and trace.skipped_groups == 39
    first = trace.groups[0]
    assert first.prompt_tokens == 317 and len(first.samples) == 8
    (t0, t1) = first.samples[0].turns
    # turn 0: 40 tokens, then one search call of 0.074 s; the next prompt starts 1044
    # tokens after the turn's end (1401 - 357: the results plus the template's framing)
    assert t0.response_tokens == 40 and t0.obs_tokens == 1401 - 357
    assert t0.env_s == pytest.approx(0.07405877113342285)
    assert t1 == Turn(131)


def test_calls_of_a_turn_add_up_and_calls_after_the_last_turn_are_dropped(
        tmp_path: Path) -> None:
    _write(tmp_path, [
        _sample(0, [(5, 10, 15), (7, 20, 27), (3, 30, 33)], [(0, 0.5), (0, 0.25), (2, 9.0)]),
        _sample(0, [(4, 10, 14)], []),
        _sample(1, [(4, 10, 14)], [], step=1),  # alone in its group: skipped at min 2
        json.dumps({"step": 0, "prompt_group_id": 0, "validate": True}),  # evaluation line
    ])
    trace = read_multiturn(tmp_path, min_samples=2)
    assert trace.skipped_groups == 1 and len(trace.groups) == 1
    a, b = trace.groups[0].samples
    # turn 1 had no call: a 0 s step that still appends what the template adds
    assert a.turns == (Turn(5, 0.75, 5), Turn(7, 0.0, 3), Turn(3))
    assert b.turns == (Turn(4),)


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "malformed JSON"),
    (_sample(0, [(5, 10, 15), (3, 9, 12)], []), "below `turns[0].total_len_after`"),
    (_sample(0, [(5, 10, 15)], [(3, 1.0)]), "`tool_calls[0].turn` is 3"),
    (_sample(0, [(5, 10, 15), (1, 20, 21)], [(0, -1.0)]), "`tool_calls[0].latency_s`"),
    (_sample(0, [(-1, 10, 15)], []), "`turns[0].completion_tokens`"),
    (json.dumps({"step": 0, "prompt_group_id": 0, "prompt_len": 5, "turns": []}),
     "`turns` must be a non-empty list"),
])
def test_bad_lines_name_file_line_and_key(tmp_path: Path, line: str, message: str) -> None:
    _write(tmp_path, [_sample(0, [(5, 10, 15)], []), line])
    with pytest.raises(ValueError, match=r"multiturn_workload_step_0\.jsonl:2: ") as err:
        read_multiturn(tmp_path)
    assert message in str(err.value)


def test_a_directory_without_step_files_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"multiturn_workload_step_\*\.jsonl"):
        read_multiturn(tmp_path)


def _pool(tmp_path: Path, **fields: Any) -> Any:
    fields.setdefault("trace", {"path": str(SEARCH_R1), "format": "polytrace_multiturn"})
    fields.setdefault("prompts_per_step", 100)
    fields.setdefault("max_response_len", 3000)
    fields.setdefault("max_prompt_len", 7096)
    return make_workload(base_dir=tmp_path, response_len=None, **fields)


def test_sequential_replay_cycles_groups_and_keeps_turns(tmp_path: Path) -> None:
    w = _pool(tmp_path)
    assert w.trace_prompts == 256 and w.max_samples_per_prompt == 8
    step2 = w.batch(2)
    # step 2 starts at group 200: groups 200..255, then 0..43 (cycling)
    trace = read_multiturn(SEARCH_R1, min_samples=8)
    assert step2[56].prompt_tokens == trace.groups[0].prompt_tokens
    assert step2[56].turns is not None and step2[56].turns[0][1] == Turn(131)
    assert step2[56].prompt_id == 2_000_056
    for g in step2:
        assert g.turns is not None and len(g.turns) == 8
        # a sample's response is its whole trajectory after the prompt
        assert g.response_tokens == tuple(sum(t.response_tokens + t.obs_tokens for t in ts)
                                          for ts in g.turns)


def test_shuffle_is_deterministic_and_scale_applies_per_turn(tmp_path: Path) -> None:
    trace = {"path": str(SEARCH_R1), "format": "polytrace_multiturn", "order": "shuffle",
             "scale_response": 2.0}
    a = _pool(tmp_path, trace=trace).batch(3, 50, 4)
    assert a == _pool(tmp_path, trace=trace).batch(3, 50, 4)
    base = {(g.prompt_tokens, g.turns[0][0].obs_tokens): g for g in _pool(tmp_path).batch(0, 256)
            if g.turns is not None}
    g = a[0]
    assert g.turns is not None
    ref = base[(g.prompt_tokens, g.turns[0][0].obs_tokens)].turns
    assert ref is not None
    assert [t.response_tokens for t in g.turns[0]] == \
        [min(2 * t.response_tokens, 3000) for t in ref[0]]


def test_more_samples_than_the_trace_has_names_samples_per_prompt(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        _pool(tmp_path, samples_per_prompt=9)
    assert err.value.field == "workload.samples_per_prompt"
    assert "at most 8" in str(err.value)


def _scenario(tmp_path: Path, **changes: Any) -> Path:
    data = tiny(**changes)
    data["workload"] = {
        "prompts_per_step": 16, "samples_per_prompt": 8, "max_response_len": 3000,
        "max_prompt_len": 7096,
        "trace": {"path": str(SEARCH_R1), "format": "polytrace_multiturn"}}
    data["steps"] = 2
    return write(tmp_path, data)


@pytest.mark.parametrize("policy", ["sync", "async"])
def test_replayed_trajectories_train_every_sample(tmp_path: Path, policy: str) -> None:
    path = _scenario(tmp_path)
    placement = "colocated" if policy == "sync" else "disaggregated"
    scenario, base = load_scenario(path, [f"policy.name={policy}",
                                          f"policy.placement={placement}",
                                          "output.detail=request"])
    result = simulate(scenario, base)
    spans = result.recorder.spans
    assert [s.attrs["samples"] for s in spans if s.name == "step"] == [128, 128]
    # every environment step of the 2 x 16 groups' trajectories ran (async also starts
    # the next batches while step 1 trains)
    trace = read_multiturn(SEARCH_R1, min_samples=8)
    expected = sum(len(sample.turns) - 1 for g in trace.groups[:32] for sample in g.samples)
    ran = sum(1 for s in spans if s.name == "env_step")
    assert ran == expected if policy == "sync" else ran > expected


def test_a_context_longer_than_the_kv_cache_names_rollout_tp(tmp_path: Path) -> None:
    # a 4.7k-token KV cache (23.4% of 80e9 bytes; the H100 has 81559 MiB): each turn's caps
    # fit (1k + 1k), the longest recorded trajectory (its observations are not capped) does not
    path = _scenario(tmp_path, model="qwen2.5-7b")
    util = 0.234 * 80e9 / lookup_gpu("H100").hbm
    scenario, base = load_scenario(path, [f"rollout.gpu_memory_utilization={util}",
                                          "workload.max_prompt_len=1000",
                                          "workload.max_response_len=1000"])
    with pytest.raises(ScenarioError, match="recorded multi-turn sample reaches") as err:
        simulate(scenario, base)
    assert err.value.field == "rollout.tp"
