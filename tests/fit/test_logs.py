"""rlsim.fit.logs: reading veRL / W&B / ROLL logs into per-step records, the kept() rule,
summary(), and one-line errors naming FILE:LINE for bad logs."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from rlsim.config.errors import ScenarioError
from rlsim.fit.logs import PHASES, MeasuredRun, StepRecord, read_log, summary

DATA = Path(__file__).resolve().parents[1] / "data" / "fit"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _by_step(run: MeasuredRun) -> dict[int, StepRecord]:
    return {r.step: r for r in run.steps}


def _error(path: Path) -> ScenarioError:
    with pytest.raises(ScenarioError) as e:
        read_log(path)
    return e.value


def _line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text().split("\n"), start=1):
        if needle in line:
            return i
    raise AssertionError(needle)


# ---- veRL console -----------------------------------------------------------------------

def test_verl_console_values():
    path = DATA / "verl_console_gsm8k.log"
    run = read_log(path)
    assert (run.format, run.framework, run.source) == ("verl-console", "verl", str(path))
    steps = _by_step(run)
    assert sorted(steps) == [0, 1, 2, 3, 4, 5, 6]
    s1 = steps[1]
    assert s1.phases_s == {"gen": 118.2, "generate_sequences": 115.7, "reward": 2.1,
                           "old_log_prob": 21.7, "ref": 20.9, "adv": 0.41,
                           "update_actor": 61.5, "update_weights": 9.8, "step": 235.31}
    assert s1.response_len == {"mean": 402.5, "max": 1024.0, "min": 61.0, "clip_ratio": 0.004}
    assert s1.prompt_len == {"mean": 104.3, "max": 212.0, "min": 61.0, "clip_ratio": 0.0}
    assert s1.mfu == 0.231          # printed as np.float64(0.231)
    assert s1.throughput == 682.138
    assert "generate_sequences" not in s1.other_s   # the engines' share of gen: a phase
    assert s1.line == _line_of(path, "step:1 - ")
    # step:0 holds only the validation before training: no phase, no step time.
    assert steps[0].phases_s == {} and not steps[0].validation
    assert steps[5].phases_s["testing"] == 41.7 and steps[5].validation


def test_kept_rule_drops_warmup_validation_and_untimed_steps():
    run = read_log(DATA / "verl_console_gsm8k.log")
    assert [r.step for r in run.kept()] == [2, 3, 4, 6]
    assert {r.step: why for r, why in run.dropped()} == {
        0: "no step time logged",
        1: "warm-up (first timed step of the run)",
        5: "validation ran in this step",
    }
    assert all(r.warmup == (r.step == 1) for r in run.steps)


def test_old_key_spellings():
    run = read_log(DATA / "verl_console_old_keys.log")
    s2 = _by_step(run)[2]
    assert set(s2.phases_s) == {"gen", "ref", "values", "adv", "update_critic", "update_actor",
                                "step"}
    assert s2.phases_s["values"] == 12.0 and s2.phases_s["update_critic"] == 31.0
    assert s2.mfu == pytest.approx(0.13)         # `mfu/actor`, before `perf/mfu/actor`
    assert _by_step(run)[4].validation           # `timing/testing`
    assert [r.step for r in run.kept()] == [2, 3]


def test_timing_and_timing_s_spellings_read_the_same(tmp_path):
    body = ("step:{n} - {p}gen:50.5 - {p}old_log_prob:7.25 - {p}ref:7.0 - {p}adv:0.5 - "
            "{p}update_actor:20.0 - {p}testing:0.0 - {p}step:85.25\n")
    new = read_log(_write(tmp_path, "new.log", "".join(body.format(n=n, p="timing_s/")
                                                        for n in (1, 2))))
    old = read_log(_write(tmp_path, "old.log", "".join(body.format(n=n, p="timing/")
                                                        for n in (1, 2))))
    assert [r.phases_s for r in new.steps] == [r.phases_s for r in old.steps]
    assert new.steps[1].phases_s["gen"] == 50.5
    assert not new.steps[1].validation           # testing 0.0 is "no validation ran"


def test_one_step_off_weight_sync_maps_to_update_weights():
    run = read_log(DATA / "verl_one_step_off.log")
    s2 = _by_step(run)[2]
    assert s2.phases_s["update_weights"] == 6.6   # timing_s/sync_rollout_weights
    assert s2.phases_s["gen"] == 5.0               # the wait, not the background generation
    assert s2.other_s["generate_async"] == 211.0
    assert s2.throughput == 1851.0


def test_fully_async_two_lines_per_step_merge():
    path = DATA / "verl_fully_async.log"
    run = read_log(path)
    assert [r.step for r in run.steps] == [1, 2, 3, 4]
    s3 = _by_step(run)[3]
    assert s3.phases_s["update_weights"] == 9.0   # timing_s/param_sync, from the 2nd line
    assert s3.phases_s["step"] == 172.0
    assert s3.other_s["wait_last_valid"] == 0.02
    assert s3.line == _line_of(path, "step:3 - fully_async")
    assert any("parameter version" in n for n in run.notes)


# ---- W&B exports and veRL's file logger ---------------------------------------------------

@pytest.mark.parametrize("name, fmt", [("wandb_history.csv", "wandb-csv"),
                                       ("wandb_history.jsonl", "wandb-json")])
def test_wandb_exports_match_the_console_log(name, fmt):
    console = _by_step(read_log(DATA / "verl_console_gsm8k.log"))
    run = read_log(DATA / name)
    assert run.format == fmt and run.framework == "verl"
    for r in run.steps:
        c = console[r.step]
        # the CSV export keeps fewer columns than the console prints: no generate_sequences
        expected = {k: v for k, v in c.phases_s.items()
                    if k in r.phases_s or k != "generate_sequences"}
        assert r.phases_s == pytest.approx(expected)
        assert r.response_len == pytest.approx(c.response_len)
        assert r.prompt_len.get("mean") == c.prompt_len.get("mean")
        assert r.throughput == c.throughput
        assert r.validation == c.validation
    assert [r.step for r in run.kept()] == [2, 3, 4, 6]


def test_wandb_nan_and_empty_cells_mean_not_logged():
    jsonl = _by_step(read_log(DATA / "wandb_history.jsonl"))
    assert jsonl[3].mfu is None and jsonl[2].mfu is not None      # NaN in the export
    csv_run = read_log(DATA / "wandb_history.csv")
    s0 = _by_step(csv_run)[0]
    assert s0.phases_s == {} and s0.line == 2     # the validation row, all timings empty


def test_json_array_rows_keep_their_line():
    path = DATA / "wandb_rows.json"
    run = read_log(path)
    assert run.format == "wandb-json"
    lines = path.read_text().split("\n")
    for r in run.steps:
        assert lines[r.line - 1].strip() == "{"
        assert lines[r.line].strip() == f'"step": {r.step},'
    assert _by_step(run)[2].phases_s["update_actor"] == 44.3


def test_verl_file_logger_rows():
    run = read_log(DATA / "verl_file_logger.jsonl")
    assert run.format == "wandb-json"
    s2 = _by_step(run)[2]
    assert s2.phases_s["gen"] == 96.4 and s2.mfu == pytest.approx(0.233)
    assert s2.line == 2


def test_wandb_panel_csv(tmp_path):
    text = ('"Step","run-7 - timing_s/step","run-7 - timing_s/step__MIN",'
            '"run-7 - timing_s/step__MAX"\n1,300.5,300.5,300.5\n2,250.0,,\n3,251.5,251.5,251.5\n')
    run = read_log(_write(tmp_path, "panel.csv", text))
    assert [(r.step, r.phases_s) for r in run.steps] == [
        (1, {"step": 300.5}), (2, {"step": 250.0}), (3, {"step": 251.5})]
    two = text.replace('"run-7 - timing_s/step__MAX"', '"run-8 - timing_s/step"')
    err = _error(_write(tmp_path, "two.csv", two))
    assert err.field == str(tmp_path / "two.csv") and "several runs" in err.message


# ---- ROLL ----------------------------------------------------------------------------------

def _roll_metrics(path: Path) -> dict[int, dict]:
    out = {}
    for line in path.read_text().split("\n"):
        if "metrics_tag: " in line:
            obj = json.loads(line.split("metrics_tag: ", 1)[1])
            out[obj["step"]] = obj["metrics"]
    return out


def test_roll_rlvr_step_total_is_read_one_step_late():
    path = DATA / "roll_rlvr.log"
    run = read_log(path)
    logged = _roll_metrics(path)
    assert (run.format, run.framework) == ("roll", "roll")
    steps = _by_step(run)
    for n in (0, 1, 2, 3):
        assert steps[n].phases_s["step"] == logged[n + 1]["time/step_total"]
    assert "step" not in steps[4].phases_s      # its total would be on a step-5 line
    s1, m1 = steps[1], logged[1]
    assert s1.phases_s["gen"] == m1["time/step_generate"]
    assert s1.phases_s["ref"] == m1["time/ref_log_probs_values"]
    assert s1.phases_s["old_log_prob"] == m1["time/old_log_probs"]
    assert s1.phases_s["update_actor"] == m1["time/step_train"]
    assert s1.phases_s["update_weights"] == m1["time/step_model_update"]
    adv = sum(v for k, v in m1.items() if "/time/" in k)     # per-domain timers, summed
    assert s1.phases_s["adv"] == pytest.approx(adv)
    assert s1.response_len == {"mean": m1["token/response_length/mean"],
                               "max": 8192.0, "min": 12.0}
    assert s1.throughput == m1["system/tps_gpu"]
    assert steps[0].validation and steps[0].warmup
    assert [r.step for r in run.kept()] == [1, 2, 3]
    assert any("one step late" in n for n in run.notes)


def test_roll_agentic():
    path = DATA / "roll_agentic.log"
    run = read_log(path)
    logged = _roll_metrics(path)
    steps = _by_step(run)
    for n, r in steps.items():
        assert r.phases_s["step"] == logged[n]["time/step_total"]   # its own total
    s2, m2 = steps[2], logged[2]
    assert s2.phases_s["gen"] == m2["time/step_rollout"]
    assert s2.phases_s["ref"] == m2["time/step_ref_log_probs_values_reward"]
    assert s2.phases_s["adv"] == pytest.approx(0.1 + 0.2 + 0.3 + 0.4)
    assert s2.response_len["mean"] == m2["tokens/response_length/mean"]  # not rollout/
    assert steps[0].phases_s["testing"] == 95.0
    assert [r.step for r in run.kept()] == [1, 2, 3]
    assert run.notes == []


# ---- real public excerpts ------------------------------------------------------------------

def test_real_verl_excerpt_issue_1208():
    path = DATA / "verl_issue1208_step2.log"
    assert "https://github.com/verl-project/verl/issues/1208" in path.read_text()
    run = read_log(path)
    (s,) = run.steps
    assert s.step == 2 and s.line == 4
    assert s.phases_s == {"gen": 74.020, "old_log_prob": 3.566, "ref": 3.420, "adv": 1.167,
                          "update_actor": 14.302, "step": 96.551}
    assert s.response_len == {"mean": 324.958, "max": 1024.0, "min": 9.0, "clip_ratio": 0.004}
    assert s.prompt_len == {"mean": 102.534, "max": 256.0, "min": 63.0, "clip_ratio": 0.0}
    assert s.mfu == 1.018
    # One step only: it is the log's first timed step, so nothing is left to fit.
    assert run.kept() == []
    with pytest.raises(ScenarioError) as e:
        summary(run)
    assert e.value.field == str(path) and "warm-up" in e.value.message


def test_real_verl_excerpt_issue_316_validation_step():
    run = read_log(DATA / "verl_issue316_step5.log")
    (s,) = run.steps
    assert s.step == 5 and s.mfu == 0.083 and s.validation
    assert s.phases_s["testing"] == 78.133 and "step" not in s.phases_s
    assert s.response_len["clip_ratio"] == 0.521


def test_real_wrapped_line_is_reported_truncated():
    path = DATA / "verl_issue1208_wrapped.log"
    err = _error(path)
    assert err.field == f"{path}:4"
    assert "response_length/cl" in err.message and "truncated" in err.message


# ---- run segments --------------------------------------------------------------------------

def test_resumed_run_starts_a_new_segment(tmp_path):
    line = "step:{n} - timing_s/gen:{g} - timing_s/step:{t}\n"
    text = "".join(line.format(n=n, g=10 + n, t=20 + n) for n in (1, 2, 3, 4))
    text += "Resuming from checkpoint global_step_2\n"
    text += "".join(line.format(n=n, g=30 + n, t=40 + n) for n in (3, 4, 5, 6))
    run = read_log(_write(tmp_path, "resumed.log", text))
    assert [(r.step, r.warmup) for r in run.steps] == [
        (1, True), (2, False), (3, False), (4, False),
        (3, True), (4, False), (5, False), (6, False)]
    assert [r.phases_s["step"] for r in run.kept()] == [22, 23, 24, 44, 45, 46]
    assert any("segments" in n for n in run.notes)


# ---- summary -------------------------------------------------------------------------------

def test_summary_medians_over_kept_steps():
    run = read_log(DATA / "verl_console_gsm8k.log")
    s = summary(run)
    kept = run.kept()
    assert s["steps_kept"] == [2, 3, 4, 6] and s["steps_logged"] == 7
    for phase in PHASES:
        values = [r.phases_s[phase] for r in kept if phase in r.phases_s]
        if values:
            assert s["phases_s"][phase] == statistics.median(values)
            assert s["counts"][phase] == len(values)
        else:
            assert phase not in s["phases_s"]
    assert s["response_len"]["mean"] == statistics.median(r.response_len["mean"] for r in kept)
    assert s["response_len"]["max"] == statistics.median(r.response_len["max"] for r in kept)
    assert s["throughput"] == statistics.median(r.throughput for r in kept)
    assert s["dropped"] == {0: "no step time logged",
                            1: "warm-up (first timed step of the run)",
                            5: "validation ran in this step"}
    json.dumps(s)   # the fitter writes it into its report


# ---- bad logs ------------------------------------------------------------------------------

GOOD = "step:1 - timing_s/gen:10.0 - timing_s/step:20.0\n"


@pytest.mark.parametrize("bad, what", [
    ("step:2 - timing_s/gen:10.0 - timing_s/upd", "middle of a field"),
    ("step:2 - timing_s/gen:10.0 - timing_s/update_actor:", "middle of a field"),
    ("step:2 - timing_s/gen:10.0 - garbage - timing_s/step:20.0", "without `key:value`"),
    ("step:2 - timing_s/gen:abc - timing_s/step:20.0", "`timing_s/gen` is 'abc'"),
    ("step:2 - response_length/mean:np.float64(x) - timing_s/step:20.0", "not a number"),
    ("step:2 - timing_s/gen:-3.0 - timing_s/step:20.0", "no run logs"),
    ("step:2 - timing_s/step:inf", "no run logs"),
    ("step:2a - timing_s/step:20.0", "not a whole number"),
])
def test_bad_step_line_names_file_and_line(tmp_path, bad, what):
    path = _write(tmp_path, "bad.log", "INFO starting\n" + GOOD + "some ray output\n" + bad + "\n")
    err = _error(path)
    assert err.field == f"{path}:4"
    assert what in err.message
    assert err.line().startswith(f"{path}:4: ")      # what the CLI prints


def test_unknown_keys_may_hold_anything(tmp_path):
    text = GOOD + "step:2 - actor/note:True - my/key:np.str_('x') - timing_s/step:21.5\n"
    run = read_log(_write(tmp_path, "ok.log", text))
    assert run.steps[1].phases_s == {"step": 21.5}


@pytest.mark.parametrize("text, what", [
    ("", "empty"),
    ("\n  \n\t\n", "empty"),
    ("INFO worker.py: Started Ray\nTraceback (most recent call last):\n", "no step lines"),
    ("step:1 - actor/entropy:0.5 - response_length/mean:300.0\n", "no phase timings"),
])
def test_whole_file_problems_name_the_file(tmp_path, text, what):
    path = _write(tmp_path, "run.log", text)
    err = _error(path)
    assert err.field == str(path) and what in err.message


def test_missing_file(tmp_path):
    err = _error(tmp_path / "nope.log")
    assert err.field == str(tmp_path / "nope.log")


def test_csv_without_step_column(tmp_path):
    path = _write(tmp_path, "h.csv", "timing_s/gen,timing_s/step\n10.0,20.0\n")
    err = _error(path)
    assert err.field == str(path) and "step" in err.message


def test_csv_non_numeric_cell_names_its_line(tmp_path):
    path = _write(tmp_path, "h.csv",
                  "_step,timing_s/gen,timing_s/step\n1,10.0,20.0\n2,n/a,21.0\n")
    err = _error(path)
    assert err.field == f"{path}:3" and "timing_s/gen" in err.message


def test_truncated_jsonl_names_its_line(tmp_path):
    path = _write(tmp_path, "h.jsonl",
                  '{"_step": 1, "timing_s/step": 20.0}\n{"_step": 2, "timing_s/st')
    err = _error(path)
    assert err.field == f"{path}:2"


def test_json_row_without_step(tmp_path):
    path = _write(tmp_path, "h.json", '[\n {"_step": 1, "timing_s/step": 2.0},\n'
                                      ' {"timing_s/step": 3.0}\n]\n')
    err = _error(path)
    assert err.field == f"{path}:3" and "step number" in err.message


def test_truncated_roll_line_names_its_line(tmp_path):
    good = _line_of(DATA / "roll_agentic.log", '"step": 1,')
    lines = (DATA / "roll_agentic.log").read_text().split("\n")
    lines[good - 1] = lines[good - 1][:200]
    path = _write(tmp_path, "roll.log", "\n".join(lines))
    err = _error(path)
    assert err.field == f"{path}:{good}" and "truncated" in err.message


def test_crlf_line_endings(tmp_path):
    path = tmp_path / "win.log"
    path.write_bytes((GOOD + "step:2 - timing_s/gen:11.0 - timing_s/step:22.0\n")
                     .replace("\n", "\r\n").encode())
    run = read_log(path)
    assert [r.phases_s["step"] for r in run.steps] == [20.0, 22.0]


def test_console_log_opening_with_verl_config_pprint(tmp_path):
    # veRL pprints its resolved config first; a Python dict repr is not JSON lines.
    text = ("{'actor_rollout_ref': {'actor': {'ppo_mini_batch_size': 256}},\n"
            " 'trainer': {'n_gpus_per_node': 8}}\n" + GOOD
            + "step:2 - timing_s/gen:11.0 - timing_s/step:22.0 [repeated 2x across cluster]\n")
    run = read_log(_write(tmp_path, "run.log", text))
    assert run.format == "verl-console"
    assert [r.phases_s["step"] for r in run.steps] == [20.0, 22.0]


def test_csv_with_byte_order_mark(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffStep,timing_s/step\n1,20.0\n2,21.0\n".encode())
    assert [r.phases_s["step"] for r in read_log(path).steps] == [20.0, 21.0]


def test_directory_is_not_a_log(tmp_path):
    err = _error(tmp_path)
    assert err.field == str(tmp_path) and "directory" in err.message
