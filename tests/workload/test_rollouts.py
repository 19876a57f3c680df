"""Recorded rollouts: exact per-step replay, multi-turn trajectories, caps, and bad files
and mismatched scenarios giving a ScenarioError (exit 2) that names the field."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rlsim import cli
from rlsim.config.errors import ScenarioError
from rlsim.config.workload import WorkloadConfig
from rlsim.workload import Turn, Workload, load_rollouts
from tests.scenarios import tiny, write
from tests.workload.helpers import make_workload, rollouts_line, turn, write_rollouts

MULTI = [turn(9, 0.004, 6), turn(5)]  # the format's own example sample


def _file(tmp_path: Path) -> Path:
    """2 steps x 2 groups x 3 samples; mixes multi- and single-turn samples."""
    return write_rollouts(tmp_path / "r.jsonl", [
        rollouts_line(0, 17, [MULTI, [turn(12)], [turn(3, 0.5), turn(4, 0.25, 2), turn(7)]],
                      rewards=[0.0002, None, 0.1]),
        rollouts_line(0, 30, [[turn(20)]] * 3),
        "",  # blank lines are skipped
        rollouts_line(1, 5000, [[turn(100_000)], [turn(1, 1.0, 50_000), turn(2)], [turn(3)]],
                      rewards=[1.0, 2.0, 3.0]),
        rollouts_line(1, 8, [[turn(4)], [turn(5)], [turn(6)], [turn(7)]]),
    ])


def _replay(tmp_path: Path, **fields: Any) -> Workload:
    fields.setdefault("trace", {"path": "r.jsonl", "format": "rollouts"})
    fields.setdefault("prompts_per_step", 2)
    fields.setdefault("samples_per_prompt", 3)
    fields.setdefault("max_response_len", 4000)
    return make_workload(base_dir=tmp_path, response_len=None, **fields)


def test_replay_returns_recorded_lengths_per_step(tmp_path: Path) -> None:
    _file(tmp_path)
    w = _replay(tmp_path)
    assert w.recorded_steps == 2 and w.trace_prompts == 4
    g0, g1 = w.batch(0)
    assert (g0.prompt_id, g0.prompt_tokens, g1.prompt_id, g1.prompt_tokens) == (0, 17, 1, 30)
    # a multi-turn sample's response is its trajectory after the prompt: responses + obs
    assert g0.response_tokens == (9 + 6 + 5, 12, 3 + 0 + 4 + 2 + 7)
    assert g0.turns == (
        (Turn(9, 0.004, 6), Turn(5, 0.0, 0)),
        (Turn(12),),
        (Turn(3, 0.5, 0), Turn(4, 0.25, 2), Turn(7)),
    )
    assert g0.reward_s == (0.0002, None, 0.1)
    assert g1.response_tokens == (20, 20, 20) and g1.reward_s is None
    assert g1.turns == ((Turn(20),),) * 3
    assert g0.max_response_tokens == 4000 and g0.capped == 0
    # step 1: the prompt is capped at max_prompt_len, every turn at max_response_len
    h0, h1 = w.batch(1)
    assert h0.prompt_id == 1_000_000 and h0.prompt_tokens == 2048
    assert h0.response_tokens == (4000, 1 + 50_000 + 2, 3)
    assert h0.capped == 1 and h0.reward_s == (1.0, 2.0, 3.0)
    assert h1.response_tokens == (4, 5, 6)  # the first samples_per_prompt samples
    assert w.batch(1) == w.batch(1)  # replay is a pure function of the step


def test_file_order_and_reader(tmp_path: Path) -> None:
    steps = load_rollouts(_file(tmp_path))
    assert [[g.prompt_tokens for g in groups] for groups in steps] == [[17, 30], [5000, 8]]
    assert [g.line for g in steps[1]] == [4, 5]
    assert steps[0][0].samples[1].reward_s is None


def test_scale_response_applies_to_every_turn(tmp_path: Path) -> None:
    _file(tmp_path)
    w = _replay(tmp_path, trace={"path": "r.jsonl", "format": "rollouts",
                                 "scale_response": 2.0})
    g0 = w.batch(0)[0]
    assert g0.turns is not None and g0.turns[0] == (Turn(18, 0.004, 6), Turn(10))
    assert g0.response_tokens[0] == 18 + 6 + 10


def test_prefix_and_over_provisioning(tmp_path: Path) -> None:
    _file(tmp_path)
    w = _replay(tmp_path)
    full = w.batch(1, 2, 3)[0]
    (part,) = w.batch(1, 1, 2)  # fewer prompts and samples: a prefix of both
    assert full.turns is not None
    assert (part.prompt_id, part.prompt_tokens) == (full.prompt_id, full.prompt_tokens)
    assert part.response_tokens == full.response_tokens[:2]
    assert part.turns == full.turns[:2] and part.reward_s == (1.0, 2.0)
    assert w.batch(0, 0) == []
    with pytest.raises(ValueError, match="n_prompts=3 exceeds the 2 prompt groups recorded"):
        w.batch(0, n_prompts=3)
    with pytest.raises(ValueError, match="n_samples=4 exceeds the 3 samples"):
        w.batch(0, n_samples=4)
    assert len(w.batch(1, 1, 3)[0].response_tokens) == 3  # step 1 group 1 has 4: fine alone
    with pytest.raises(ValueError, match="step 2 is not recorded"):
        w.batch(2)


def test_rewards_kept_only_where_the_used_samples_have_them(tmp_path: Path) -> None:
    _file(tmp_path)
    w = _replay(tmp_path, samples_per_prompt=1)
    assert w.batch(0)[0].reward_s == (0.0002,)
    assert w.batch(0, n_samples=2)[0].reward_s == (0.0002, None)
    assert w.batch(0)[1].reward_s is None


def test_longest_sequence(tmp_path: Path) -> None:
    _file(tmp_path)
    w = _replay(tmp_path)
    assert w.longest_sequence_tokens(1) == max(17 + 3 + 4 + 2 + 7, 30 + 20)
    assert w.longest_sequence_tokens(2) == 2048 + 50_003
    assert make_workload().longest_sequence_tokens(2) is None
    assert make_workload().recorded_steps is None


def _one_group(step: int = 0, samples: list[list[dict[str, Any]]] | None = None) -> str:
    return rollouts_line(step, 10, samples or [MULTI, [turn(3)]])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", r"r\.jsonl:1: empty rollouts file"),
        (_one_group() + "\n{not json\n", r"r\.jsonl:2: malformed JSON"),
        ("[1, 2]\n", r"r\.jsonl:1: expected a JSON object"),
        (rollouts_line(0, 10, [[turn(3, 1.0)]]), r":1: `samples\[0\]\.turns\[0\]` is the "
         "sample's last turn but has env_s=1.0"),
        (rollouts_line(0, 10, [[turn(3), turn(4, obs=2)]]),
         r"`samples\[0\]\.turns\[1\]` is the sample's last turn"),
        (rollouts_line(0, 10, [[turn(0)]]), r"`samples\[0\]\.turns\[0\]\.response_tokens` "
         "must be an integer >= 1"),
        (rollouts_line(0, 10, [[turn(3, -1.0), turn(2)]]), r"env_s` must be a number of "
         "seconds >= 0"),
        (rollouts_line(0, 10, [[turn(3, 1.0, -4), turn(2)]]), r"obs_tokens` must be an "
         "integer >= 0"),
        (rollouts_line(0, 10, [[{"response_tokens": 3, "env": 1.0}]]), r"unknown key\(s\) env"),
        (rollouts_line(0, 10, [[turn(3)]], rewards=[-1.0]), r"reward_s` must be a number"),
        ('{"step": 0, "prompt_tokens": 10, "samples": []}', r"`samples` must be a non-empty"),
        ('{"step": 0, "prompt_tokens": 10, "samples": [{"turns": []}]}', r"turns` must be a "
         "non-empty list"),
        (rollouts_line(0, 0, [[turn(3)]]), r"`prompt_tokens` must be an integer >= 1"),
        (rollouts_line(1, 10, [[turn(3)]]), r":1: step 1 where step 0 was expected"),
        (_one_group(0) + "\n" + _one_group(2), r":2: step 2 where step 0 or 1 was expected"),
        (_one_group(0) + "\n" + _one_group(1) + "\n" + _one_group(0),
         r":3: step 0 where step 1 or 2 was expected"),
    ],
)
def test_bad_files_raise_naming_file_and_line(tmp_path: Path, content: str, message: str,
                                              ) -> None:
    (tmp_path / "r.jsonl").write_text(content)
    with pytest.raises(ValueError, match=message):
        load_rollouts(tmp_path / "r.jsonl")
    with pytest.raises(ScenarioError, match=message) as info:
        _replay(tmp_path, prompts_per_step=1, samples_per_prompt=1)
    assert info.value.field == "workload.trace.path"


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.jsonl"):
        _replay(tmp_path, trace={"path": "nope.jsonl", "format": "rollouts"})
    with pytest.raises(ScenarioError, match="is a directory"):
        _replay(tmp_path, trace={"path": ".", "format": "rollouts"})


def test_scenario_mismatches_name_the_field(tmp_path: Path) -> None:
    _file(tmp_path)
    with pytest.raises(ScenarioError, match=r"step 0 records 2 prompt groups \(lines 1-2\) "
                       "but prompts_per_step is 3") as info:
        _replay(tmp_path, prompts_per_step=3)
    assert info.value.field == "workload.prompts_per_step"
    with pytest.raises(ScenarioError, match=r"r\.jsonl:1: group has 3 samples but "
                       "samples_per_prompt is 4") as info:
        _replay(tmp_path, samples_per_prompt=4)
    assert info.value.field == "workload.samples_per_prompt"


def test_rollouts_are_never_shuffled() -> None:
    with pytest.raises(ValidationError, match="drop `order`"):
        WorkloadConfig.model_validate({
            "prompts_per_step": 1, "samples_per_prompt": 1, "max_response_len": 10,
            "trace": {"path": "r.jsonl", "format": "rollouts", "order": "shuffle"}})


# ---------------------------------------------------------------- command line: exit 2
def _run_cli(args: list[str], monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["rlsim", *args])
    with pytest.raises(SystemExit) as exc:
        cli.main()
        raise SystemExit(0)
    return int(exc.value.code or 0), capsys.readouterr().err


RECORDED = [_one_group(0), _one_group(0), _one_group(1), _one_group(1)]  # 2 steps x 2 x 2
CLI_CASES = {
    "last_turn_with_env": (
        [rollouts_line(0, 10, [[turn(3, 0.5)]] * 2)] * 2, {}, "workload.trace.path"),
    "malformed_json": ([*RECORDED[:2], "{oops"], {}, "workload.trace.path"),
    "more_steps_than_recorded": (RECORDED, {"steps": 3}, "steps"),
    "prompts_per_step_mismatch": (RECORDED, {"workload__prompts_per_step": 3},
                                  "workload.prompts_per_step"),
    "samples_per_prompt_too_high": (RECORDED, {"workload__samples_per_prompt": 3},
                                    "workload.samples_per_prompt"),
    "shuffled_rollouts": (RECORDED, {"workload__trace": {"path": "r.jsonl",
                                                         "format": "rollouts",
                                                         "order": "shuffle"}},
                          "workload.trace"),
    "context_exceeds_kv": (
        [rollouts_line(k, 10, [[turn(2000, 1.0, 30_000_000), turn(5)]] * 2)
         for k in (0, 0, 1, 1)], {}, "rollout.tp"),
}


@pytest.mark.parametrize("name", sorted(CLI_CASES))
def test_bad_rollouts_exit_2_naming_the_field(name: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    lines, changes, field = CLI_CASES[name]
    write_rollouts(tmp_path / "r.jsonl", lines)
    fields: dict[str, Any] = {
        "workload__trace": {"path": "r.jsonl", "format": "rollouts"},
        "workload__response_len": None, "workload__prompts_per_step": 2,
        "workload__samples_per_prompt": 2, "steps": 2}
    path = write(tmp_path, tiny(**{**fields, **changes}))
    code, err = _run_cli(["run", str(path), "--out", str(tmp_path / "out")], monkeypatch,
                         capsys)
    assert code == 2, err
    lines_out = err.strip().splitlines()
    assert len(lines_out) == 1 and "Traceback" not in err, err
    assert f"{field}:" in lines_out[0], lines_out[0]
    assert not (tmp_path / "out" / "summary.json").exists()


def test_good_rollouts_run_from_the_command_line(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    write_rollouts(tmp_path / "r.jsonl", RECORDED)
    data = tiny(workload__trace={"path": "r.jsonl", "format": "rollouts"},
                workload__response_len=None, workload__prompts_per_step=2,
                workload__samples_per_prompt=2, steps=2)
    code, err = _run_cli(["run", str(write(tmp_path, data)), "--out", str(tmp_path / "out")],
                         monkeypatch, capsys)
    assert code == 0, err
    assert (tmp_path / "out" / "summary.json").exists()
