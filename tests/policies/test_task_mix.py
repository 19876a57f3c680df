"""Mixed workloads (workload.tasks + reward.by_task): each batch holds the tasks in their
shares, each task has its own lengths and reward, and bad mixes are one clear line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.api import simulate
from rlsim.config.errors import ScenarioError
from rlsim.config.loading import scenario_from_dict
from rlsim.config.workload import TaskConfig, WorkloadConfig
from rlsim.workload.generator import task_of_prompts
from tests.scenarios import tiny

JUDGE_POOLS = [{"name": "cluster", "gpu": "H100", "nodes": 1},
               {"name": "judges", "gpu": "H100", "nodes": 1, "gpus_per_node": 2}]
JUDGE = {"model": "qwen2.5-0.5b", "pool": "judges", "gpus": 2, "output_tokens": 8}


def _mix(**changes):
    data = tiny(**changes)
    data["workload"]["tasks"] = [
        {"name": "math", "share": 0.5, "response_len": {"dist": "fixed", "value": 100}},
        {"name": "code", "share": 0.25, "response_len": {"dist": "fixed", "value": 700}},
        {"name": "qa", "share": 0.25},
    ]
    return data


def _run(data):
    scenario, base = scenario_from_dict(data)
    return simulate(scenario, base)


@settings(max_examples=40, deadline=None)
@given(shares=st.lists(st.integers(1, 9), min_size=1, max_size=4), n=st.integers(1, 200))
def test_every_prefix_holds_the_shares_up_to_rounding(shares, n):
    total = sum(shares)
    tasks = [TaskConfig(name=f"t{i}", share=s / total) for i, s in enumerate(shares)]
    cfg = WorkloadConfig(prompts_per_step=n, samples_per_prompt=1, max_response_len=10,
                         response_len={"dist": "fixed", "value": 5}, tasks=tasks)
    order = task_of_prompts(cfg, n)
    for m in range(1, n + 1):
        for k, s in enumerate(shares):
            assert abs(order[:m].count(k) - m * s / total) < 1.0 + 1e-9


def test_each_task_has_its_own_lengths_and_reward():
    data = _mix(steps=2, workload__prompts_per_step=8, workload__samples_per_prompt=2,
                workload__response_len={"dist": "fixed", "value": 300})
    data["reward"] = {"kind": "rule", "latency": {"median": "1 s"}, "workers": 64,
                      "by_task": {"code": {"kind": "sandbox", "latency": {"median": "3 s"},
                                           "timeout": "30 s"}}}
    res = _run(data)
    lengths = [i.attrs["response_tokens"] for i in res.recorder.instants
               if i.name == "responses"]
    # 8 prompts: 4 math (100), 2 code (700), 2 qa (the default 300), 2 responses each
    assert all(sorted(x) == [100] * 8 + [300] * 4 + [700] * 4 for x in lengths)
    # enough workers: the phase lasts as long as the slowest task's reward (code, 3 s)
    rewards = [s.t1 - s.t0 for s in res.recorder.spans
               if s.track == "controller" and s.name == "reward"]
    assert rewards == [pytest.approx(3.0), pytest.approx(3.0)]


def test_judged_task_runs_on_the_judge_while_the_others_use_the_workers():
    data = _mix(steps=1, pools=JUDGE_POOLS, workload__response_len={"dist": "fixed",
                                                                    "value": 200})
    data["reward"] = {"kind": "rule", "latency": {"median": "10 ms"}, "judge": JUDGE,
                      "by_task": {"qa": {"kind": "judge"}}}
    res = _run(data)
    judge = [s for s in res.recorder.spans if s.track.startswith("rollout.judge")
             and s.name == "busy"]
    (reward,) = [s for s in res.recorder.spans if s.track == "controller"
                 and s.name == "reward"]
    assert judge and all(reward.t0 <= s.t0 and s.t1 <= reward.t1 + 1e-9 for s in judge)
    scored = sum(s.attrs["samples"] for s in res.recorder.spans if s.track == "reward")
    assert scored == 8 * 4 * 3 // 4  # math and code on the workers, qa on the judge


def test_tail_batching_reward_scheduler_with_a_judged_task():
    data = _mix(steps=4, pools=JUDGE_POOLS, workload__response_len={"dist": "lognormal",
                                                                    "median": 300,
                                                                    "sigma": 1.0})
    data["reward"] = {"kind": "sandbox", "latency": {"median": "1 s"}, "judge": JUDGE,
                      "by_task": {"qa": {"kind": "judge"}}}
    data["policy"] = {"name": "tail_batching", "tail_batching": {"reward_scheduler": True}}
    res = _run(data)
    train = [s for s in res.recorder.spans if s.track == "controller" and s.name == "train"]
    assert [s.attrs["samples"] for s in train] == [32] * 4
    assert any(s.track.startswith("rollout.judge") for s in res.recorder.spans)


@pytest.mark.parametrize(("change", "field"), [
    ({"workload__tasks": [{"name": "a", "share": 0.5}, {"name": "b", "share": 0.4}]},
     "workload"),
    ({"workload__tasks": [{"name": "a", "share": 0.5}, {"name": "a", "share": 0.5}]},
     "workload"),
    ({"reward__by_task": {"nope": {"kind": "rule"}}}, "by_task"),
])
def test_bad_mixes_name_the_field(change, field):
    data = tiny()
    for key, value in change.items():
        section, name = key.split("__")
        data[section][name] = value
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(data)
    assert field in err.value.line()


def test_judged_task_without_a_judge_is_refused():
    data = _mix()
    data["reward"] = {"kind": "rule", "by_task": {"qa": {"kind": "judge"}}}
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(data)
    assert "judge" in err.value.line()
