"""`rlsim advise` end to end on a tiny job: the space, determinism, resume after kill -9,
the runnable recommendation, bad input (one line, exit 2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from rlsim.advise.run import AdviseOptions, advise
from rlsim.advise.space import POLICY, build_space, config_key
from rlsim.api import simulate
from rlsim.config.loading import load_scenario
from rlsim.sweep.spec import read_base
from tests.cli.test_bad_input import run_cli
from tests.scenarios import tiny, write

RLSIM = Path(sys.executable).parent / "rlsim"


def _job(tmp_path: Path, **changes: object) -> Path:
    return write(tmp_path, tiny(**changes), "job.yaml")


def _space(path: Path, **kw: object):
    scenario, _ = load_scenario(path)
    data, base, _ = read_base(path, ())
    return build_space(data, scenario, base, str(path), kw.get("policies"), kw.get("gpus"),
                       [], None)


def _quiet(_: str) -> None:
    pass


def test_every_point_runs_the_jobs_gpus(tmp_path: Path) -> None:
    """Colocated or split, each point runs the same 8 GPUs (a sweep of placements once
    shrank colocated points to one pool of a two-pool job)."""
    space = _space(_job(tmp_path))
    grid = space.valid_grid()
    assert {dict(c)[POLICY] for c in grid} == {"sync", "one_off", "tail_batching", "async"}
    for config in grid[::7]:
        sc = space.scenario(config)
        assert sum(p.gpus for p in sc.pools) == 8
        if sc.policy.placement == "disaggregated":
            assert (sc.rollout.gpus or 0) + (sc.train.gpus or 0) == 8
    # qwen2.5-0.5b has 14 attention heads: TP 4 and 8 never run, and are counted.
    assert any("attention heads" in why for why in space.invalid)
    assert all(dict(c)["rollout.tp"] in (1, 2) for c in grid)


def test_the_search_proposes_only_points_of_the_grid(tmp_path: Path) -> None:
    space = _space(_job(tmp_path))
    grid = {config_key(c) for c in space.grid()}

    class Last:  # a trial that always takes the last choice
        def suggest_categorical(self, name: str, choices: list[object]) -> object:
            return choices[-1]

    assert config_key(space.suggest(Last())) in grid


def test_gpus_must_fill_whole_nodes(tmp_path: Path) -> None:
    from rlsim.config.errors import ScenarioError

    with pytest.raises(ScenarioError, match="multiple of the 8 GPUs"):
        _space(_job(tmp_path), gpus=12)


def test_same_seed_same_trials_and_recommendation_whatever_the_cores(tmp_path: Path) -> None:
    path = _job(tmp_path)
    runs = [advise(AdviseOptions(scenario=str(path), out=str(tmp_path / f"o{j}"), trials=8,
                                 reps=2, jobs=j), log=_quiet) for j in (1, 2)]
    assert [t["key"] for t in runs[0].trials] == [t["key"] for t in runs[1].trials]
    assert len({t["key"] for t in runs[0].trials}) == 8
    assert runs[0].recommended == runs[1].recommended
    assert runs[0].margin_over_runner_up == runs[1].margin_over_runner_up


def test_the_recommendation_runs_and_gives_its_first_replicate(tmp_path: Path) -> None:
    path = _job(tmp_path)
    out = tmp_path / "out"
    advice = advise(AdviseOptions(scenario=str(path), out=str(out), trials=6, reps=2),
                    log=_quiet)
    assert sorted(p.name for p in out.iterdir()) == [
        "advice.json", "evaluations.jsonl", "options.json", "recommended.yaml", "report.html",
        "study.log"]
    scenario, base = load_scenario(out / "recommended.yaml")
    summary = simulate(scenario, base).summary
    assert summary["throughput"]["tokens_per_s"] == advice.recommended["replicates"][0]
    assert json.loads((out / "advice.json").read_text())["recommended"] == advice.recommended
    # output contracts: every file the run writes carries its schema version first
    for name in ("advice.json", "options.json"):
        assert next(iter(json.loads((out / name).read_text()))) == "schema_version"
    lines = (out / "evaluations.jsonl").read_text().splitlines()
    assert lines and all(json.loads(line)["schema_version"] == 1 for line in lines)
    assert next(iter(advice.brief())) == "schema_version"


def test_resume_after_kill_9_loses_and_repeats_nothing(tmp_path: Path) -> None:
    path = _job(tmp_path)
    out = tmp_path / "out"
    cmd = [str(RLSIM), "advise", str(path), "--out", str(out), "--trials", "14",
           "--reps", "2", "--jobs", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    journal = out / "evaluations.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= 5:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "advise finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = [json.loads(line) for line in journal.read_text().splitlines()
              if line.endswith("}")]
    assert not (out / "advice.json").exists()
    done = subprocess.run([*cmd, "--resume", "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    after = [json.loads(line) for line in journal.read_text().splitlines()]
    runs = Counter((d["key"], d["rep"]) for d in after)
    assert max(runs.values()) == 1, "a run was repeated"
    assert after[:len(before)] == before, "a run done before the kill was lost"
    advice = json.loads((out / "advice.json").read_text())
    assert len({t["key"] for t in advice["trials"]}) == 14
    assert json.loads(done.stdout)["recommended"] == advice["recommended"]


@pytest.mark.parametrize("args, fragment", [
    (["--objective", "speed"], "--objective: unknown objective 'speed'"),
    (["--constraint", "latency<=3"], "--constraint: unknown constraint key 'latency'"),
    (["--constraint", "usd_per_hour<=1"], "no point of the space can run this job"),
    (["--policies", "async", "--gpus", "8", "--constraint", "max_staleness=0"],
     "no point of the space can run this job"),
    (["--policies", "nope"], "--policies: unknown policy 'nope'"),
    (["--trials", "0"], "--trials: must be >= 1"),
    (["--gpus", "12"], "--gpus: must be a positive multiple of the 8 GPUs per node"),
])
def test_bad_input_is_one_line_exit_2(tmp_path: Path, monkeypatch, capsys, args: list[str],
                                      fragment: str) -> None:
    path = _job(tmp_path)
    out = tmp_path / "out"
    code, _, err = run_cli(["advise", str(path), "--out", str(out), *args], monkeypatch,
                           capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and fragment in err, err
    assert not out.exists(), "nothing written for bad input"


def test_a_job_no_policy_can_run_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    path = _job(tmp_path, model="qwen2.5-72b")  # does not fit one node of H100 at all
    code, _, err = run_cli(["advise", str(path), "--out", str(tmp_path / "o")], monkeypatch,
                           capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    # the job as given is refused by the door every run goes through (rlsim/prepare.py)
    assert "job.yaml: rollout.tp: qwen2.5-72b does not fit" in err


def test_an_existing_folder_needs_resume_and_the_same_options(tmp_path: Path, monkeypatch,
                                                              capsys) -> None:
    path = _job(tmp_path)
    out = tmp_path / "out"
    advise(AdviseOptions(scenario=str(path), out=str(out), trials=3, reps=1), log=_quiet)
    code, _, err = run_cli(["advise", str(path), "--out", str(out), "--trials", "3",
                            "--reps", "1"], monkeypatch, capsys)
    assert code == 2 and "add --resume" in err
    code, _, err = run_cli(["advise", str(path), "--out", str(out), "--trials", "3",
                            "--reps", "2", "--resume"], monkeypatch, capsys)
    assert code == 2 and "--reps: the run in" in err
    code, _, err = run_cli(["advise", str(path), "--out", str(tmp_path / "new"), "--resume"],
                           monkeypatch, capsys)
    assert code == 2 and "no advise run to resume" in err
    # the scenario file is part of what must match: edited, the run is not continued
    from rlsim.advise.run import _check_out

    stored = json.loads((out / "options.json").read_text())
    asked = {k: v for k, v in stored.items() if k != "schema_version"}
    _check_out(out, True, asked)  # the same inputs: resumes
    path.write_text(path.read_text() + "\n# edited\n")
    code, _, err = run_cli(["advise", str(path), "--out", str(out), "--trials", "3",
                            "--reps", "1", "--resume"], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--resume" in err and "scenario_sha256" in err
    # an options.json from before the inputs were recorded resumes as it did
    del stored["scenario_sha256"]
    (out / "options.json").write_text(json.dumps(stored))
    _check_out(out, True, {**asked, "scenario_sha256": "edited"})


def test_the_report_renders_in_a_browser(tmp_path: Path) -> None:
    from rlsim.report.browser import browser_missing, check_page

    if browser_missing() is not None:
        pytest.skip(browser_missing() or "")
    out = tmp_path / "out"
    advise(AdviseOptions(scenario=str(_job(tmp_path)), out=str(out), trials=6, reps=2),
           log=_quiet)
    check = check_page(out / "report.html", tmp_path / "advise.png")
    assert check.js_errors == [] and check.console_errors == []
    assert check.plots_expected == 3  # the front, importance, the search
    assert check.plots_rendered == check.plots_expected, check.text()


def test_a_staleness_bound_keeps_off_policy_points_out(tmp_path: Path) -> None:
    advice = advise(AdviseOptions(scenario=str(_job(tmp_path)), out=str(tmp_path / "o"),
                                  trials=8, reps=1, constraints=("max_staleness=0",)),
                    log=_quiet)
    assert all(t["figures"]["staleness"] == 0 for t in advice.trials)
    assert advice.recommended["config"]["policy"] in ("sync", "tail_batching")
    assert any("constraint max_staleness<=0" in why for why in advice.failures)


def test_several_objectives_search_together_and_the_first_decides(tmp_path: Path) -> None:
    advice = advise(AdviseOptions(scenario=str(_job(tmp_path)), out=str(tmp_path / "o"),
                                  objective="tokens_per_s,usd_per_1k_tokens", trials=8,
                                  reps=1), log=_quiet)
    assert advice.objective == "tokens_per_s"
    assert advice.also_searched == ["usd_per_1k_tokens"]
    ran = [t["figures"] for t in advice.trials if t["figures"]]
    cheapest = min(f["usd_per_1k_tokens"] for f in ran)
    assert any(f["figures"]["usd_per_1k_tokens"] == cheapest for f in advice.finalists)


@pytest.mark.parametrize("scenario, fragment", [
    ("scenarios/rollmux/rollout-heavy-rollmux.yaml", "not a fleet (kind: fleet)"),
    ("scenarios/no-such-job.yaml", "no-such-job.yaml"),
])
def test_a_fleet_or_a_missing_file_is_one_line(tmp_path: Path, monkeypatch, capsys,
                                               scenario: str, fragment: str) -> None:
    root = Path(__file__).resolve().parents[2]
    code, _, err = run_cli(["advise", str(root / scenario), "--out", str(tmp_path / "o")],
                           monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, err


def test_a_horizon_is_refused_in_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    root = Path(__file__).resolve().parents[2]
    code, _, err = run_cli(["advise", str(root / "scenarios/quickstart.yaml"), "--set",
                            "horizon=30 d", "--out", str(tmp_path / "o")], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "horizon: advise ranks configurations on their steady state" in err


def test_changes_name_the_fields_to_change_and_nothing_else() -> None:
    from rlsim.advise.run import changes
    from rlsim.config.loading import scenario_from_dict

    before, _ = scenario_from_dict(tiny(steps=2))
    after, _ = scenario_from_dict(tiny(
        steps=11, policy={"name": "async", "placement": "disaggregated",
                          "asynchronous": {"alpha": 2, "extra_per_group": 0}},
        pools=[{"name": "cluster", "gpu": "H100", "nodes": 2}],
        rollout={"pool": "cluster", "tp": 1, "gpus": 8},
        train={"pool": "cluster", "tp": 1, "gpus": 8}))
    lines = changes(before, after)
    assert lines == [
        "pools: cluster: 8 GPUs -> cluster: 16 GPUs",
        'policy.asynchronous.alpha: 1 -> 2',
        'policy.name: "sync" -> "async"',
        'policy.placement: "colocated" -> "disaggregated"',
        "rollout.gpus: null -> 8",
        "train.gpus: null -> 8",
    ]  # extra_per_group stays at its default 0; steps is advise's, not a change


def test_tp_choices_follow_the_nvlink_domain(tmp_path: Path) -> None:
    # GB200 trays of 4 share the rack's NVLink: TP up to 16 is on the table; HGX nodes of
    # 8 H100 keep TP inside the node.
    trays = _job(tmp_path, pools=[{"name": "cluster", "gpu": "GB200", "nodes": 8,
                                   "gpus_per_node": 4}])
    assert 16 in _space(trays).tps
    hgx = _job(tmp_path, pools=[{"name": "cluster", "gpu": "H100", "nodes": 4}])
    assert max(_space(hgx).tps) == 8
