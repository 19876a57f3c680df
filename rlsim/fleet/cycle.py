"""Each member's iteration time in a co-execution group, by simulating the group briefly.

Owns the co-execution estimate the inter-group scheduler checks SLOs with (RollMux derives
it "by simulating the intra-group schedule"), and the rate rule both it and the runtime use
for a phase beside migrated tails (`stretched_s`). The estimate replays the runtime's rules
with fixed phase times and no SimPy (about 0.2 ms of CPU for a group of three or four; the
scheduler memoizes replays on `specs`, the group's shape without names or node ids):
per-node FIFO queues; a phase takes its nodes one at a time in a global order, holding those
it has; a phase starts with a warm start on every node whose last job was another; a
rollout whose migration point comes while another phase waits on one of its nodes leaves
its stragglers on a share of the nodes and lets them go; after its train phase a job syncs
its weights, then queues its next rollout. Cold starts are left out (the steady state is
what an SLO on a long job is about). Job-level sharing (`interleave=False`) runs rollout and
training as one phase on all the job's nodes.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

MIN_RATE = 0.05  # a node's remaining rate beside migrated tails never drops below this

Node = tuple[str, int]


def stretched_s(start: float, work_s: float, tails: list[tuple[float, float]]) -> float:
    """Seconds to do `work_s` of full-node work from `start` while migrated tails (until,
    fraction) hold part of the node."""
    live = [(u, f) for u, f in tails if u > start]
    if not live:
        return work_s
    tails = live
    t, left = start, work_s
    for until in sorted(u for u, _ in tails):
        rate = max(MIN_RATE, 1.0 - sum(f for u, f in tails if u > t))
        if rate * (until - t) >= left:
            return t + left / rate - start
        left -= rate * (until - t)
        t = until
    return t + left - start


@dataclass(frozen=True)
class CycleJob:
    """One member as the estimate sees it (seconds)."""

    name: str
    roll: tuple[Node, ...]
    train: tuple[Node, ...]
    roll_s: float
    train_s: float
    sync_s: float
    warm_roll_s: float
    warm_train_s: float
    tail_at: float = 1.0
    """Share of the rollout done at the migration point (1: never migrates)."""
    tail_fraction: float = 1.0
    tail_stretch: float = 1.0
    migration_s: float = 0.0


Spec = tuple[tuple[int, ...], tuple[int, ...], float, float, float, float, float, float,
             float, float, float]
"""One job as the replay needs it: its rollout and train node ids (numbered in the order
gangs take them), then `CycleJob`'s seconds and shares from roll_s on."""


def specs(jobs: Sequence[CycleJob]) -> tuple[Spec, ...]:
    """The jobs with their nodes renumbered: two groups with the same specs replay alike,
    whatever their node ids and job names."""
    ids: dict[Node, int] = {}
    for j in jobs:
        for n in sorted(j.roll + j.train):
            ids.setdefault(n, len(ids))
    return tuple((tuple(sorted(ids[n] for n in j.roll)), tuple(sorted(ids[n] for n in j.train)),
                  j.roll_s, j.train_s, j.sync_s, j.warm_roll_s, j.warm_train_s, j.tail_at,
                  j.tail_fraction, j.tail_stretch, j.migration_s) for j in jobs)


