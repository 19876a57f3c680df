"""Each member's iteration time in a co-execution group, by simulating the group briefly.

Owns the co-execution estimate the inter-group scheduler checks SLOs with (RollMux derives
it "by simulating the intra-group schedule"), and the rate rule both it and the runtime use
for a phase beside migrated tails (`stretched_s`). The estimate replays the runtime's rules
with fixed phase times and no SimPy (about half a millisecond for a group of three; the
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
    `iterations`. One function with local state: this loop is most of a placement's cost."""
    # per job: phases of (node ids in gang order, seconds, warm start per node, rollout?)
    phases: list[list[tuple[tuple[int, ...], float, tuple[float, ...], bool]]] = []
    count = 0
    for roll, train, roll_s, train_s, _, warm_r, warm_t, *_rest in jobs:
        count = max(count, *(x + 1 for x in roll + train))
        if interleave:
            phases.append([(roll, roll_s, (warm_r,) * len(roll), True),
                           (train, train_s, (warm_t,) * len(train), False)])
        else:
            both = tuple(sorted(roll + train))
            phases.append([(both, roll_s + train_s,
                            tuple(warm_r if x in roll else warm_t for x in both), False)])
    holder = [-1] * count
    last = [-1] * count
    tails: list[list[tuple[float, float]]] = [[] for _ in range(count)]
    waiting: list[deque[int]] = [deque() for _ in range(count)]
    phase_at = [0] * len(jobs)
    need_at = [0] * len(jobs)
    events: list[tuple[float, int, int, int, float]] = []
    seq = itertools.count()
    push = heapq.heappush
    pop = heapq.heappop

    def take(job: int, now: float) -> None:
        nodes, dur, warm, rollout = phases[job][phase_at[job]]
        k = need_at[job]
        n = len(nodes)
        while k < n:
            node = nodes[k]
            if holder[node] >= 0:
                need_at[job] = k
                waiting[node].append(job)
                return
            holder[node] = job
            k += 1
        need_at[job] = k
        switch = 0.0
        for i, node in enumerate(nodes):
            was = last[node]
            if was != job:
                if was != -1 and warm[i] > switch:
                    switch = warm[i]
                last[node] = job
        start = now + switch
        if rollout:
            work = dur
            for node in nodes:
                if tails[node]:
                    live = [x for x in tails[node] if x[0] > start]
                    tails[node] = live
                    if live:
                        dur = max(dur, stretched_s(start, work, live))
            spec = jobs[job]
            if spec[7] < 1.0 and spec[8] < 1.0:  # it migrates its tail
                push(events, (start + dur * spec[7], next(seq), job, _THRESHOLD,
                              dur * (1 - spec[7])))
                return
        push(events, (start + dur, next(seq), job, _END, 0.0))

    def release(job: int, now: float) -> None:
        woken = []
        for node in phases[job][phase_at[job]][0]:
            queue = waiting[node]
            if queue:
                nxt = queue.popleft()
                holder[node] = nxt
                need_at[nxt] += 1
                woken.append(nxt)
            else:
                holder[node] = -1
        for h in woken:  # each waited on one node; now it takes the rest of its gang
            take(h, now)

    def advance(job: int, now: float) -> None:
        """The job's current phase is over: queue its next phase, or sync."""
        phase_at[job] += 1
        need_at[job] = 0
        if phase_at[job] == len(phases[job]):
            phase_at[job] = 0
            push(events, (now + jobs[job][4], next(seq), job, _SYNCED, 0.0))
        else:
            take(job, now)

    done: list[list[float]] = [[] for _ in jobs]
    short = len(jobs)  # jobs with fewer than `iterations` iterations done
    for i in range(len(jobs)):
        take(i, 0.0)
    while events:
        now, _, job, what, rest = pop(events)
        if what == _END:
            release(job, now)
            advance(job, now)
        elif what == _SYNCED:  # one iteration complete
            times = done[job]
            times.append(now)
            if len(times) == iterations:
                short -= 1
                if not short:
                    break
            take(job, now)
        elif what == _THRESHOLD:
            spec = jobs[job]
            nodes = phases[job][phase_at[job]][0]
            if any(waiting[n] for n in nodes):
                tail = rest * spec[9] + spec[10]
                for n in nodes:
                    tails[n] = [x for x in tails[n] if x[0] > now]
                    tails[n].append((now + tail, spec[8]))
                release(job, now)
                push(events, (now + tail, next(seq), job, _TAIL_END, 0.0))
            else:
                push(events, (now + rest, next(seq), job, _END, 0.0))
        else:  # _TAIL_END
            advance(job, now)
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
