"""Placement decisions pinned to the values the scheduler gave before issue 24's speed work.

The placement code (`fleet/placement.py`, `fleet/cycle.py`) was made faster with every
decision unchanged; these tests fail if a decision moves. They hash every decision of
(a) small toy fleets run end to end (SimPy) under rollmux, greedy and random placement, gavel
and both SLO checks, and (b) the scheduler alone driven by a few hundred synthetic arrivals
and departures over every mode, interleaving and check, with host memory, migrating tails and
pool exhaustion in play. The pinned hashes were recorded from the code before the change
(`python -m tests.fleet.test_placement_speed_equivalence` prints the current ones).
"""

from __future__ import annotations

import hashlib
import heapq
from typing import Any

import numpy as np
import pytest

from rlsim.fleet.placement import Demand, GroupScheduler, Placement, Pools
from tests.fleet.toy import GIB, fleet, job, profile, run

# ------------------------------------------------------------------ toy fleets, end to end

FLEETS: dict[str, tuple[str, dict[str, Any]]] = {
    "rollmux-worst": ("multiplex", {"placement": "rollmux"}),
    "rollmux-worst_and_mean": ("multiplex", {"placement": "rollmux",
                                             "slo_check": "worst_and_mean"}),
    "rollmux-no-migration": ("multiplex", {"placement": "rollmux", "migration": False}),
    "greedy": ("multiplex", {"placement": "greedy"}),
    "random": ("multiplex", {"placement": "random"}),
    "gavel-rollmux": ("gavel", {"placement": "rollmux"}),
}


