"""The fleet run on toy jobs: closed forms, cost accounting and invariants."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fleet.toy import GIB, fleet, job, node_spans, profile, run


def test_solo_job_runs_its_closed_form() -> None:
    p = profile(100.0, 50.0, sync=5.0, cold_roll=20.0, cold_train=30.0)
    res = run(fleet([job("a", steps=4)], "solo"), {"a": p})
    (a,) = res.summary["per_job"]
    assert a["finish"] == pytest.approx(20 + 30 + 4 * 155)
    assert a["solo_jct_s"] == pytest.approx(a["finish"])
    assert a["slowdown"] == pytest.approx(1.0)


def test_solo_cost_is_nodes_times_price_times_time() -> None:
    p = profile(100.0, 50.0)
    res = run(fleet([job("a", roll_nodes=2, train_nodes=1, steps=6)], "solo"), {"a": p})
    hours = 6 * 150 / 3600
    usd_h = 2 * 8 * 1.85 + 1 * 8 * 5.28  # catalogue H20 and H800 prices [P Weave Table 1]
    assert res.summary["cost"]["usd_total"] == pytest.approx(usd_h * hours)
    assert res.summary["cost"]["samples_per_usd"] == pytest.approx(6 * 8 / (usd_h * hours))


def test_two_job_group_runs_at_the_closed_form_cycle() -> None:
    """Two jobs packed on one rollout and one train node iterate every max(sum of rollouts,
    sum of trains) plus the two switches per node, as the issue's closed form says."""
    wr, wt = 2.0, 3.0
    pa = profile(100.0, 60.0, warm_roll=wr, warm_train=wt)
    pb = profile(80.0, 90.0, warm_roll=wr, warm_train=wt)
    res = run(fleet([job("a", slo=2.0, steps=30), job("b", slo=2.0, steps=30)]),
              {"a": pa, "b": pb})
    assert res.summary["placements"] == {"new": 1, "pack": 1}
    closed = max(100 + 80 + 2 * wr, 60 + 90 + 2 * wt)
    for name in ("a", "b"):
        ends = sorted(s.t1 for s in res.recorder.spans
                      if s.track == f"job.{name}" and s.name == "iteration")
        period = (ends[-1] - ends[9]) / (len(ends) - 1 - 9)
        assert period == pytest.approx(closed, rel=1e-6)


def test_complementary_pair_costs_half_and_keeps_throughput() -> None:
    p = profile(100.0, 100.0)
    jobs = [job("a", steps=40), job("b", steps=40)]
    profiles = {"a": p, "b": p}
    solo = run(fleet(jobs, "solo"), profiles).summary
    mux = run(fleet(jobs, "multiplex"), profiles).summary
    assert mux["gpus_peak"] == {"r": 8, "t": 8}
    assert solo["gpus_peak"] == {"r": 16, "t": 16}
    ratio = mux["cost"]["samples_per_usd"] / solo["cost"]["samples_per_usd"]
    assert ratio == pytest.approx(2.0, rel=0.03)


def test_rollout_conflict_scales_rollout_instead_of_breaking_the_slo() -> None:
    """Two rollout-heavy jobs: sharing the rollout node would double their iteration, so
    with a 1.2 SLO RollMux adds a rollout node and shares only the train node."""
    p = profile(300.0, 60.0)
    res = run(fleet([job("a", slo=1.2), job("b", slo=1.2)]), {"a": p, "b": p})
    assert res.summary["placements"] == {"new": 1, "scale": 1}
    assert res.summary["gpus_peak"] == {"r": 16, "t": 8}
    assert res.summary["slo_attainment"] == 1.0


def test_residency_limit_forces_a_new_group() -> None:
    """Two complementary jobs whose host-memory state cannot both stay on one node."""
    p = profile(100.0, 100.0, host_gib=600.0)
    res = run(fleet([job("a"), job("b")], host_gib=1000.0), {"a": p, "b": p})
    assert res.summary["placements"] == {"new": 2}


def test_greedy_packs_without_checking_slos() -> None:
    p = profile(300.0, 60.0)
    jobs = [job("a", slo=1.05), job("b", slo=1.05)]
    greedy = run(fleet(jobs, placement="greedy"), {"a": p, "b": p}).summary
    assert greedy["placements"] == {"new": 1, "pack": 1}
    assert greedy["slo_attainment"] < 1.0


