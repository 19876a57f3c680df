"""Replaying recorded multi-turn rollouts: turns re-prefill on one engine with environment
steps between them on the env pool, recorded reward latencies drive the reward phase, and
sync and one_off consume every recorded sample exactly once. Closed forms throughout."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import simpy

from rlsim.api import RunResult, simulate
from rlsim.config.loading import scenario_from_dict
from rlsim.cost.inference import InferenceCost
from rlsim.entities.cluster import build_cluster
from rlsim.trace import Recorder
from tests.scenarios import tiny
from tests.workload.helpers import rollouts_line, turn, write_rollouts

MODES = ["skip", "iteration"]


def _scenario(tmp_path: Path, prompts: int, samples: int, steps: int, **changes: Any) -> dict:
    fields: dict[str, Any] = {
        "workload__trace": {"path": "r.jsonl", "format": "rollouts"},
        "workload__response_len": None, "workload__prompts_per_step": prompts,
        "workload__samples_per_prompt": samples, "steps": steps}
    return tiny(**{**fields, **changes})


def _run(data: dict, base: Path) -> RunResult:
    scenario, _ = scenario_from_dict(data, base_dir=base)
    return simulate(scenario, base)


def _spans(res: RunResult, name: str, track: str = "controller") -> list:
    return [s for s in res.recorder.spans if s.track == track and s.name == name]


def _alone(cost: InferenceCost, prompt: int, response: int) -> float:
    """A request alone on an idle engine: one prefill iteration (which samples the first
    token), then response - 1 decode iterations of batch 1 over a growing KV."""
    t = cost.step(0, 0, prompt, 0, [(prompt, 0)]).total_s
    return t + sum(cost.step(1, prompt + 1 + i).total_s for i in range(response - 1))


def _engine_cost(res: RunResult) -> InferenceCost:
    return build_cluster(res.scenario, simpy.Environment(), Recorder()).engine_cost


@pytest.mark.parametrize("mode", MODES)
def test_two_turns_closed_form(tmp_path: Path, mode: str) -> None:
    p, r0, o0, r1, env_s = 300, 120, 45, 80, 1.0
    write_rollouts(tmp_path / "r.jsonl", [rollouts_line(0, p, [[turn(r0, env_s, o0), turn(r1)]])])
    res = _run(_scenario(tmp_path, 1, 1, 1, pools__0__gpus_per_node=1, engine_mode=mode),
               tmp_path)
    assert len(res.scenario.pools) == 1 and res.scenario.pools[0].gpus == 1  # one engine
    (gen,) = _spans(res, "gen")
    cost = _engine_cost(res)
    # turn 2 re-prefills the whole context: prompt + turn 1 + observation
    expected = _alone(cost, p, r0) + env_s + _alone(cost, p + r0 + o0, r1)
    assert gen.t1 - gen.t0 == pytest.approx(expected, abs=1e-9)
    (train,) = _spans(res, "train")
    assert train.attrs["response_tokens"] == r0 + o0 + r1
    assert train.attrs["tokens"] == p + r0 + o0 + r1


@pytest.mark.parametrize("workers", [1, 2])
def test_env_pool_capacity(tmp_path: Path, workers: int) -> None:
    # Two identical samples on two engines finish turn 1 at the same instant; with one env
    # worker their environment steps run one after the other, with two side by side.
    p, r0, o0, r1, env_s = 200, 60, 10, 30, 1.0
    write_rollouts(tmp_path / "r.jsonl",
                   [rollouts_line(0, p, [[turn(r0, env_s, o0), turn(r1)]] * 2)])
    res = _run(_scenario(tmp_path, 1, 2, 1, pools__0__gpus_per_node=2, env={"workers": workers},
                         output={"detail": "request"}), tmp_path)
    cost = _engine_cost(res)
    t1 = _alone(cost, p, r0)
    (gen,) = _spans(res, "gen")
    assert gen.t1 - gen.t0 == pytest.approx(
        # from the turn-1 finishes to the later env step's end: 2 env_s serialized, else 1
        t1 + env_s * (2 if workers == 1 else 1) + _alone(cost, p + r0 + o0, r1), abs=1e-9)
    steps = sorted(_spans(res, "env_step", track="env"), key=lambda s: s.t0)
    assert len(steps) == 2
    assert all(s.t1 - s.t0 == pytest.approx(env_s) for s in steps)
    if workers == 1:
        assert steps[1].t0 == pytest.approx(steps[0].t1, abs=1e-12)  # serialized
        assert [s.attrs["queued_s"] for s in steps] == pytest.approx([0.0, env_s])
    else:
        assert steps[0].t0 == steps[1].t0 == pytest.approx(t1)  # overlapping
        assert {s.attrs["worker"] for s in steps} == {0, 1}


def test_env_spans_only_at_request_detail(tmp_path: Path) -> None:
    write_rollouts(tmp_path / "r.jsonl", [rollouts_line(0, 50, [[turn(5, 0.1, 1), turn(5)]])])
    res = _run(_scenario(tmp_path, 1, 1, 1), tmp_path)
    assert not [s for s in res.recorder.spans if s.track == "env"]


def test_recorded_reward_latencies_drive_the_reward_phase(tmp_path: Path) -> None:
    rewards = [0.5, 0.25, 0.125, 2.0]
    write_rollouts(tmp_path / "r.jsonl", [
        rollouts_line(0, 40, [[turn(7, 0.01, 3), turn(4)], [turn(9)]], rewards=rewards[:2]),
        rollouts_line(0, 20, [[turn(5)], [turn(6, 0.02), turn(2)]], rewards=rewards[2:]),
    ])
    one_worker = {"kind": "rule", "latency": {"median": "10 ms", "sigma": 0.5}, "workers": 1}
    res = _run(_scenario(tmp_path, 2, 2, 1, reward=one_worker), tmp_path)
    (reward,) = _spans(res, "reward")
    assert reward.t1 - reward.t0 == pytest.approx(sum(rewards), abs=1e-9)
    # held to the timeout like drawn latencies
    res = _run(_scenario(tmp_path, 2, 2, 1, reward={**one_worker, "timeout": "0.3 s"}),
               tmp_path)
    (reward,) = _spans(res, "reward")
    assert reward.t1 - reward.t0 == pytest.approx(sum(min(r, 0.3) for r in rewards), abs=1e-9)


def test_missing_reward_latency_falls_back_to_the_draw(tmp_path: Path) -> None:
    lines = [rollouts_line(0, 40, [[turn(7)], [turn(9)]], rewards=[0.5, None])]
    write_rollouts(tmp_path / "r.jsonl", lines)
    partial = _run(_scenario(tmp_path, 1, 2, 1), tmp_path)
    write_rollouts(tmp_path / "r.jsonl", [rollouts_line(0, 40, [[turn(7)], [turn(9)]])])
    drawn = _run(_scenario(tmp_path, 1, 2, 1), tmp_path)
    (a,), (b,) = _spans(partial, "reward"), _spans(drawn, "reward")
    assert a.t1 - a.t0 == b.t1 - b.t0 != pytest.approx(0.5)


def _random_rollouts(path: Path, steps: int, prompts: int, samples: int,
                     seed: int = 0) -> list[list[tuple[int, list[list[tuple[int, float, int]]]]]]:
    """A random multi-turn recording; returns per step the (prompt, turns per sample)."""
    rnd = random.Random(seed)
    lines, recorded = [], []
    for k in range(steps):
        groups = []
        for _ in range(prompts):
            p = rnd.randint(10, 400)
            sample_turns = []
            for _ in range(samples):
                n = rnd.randint(1, 4)
                sample_turns.append([
                    (rnd.randint(1, 300), round(rnd.random(), 3) if i < n - 1 else 0.0,
                     rnd.randint(0, 80) if i < n - 1 else 0)
                    for i in range(n)])
            groups.append((p, sample_turns))
            lines.append(json.dumps({"step": k, "prompt_tokens": p, "samples": [
                {"turns": [{"response_tokens": r, "env_s": e, "obs_tokens": o}
                           for r, e, o in ts], "reward_s": round(rnd.random() / 10, 4)}
                for ts in sample_turns]}))
        recorded.append(groups)
    path.write_text("\n".join(lines) + "\n")
    return recorded


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("policy", [("sync", "colocated"), ("sync", "disaggregated"),
                                    ("one_off", "disaggregated")])
def test_policies_consume_every_recorded_sample_once(tmp_path: Path, policy: tuple[str, str],
                                                     mode: str) -> None:
    steps, prompts, samples = 3, 3, 4
    recorded = _random_rollouts(tmp_path / "r.jsonl", steps, prompts, samples)
    name, placement = policy
    res = _run(_scenario(tmp_path, prompts, samples, steps, engine_mode=mode,
                         policy={"name": name, "placement": placement},
                         output={"detail": "request"}, env={"workers": 3}), tmp_path)
    assert res.summary["steps"] == steps
    trains = sorted(_spans(res, "train"), key=lambda s: s.attrs["step"])
    assert [s.attrs["step"] for s in trains] == list(range(steps))
    for k, train in enumerate(trains):
        traj = [(p, sum(r + o for r, _, o in ts)) for p, sts in recorded[k] for ts in sts]
        assert train.attrs["samples"] == prompts * samples
        assert train.attrs["response_tokens"] == sum(t for _, t in traj)
        assert train.attrs["tokens"] == sum(p + t for p, t in traj)
    all_turns = [ts for groups in recorded for _, sts in groups for ts in sts]
    finished = [s for s in res.recorder.spans
                if s.track.endswith(".requests") and s.name == "finished"]
    assert len(finished) == sum(len(ts) for ts in all_turns)  # one request per turn
    env_steps = _spans(res, "env_step", track="env")
    assert len(env_steps) == sum(len(ts) - 1 for ts in all_turns)
    assert sorted(round(s.t1 - s.t0, 9) for s in env_steps) == sorted(
        round(e, 9) for ts in all_turns for _, e, _ in ts[:-1])
    # never more than 3 environment steps at once
    edges = sorted([(s.t0, 1) for s in env_steps] + [(s.t1, -1) for s in env_steps],
                   key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, d in edges:
        level += d
        peak = max(peak, level)
    assert peak <= 3


def test_skip_and_iteration_modes_agree_on_multi_turn(tmp_path: Path) -> None:
    _random_rollouts(tmp_path / "r.jsonl", 2, 4, 4, seed=3)
    skip = _run(_scenario(tmp_path, 4, 4, 2), tmp_path).summary
    it = _run(_scenario(tmp_path, 4, 4, 2, engine_mode="iteration"), tmp_path).summary
    assert skip["phase_time_s"]["gen"] == pytest.approx(it["phase_time_s"]["gen"], rel=1e-3)
    assert skip["step_time_s"]["mean"] == pytest.approx(it["step_time_s"]["mean"], rel=1e-3)


def test_single_turn_rollouts_run_exactly_like_the_same_polytrace(tmp_path: Path) -> None:
    # Recorded rollouts whose samples all have one turn and no reward latency take the
    # usual dispatch path: the run is identical to replaying the same lengths as PolyTrace.
    rnd = random.Random(7)
    steps, prompts, samples = 2, 5, 3
    rows = [(rnd.randint(10, 500), [rnd.randint(1, 900) for _ in range(samples)])
            for _ in range(steps * prompts)]
    write_rollouts(tmp_path / "r.jsonl", [
        rollouts_line(i // prompts, p, [[turn(r)] for r in out]) for i, (p, out) in enumerate(rows)
    ])
    (tmp_path / "packed_lengths_step_0.jsonl").write_text("\n".join(
        json.dumps({"input": p, "output": out}) for p, out in rows) + "\n")
    rollouts = _run(_scenario(tmp_path, prompts, samples, steps), tmp_path).summary
    poly = _run(_scenario(tmp_path, prompts, samples, steps,
                          workload__trace={"path": "packed_lengths_step_0.jsonl"}),
                tmp_path).summary
    strip = lambda s: {k: v for k, v in s.items() if k != "wall_s"}  # noqa: E731
    assert strip(rollouts) == strip(poly)
