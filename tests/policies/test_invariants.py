"""Invariants over random small scenarios (hypothesis): GPUs never double-booked, every
response trained exactly once, staleness within the policy's bound, sandbox timeouts held."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.api import simulate
from rlsim.config.loading import scenario_from_dict
from tests.scenarios import tiny


def _max_concurrent(intervals: list[tuple[float, float, float]]) -> float:
    edges = sorted([(t0, w) for t0, _, w in intervals] + [(t1, -w) for _, t1, w in intervals],
                   key=lambda e: (e[0], e[1]))  # ends before starts at equal times
    cur = peak = 0.0
    for _, w in edges:
        cur += w
        peak = max(peak, cur)
    return peak


@settings(max_examples=25, deadline=None)
@given(
    policy=st.sampled_from([("sync", "colocated"), ("sync", "disaggregated"),
                            ("one_off", "disaggregated")]),
    prompts=st.integers(1, 12),
    samples=st.integers(1, 6),
    sigma=st.floats(0.1, 1.5),
    max_seqs=st.integers(1, 64),
    steps=st.integers(1, 4),
    tp=st.sampled_from([1, 2]),
    reward=st.sampled_from(["rule", "sandbox"]),
    seed=st.integers(0, 10),
)
def test_cluster_invariants(policy, prompts, samples, sigma, max_seqs, steps, tp, reward, seed):
    name, placement = policy
    data = tiny(policy={"name": name, "placement": placement}, steps=steps, seed=seed,
                workload__prompts_per_step=prompts, workload__samples_per_prompt=samples,
                workload__response_len={"dist": "lognormal", "median": 300, "sigma": sigma},
                rollout__max_running_seqs=max_seqs, rollout__tp=tp,
                reward={"kind": reward, "latency": {"median": "1 s", "sigma": 2.0},
                        "timeout": "5 s", "workers": 4})
    scenario, base = scenario_from_dict(data)
    res = simulate(scenario, base)
    rec = res.recorder
    # 1. no GPU double-booked: busy GPUs of a pool never exceed its size at any instant
    by_pool = defaultdict(list)
    for s in rec.spans:
        if s.name == "busy":
            by_pool[s.attrs["pool"]].append((s.t0, s.t1, s.attrs["gpus"]))
    for pool in scenario.pools:
        assert _max_concurrent(by_pool[pool.name]) <= pool.gpus
    # 2. every response trained exactly once
    train = [s for s in rec.spans if s.track == "controller" and s.name == "train"]
    assert sum(s.attrs["samples"] for s in train) == steps * prompts * samples
    assert len(train) == steps == res.summary["steps"]
    # 3. staleness bound: 0 on-policy, 1 for one_off
    bound = 1 if name == "one_off" else 0
    assert all(s.attrs["staleness_max"] <= bound for s in train)
    # 4. a sandbox never takes longer than its timeout: the reward phase of n samples on
    # w workers ends within ceil(n/w) timeouts
    for s in rec.spans:
        if s.track == "controller" and s.name == "reward":
            n = s.attrs["samples"]
            assert s.t1 - s.t0 <= -(-n // 4) * 5.0 + 1e-9
    # 5. steps are back to back and end at sim_time
    steps_spans = sorted((s for s in rec.spans if s.name == "step"), key=lambda s: s.t0)
    assert steps_spans[-1].t1 == res.summary["sim_time_s"]
    # 6. KV never over capacity: every engine's recorded KV use stays within its cache, and
    # every engine drains (running and waiting back to 0) by the end
    capacity = {i.attrs["track"]: i.attrs["kv_capacity_tokens"] for i in rec.instants
                if i.name == "entity" and i.attrs["kind"] == "engine"}
    last: dict[tuple[str, str], float] = {}
    for c in rec.counters:
        if c.name == "kv_tokens":
            assert 0 <= c.value <= capacity[c.track]
        last[(c.track, c.name)] = c.value
    assert last and all(v == 0 for (_, name), v in last.items() if name != "kv_tokens")
    # 7. the report's per-sample records: one length and one latency per trained sample,
    # and the staleness histogram counts every trained sample
    # (one_off also generates a batch during its last step, never trained: step == steps)
    responses = [i for i in rec.instants if i.name == "responses" and i.attrs["step"] < steps]
    assert sum(len(i.attrs["response_tokens"]) for i in responses) == steps * prompts * samples
    assert all(len(i.attrs["latency_s"]) == len(i.attrs["response_tokens"]) for i in responses)
    for s in train:
        hist = s.attrs["staleness_hist"]
        assert sum(hist.values()) == s.attrs["samples"]
        assert max(int(k) for k in hist) == s.attrs["staleness_max"]