def _toy_jobs() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Sixteen jobs of four shapes arriving over a few hours, SLOs from 1.1 to 2.6
    (job-level sharing needs about 2)."""
    rng = np.random.default_rng(24)
    shapes = [
        dict(roll=(100.0, 120.0, 90.0), train=(60.0, 70.0, 65.0), sync=4.0, warm_roll=2.0,
             warm_train=3.0, cold_roll=30.0, cold_train=40.0, worst=1.3, tail_at=0.7,
             tail_fraction=0.5, tail_stretch=1.2),
        dict(roll=(40.0, 55.0), train=(80.0, 85.0), sync=2.0, warm_roll=1.0, warm_train=4.0,
             cold_roll=20.0, cold_train=25.0, worst=1.2, host_gib=400.0),
        dict(roll=(200.0,), train=(50.0,), sync=6.0, warm_roll=3.0, warm_train=2.0,
             cold_roll=50.0, cold_train=30.0, worst=1.5, tail_at=0.8, tail_fraction=0.3,
             tail_stretch=1.25),
        dict(roll=(70.0, 75.0, 80.0, 72.0), train=(70.0, 66.0, 74.0, 71.0), sync=3.0,
             warm_roll=1.5, warm_train=2.5, cold_roll=25.0, cold_train=35.0, worst=1.1,
             host_gib=700.0),
    ]
    nodes = [(1, 1), (2, 1), (1, 2), (2, 2)]
    jobs, profiles = [], {}
    t = 0.0
    for i in range(16):
        k = int(rng.integers(len(shapes)))
        name = f"j{i:02d}"
        r, tr = nodes[int(rng.integers(len(nodes)))]
        jobs.append(job(name, roll_nodes=r, train_nodes=tr,
                        slo=round(float(rng.uniform(1.1, 2.6)), 3),
                        steps=int(rng.integers(6, 20)), arrival=t))
        profiles[name] = profile(**shapes[k])  # type: ignore[arg-type]
        t += float(rng.exponential(400.0))
    return jobs, profiles


def fleet_decisions(key: str) -> list[str]:
    """Every placement record of toy fleet `key`, one line each, and its placement counts."""
    policy, multiplex = FLEETS[key]
    jobs, profiles = _toy_jobs()
    res = run(fleet(jobs, policy, nodes=10, host_gib=1024.0, **multiplex), profiles)
    out = [f"{i.attrs['job']} t={i.t!r} g={i.attrs['group']} {i.attrs['kind']} "
           f"r={i.attrs['rollout_nodes']} t={i.attrs['train_nodes']} "
           f"d={i.attrs['delta_usd_per_hour']!r}"
           for i in res.recorder.instants if i.name == "placement"]
    out.append(f"placements {sorted(res.summary['placements'].items())}")
    return out


# ------------------------------------------------------------------ the scheduler alone

SCHEDULERS: dict[str, dict[str, Any]] = {
    "rollmux-worst": {"mode": "rollmux", "check_mean": False},
    "rollmux-worst_and_mean": {"mode": "rollmux", "check_mean": True, "margin": 0.01},
    "rollmux-jobs3": {"mode": "rollmux", "check_mean": False, "max_jobs": 3},
    "rollmux-job-level": {"mode": "rollmux", "check_mean": False, "interleave": False},
    "greedy": {"mode": "greedy", "check_mean": False},
    "random": {"mode": "random", "check_mean": False},
    "random-job-level": {"mode": "random", "check_mean": True, "interleave": False},
}


def _demands(n: int, seed: int) -> list[tuple[float, float, Demand]]:
    """(arrival s, stay s, demand) of `n` synthetic jobs of varied shapes."""
    rng = np.random.default_rng(seed)
    out = []
    t = 0.0
    for i in range(n):
        roll_w = float(rng.uniform(30, 400))
        train_w = float(rng.uniform(20, 300))
        mean = float(rng.uniform(0.5, 1.0))
        seq_len = int(rng.integers(0, 4))
        migrates = rng.uniform() < 0.5
        tail_at = float(rng.uniform(0.6, 0.95)) if migrates else 1.0
        steps = int(rng.integers(10, 200))
        iter_s = roll_w + train_w
        d = Demand(
            f"s{i:04d}", int(rng.integers(1, 5)), int(rng.integers(1, 4)), roll_w, train_w,
            roll_w * mean, train_w * mean, float(rng.uniform(0, 10)), float(rng.uniform(0, 4)),
            float(rng.uniform(0, 6)), float(rng.uniform(100, 900)) * GIB,
            float(rng.uniform(100, 900)) * GIB, round(float(rng.uniform(1.0, 2.6)), 3),
            roll_seq=tuple(float(x) for x in rng.uniform(0.4, 1.0, seq_len) * roll_w),
            train_seq=tuple(float(x) for x in rng.uniform(0.4, 1.0, seq_len) * train_w),
            solo_jct_s=steps * iter_s, cold_roll_s=float(rng.uniform(10, 80)),
            cold_train_s=float(rng.uniform(10, 80)), tail_at=tail_at,
            tail_at_worst=min(1.0, tail_at + 0.03) if migrates else 1.0,
            tail_fraction=float(rng.uniform(0.2, 0.6)) if migrates else 1.0,
            tail_stretch=float(rng.uniform(1.0, 1.3)) if migrates else 1.0,
            migration_s=float(rng.uniform(0, 5)) if migrates else 0.0)
        out.append((t, steps * iter_s * float(rng.uniform(1.0, 2.0)), d))
        t += float(rng.exponential(3000.0))
    return out


def scheduler_decisions(key: str, n: int = 300, nodes: int = 40) -> list[str]:
    """Every decision (None: no room, the job waits for a departure) of one scheduler."""
    sched = GroupScheduler(Pools(nodes, nodes), 8 * 1.85, 8 * 5.28, 1600 * GIB, 1600 * GIB,
                           seed=np.random.SeedSequence(7), **SCHEDULERS[key])
    jobs = _demands(n, 11)
    events: list[tuple[float, int, int]] = [(t, 1, i) for i, (t, _, _) in enumerate(jobs)]
    heapq.heapify(events)
    waiting: list[int] = []
    out: list[str] = []

    def place(i: int, now: float) -> bool:
        d = jobs[i][2]
        p: Placement | None = sched.decide(d)
        if p is None:
            out.append(f"{d.name} None")
            return False
        out.append(f"{p.job} {p.gid} {p.kind} {p.roll} {p.train} {p.new_roll} {p.new_train} "
                   f"{p.delta_usd_per_hour!r}")
        sched.admit(d, p)
        heapq.heappush(events, (now + jobs[i][1], 0, i))
        return True

    while events:
        now, what, i = heapq.heappop(events)
        if what == 1:
            if not place(i, now):
                waiting.append(i)
        else:
            sched.depart(jobs[i][2].name)
            waiting = [j for j in waiting if not place(j, now)]
    return out


def digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


# Recorded from the scheduler before issue 24's changes (commit 82262fe).
PINNED_FLEETS: dict[str, str] = {
    "gavel-rollmux": "1e6963f2f88cd054",  # new 15, pack 1
    "greedy": "7e0919219ddb7051",  # new 6, pack 10
    "random": "39450d3bf80f9d49",  # new 7, pack 9
    "rollmux-no-migration": "0bedb15f3a03bb53",  # new 6, pack 5, scale 5
    "rollmux-worst": "6ce691bec26080c2",  # new 5, pack 5, scale 6
    "rollmux-worst_and_mean": "b32a477f040abcb7",  # new 6, pack 5, scale 5
}
PINNED_SCHEDULERS: dict[str, str] = {
    "greedy": "223e9f0c4b385f60",  # pack 222, new 78; 34 waits
    "random": "61f4b8fda53eff76",  # pack 188, new 112; 93 waits
    "random-job-level": "e032b3b73f1ae15d",  # pack 186, new 114; 95 waits
    "rollmux-job-level": "369d0e8386adbcd2",  # pack 46, scale 28, new 226; 3,270 waits
    "rollmux-jobs3": "3870c89ca96cdcee",  # pack 122, scale 115, new 63; 459 waits
    "rollmux-worst": "3265fbf6e1c730da",  # pack 136, scale 106, new 58; 498 waits
    "rollmux-worst_and_mean": "64655d22c96c2bf4",  # pack 106, scale 115, new 79; 560 waits
}


@pytest.mark.parametrize("key", sorted(FLEETS))
def test_toy_fleet_placements_unchanged(key: str) -> None:
    lines = fleet_decisions(key)
    assert digest(lines) == PINNED_FLEETS[key], "\n".join(lines)


@pytest.mark.parametrize("key", sorted(SCHEDULERS))
def test_scheduler_decisions_unchanged(key: str) -> None:
    lines = scheduler_decisions(key)
    assert digest(lines) == PINNED_SCHEDULERS[key], "\n".join(lines[:40])


if __name__ == "__main__":
    for k in sorted(FLEETS):
        lines = fleet_decisions(k)
        print(f"FLEET {k!r}: {digest(lines)!r},  # {lines[-1]}, {len(lines) - 1} placed")
    for k in sorted(SCHEDULERS):
        lines = scheduler_decisions(k)
        kinds = {w: sum(f" {w} " in s for s in lines) for w in ("pack", "scale", "new")}
        print(f"SCHED {k!r}: {digest(lines)!r},  # {kinds}, "
              f"{sum(s.endswith(' None') for s in lines)} waits, {len(lines)} decisions")
