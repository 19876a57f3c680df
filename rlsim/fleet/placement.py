"""The inter-group scheduler: where an arriving job runs (RollMux Alg. 1), and its baselines.

Owns co-execution groups as plain data (no SimPy): which rollout and train nodes a group
holds, which jobs are pinned to which of them, each node's host memory in use and phase
load, and the decision for an arriving job. `rollmux` tries direct packing onto a group's
nodes (marginal cost 0), then rollout scaling (the group's train nodes plus just enough new
rollout nodes), then a new group, and keeps the cheapest placement that leaves every job of
the group within its SLO and every node within its host memory. The cycle of a group is
estimated as RollMux prunes with it: the longest member iteration or the busiest node's
load, whichever is larger (Theorem 1 of the paper: round-robin completes a meta-iteration in
the longest solo iteration while no node is saturated). `greedy` and `random` are the naive
baselines that ignore SLOs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np

from rlsim.fleet.cycle import CycleJob, Spec, spec_iteration_times, specs

Kind = Literal["pack", "scale", "new"]
REPLAY_CACHE = 20_000  # replays kept per scheduler (a few MB)


@dataclass(frozen=True)
class Demand:
    """What placement needs to know of one job (phase times in seconds, memory in bytes)."""

    name: str
    roll_nodes: int
    train_nodes: int
    roll_worst_s: float
    train_worst_s: float
    roll_mean_s: float
    train_mean_s: float
    sync_s: float
    warm_roll_s: float
    warm_train_s: float
    host_roll_bytes: float
    host_train_bytes: float
    slo: float
    roll_seq: tuple[float, ...] = ()
    """The rollouts of the admission's typical run (`worst_and_mean`'s check schedules the
    longest; empty under the paper's `worst` check, where the means are the worst case)."""
    train_seq: tuple[float, ...] = ()
    solo_jct_s: float = 0.0
    """The whole run alone (0: unknown); later jobs' cold starts are charged against it."""
    cold_roll_s: float = 0.0
    cold_train_s: float = 0.0
    tail_at: float = 1.0
    """Mean share of a typical rollout done at its migration point (1: never migrates)."""
    tail_at_worst: float = 1.0
    """The same of a worst-case rollout (what the worst-case replay uses)."""
    tail_fraction: float = 1.0
    tail_stretch: float = 1.0
    migration_s: float = 0.0

    def iter_s(self, worst: bool) -> float:
        """The solo iteration an SLO is measured against: the worst case, or the mean."""
        if worst:
            return self.roll_worst_s + self.train_worst_s + self.sync_s
        return self.roll_mean_s + self.train_mean_s + self.sync_s

    def phases_s(self, worst: bool) -> tuple[float, float]:
        """(rollout, train) seconds the co-execution estimate schedules: the worst case, or
        the longest phases of the admission's typical run (so the estimate covers
        iterations like the ones the run draws, whose order it cannot know)."""
        if worst:
            return self.roll_worst_s, self.train_worst_s
        return self._longest

    @cached_property
    def _longest(self) -> tuple[float, float]:
        return (max(self.roll_seq, default=self.roll_mean_s),
                max(self.train_seq, default=self.train_mean_s))


