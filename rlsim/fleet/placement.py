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

Speed (2,000 decisions in under 0.4 s of CPU, issue 24) without changing a decision: node
state is kept in lists indexed by node id and updated in the order one sum per node would
be; free nodes stay sorted; a group keeps its nodes in load order and its members' replay
specs until its membership changes; candidates are bounded one level of marginal cost at a
time and a `Placement` is built only for the winner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from rlsim.fleet.cycle import Spec, spec_iteration_times

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
        return (max(self.roll_seq, default=self.roll_mean_s),
                max(self.train_seq, default=self.train_mean_s))


class Need:
    """What the checks use of one demand, computed once per decision (and kept with the
    member once admitted), so the checks that run for every group at every arrival read
    plain attributes. Tuples indexed by a bool are (mean, worst)."""

    __slots__ = ("cold_roll_s", "cold_train_s", "demand", "early", "limits", "name",
                 "node_roll", "node_train", "phases", "safe_delays", "slo_cap", "solo_jct_s",
                 "spec_tail", "warm_roll", "warm_train")

    def __init__(self, d: Demand, interleave: bool) -> None:
        self.demand = d
        self.name = d.name
        mean, worst = d.phases_s(False), d.phases_s(True)
        self.phases = (mean, worst)
        # the phase seconds and warm start one node of each pool carries (`_phase`)
        if interleave:
            self.node_roll = (mean[0], worst[0])
            self.node_train = (mean[1], worst[1])
            self.warm_roll, self.warm_train = d.warm_roll_s, d.warm_train_s
        else:
            self.node_roll = self.node_train = (mean[0] + mean[1], worst[0] + worst[1])
            self.warm_roll = self.warm_train = d.warm_roll_s + d.warm_train_s
        # (solo chain, SLO limit on the co-executed iteration)
        chains = (d.iter_s(False), d.iter_s(True))
        self.limits = ((chains[0], d.slo * chains[0] * (1 + 1e-9)),
                       (chains[1], d.slo * chains[1] * (1 + 1e-9)))
        self.slo_cap = d.slo * (1 + 1e-9)
        # Whether a load above the limit before the one-off delays breaks it after them:
        # they can only lower it when the chain is positive and the run finite (given
        # `safe_delays` of every member, which the scheduler counts).
        finite_run = not d.solo_jct_s > 0 or d.solo_jct_s < math.inf
        self.early = (finite_run and (not d.solo_jct_s > 0 or chains[0] > 0),
                      finite_run and (not d.solo_jct_s > 0 or chains[1] > 0))
        # what this job adds to a newcomer's one-off delays is never negative (nor NaN)
        self.safe_delays = d.cold_roll_s + mean[0] >= 0 and d.cold_train_s + mean[1] >= 0
        self.solo_jct_s = d.solo_jct_s
        self.cold_roll_s, self.cold_train_s = d.cold_roll_s, d.cold_train_s
        # `cycle.Spec` past the node ids (what `_cycle_job` gave the replay)
        self.spec_tail = (
            (mean[0], mean[1], d.sync_s, d.warm_roll_s, d.warm_train_s, d.tail_at,
             d.tail_fraction, d.tail_stretch, d.migration_s),
            (worst[0], worst[1], d.sync_s, d.warm_roll_s, d.warm_train_s, d.tail_at_worst,
             d.tail_fraction, d.tail_stretch, d.migration_s))


class Member:
    """A job in a group: its demand, its nodes and the one-off delays charged to it."""

    __slots__ = ("cold_delay_s", "demand", "name", "need", "roll", "train")

    def __init__(self, need: Need, roll: tuple[int, ...], train: tuple[int, ...],
                 cold_delay_s: float = 0.0) -> None:
        self.demand = need.demand
        self.need = need
        self.name = need.name
        self.roll = roll
        self.train = train
        self.cold_delay_s = cold_delay_s
        """Cold starts of later jobs on this member's nodes: each holds a shared node once."""