def test_random_draws_a_new_group_beside_the_groups_with_room() -> None:
    """The paper's Random [P Weave 6.5]: a random group that can take the job, or a new
    one. With one group holding room, a second job packs or opens its own group, each for
    about half of the seeds; neither checks the SLO."""
    p = profile(300.0, 60.0)
    jobs = [job("a", slo=1.05), job("b", slo=1.05, arrival=1.0)]
    kinds = []
    for seed in range(40):
        sc = fleet(jobs, placement="random").model_copy(update={"seed": seed})
        kinds.append(tuple(sorted(run(sc, {"a": p, "b": p}).summary["placements"].items())))
    # the group offers packing only here (seeds 0-39: 24 pack, 16 new)
    assert set(kinds) == {(("new", 1), ("pack", 1)), (("new", 2),)}
    assert 10 <= sum(k == (("new", 2),) for k in kinds) <= 30


def test_a_job_waits_for_capacity_and_its_wait_counts_in_its_slowdown() -> None:
    p = profile(100.0, 100.0)
    res = run(fleet([job("a", steps=5), job("b", steps=5)], "solo", nodes=1),
              {"a": p, "b": p})
    b = next(j for j in res.summary["per_job"] if j["job"] == "b")
    assert b["start"] == pytest.approx(1000.0)
    assert b["slowdown"] == pytest.approx(2.0)
    assert res.summary["slo_attainment_running"] == 1.0


def test_colocated_runs_whole_iterations_on_train_nodes() -> None:
    p = profile(100.0, 50.0, cold_roll=10.0, cold_train=20.0)
    res = run(fleet([job("a", steps=3)], "colocated"), {"a": p})
    (a,) = res.summary["per_job"]
    assert a["finish"] == pytest.approx(30 + 3 * 150)
    assert res.summary["gpus_peak"] == {"r": 0, "t": 8}


def test_same_fleet_same_records() -> None:
    ps = {"a": profile((90.0, 120.0), (40.0, 70.0), warm_roll=1, warm_train=2),
          "b": profile((50.0, 80.0), (90.0, 60.0), warm_roll=1, warm_train=2)}
    sc = fleet([job("a", steps=12), job("b", steps=12, arrival=30.0)])
    first, second = run(sc, ps), run(sc, ps)
    assert first.recorder.spans == second.recorder.spans
    drop = {"wall_s", "decision_s"}
    assert ({k: v for k, v in first.summary.items() if k not in drop}
            == {k: v for k, v in second.summary.items() if k not in drop})


# ------------------------------------------------------------------ invariants
phase = st.floats(min_value=20.0, max_value=400.0)
jobs_st = st.lists(
    st.tuples(phase, phase, st.integers(1, 2), st.integers(1, 2), st.floats(1.0, 2.0),
              st.floats(0.0, 2000.0), st.floats(0.2, 1.0), st.floats(50.0, 700.0)),
    min_size=2, max_size=6)


