"""Each member's iteration time in a co-execution group, by simulating the group briefly.

Owns the co-execution estimate the inter-group scheduler checks SLOs with (RollMux derives
it "by simulating the intra-group schedule"), and the rate rule both it and the runtime use
for a phase beside migrated tails (`stretched_s`). The estimate replays the runtime's rules
with fixed phase times and no SimPy, so an admission test costs tens of microseconds:
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


class _Group:
    """The replay's state over integer node ids; `run` returns each job's iteration
    completion times."""

    def __init__(self, jobs: Sequence[CycleJob], interleave: bool) -> None:
        self.jobs = jobs
        ids: dict[Node, int] = {}
        for j in jobs:
            for n in sorted(j.roll + j.train):
                ids.setdefault(n, len(ids))
        # per job: phases of (sorted node ids, seconds, warm start per node, is a rollout)
        self.phases: list[list[tuple[list[int], float, list[float], bool]]] = []
        for j in jobs:
            roll = sorted(ids[n] for n in j.roll)
            train = sorted(ids[n] for n in j.train)
            if interleave:
                self.phases.append([(roll, j.roll_s, [j.warm_roll_s] * len(roll), True),
                                    (train, j.train_s, [j.warm_train_s] * len(train), False)])
            else:
                both = sorted(roll + train)
                warm = [j.warm_roll_s if x in roll else j.warm_train_s for x in both]
                self.phases.append([(both, j.roll_s + j.train_s, warm, False)])
        count = len(ids)
        self.holder = [-1] * count
        self.last = [-1] * count
        self.tails: list[list[tuple[float, float]]] = [[] for _ in range(count)]
        self.waiting: list[deque[int]] = [deque() for _ in range(count)]
        self.phase_at = [0] * len(jobs)
        self.need_at = [0] * len(jobs)
        self.events: list[tuple[float, int, int, int, float]] = []
        self.seq = 0

    def push(self, t: float, job: int, what: int, rest: float = 0.0) -> None:
        heapq.heappush(self.events, (t, self.seq, job, what, rest))
        self.seq += 1

    def take(self, job: int, now: float) -> None:
        nodes, dur, warm, rollout = self.phases[job][self.phase_at[job]]
        holder = self.holder
        k = self.need_at[job]
        while k < len(nodes):
            node = nodes[k]
            if holder[node] >= 0:
                self.need_at[job] = k
                self.waiting[node].append(job)
                return
            holder[node] = job
            k += 1
        self.need_at[job] = k
        switch = 0.0
        last = self.last
        for i, node in enumerate(nodes):
            if last[node] not in (-1, job) and warm[i] > switch:
                switch = warm[i]
            last[node] = job
        start = now + switch
        if rollout:
            tails = self.tails
            work = dur
            for node in nodes:
                if tails[node]:
                    live = [x for x in tails[node] if x[0] > start]
                    tails[node] = live
                    if live:
                        dur = max(dur, stretched_s(start, work, live))
            j = self.jobs[job]
            if j.tail_at < 1.0 and j.tail_fraction < 1.0:
                self.push(start + dur * j.tail_at, job, _THRESHOLD, dur * (1 - j.tail_at))
                return
        self.push(start + dur, job, _END)

    def release(self, job: int, now: float) -> None:
        woken = []
        holder, waiting, need_at = self.holder, self.waiting, self.need_at
        for node in self.phases[job][self.phase_at[job]][0]:
            queue = waiting[node]
            if queue:
                nxt = queue.popleft()
                holder[node] = nxt
                need_at[nxt] += 1
                woken.append(nxt)
            else:
                holder[node] = -1
        for h in woken:  # each waited on one node; now it takes the rest of its gang
            self.take(h, now)

    def advance(self, job: int, now: float) -> None:
        """The job's current phase is over: queue its next phase, or sync."""
        self.phase_at[job] += 1
        self.need_at[job] = 0
        if self.phase_at[job] == len(self.phases[job]):
            self.phase_at[job] = 0
            self.push(now + self.jobs[job].sync_s, job, _SYNCED)
        else:
            self.take(job, now)

    def run(self, iterations: int) -> list[list[float]]:
        done: list[list[float]] = [[] for _ in self.jobs]
        short = len(self.jobs)  # jobs with fewer than `iterations` iterations done
        for i in range(len(self.jobs)):
            self.take(i, 0.0)
        events = self.events
        pop = heapq.heappop
        while events:
            now, _, job, what, rest = pop(events)
            if what == _END:
                self.release(job, now)
                self.advance(job, now)
            elif what == _SYNCED:  # one iteration complete
                done[job].append(now)
                if len(done[job]) == iterations:
                    short -= 1
                    if not short:
                        break
                self.take(job, now)
            elif what == _THRESHOLD:
                j = self.jobs[job]
                nodes = self.phases[job][self.phase_at[job]][0]
                if any(self.waiting[n] for n in nodes):
                    tail = rest * j.tail_stretch + j.migration_s
                    for n in nodes:
                        self.tails[n] = [x for x in self.tails[n] if x[0] > now]
                        self.tails[n].append((now + tail, j.tail_fraction))
                    self.release(job, now)
                    self.push(now + tail, job, _TAIL_END)
                else:
                    self.push(now + rest, job, _END)
            else:  # _TAIL_END
                self.advance(job, now)
        return done


_END, _SYNCED, _THRESHOLD, _TAIL_END = range(4)


def iteration_times(jobs: Sequence[CycleJob], interleave: bool = True,
                    iterations: int = 10) -> dict[str, float]:
    """Long-run iteration time of each job: the mean over its iterations after the first
    two (the start, all jobs queueing at once, is not the steady state), the replay running
    until every job has done `iterations` (jobs with other cycle times drift against each
    other, so a short window can miss the waits a long job meets)."""
    done = _Group(jobs, interleave).run(iterations)
    out = {}
    for j, times in zip(jobs, done, strict=True):
        first = min(2, len(times) - 2) if len(times) > 2 else 0
        out[j.name] = ((times[-1] - times[first]) / (len(times) - 1 - first)
                       if len(times) > 1 else times[0])
    return out