class Group:
    """A co-execution group: its nodes and members (in order of arrival), and the replay
    specs of its members, kept until the membership changes."""

    __slots__ = ("_by_load", "_prefix", "gid", "members", "roll", "train")

    def __init__(self, gid: int) -> None:
        self.gid = gid
        self.roll: list[int] = []
        self.train: list[int] = []
        self.members: dict[str, Member] = {}
        # per check (mean, worst): the members' specs and their node numbering
        self._prefix: list[tuple[tuple[Spec, ...], dict[int, int], dict[int, int]] | None] = [
            None, None]
        # its rollout and train nodes, least worst-case load first (then the lowest id)
        self._by_load: tuple[list[int], list[int]] | None = None

    def changed(self) -> None:
        """Forget what was derived from the membership (a job joined or left)."""
        self._prefix = [None, None]
        self._by_load = None


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
    """Free node ids of the two pools, kept sorted: the lowest first (deterministic)."""

    def __init__(self, roll_nodes: int, train_nodes: int) -> None:
        self.size = {"roll": roll_nodes, "train": train_nodes}
        self.free = {"roll": list(range(roll_nodes)), "train": list(range(train_nodes))}

    def available(self, role: str) -> int:
        return len(self.free[role])

    def peek(self, role: str, n: int) -> tuple[int, ...]:
        return tuple(self.free[role][:n])

    def take(self, role: str, ids: tuple[int, ...]) -> None:
        free = self.free[role]
        for i in ids:
            free.remove(i)

    def give(self, role: str, ids: list[int]) -> None:
        free = self.free[role]
        free.extend(ids)
        free.sort()


class _Offer:
    """One group's options for the arriving job: direct packing (option 0) and rollout
    scaling by k new nodes (option k), each built and bounded only when the decision gets
    to its marginal cost."""

    __slots__ = ("bounds", "count", "fit_roll", "group", "k_max", "k_min", "last", "open",
                 "pack", "train")

    def __init__(self, group: Group, train: tuple[int, ...], fit_roll: list[int], pack: bool,
                 k_min: int, k_max: int) -> None:
        self.group = group
        self.train = train
        self.fit_roll = fit_roll  # rollout nodes with room, least loaded first
        self.pack = pack
        self.k_min, self.k_max = k_min, k_max
        self.count = int(pack) + max(0, k_max - k_min + 1)  # options
        self.last = k_max if k_max >= k_min else 0  # the most hopeful one
        self.open: bool | None = None  # the most hopeful option passes the bound (unknown)
        self.bounds: dict[int, float | None] = {}

    def roll(self, k: int, roll_nodes: int, free_roll: list[int]) -> tuple[int, ...]:
        if k == 0:
            return tuple(sorted(self.fit_roll[:roll_nodes]))
        return tuple(sorted(self.fit_roll[:roll_nodes - k] + free_roll[:k]))