def _replay(jobs: tuple[Spec, ...], interleave: bool, iterations: int) -> list[list[float]]:
    """Each job's iteration completion times, replayed until every job has done
    `iterations`. One function with local state: this loop is most of a placement's cost.
    A job has at most one event pending at a time, so the heap holds (time, sequence, job)
    and the event's kind and carried seconds are the job's own (`what`, `rest`)."""
    # per job: its phases as (node ids in gang order, seconds, warm start on each node,
    # the same if every node has it (else None), rollout?)
    Phase = tuple[tuple[int, ...], float, tuple[float, ...], float | None, bool]
    plans: list[tuple[Phase, ...]] = []
    count = 0
    for roll, train, roll_s, train_s, _, warm_r, warm_t, *_rest in jobs:
        count = max(count, *(x + 1 for x in roll + train))
        if interleave:
            plans.append(((roll, roll_s, (warm_r,) * len(roll), warm_r, True),
                          (train, train_s, (warm_t,) * len(train), warm_t, False)))
        else:
            both = tuple(sorted(roll + train))
            warm = tuple(warm_r if x in roll else warm_t for x in both)
            plans.append(((both, roll_s + train_s, warm,
                           warm[0] if warm and warm.count(warm[0]) == len(warm) else None,
                           False),))
    # the jobs whose rollouts leave a migrated tail (share done at the migration point and
    # share of the node the tail keeps both below 1)
    migrates = [interleave and spec[7] < 1.0 and spec[8] < 1.0 for spec in jobs]
    any_tails = any(migrates)
    holder = [-1] * count
    last = [-1] * count
    tails: list[list[tuple[float, float]]] = [[] for _ in range(count)]
    waiting: list[deque[int]] = [deque() for _ in range(count)]
    phase_at = [0] * len(jobs)
    cur = [plan[0] for plan in plans]  # each job's current phase
    need_at = [0] * len(jobs)
    what = [0] * len(jobs)  # the kind of each job's pending event
    rest = [0.0] * len(jobs)  # seconds of a rollout left after its migration point
    events: list[tuple[float, int, int]] = []
    seq = itertools.count()
    push = heapq.heappush
    pop = heapq.heappop

    def take(job: int, now: float) -> None:
        nodes, dur, warm, same_warm, rollout = cur[job]
        k = need_at[job]
        for node in nodes[k:] if k else nodes:
            if holder[node] >= 0:
                need_at[job] = k
                waiting[node].append(job)
                return
            holder[node] = job
            k += 1
        need_at[job] = k
        # the switch: the largest warm start of the nodes whose last job was another
        switch = 0.0
        if same_warm is not None:
            switched = False
            for node in nodes:
                was = last[node]
                if was != job:
                    if was != -1:
                        switched = True
                    last[node] = job
            if switched and same_warm > switch:
                switch = same_warm
        else:
            for i, node in enumerate(nodes):
                was = last[node]
                if was != job:
                    if was != -1 and warm[i] > switch:
                        switch = warm[i]
                    last[node] = job
        start = now + switch
        if rollout:
            if any_tails:
                work = dur
                for node in nodes:
                    if tails[node]:
                        live = [x for x in tails[node] if x[0] > start]
                        tails[node] = live
                        if live:
                            dur = max(dur, stretched_s(start, work, live))
            if migrates[job]:
                at = jobs[job][7]
                what[job] = _THRESHOLD
                rest[job] = dur * (1 - at)
                push(events, (start + dur * at, next(seq), job))
                return
        what[job] = _END
        push(events, (start + dur, next(seq), job))

    def release(nodes: tuple[int, ...], now: float) -> None:
        """Hand each node to the first job waiting on it; each such job waited on one node
        and now takes the rest of its gang."""
        woken = []
        for node in nodes:
            queue = waiting[node]
            if queue:
                nxt = queue.popleft()
                holder[node] = nxt
                need_at[nxt] += 1
                woken.append(nxt)
            else:
                holder[node] = -1
        for h in woken:
            take(h, now)

    done: list[list[float]] = [[] for _ in jobs]
    short = len(jobs)  # jobs with fewer than `iterations` iterations done
    for i in range(len(jobs)):
        take(i, 0.0)
    while events:
        now, _, job = pop(events)
        kind = what[job]
        if kind == _SYNCED:  # one iteration complete
            times = done[job]
            times.append(now)
            if len(times) == iterations:
                short -= 1
                if not short:
                    break
            take(job, now)
        elif kind == _THRESHOLD:
            spec = jobs[job]
            nodes = cur[job][0]
            left = rest[job]
            queued = False
            for n in nodes:
                if waiting[n]:
                    queued = True
                    break
            if queued:
                tail = left * spec[9] + spec[10]
                mark = (now + tail, spec[8])
                for n in nodes:
                    if tails[n]:
                        live = [x for x in tails[n] if x[0] > now]
                        live.append(mark)
                        tails[n] = live
                    else:
                        tails[n] = [mark]
                release(nodes, now)
                what[job] = _TAIL_END
                push(events, (now + tail, next(seq), job))
            else:
                what[job] = _END
                push(events, (now + left, next(seq), job))
        else:  # _END or _TAIL_END
            if kind == _END:  # release the phase's nodes (a tail released them already)
                release(cur[job][0], now)
            # the phase is over: queue the job's next phase, or sync
            plan = plans[job]
            at = phase_at[job] + 1
            need_at[job] = 0
            if at == len(plan):
                phase_at[job] = 0
                cur[job] = plan[0]
                what[job] = _SYNCED
                push(events, (now + jobs[job][4], next(seq), job))
            else:
                phase_at[job] = at
                cur[job] = plan[at]
                take(job, now)
    return done


_END, _SYNCED, _THRESHOLD, _TAIL_END = range(4)


def iteration_times(jobs: Sequence[CycleJob], interleave: bool = True,
                    iterations: int = 10) -> dict[str, float]:
    """Long-run iteration time of each job: the mean over its iterations after the first
    two (the start, all jobs queueing at once, is not the steady state), the replay running
    until every job has done `iterations` (jobs with other cycle times drift against each
    other, so a short window can miss the waits a long job meets)."""
    times = spec_iteration_times(specs(jobs), interleave, iterations)
    return {j.name: t for j, t in zip(jobs, times, strict=True)}


def spec_iteration_times(jobs: tuple[Spec, ...], interleave: bool = True,
                         iterations: int = 10) -> tuple[float, ...]:
    """`iteration_times` of renumbered jobs (`specs`), in their order: what a cache of
    replays keys on."""
    out = []
    for times in _replay(jobs, interleave, iterations):
        first = min(2, len(times) - 2) if len(times) > 2 else 0
        out.append((times[-1] - times[first]) / (len(times) - 1 - first)
                   if len(times) > 1 else times[0])
    return tuple(out)
