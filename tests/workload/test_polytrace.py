"""PolyTrace replay: the real traces, ordering, truncation, and clear errors on bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlsim.workload import Workload, load_polytrace, summary
from rlsim.workload.stats import trace_groups
from tests.workload.helpers import DAPO, DEEPCODER, POLYTRACE, REPO_ROOT, make_workload

DEEPCODER_CAP = 16000  # the job's max response length (REFERENCES.md: 16k)


def _replay(**fields: Any) -> Workload:
    fields.setdefault("trace", {"path": "polytrace/deepcoder-14b-16k"})
    fields.setdefault("max_response_len", DEEPCODER_CAP)
    fields.setdefault("prompts_per_step", 16)
    return make_workload(response_len=None, **fields)


def _line(input_tokens: int = 100, output: list[Any] | None = None, **extra: Any) -> str:
    record = {"input": input_tokens, "output": output or [1, 2, 3, 4], "n_sampling": 4,
              "validate": False, **extra}
    return json.dumps(record)


def test_load_deepcoder() -> None:
    trace = load_polytrace(DEEPCODER)
    assert len(trace) == 80  # 5 step files x 16 prompts, no validate lines
    assert trace[0] == (336, (11070, 3986, 2662, 4787, 4419, 3898, 4429, 9192))
    assert all(len(r) == 8 for _, r in trace)


def test_deepcoder_cap_fraction() -> None:
    trace = load_polytrace(DEEPCODER)
    lengths = np.array([n for _, r in trace for n in r])
    measured = float(np.mean(lengths >= DEEPCODER_CAP))
    assert measured == pytest.approx(0.15, abs=0.01)  # REFERENCES.md: 15% hit the cap
    w = _replay()
    groups = [g for step in range(5) for g in w.batch(step)]  # the whole trace once
    assert summary(groups)["cap_hit_fraction"] == pytest.approx(measured, abs=1e-12)
    assert sum(g.capped for g in groups) == int(np.sum(lengths >= DEEPCODER_CAP))


def test_dapo_statistics() -> None:
    trace = load_polytrace(DAPO)
    s = summary(trace_groups(DAPO, max(max(r) for _, r in trace)))
    assert s["n_groups"] == 576
    assert s["response_max_over_p50"] == pytest.approx(22, rel=0.05)  # REFERENCES.md
    assert s["intra_group_cv_mean"] == pytest.approx(0.6, abs=0.01)  # REFERENCES.md


def test_sequential_order_and_cycling() -> None:
    trace = load_polytrace(DEEPCODER)
    w = _replay(prompts_per_step=30)
    for step in range(4):
        rows = [(step * 30 + i) % len(trace) for i in range(30)]
        got = [(g.prompt_tokens, g.response_tokens) for g in w.batch(step)]
        assert got == [trace[r] for r in rows]
    assert w.trace_prompts == 80
    # Over-provisioned prompts of a step are the next step's first prompts.
    assert [g.response_tokens for g in w.batch(0, 40)[30:]] == [
        g.response_tokens for g in w.batch(1, 10)
    ]


def test_cycling_repeats_with_new_ids() -> None:
    w = _replay()
    first, again = w.batch(0), w.batch(5)
    assert [g.response_tokens for g in first] == [g.response_tokens for g in again]
    assert {g.prompt_id for g in first}.isdisjoint(g.prompt_id for g in again)


def test_single_file_path() -> None:
    w = _replay(trace={"path": "polytrace/deepcoder-14b-16k/packed_lengths_step_3.jsonl"})
    assert w.trace_prompts == 16
    expected = load_polytrace(DEEPCODER / "packed_lengths_step_3.jsonl")
    assert [(g.prompt_tokens, g.response_tokens) for g in w.batch(0)] == expected


def test_absolute_path_ignores_base_dir(tmp_path: Path) -> None:
    w = make_workload(base_dir=tmp_path, response_len=None, max_response_len=DEEPCODER_CAP,
                      trace={"path": str(DEEPCODER)})
    assert w.trace_prompts == 80


def test_shuffle_draws_from_pooled_trace() -> None:
    trace = set(load_polytrace(DAPO))
    w = _replay(trace={"path": "polytrace/dapo-qwen2.5-32b", "order": "shuffle"},
                prompts_per_step=512)
    groups = w.batch(0)
    assert all((g.prompt_tokens, g.response_tokens) in trace for g in groups)
    picked = {(g.prompt_tokens, g.response_tokens) for g in groups}
    assert 250 < len(picked) < 512  # with replacement: some repeats, many distinct
    assert w.batch(0) == groups and w.batch(1) != groups


def test_truncation_to_samples_per_prompt() -> None:
    trace = load_polytrace(DEEPCODER)
    w = _replay(samples_per_prompt=4)
    assert [g.response_tokens for g in w.batch(0)] == [r[:4] for _, r in trace[:16]]
    assert len(w.batch(0, n_samples=8)[0].response_tokens) == 8
    with pytest.raises(ValueError, match="n_samples=9 exceeds the 8 responses"):
        w.batch(0, n_samples=9)


def test_scale_response_and_cap() -> None:
    trace = load_polytrace(DEEPCODER)
    w = _replay(trace={"path": "polytrace/deepcoder-14b-16k", "scale_response": 0.5},
                max_response_len=4000, max_prompt_len=400)
    g = w.batch(0)[1]
    prompt, raw = trace[1]
    assert g.prompt_tokens == min(prompt, 400)
    assert g.response_tokens == tuple(min(round(n * 0.5), 4000) for n in raw)


def test_samples_per_prompt_above_trace_is_error_naming_line(tmp_path: Path) -> None:
    path = tmp_path / "packed_lengths_step_0.jsonl"
    path.write_text(_line(output=[5] * 8) + "\n" + _line(output=[5] * 6) + "\n")
    with pytest.raises(ValueError, match=r"packed_lengths_step_0\.jsonl:2: output has 6"):
        make_workload(base_dir=tmp_path, response_len=None, trace={"path": path.name},
                      samples_per_prompt=8)


def test_validate_lines_skipped(tmp_path: Path) -> None:
    path = tmp_path / "packed_lengths_step_0.jsonl"
    path.write_text("\n".join([
        _line(10, [1, 1]), _line(99, [9, 9], validate=True), _line(20, [2, 2]), ""
    ]))
    assert load_polytrace(path) == [(10, (1, 1)), (20, (2, 2))]


def test_steps_read_in_numeric_order(tmp_path: Path) -> None:
    for step in (10, 2, 1):
        (tmp_path / f"packed_lengths_step_{step}.jsonl").write_text(_line(step, [step]))
    (tmp_path / "reward_timings_step_0.jsonl").write_text("not a packed-lengths file")
    assert [p for p, _ in load_polytrace(tmp_path)] == [1, 2, 10]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", r"packed_lengths_step_0\.jsonl: line 1: empty trace file"),
        ("  \n\n", r"packed_lengths_step_0\.jsonl: line 1: empty trace file"),
        (_line() + "\n{not json\n", r"packed_lengths_step_0\.jsonl:2: malformed JSON"),
        ("[1, 2]\n", r"packed_lengths_step_0\.jsonl:1: expected a JSON object"),
        (_line(input_tokens=-1), r":1: `input` must hold non-negative integer"),
        ('{"input": 5}', r":1: `output` must be a non-empty list"),
        (_line(output=[1, "x"]), r":1: `output` must hold non-negative integer"),
        (_line(validate=True), r"no training prompts"),
    ],
)
def test_bad_files_raise_naming_file_and_line(
    tmp_path: Path, content: str, message: str
) -> None:
    (tmp_path / "packed_lengths_step_0.jsonl").write_text(content)
    with pytest.raises(ValueError, match=message):
        load_polytrace(tmp_path)


def test_missing_paths(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-trace"):
        load_polytrace(tmp_path / "no-such-trace")
    with pytest.raises(FileNotFoundError, match=r"packed_lengths_step_\*\.jsonl"):
        load_polytrace(tmp_path)  # a directory without step files
    with pytest.raises(FileNotFoundError, match="missing-dir"):
        make_workload(base_dir=tmp_path, response_len=None, trace={"path": "missing-dir"})


@pytest.mark.parametrize("name", ["deepcoder-14b-16k", "dapo-qwen2.5-32b"])
def test_shipped_traces_match_test_copies(name: str) -> None:
    shipped = REPO_ROOT / "traces" / "polytrace" / name
    assert load_polytrace(shipped) == load_polytrace(POLYTRACE / name)