class GroupScheduler:
    """Places arriving jobs into co-execution groups and forgets departed ones.

    `interleave=False` prices groups as job-level sharing (a job holds all its nodes for a
    whole iteration), the Gavel+-like baseline.

    Per node (lists indexed by node id, one set per pool): the members pinned to it in order
    of arrival, the host memory in use, how many jobs it carries, their warm starts and
    their phase seconds under each check, and its load as the checks read it (the phases,
    plus the warm starts once shared). All are updated in the same order of additions as
    one sum per node would be, so every figure is the same float whatever the layout.
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
        self._nodes = {role: _NodeState(n) for role, n in pools.size.items()}
        self._replays: dict[tuple[Spec, ...], tuple[float, ...]] = {}
        self._last_need: Need | None = None
        # members whose one-off delays could raise a newcomer's limit (`Need.early`)
        self._unsafe_delays = 0
        # the checks, in the order each runs them
        self._bound_checks: tuple[bool, ...] = (True, False) if check_mean else (True,)
        self._slo_checks: tuple[bool, ...] = (False, True) if check_mean else (True,)

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

    def _count(self, need: Need, sign: int, roll: tuple[int, ...],
               train: tuple[int, ...]) -> None:
        """Add (sign 1) or remove (-1) a job's share of its nodes' loads and host memory."""
        d = need.demand
        for role, nodes, size, phase, warm in (
                ("roll", roll, d.host_roll_bytes, need.node_roll, need.warm_roll),
                ("train", train, d.host_train_bytes, need.node_train, need.warm_train)):
            s = self._nodes[role]
            for n in nodes:
                used = s.host[n] + sign * size
                s.host[n] = used if used > 1.0 else 0.0
                jobs = s.jobs[n] + sign
                if jobs <= 0:  # the node is empty: its sums start afresh
                    s.jobs[n], s.warm[n] = 0, 0.0
                    s.phase[0][n] = s.phase[1][n] = s.load[0][n] = s.load[1][n] = 0.0
                    continue
                s.jobs[n] = jobs
                s.warm[n] += sign * warm
                for w in (1, 0):
                    s.phase[w][n] += sign * phase[w]
                    s.load[w][n] = s.phase[w][n] + (s.warm[n] if jobs > 1 else 0.0)

    def _bound_ok(self, g: Group, need: Need, roll: tuple[int, ...],
                  train: tuple[int, ...]) -> float | None:
        """RollMux's cheap pruning test for adding `need`'s job to `g` on these nodes: no
        member's allowed iteration (its SLO, less the one-off delays a joining job causes)
        is shorter than its own chain or the phase load of a node it uses (the paper's
        T_load against T_cycle). Only the newcomer and the members on its nodes change, so
        only they are checked. Returns the largest worst-case bound, or None if one breaks
        an SLO. (The delays are `_cold_delays`'s, computed here only for the members that
        share a node with the newcomer: this test runs for every group at every arrival.)

        The answer does not depend on the order of the checks, so the newcomer's own loads
        come first: most rejections are its own, and when the delays can only lower its
        limit (`Need.early`) a load above the undelayed limit settles it."""
        rs, ts = self._nodes["roll"], self._nodes["train"]
        early = self._unsafe_delays == 0
        # the newcomer's load on each of its nodes, per check; no warm starts on its chain:
        # a job that runs twice in a row on a node does not switch, so only loads count them
        trials: list[tuple[float, dict[int, float], dict[int, float]]] = []
        for worst in self._bound_checks:
            w = int(worst)
            bound = need.limits[w][0]
            trial_roll, bound = rs.trial(roll, w, need.node_roll[w], need.warm_roll, bound)
            trial_train, bound = ts.trial(train, w, need.node_train[w], need.warm_train,
                                          bound)
            if early and need.early[w] and bound > need.limits[w][1]:
                return None
            trials.append((bound, trial_roll, trial_train))
        # members sharing a node with the newcomer, in order of first meeting: 1 rollout, 2 train
        others: dict[Member, int] = {}
        for n in roll:
            for m in rs.members[n]:
                others[m] = 1
        for n in train:
            for m in ts.members[n]:
                others[m] = others.get(m, 0) | 2
        new_roll, new_train = need.phases[0]
        my_delay = 0.0
        delays: list[float] = []
        for m, shares in others.items():
            mn = m.need
            delay = m.cold_delay_s
            roll_s, train_s = mn.phases[0]
            if shares & 1:
                delay += need.cold_roll_s + new_roll
                my_delay += mn.cold_roll_s + roll_s
            if shares & 2:
                delay += need.cold_train_s + new_train
                my_delay += mn.cold_train_s + train_s
            delays.append(delay)
        worst_bound = 0.0
        for worst, (bound, trial_roll, trial_train) in zip(self._bound_checks, trials,
                                                           strict=True):
            w = int(worst)
            chain, limit = need.limits[w]
            if need.solo_jct_s > 0:  # the one-off delays, as the full check counts them
                limit -= my_delay / need.solo_jct_s * chain
            if bound > limit:
                return None
            if worst:
                worst_bound = bound
            roll_load, train_load = rs.load[w], ts.load[w]
            for (m, shares), delay in zip(others.items(), delays, strict=True):
                mn = m.need
                chain, limit = mn.limits[w]
                if mn.solo_jct_s > 0:
                    limit -= delay / mn.solo_jct_s * chain
                bound = _peak(m.roll, trial_roll if shares & 1 else None, roll_load, chain)
                bound = _peak(m.train, trial_train if shares & 2 else None, train_load, bound)
                if bound > limit:
                    return None
                if worst and bound > worst_bound:
                    worst_bound = bound
        return worst_bound

    def _cold_delays(self, members: list[Member], roll: tuple[int, ...],
                     train: tuple[int, ...], need: Need) -> list[float]:
        """Each member's one-off delays from a job joining its nodes: those already charged,
        plus the newcomer's (`need` on `roll` and `train`, last in the list) cold start and
        one of its phases on every pool where they share a node (before the group's phases
        settle into their steady order, a job can wait once for a whole phase of a
        neighbour). The newcomer is charged the same of every member it joins (they may
        still be starting; the scheduler does not follow progress, so this errs on the safe
        side)."""
        new_roll, new_train = need.phases[0]
        roll_set, train_set = set(roll), set(train)
        out = []
        mine = 0.0
        for m in members:
            mn = m.need
            delay = m.cold_delay_s
            roll_s, train_s = mn.phases[0]
            if not roll_set.isdisjoint(m.roll):
                delay += need.cold_roll_s + new_roll
                mine += mn.cold_roll_s + roll_s
            if not train_set.isdisjoint(m.train):
                delay += need.cold_train_s + new_train
                mine += mn.cold_train_s + train_s
            out.append(delay)
        return [*out, mine]

    def _specs(self, g: Group, worst: bool, need: Need, roll: tuple[int, ...],
               train: tuple[int, ...]) -> tuple[Spec, ...]:
        """`cycle.specs` of the group with the newcomer last: the members' part is kept
        with the group (it does not depend on the newcomer, whose nodes are numbered after
        theirs), the newcomer's appended."""
        w = int(worst)
        prefix = g._prefix[w]
        if prefix is None:
            roll_ids: dict[int, int] = {}
            train_ids: dict[int, int] = {}
            out: list[Spec] = []
            for m in g.members.values():
                out.append(_spec(m.roll, m.train, m.need.spec_tail[w], roll_ids, train_ids))
            prefix = g._prefix[w] = (tuple(out), roll_ids, train_ids)
        members, roll_ids, train_ids = prefix
        return (*members, _spec(roll, train, need.spec_tail[w], dict(roll_ids),
                                dict(train_ids)))

    def _slo_ok(self, g: Group, need: Need, roll: tuple[int, ...],
                train: tuple[int, ...]) -> bool:
        """Every member of `g` and the newcomer (`need` on `roll` and `train`) within its
        SLO in a brief simulation of the group's schedule (`cycle.iteration_times`),
        worst-case phases and, under worst_and_mean, mean ones; a member's slowdown also
        counts the cold starts that joining jobs made it wait, spread over its whole run."""
        members = list(g.members.values())
        delays = self._cold_delays(members, roll, train, need)
        needs = [m.need for m in members] + [need]
        for worst in self._slo_checks:  # typical binds more
            times = self._replay(self._specs(g, worst, need, roll, train))
            w = int(worst)
            for mn, delay, time_s in zip(needs, delays, times, strict=True):
                slowdown = time_s / mn.limits[w][0]
                if mn.solo_jct_s > 0:
                    slowdown += delay / mn.solo_jct_s
                # the typical case keeps a margin: the run draws its iterations at random
                if slowdown + (0.0 if worst else self.margin) > mn.slo_cap:
                    return False
        return True

    def _replay(self, key: tuple[Spec, ...]) -> tuple[float, ...]:
        """The members' iteration times (`cycle.spec_iteration_times`), memoized on the
        group's shape: the same group is often checked again for another arrival of a job
        type."""
        hit = self._replays.get(key)
        if hit is None:
            if len(self._replays) >= REPLAY_CACHE:
                self._replays.clear()  # simplest bound on memory; refilling is cheap
            hit = self._replays[key] = spec_iteration_times(key, self.interleave)
        return hit

    def _order(self, g: Group) -> tuple[list[int], list[int]]:
        """`g`'s rollout and train nodes, least worst-case load first (then the lowest id),
        kept with the group until its membership changes."""
        by_load = []
        for nodes, s in ((g.roll, self._nodes["roll"]), (g.train, self._nodes["train"])):
            load = s.load[1]
            by_load.append([x for _, x in sorted([(load[x], x) for x in nodes])])
        g._by_load = (by_load[0], by_load[1])
        return g._by_load

    # ---------------------------------------------------------------- decisions
    def _new_group(self, d: Demand) -> Placement | None:
        if (self.pools.available("roll") < d.roll_nodes
                or self.pools.available("train") < d.train_nodes):
            return None
        r = self.pools.peek("roll", d.roll_nodes)
        t = self.pools.peek("train", d.train_nodes)
        rs, ts = self._nodes["roll"], self._nodes["train"]
        if not (all(rs.host[x] + d.host_roll_bytes <= self.host["roll"] for x in r)
                and all(ts.host[x] + d.host_train_bytes <= self.host["train"] for x in t)):
            return None
        delta = d.roll_nodes * self.price["roll"] + d.train_nodes * self.price["train"]
        return Placement(d.name, self._next_gid, "new", r, t, r, t, delta)

    def _offers(self, d: Demand) -> list[_Offer]:
        """Every group's options for `d` that pass host memory: direct packing onto the
        group's least-loaded nodes and (rollmux) rollout scaling by 1 to all of the job's
        rollout nodes, in group order."""
        k_max = min(d.roll_nodes, self.pools.available("roll")) if self.mode == "rollmux" else 0
        roll_nodes, train_nodes = d.roll_nodes, d.train_nodes
        roll_host, train_host = self._nodes["roll"].host, self._nodes["train"].host
        roll_need, train_need = d.host_roll_bytes, d.host_train_bytes
        roll_cap, train_cap = self.host["roll"], self.host["train"]
        out = []
        for gid in sorted(self.groups):
            g = self.groups[gid]
            if len(g.members) >= self.max_jobs:
                continue
            by_load = g._by_load or self._order(g)
            if train_nodes:  # the least-loaded train nodes with room for the job
                fit = [x for x in by_load[1] if train_host[x] + train_need <= train_cap]
                if len(fit) < train_nodes:
                    continue
                t = tuple(sorted(fit[:train_nodes]))
            else:
                t = ()
            fit = ([x for x in by_load[0] if roll_host[x] + roll_need <= roll_cap]
                   if roll_nodes else [])
            pack = len(fit) >= roll_nodes
            k_min = max(1, roll_nodes - len(fit))
            if pack or k_min <= k_max:
                out.append(_Offer(g, t, fit, pack, k_min, k_max))
        return out

    def _decide_rollmux(self, d: Demand) -> Placement | None:
        """Candidates in order of marginal $/h, then the estimated worst-case cycle, then
        group id (then the option: only at a price of 0 can two share a cost), each level of
        marginal cost bounded only when no cheaper one passed. Within a group the most
        hopeful option (the most rollout scaling) is bounded first: if even it breaks the
        bound (the train side is the same for all), the group has no room for this job."""
        need = self._need(d)
        new = self._new_group(d)
        offers = self._offers(d)
        if not offers:
            return new
        price = self.price["roll"]
        k_max = max(o.k_max for o in offers)
        levels: dict[float, list[int]] = {0.0: [0]}
        for k in range(1, k_max + 1):
            levels.setdefault(k * price, []).append(k)
        free_roll = self.pools.free["roll"]
        for delta in sorted(levels):
            if new is not None and new.delta_usd_per_hour <= delta:
                break
            cands: list[tuple[float, int, int, _Offer]] = []
            for o in offers:
                for k in levels[delta]:
                    if not (o.pack if k == 0 else o.k_min <= k <= o.k_max):  # no option k
                        continue
                    if o.open is None:
                        o.open = o.count == 1 or self._offer_bound(o, o.last, need, d,
                                                                   free_roll) is not None
                    if not o.open:
                        break
                    bound = self._offer_bound(o, k, need, d, free_roll)
                    if bound is not None:
                        cands.append((bound, o.group.gid, k, o))
            cands.sort(key=lambda c: (c[0], c[1], c[2]))
            for _, gid, k, o in cands:
                roll = o.roll(k, d.roll_nodes, free_roll)
                if self._slo_ok(o.group, need, roll, o.train):
                    if k == 0:
                        return Placement(d.name, gid, "pack", roll, o.train, (), (), 0.0)
                    return Placement(d.name, gid, "scale", roll, o.train,
                                     tuple(free_roll[:k]), (), k * price)
        return new

    def _need(self, d: Demand) -> Need:
        """`d`'s Need, kept from its decision to its admission."""
        if self._last_need is None or self._last_need.demand is not d:
            self._last_need = Need(d, self.interleave)
        return self._last_need

    def _offer_bound(self, o: _Offer, k: int, need: Need, d: Demand,
                     free_roll: list[int]) -> float | None:
        if k not in o.bounds:
            o.bounds[k] = self._bound_ok(o.group, need, o.roll(k, d.roll_nodes, free_roll),
                                         o.train)
        return o.bounds[k]

    def decide(self, d: Demand) -> Placement | None:
        """The placement for arriving job `d`, or None when the pools have no room now.

        rollmux: candidates from every group in order of marginal $/h (then estimated cycle,
        then group id) are simulated until one keeps every SLO; a new group when none does
        or when it would be cheaper."""
        if self.mode == "rollmux":
            return self._decide_rollmux(d)
        options = [Placement(d.name, o.group.gid, "pack",
                             o.roll(0, d.roll_nodes, []), o.train, (), (), 0.0)
                   for o in self._offers(d) if o.pack]
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
            roll_members = self._nodes["roll"].members

            # greedy: the group whose busiest node has the most idle time in its cycle
            def busy_share(p: Placement) -> float:
                g = self.groups[p.gid]
                cycle = self._cycle(list(g.members.values()), True)
                load = max(self._node_load([m.demand for m in roll_members[n]], "roll", True)
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
        need = self._need(d)
        members = list(g.members.values())
        delays = self._cold_delays(members, p.roll, p.train, need)
        joined = Member(need, p.roll, p.train, delays[-1])
        for m, delay in zip(members, delays, strict=False):
            m.cold_delay_s = delay
        g.members[d.name] = joined
        self._unsafe_delays += not need.safe_delays
        g.changed()
        self._count(need, 1, p.roll, p.train)
        for role, nodes in (("roll", p.roll), ("train", p.train)):
            on = self._nodes[role].members
            for n in nodes:
                on[n].append(joined)
        self.where[d.name] = p.gid

    def depart(self, name: str) -> tuple[list[int], list[int]]:
        """Forget a finished job; returns the rollout and train nodes given back."""
        g = self.groups[self.where.pop(name)]
        m = g.members.pop(name)
        self._unsafe_delays -= not m.need.safe_delays
        g.changed()
        self._count(m.need, -1, m.roll, m.train)
        freed: dict[str, list[int]] = {"roll": [], "train": []}
        for role, nodes in (("roll", m.roll), ("train", m.train)):
            on = self._nodes[role].members
            for n in nodes:
                on[n] = [j for j in on[n] if j.name != name]
                if not on[n]:
                    freed[role].append(n)
        g.roll = [n for n in g.roll if n not in freed["roll"]]
        g.train = [n for n in g.train if n not in freed["train"]]
        self.pools.give("roll", freed["roll"])
        self.pools.give("train", freed["train"])
        if not g.members:
            del self.groups[g.gid]
        return freed["roll"], freed["train"]


class _NodeState:
    """One pool's nodes as the scheduler tracks them (lists indexed by node id); the
    float lists indexed by check are (mean, worst)."""

    __slots__ = ("host", "jobs", "load", "members", "phase", "warm")

    def __init__(self, nodes: int) -> None:
        self.members: list[list[Member]] = [[] for _ in range(nodes)]
        self.host = [0.0] * nodes  # bytes of host memory in use
        self.jobs = [0] * nodes
        self.warm = [0.0] * nodes  # the jobs' warm starts, summed
        self.phase = ([0.0] * nodes, [0.0] * nodes)  # their phase seconds, summed
        self.load = ([0.0] * nodes, [0.0] * nodes)  # phases, plus warm starts once shared

    def trial(self, nodes: tuple[int, ...], w: int, phase: float, warm: float,
              bound: float) -> tuple[dict[int, float], float]:
        """A newcomer's load on each of `nodes` under check `w` (its phase, plus the phases
        and warm starts of the jobs already there, its own warm start once shared), and the
        highest of them and `bound`."""
        jobs, sums, warms = self.jobs, self.phase[w], self.warm
        loads: dict[int, float] = {}
        for n in nodes:
            load = phase if not jobs[n] else sums[n] + phase + warms[n] + warm
            loads[n] = load
            if load > bound:
                bound = load
        return loads, bound


def _peak(nodes: tuple[int, ...], trial: dict[int, float] | None, load: list[float],
          bound: float) -> float:
    """The highest of `bound` and the loads of `nodes`: a trial's load where `trial` has
    one (None: the nodes share none with the newcomer, so every load is the current one)."""
    if trial is None:
        for n in nodes:
            if load[n] > bound:
                bound = load[n]
        return bound
    for n in nodes:
        x = trial.get(n, load[n])
        if x > bound:
            bound = x
    return bound


def _spec(roll: tuple[int, ...], train: tuple[int, ...], tail: tuple[float, ...],
          roll_ids: dict[int, int], train_ids: dict[int, int]) -> Spec:
    """One job's `cycle.Spec`: its nodes numbered in the order the group's jobs first
    take them (rollout nodes before train nodes within a job, as `cycle.specs` sorts
    them), numbering new ones in `roll_ids` and `train_ids`."""
    for n in sorted(roll):
        if n not in roll_ids:
            roll_ids[n] = len(roll_ids) + len(train_ids)
    for n in sorted(train):
        if n not in train_ids:
            train_ids[n] = len(roll_ids) + len(train_ids)
    return (tuple(sorted([roll_ids[n] for n in roll])),
            tuple(sorted([train_ids[n] for n in train])), *tail)  # type: ignore[return-value]
