"""Offline optima and lower bounds for RollMux's placement problem [P Weave 6.5, Table 5].

Owns what can be computed honestly about the best placement of RL jobs into co-execution
groups, against which the online scheduler (`fleet/placement.py`) is compared:

- `brute_force_optimum`: the exact cheapest static placement of a handful of jobs that are
  all present at once, by enumerating every way to share rollout nodes and train nodes
  (both set partitions, so every grouping and every node assignment). A group is judged
  with the paper's cycle model: Theorem 1 gives a non-saturated group the cycle of its
  longest solo iteration, a saturated one at least its busiest node's phase load, and every
  member's SLO must hold against that cycle. Warm starts and the weight sync are left out
  (they only lengthen cycles), so this is the optimum of the model, not of the runtime.
  The search is exponential (Bell(n)^2 candidates): the paper's own brute force passes five
  hours at 13 jobs; here it is meant for n <= 7.
- `static_lower_bound`: a bound on the same problem for any n. On every node each member's
  phase fits the group's cycle, which is at most every member's SLO times its solo
  iteration; so the members' shares `phase / (slo * iteration)` sum to at most 1 per node,
  and the nodes needed are at least the ceiling of the shares' sum (and of n over the
  largest group).
- `work_lower_bound_usd`: a bound on the total cost of running a whole trace under any
  placement and any schedule, SLOs met or not: a node runs one phase at a time, so the
  rollout pool must be paid for at least every job's rollout node-seconds and the train
  pool for every job's train node-seconds. It ignores idle time forced by the on-policy
  dependency (a rollout-heavy job leaves its train node idle most of the time), so it is
  loose for unbalanced jobs; the true optimum lies between it and any feasible placement.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class StaticJob:
    """One job of a static placement problem: one rollout node and one train node each."""

    roll_s: float
    train_s: float
    slo: float = 1.0

    @property
    def iter_s(self) -> float:
        return self.roll_s + self.train_s


@dataclass(frozen=True)
class StaticPlacement:
    """Which rollout node and which train node each job uses (blocks of job indices)."""

    usd_per_hour: float
    roll_blocks: tuple[tuple[int, ...], ...]
    train_blocks: tuple[tuple[int, ...], ...]


def set_partitions(items: Sequence[int]) -> Iterator[list[list[int]]]:
    """Every partition of `items` into non-empty blocks (Bell(len(items)) of them)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in set_partitions(rest):
        for i in range(len(part)):  # `first` joins an existing block ...
            yield [*part[:i], [first, *part[i]], *part[i + 1:]]
        yield [[first], *part]  # ... or opens its own


def _components(n: int, roll: list[list[int]], train: list[list[int]]) -> list[list[int]]:
    """Co-execution groups: jobs linked by a shared rollout or train node."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for block in (*roll, *train):
        for j in block[1:]:
            parent[find(j)] = find(block[0])
    groups: dict[int, list[int]] = {}
    for j in range(n):
        groups.setdefault(find(j), []).append(j)
    return list(groups.values())


def placement_feasible(jobs: Sequence[StaticJob], roll: list[list[int]],
                       train: list[list[int]], max_group: int) -> bool:
    """Every group within `max_group` jobs and every member within its SLO, with the group's
    cycle taken as its longest solo iteration or its busiest node's load, whichever is
    larger [P Weave 4.2, Theorem 1]."""
    n = len(jobs)
    load: dict[int, float] = {}  # job -> the heaviest node it sits on
    for blocks, attr in ((roll, "roll_s"), (train, "train_s")):
        for block in blocks:
            total = sum(getattr(jobs[j], attr) for j in block)
            for j in block:
                load[j] = max(load.get(j, 0.0), total)
    for group in _components(n, roll, train):
        if len(group) > max_group:
            return False
        cycle = max(max(jobs[j].iter_s for j in group), max(load[j] for j in group))
        if any(cycle > jobs[j].slo * jobs[j].iter_s * (1 + 1e-12) for j in group):
            return False
    return True


def brute_force_optimum(jobs: Sequence[StaticJob], roll_node_usd_h: float,
                        train_node_usd_h: float, max_group: int = 5) -> StaticPlacement:
    """The cheapest feasible static placement of `jobs` (exhaustive; n <= 7 or so)."""
    if len(jobs) > 8:
        raise ValueError(f"brute_force_optimum: {len(jobs)} jobs is too many to enumerate "
                         "(Bell(n)^2 candidates); use static_lower_bound")
    idx = list(range(len(jobs)))
    best: StaticPlacement | None = None
    # cheapest train partitions first would allow pruning; n is small, so keep it plain
    trains = list(set_partitions(idx))
    for roll in set_partitions(idx):
        roll_usd = len(roll) * roll_node_usd_h
        if best is not None and roll_usd >= best.usd_per_hour:
            continue
        for train in trains:
            usd = roll_usd + len(train) * train_node_usd_h
            if best is not None and usd >= best.usd_per_hour:
                continue
            if placement_feasible(jobs, roll, train, max_group):
                best = StaticPlacement(usd, tuple(map(tuple, roll)), tuple(map(tuple, train)))
    assert best is not None  # every job alone on its own nodes is always feasible
    return best


def static_lower_bound(jobs: Sequence[StaticJob], roll_node_usd_h: float,
                       train_node_usd_h: float, max_group: int = 5) -> float:
    """$/h no feasible static placement of `jobs` can beat (module docstring)."""
    if not jobs:
        return 0.0
    eps = 1e-9  # float sums of shares that are exactly 1 must not round up a node
    roll = sum(j.roll_s / (j.slo * j.iter_s) for j in jobs)
    train = sum(j.train_s / (j.slo * j.iter_s) for j in jobs)
    groups = math.ceil(len(jobs) / max_group)
    return (max(math.ceil(roll - eps), groups) * roll_node_usd_h
            + max(math.ceil(train - eps), groups) * train_node_usd_h)


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace, for the work bound: its iterations and phase node-seconds."""

    steps: int
    roll_s: float
    """Mean rollout phase of an iteration, seconds."""
    train_s: float
    roll_nodes: int = 1
    train_nodes: int = 1


def work_lower_bound_usd(jobs: Sequence[TraceJob], roll_node_usd_h: float,
                         train_node_usd_h: float) -> float:
    """Total $ no placement of the trace can beat: every phase's node-seconds paid once."""
    roll_s = sum(j.steps * j.roll_s * j.roll_nodes for j in jobs)
    train_s = sum(j.steps * j.train_s * j.train_nodes for j in jobs)
    return (roll_s * roll_node_usd_h + train_s * train_node_usd_h) / 3600.0


__all__ = ["StaticJob", "StaticPlacement", "TraceJob", "brute_force_optimum",
           "placement_feasible", "set_partitions", "static_lower_bound",
           "work_lower_bound_usd"]