# Derandomized: the same 40 fleets on every run, so that CI cannot go red on a fleet no run
# before it tried (the admission end effect below is one hypothesis found).
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(jobs_st, st.sampled_from(["multiplex", "gavel"]))
def test_invariants(specs: list[tuple], policy: str) -> None:  # type: ignore[type-arg]
    """Random small fleets: no node runs two phases at once; no job runs two phases at
    once; the jobs resident on a node never exceed its host memory; every job admitted by
    RollMux's scheduler meets its SLO (no faults are injected here) when admission also
    checks the typical run (`worst_and_mean`): the paper's worst-case-only check is not
    conservative (start-up costs and a neighbour's whole phase do not grow with the
    lengths, so a placement that fits at the max length can miss at typical lengths), and
    its attainment is measured in reports/rollmux.md instead. Each job repeats one
    profiled iteration and runs 30 of them: with iterations that vary, a neighbour's
    varying cycle can break the alignment the admission replay finds, and a short job can
    miss a tight SLO (docs/fleet.md, known limits)."""
    jobs, profiles = [], {}
    for i, (rolls, trains, rn, tn, slo, arrival, tail_at, host) in enumerate(specs):
        name = f"j{i}"
        jobs.append(job(name, roll_nodes=rn, train_nodes=tn, slo=slo, steps=30,
                        arrival=arrival))
        profiles[name] = profile(rolls, trains, sync=3.0, warm_roll=1.5, warm_train=2.5,
                                 cold_roll=40.0, cold_train=50.0, worst=1.5, host_gib=host,
                                 tail_at=tail_at, tail_fraction=0.5, tail_stretch=1.2)
    res = run(fleet(jobs, policy, nodes=12, host_gib=1024.0, slo_check="worst_and_mean"),
              profiles)
    for spans in node_spans(res).values():
        spans.sort()
        for (_, end, _, _), (start, _, _, _) in itertools.pairwise(spans):
            assert start >= end - 1e-9
    per_job: dict[str, list[tuple[float, float]]] = {}
    for spans in node_spans(res).values():
        for t0, t1, name, kind in spans:
            if kind != "switch":
                per_job.setdefault(name, []).append((t0, t1))
    for name, spans in per_job.items():  # a gang's nodes share one interval
        intervals = sorted(set(spans))
        for (_, end), (start, _) in itertools.pairwise(intervals):
            assert start >= end - 1e-9, name
    resident: dict[tuple[str, int], float] = {}
    events = []
    for i in res.recorder.instants:
        if i.name == "placement":
            events.append((i.t, 1, i.attrs))
        elif i.name == "job_done":
            events.append((i.t, 0, i.attrs))
    place = {e[2]["job"]: e[2] for e in events if e[1] == 1}
    for _, kind, attrs in sorted(events, key=lambda e: (e[0], e[1])):
        p = place[attrs["job"]]
        host = profiles[attrs["job"]].host_roll_bytes
        for role in ("rollout_nodes", "train_nodes"):
            for n in p[role]:
                key = (role, n)
                resident[key] = resident.get(key, 0.0) + (host if kind == 1 else -host)
                assert resident[key] <= 1024.0 * GIB + 1.0
    if policy == "multiplex":
        assert res.summary["slo_attainment_running"] == 1.0, res.summary["per_job"]


@pytest.mark.xfail(strict=True, reason="known limit (docs/fleet.md): admission's replay "
                   "misses the end of a run; j0 finishes 7.1% late against a 6.25% SLO")
def test_admission_end_effect_known_limit() -> None:
    """A fleet hypothesis found (issue 40's stop): two jobs of fixed phase times arrive
    together on shared nodes; `worst_and_mean` admits the second, and the first, whose SLO
    is tight (1.0625), finishes at 1.071 of its solo time. Strict: when admission covers
    this, the test fails and the limit comes off docs/fleet.md."""
    test_invariants.hypothesis.inner_test(  # type: ignore[attr-defined]
        specs=[(52.0, 36.0, 1, 1, 1.0625, 0.0, 1.0, 50.0),
               (72.0, 20.0, 1, 1, 2.0, 0.0, 1.0, 50.0)], policy="multiplex")


def test_a_crashed_job_reenters_as_a_new_arrival_with_its_iterations_left() -> None:
    p = profile(100.0, 50.0, cold_roll=10.0, cold_train=10.0)
    sc = fleet([job("a", steps=10), job("b", steps=10)],
               faults=[{"job": "a", "at": 400.0, "resubmit_after": 300.0}])
    res = run(sc, {"a": p, "b": p})
    done = {j["job"]: j for j in res.summary["per_job"]}
    assert set(done) == {"a.restart1", "b"}
    again = done["a.restart1"]
    crash = next(i for i in res.recorder.instants if i.name == "crash")
    assert crash.t == 400.0
    assert again["arrival"] == pytest.approx(700.0)
    assert again["steps"] == 10 - int(crash.attrs["done_steps"])
    assert res.summary["faults"] == {"crashes": 1}
    # the crash gave its nodes back: the nodes never hold two phases at once
    for spans in node_spans(res).values():
        spans.sort()
        for (_, end, _, _), (start, _, _, _) in itertools.pairwise(spans):
            assert start >= end - 1e-9