@dataclass
class Member:
    demand: Demand
    roll: tuple[int, ...]
    train: tuple[int, ...]
    cold_delay_s: float = 0.0
    """Cold starts of later jobs on this member's nodes: each holds a shared node once."""
    nodes: tuple[tuple[str, int], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.nodes = tuple(("roll", n) for n in self.roll) + tuple(
            ("train", n) for n in self.train)


@dataclass
class Group:
    gid: int
    roll: list[int] = field(default_factory=list)
    train: list[int] = field(default_factory=list)
    members: dict[str, Member] = field(default_factory=dict)


@dataclass(frozen=True)
class Placement:
    """The decision for one job."""

    job: str
    gid: int
    kind: Kind
    roll: tuple[int, ...]
    train: tuple[int, ...]
    new_roll: tuple[int, ...]
    new_train: tuple[int, ...]
    delta_usd_per_hour: float


class Pools:
    """Free node ids of the two pools, lowest first (deterministic)."""

    def __init__(self, roll_nodes: int, train_nodes: int) -> None:
        self.free = {"roll": list(range(roll_nodes)), "train": list(range(train_nodes))}

    def available(self, role: str) -> int:
        return len(self.free[role])

    def peek(self, role: str, n: int) -> tuple[int, ...]:
        return tuple(sorted(self.free[role])[:n])

    def take(self, role: str, ids: tuple[int, ...]) -> None:
        for i in ids:
            self.free[role].remove(i)

    def give(self, role: str, ids: list[int]) -> None:
        self.free[role].extend(ids)


class GroupScheduler:
    """Places arriving jobs into co-execution groups and forgets departed ones.

    `interleave=False` prices groups as job-level sharing (a job holds all its nodes for a
    whole iteration), the Gavel+-like baseline.
    """

    def __init__(self, pools: Pools, roll_node_usd_h: float, train_node_usd_h: float,
                 host_roll_bytes: float, host_train_bytes: float, *,
                 mode: Literal["rollmux", "greedy", "random"] = "rollmux",
                 max_jobs: int = 5, check_mean: bool = True, interleave: bool = True,
                 margin: float = 0.0,
                 seed: np.random.SeedSequence | None = None) -> None:
        self.pools = pools
        self.price = {"roll": roll_node_usd_h, "train": train_node_usd_h}
        self.host = {"roll": host_roll_bytes, "train": host_train_bytes}
        self.mode = mode
        self.max_jobs = max_jobs
        self.check_mean = check_mean
        self.interleave = interleave
        self.margin = margin
        self.rng = np.random.default_rng(seed)
        self.groups: dict[int, Group] = {}
        self.where: dict[str, int] = {}
        self._next_gid = 0
        # per node: jobs pinned to it
        self.node_jobs: dict[tuple[str, int], list[Demand]] = {}
        # per check mode (worst case or not) and node: [phase seconds, warm seconds, jobs]
        self._agg: dict[bool, dict[tuple[str, int], list[float]]] = {True: {}, False: {}}
        self._host_used: dict[tuple[str, int], float] = {}
        self._limit_memo: dict[tuple[str, bool], tuple[float, float]] = {}
        self._replays: dict[tuple[Spec, ...], tuple[float, ...]] = {}

    # ---------------------------------------------------------------- estimates
    def _node_load(self, jobs: list[Demand], role: str, worst: bool) -> float:
        """Seconds of phases (and warm starts, once shared) one node runs per meta-iteration."""
        shared = len(jobs) > 1
        total = 0.0
        for d in jobs:
            roll_s, train_s = d.phases_s(worst)
            if self.interleave:
                total += roll_s if role == "roll" else train_s
            else:
                total += roll_s + train_s
            if shared:
                total += d.warm_roll_s + d.warm_train_s if not self.interleave else (
                    d.warm_roll_s if role == "roll" else d.warm_train_s)
        return total

    def _bounds(self, members: list[Member], worst: bool) -> list[float]:
        """A lower bound on each member's iteration: its own chain (with its warm starts
        when it shares a node), or the load of a node it uses."""
        on: dict[tuple[str, int], list[Demand]] = {}
        for m in members:
            for n in m.roll:
                on.setdefault(("roll", n), []).append(m.demand)
            for n in m.train:
                on.setdefault(("train", n), []).append(m.demand)
        load = {k: self._node_load(jobs, k[0], worst) for k, jobs in on.items()}
        out = []
        for m in members:
            d = m.demand
            it = sum(d.phases_s(worst)) + d.sync_s
            nodes = [("roll", n) for n in m.roll] + [("train", n) for n in m.train]
            if any(len(on[k]) > 1 for k in nodes[:len(m.roll)]):
                it += d.warm_roll_s
            if any(len(on[k]) > 1 for k in nodes[len(m.roll):]):
                it += d.warm_train_s
            out.append(max([it] + [load[k] for k in nodes]))
        return out

    def _cycle(self, members: list[Member], worst: bool) -> float:
        """Estimated meta-iteration of a group (RollMux's T_cycle vs T_load): the largest
        member bound."""
        return max(self._bounds(members, worst), default=0.0)

    def _phase(self, d: Demand, role: str, worst: bool) -> tuple[float, float]:
        """(phase seconds, warm-start seconds) job `d` puts on one node of `role`."""
        roll_s, train_s = d.phases_s(worst)
        if not self.interleave:
            return roll_s + train_s, d.warm_roll_s + d.warm_train_s
        return (roll_s, d.warm_roll_s) if role == "roll" else (train_s, d.warm_train_s)

    def _count(self, d: Demand, sign: int, roll: tuple[int, ...],
               train: tuple[int, ...]) -> None:
        """Add (sign 1) or remove (-1) `d`'s share of its nodes' loads and host memory."""
        for role, nodes, size in (("roll", roll, d.host_roll_bytes),
                                  ("train", train, d.host_train_bytes)):
            for n in nodes:
                used = self._host_used.get((role, n), 0.0) + sign * size
                if used > 1.0:
                    self._host_used[(role, n)] = used
                else:
                    self._host_used.pop((role, n), None)
        for worst, agg in self._agg.items():
            for role, nodes in (("roll", roll), ("train", train)):
                phase, warm = self._phase(d, role, worst)
                for n in nodes:
                    a = agg.setdefault((role, n), [0.0, 0.0, 0.0])
                    a[0] += sign * phase
                    a[1] += sign * warm
                    a[2] += sign
                    if a[2] <= 0:
                        del agg[(role, n)]

    def _limits(self, d: Demand, worst: bool) -> tuple[float, float]:
        """(solo chain, SLO limit on the co-executed iteration) of `d`, memoized."""
        key = (d.name, worst)
        hit = self._limit_memo.get(key)
        if hit is None:
            chain = d.iter_s(worst)
            hit = self._limit_memo[key] = (chain, d.slo * chain * (1 + 1e-9))
        return hit

    def _bound_ok(self, g: Group, d: Demand, roll: tuple[int, ...],
                  train: tuple[int, ...]) -> float | None:
        """RollMux's cheap pruning test for adding `d` to `g` on these nodes: no member's
        allowed iteration (its SLO, less the one-off delays a joining job causes) is shorter
        than its own chain or the phase load of a node it uses (the paper's T_load against
        T_cycle). Only `d` and the members on its nodes change, so only they are checked.
        Returns the largest worst-case bound, or None if one breaks an SLO. (The delays are
        `_cold_delays`'s, computed here only for the members that share a node with `d`:
        this test runs for every group at every arrival.)"""
        node_jobs, members = self.node_jobs, g.members
        others: dict[str, Member] = {}
        shares_roll: set[str] = set()
        shares_train: set[str] = set()
        for role, nodes, shares in (("roll", roll, shares_roll), ("train", train, shares_train)):
            for n in nodes:
                for j in node_jobs.get((role, n), ()):
                    others[j.name] = members[j.name]
                    shares.add(j.name)
        new_roll, new_train = d.phases_s(False)
        my_delay = 0.0
        delays: dict[str, float] = {}
        for name, m in others.items():
            md = m.demand
            delay = m.cold_delay_s
            roll_s, train_s = md.phases_s(False)
            if name in shares_roll:
                delay += d.cold_roll_s + new_roll
                my_delay += md.cold_roll_s + roll_s
            if name in shares_train:
                delay += d.cold_train_s + new_train
                my_delay += md.cold_train_s + train_s
            delays[name] = delay
        worst_bound = 0.0
        for worst in (True, False) if self.check_mean else (True,):
            agg = self._agg[worst]
            trial: dict[tuple[str, int], float] = {}
            for role, nodes in (("roll", roll), ("train", train)):
                phase, warm = self._phase(d, role, worst)
                for n in nodes:
                    a = agg.get((role, n))
                    trial[(role, n)] = phase if a is None else a[0] + phase + a[1] + warm
            chain, limit = self._limits(d, worst)
            if d.solo_jct_s > 0:  # the one-off delays, as the full check counts them
                limit -= my_delay / d.solo_jct_s * chain
            # no warm starts on the chain: a job that runs twice in a row on a node does
            # not switch, so only the loads count them
            bound = max(chain, *trial.values())
            if bound > limit:
                return None
            if worst:
                worst_bound = bound
            for name, m in others.items():
                md = m.demand
                chain, limit = self._limits(md, worst)
                if md.solo_jct_s > 0:
                    limit -= delays[name] / md.solo_jct_s * chain
                bound = chain
                for key in m.nodes:
                    load = trial.get(key)
                    if load is None:
                        a = agg[key]
                        load = a[0] + (a[1] if a[2] > 1 else 0.0)
                    if load > bound:
                        bound = load
                if bound > limit:
                    return None
                if worst and bound > worst_bound:
                    worst_bound = bound
        return worst_bound

    def _cold_delays(self, members: list[Member]) -> list[float]:
        """Each member's one-off delays from jobs joining its nodes: those already charged,
        plus the newcomer's (the last member) cold start and one of its phases on every
        pool where they share a node (before the group's phases settle into their steady
        order, a job can wait once for a whole phase of a neighbour). The newcomer is
        charged the same of every member it joins (they may still be starting; the
        scheduler does not follow progress, so this errs on the safe side)."""
        new = members[-1]
        new_roll, new_train = new.demand.phases_s(False)
        out = []
        mine = 0.0
        for m in members[:-1]:
            delay = m.cold_delay_s
            roll_s, train_s = m.demand.phases_s(False)
            if set(m.roll) & set(new.roll):
                delay += new.demand.cold_roll_s + new_roll
                mine += m.demand.cold_roll_s + roll_s
            if set(m.train) & set(new.train):
                delay += new.demand.cold_train_s + new_train
                mine += m.demand.cold_train_s + train_s
            out.append(delay)
        return [*out, mine]

    def _slo_ok(self, members: list[Member]) -> bool:
        """Every member within its SLO in a brief simulation of the group's schedule
        (`cycle.iteration_times`), worst-case phases and, under worst_and_mean, mean ones;
        a member's slowdown also counts the cold starts that joining jobs made it wait,
        spread over its whole run."""
        delays = self._cold_delays(members)
        for worst in (False, True) if self.check_mean else (True,):  # typical binds more
            times = self._replay(tuple(self._cycle_job(m, worst) for m in members))
            for m, delay, time_s in zip(members, delays, times, strict=True):
                d = m.demand
                slowdown = time_s / d.iter_s(worst)
                if d.solo_jct_s > 0:
                    slowdown += delay / d.solo_jct_s
                # the typical case keeps a margin: the run draws its iterations at random
                if slowdown + (0.0 if worst else self.margin) > d.slo * (1 + 1e-9):
                    return False
        return True

    def _replay(self, jobs: tuple[CycleJob, ...]) -> tuple[float, ...]:
        """The members' iteration times (`cycle.iteration_times`), memoized on the group's
        shape: the same group is often checked again for another arrival of a job type."""
        key = specs(jobs)
        hit = self._replays.get(key)
        if hit is None:
            if len(self._replays) >= REPLAY_CACHE:
                self._replays.clear()  # simplest bound on memory; refilling is cheap
            hit = self._replays[key] = spec_iteration_times(key, self.interleave)
        return hit

    @staticmethod
    def _cycle_job(m: Member, worst: bool) -> CycleJob:
        d = m.demand
        return CycleJob(d.name, tuple(("roll", n) for n in m.roll),
                        tuple(("train", n) for n in m.train),
                        *d.phases_s(worst),
                        d.sync_s, d.warm_roll_s, d.warm_train_s,
                        d.tail_at_worst if worst else d.tail_at,
                        d.tail_fraction, d.tail_stretch, d.migration_s)

    def _mem_ok(self, role: str, node: int, d: Demand) -> bool:
        need = d.host_roll_bytes if role == "roll" else d.host_train_bytes
        return self._host_used.get((role, node), 0.0) + need <= self.host[role]

    def _least_loaded(self, g: Group, role: str, n: int, d: Demand) -> tuple[int, ...] | None:
        """The `n` nodes of `g` in `role` with room in host memory for `d` and the least
        worst-case load."""
        if n == 0:
            return ()
        nodes = g.roll if role == "roll" else g.train
        fit = [x for x in nodes if self._mem_ok(role, x, d)]
        if len(fit) < n:
            return None
        agg = self._agg[True]

        def load(x: int) -> tuple[float, int]:
            a = agg[(role, x)]
            return (a[0] + (a[1] if a[2] > 1 else 0.0), x)

        fit.sort(key=load)
        return tuple(sorted(fit[:n]))

    # ---------------------------------------------------------------- decisions
    def _new_group(self, d: Demand) -> Placement | None:
        if (self.pools.available("roll") < d.roll_nodes
                or self.pools.available("train") < d.train_nodes):
            return None
        r = self.pools.peek("roll", d.roll_nodes)
        t = self.pools.peek("train", d.train_nodes)
        if not (all(self._mem_ok("roll", x, d) for x in r)
                and all(self._mem_ok("train", x, d) for x in t)):
            return None
        delta = d.roll_nodes * self.price["roll"] + d.train_nodes * self.price["train"]
        return Placement(d.name, self._next_gid, "new", r, t, r, t, delta)

    def _in_group(self, g: Group, d: Demand) -> list[tuple[Placement, float]]:
        """Placements of `d` into `g` that pass memory and (rollmux) the cheap SLO bound,
        each with the group's estimated worst-case cycle: direct packing, and rollout
        scaling by 1 to all of the job's rollout nodes."""
        if len(g.members) >= self.max_jobs:
            return []
        t = self._least_loaded(g, "train", d.train_nodes, d)
        if t is None:
            return []
        options: list[tuple[Placement, tuple[int, ...]]] = []
        r = self._least_loaded(g, "roll", d.roll_nodes, d)
        if r is not None:
            options.append((Placement(d.name, g.gid, "pack", r, t, (), (), 0.0), r))
        if self.mode == "rollmux":
            for k in range(1, min(d.roll_nodes, self.pools.available("roll")) + 1):
                keep = self._least_loaded(g, "roll", d.roll_nodes - k, d)
                if keep is None:
                    continue
                new = self.pools.peek("roll", k)
                roll = tuple(sorted(keep + new))
                options.append((Placement(d.name, g.gid, "scale", roll, t, new, (),
                                          k * self.price["roll"]), roll))
        if self.mode != "rollmux":
            return [(p, 0.0) for p, _ in options]
        # the most rollout scaling is the most hopeful option: if even it breaks the bound
        # (the train side is the same for all), the group has no room for this job
        if len(options) > 1 and self._bound_ok(g, d, options[-1][1], t) is None:
            return []
        out = []
        for p, roll in options:
            bound = self._bound_ok(g, d, roll, t)
            if bound is not None:
                out.append((p, bound))
        return out

    def decide(self, d: Demand) -> Placement | None:
        """The placement for arriving job `d`, or None when the pools have no room now.

        rollmux: candidates from every group in order of marginal $/h (then estimated cycle,
        then group id) are simulated until one keeps every SLO; a new group when none does
        or when it would be cheaper."""
        groups = [self.groups[k] for k in sorted(self.groups)]
        if self.mode == "rollmux":
            new = self._new_group(d)
            cands = sorted((c for g in groups for c in self._in_group(g, d)),
                           key=lambda c: (c[0].delta_usd_per_hour, c[1], c[0].gid))
            for p, _ in cands:
                if new is not None and new.delta_usd_per_hour <= p.delta_usd_per_hour:
                    break
                members = list(self.groups[p.gid].members.values())
                if self._slo_ok([*members, Member(d, p.roll, p.train)]):
                    return p
            return new
        options = [p for g in groups for p, _ in self._in_group(g, d)]
        if self.mode == "random":
            # the paper's Random [P Weave 6.5]: "a random group (or a new one) that can
            # accommodate them"; within the group, one of its offers at random
            gids = sorted({p.gid for p in options})
            pick = int(self.rng.integers(len(gids) + 1))
            if pick == len(gids):
                return self._new_group(d)
            offers = [p for p in options if p.gid == gids[pick]]
            return offers[int(self.rng.integers(len(offers)))]
        if options:

            # greedy: the group whose busiest node has the most idle time in its cycle
            def busy_share(p: Placement) -> float:
                g = self.groups[p.gid]
                cycle = self._cycle(list(g.members.values()), True)
                load = max(self._node_load(self.node_jobs.get(("roll", n), []), "roll", True)
                           for n in g.roll)
                return load / cycle if cycle else 0.0
            return min(options, key=lambda p: (busy_share(p), p.gid))
        return self._new_group(d)

    def admit(self, d: Demand, p: Placement) -> None:
        if p.kind == "new":
            self.groups[p.gid] = Group(p.gid)
            self._next_gid += 1
        g = self.groups[p.gid]
        self.pools.take("roll", p.new_roll)
        self.pools.take("train", p.new_train)
        g.roll.extend(p.new_roll)
        g.train.extend(p.new_train)
        joined = Member(d, p.roll, p.train)
        delays = self._cold_delays([*g.members.values(), joined])
        for m, delay in zip([*g.members.values(), joined], delays, strict=True):
            m.cold_delay_s = delay
        g.members[d.name] = joined
        self._count(d, 1, p.roll, p.train)
        for n in p.roll:
            self.node_jobs.setdefault(("roll", n), []).append(d)
        for n in p.train:
            self.node_jobs.setdefault(("train", n), []).append(d)
        self.where[d.name] = p.gid

    def depart(self, name: str) -> tuple[list[int], list[int]]:
        """Forget a finished job; returns the rollout and train nodes given back."""
        g = self.groups[self.where.pop(name)]
        m = g.members.pop(name)
        self._limit_memo.pop((name, True), None)
        self._limit_memo.pop((name, False), None)
        self._count(m.demand, -1, m.roll, m.train)
        freed: dict[str, list[int]] = {"roll": [], "train": []}
        for role, nodes in (("roll", m.roll), ("train", m.train)):
            for n in nodes:
                jobs = self.node_jobs[(role, n)]
                jobs[:] = [j for j in jobs if j.name != name]
                if not jobs:
                    del self.node_jobs[(role, n)]
                    freed[role].append(n)
        g.roll = [n for n in g.roll if n not in freed["roll"]]
        g.train = [n for n in g.train if n not in freed["train"]]
        self.pools.give("roll", freed["roll"])
        self.pools.give("train", freed["train"])
        if not g.members:
            del self.groups[g.gid]
        return freed["roll"], freed["train"]
