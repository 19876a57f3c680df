"""The fleet's SimPy run: jobs arrive, are placed, and run their phases on shared nodes.

Owns the phase-level mechanism of a multi-job cluster. Every node is a FIFO queue of
capacity one. A job's iteration is a rollout phase on its rollout nodes, a training phase on
its train nodes and a weight sync over the cross-cluster link; on-policy, so its next
rollout waits for its sync. A phase holds all its nodes at once (taken in one global order,
so gangs never deadlock) and starts with a switch: a cold start the first time the job runs
on a node, a warm start from host memory when another job ran there last, nothing when it
was the same job. Under `multiplex`, once the migration threshold of a rollout's responses
are done and another phase waits on one of its nodes, the stragglers keep `tail_fraction`
of the nodes and the nodes pass on; the next phase there runs at the remaining rate until
the tail ends. Under `gavel` a job holds its rollout and train nodes for its whole
iteration. `solo` gives each job dedicated nodes and `colocated` runs each job's whole
iteration on its train nodes. Phase times come from the job's profiled run (a simulation on
a seed stream that admission never reads), drawn per iteration from the job's own random
stream, so every policy sees the same iterations and SLO attainment is measured, not
assumed: admission planned with the worst case (`_demand`).
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import simpy

from rlsim.config.fleet import FleetScenario, JobConfig
from rlsim.config.streams import stream
from rlsim.fleet.cycle import stretched_s
from rlsim.fleet.placement import Demand, GroupScheduler, Placement, Pools
from rlsim.fleet.profile import JobProfile
from rlsim.trace import Recorder

FLEET = "fleet"


@dataclass
class Node:
    """One node: its FIFO queue, who ran there last and the tails it still hosts."""

    track: str
    res: simpy.Resource
    last: str | None = None
    seen: set[str] = field(default_factory=set)
    tails: list[tuple[float, float]] = field(default_factory=list)  # (until, fraction)


@dataclass
class JobRun:
    job: JobConfig
    profile: JobProfile
    steps: int
    draws: np.ndarray
    solo_jct_s: float
    roll: tuple[int, ...] = ()
    train: tuple[int, ...] = ()
    gid: int = -1
    kind: str = ""
    start: float = 0.0
    done_steps: int = 0
    proc: simpy.Process | None = None
    held: list[tuple[tuple[str, int], simpy.resources.resource.Request]] = field(
        default_factory=list)
    """Node requests the job holds or waits for (a crash gives them back)."""
    restarts: int = 0


def steps_of(job: JobConfig, profile: JobProfile) -> int:
    if job.steps is not None:
        return job.steps
    assert job.duration is not None
    return max(1, round(job.duration / profile.iter_mean_s))


class FleetRun:
    """One simulated fleet under one policy."""

    def __init__(self, fleet: FleetScenario, profiles: dict[str, JobProfile],
                 recorder: Recorder) -> None:
        self.fleet = fleet
        self.env = simpy.Environment()
        self.rec = recorder
        self.policy = fleet.policy.name
        self.mux = fleet.policy.multiplex
        rpools = {j.rollout.pool for j in fleet.jobs}
        tpools = {j.train.pool for j in fleet.jobs}
        if len(rpools) != 1 or len(tpools) != 1:
            from rlsim.config.errors import ScenarioError

            raise ScenarioError("jobs", "every job must use the same rollout pool and the same "
                                "train pool (one rollout cluster, one train cluster)")
        self.rpool = fleet.pool(rpools.pop())
        self.tpool = fleet.pool(tpools.pop())
        self.pools = Pools(self.rpool.nodes, self.tpool.nodes)
        node_usd = (self.rpool.price * self.rpool.node_size,
                    self.tpool.price * self.tpool.node_size)
        self.node_usd = {"roll": node_usd[0], "train": node_usd[1]}
        self.sched = GroupScheduler(
            self.pools, node_usd[0], node_usd[1], self.rpool.host_memory,
            self.tpool.host_memory, mode=self.mux.placement,
            max_jobs=self.mux.max_jobs_per_group,
            check_mean=self.mux.slo_check == "worst_and_mean",
            interleave=self.policy != "gavel", margin=self.mux.slo_margin,
            seed=stream(fleet.seed, "placement"))
        self.nodes = {
            ("roll", i): Node(f"node.{self.rpool.name}.{i}", simpy.Resource(self.env, 1))
            for i in range(self.rpool.nodes)}
        self.nodes.update({
            ("train", i): Node(f"node.{self.tpool.name}.{i}", simpy.Resource(self.env, 1))
            for i in range(self.tpool.nodes)})
        self.allocated = {"roll": 0, "train": 0}
        self.queue: list[JobRun] = []
        self.decision_s = 0.0
        self.runs = [self._job_run(j, profiles[j.name]) for j in fleet.jobs]

    def _job_run(self, job: JobConfig, p: JobProfile,
                 draws: np.ndarray | None = None) -> JobRun:
        steps = steps_of(job, p)
        if draws is None:
            draws = np.random.default_rng(stream(self.fleet.seed, f"job:{job.name}")
                                          ).integers(0, len(p.roll_s), size=steps)
        roll = np.asarray(p.roll_s)[draws]
        train = np.asarray(p.train_s)[draws]
        solo = p.cold_roll_s + p.cold_train_s + float(roll.sum() + train.sum()) + steps * p.sync_s
        return JobRun(job, p, steps, draws, solo)

    # -------------------------------------------------------------------- run
    def run(self) -> None:
        self._record_pools()
        self.env.process(self._arrivals())
        for fault in self.fleet.faults:
            self.env.process(self._crash(fault.job, fault.at, fault.resubmit_after))
        self.env.run()

    def _crash(self, name: str, at: float, resubmit_after: float
               ) -> Generator[simpy.Event, Any, None]:
        yield self.env.timeout(at)
        # the job's latest run: the original, or its latest resubmission
        run = [r for r in self.runs if r.job.name == name
               or r.job.name.startswith(f"{name}.restart")][-1]
        if run.proc is None or not run.proc.is_alive:
            return  # not started (queued) or already done: nothing to crash
        run.proc.interrupt("crash")
        yield self.env.timeout(resubmit_after)
        left = run.steps - run.done_steps
        if left <= 0:
            return
        again = run.job.model_copy(update={"name": f"{name}.restart{run.restarts + 1}",
                                           "arrival": self.env.now, "steps": left,
                                           "duration": None})
        fresh = self._job_run(again, run.profile, run.draws[run.done_steps:])
        fresh.restarts = run.restarts + 1
        self.runs.append(fresh)
        self.rec.instant(FLEET, "arrival", self.env.now, job=again.name, resubmitted=name)
        if not self._try_place(fresh):
            self.queue.append(fresh)

    def _record_pools(self) -> None:
        for role, pool in (("roll", self.rpool), ("train", self.tpool)):
            self.rec.instant("cluster", "pool", 0.0, pool=pool.name, role=role,
                             gpu=pool.gpu_spec.name, gpus=pool.gpus, nodes=pool.nodes,
                             gpus_per_node=pool.node_size, usd_per_gpu_hour=pool.price)
        self._record_cost()

    def _record_cost(self) -> None:
        now = self.env.now
        self.rec.counter(FLEET, f"nodes.{self.rpool.name}", now, self.allocated["roll"])
        self.rec.counter(FLEET, f"nodes.{self.tpool.name}", now, self.allocated["train"])
        usd = sum(self.allocated[r] * self.node_usd[r] for r in ("roll", "train"))
        self.rec.counter(FLEET, "usd_per_hour", now, usd)

    def _arrivals(self) -> Generator[simpy.Event, Any, None]:
        order = sorted(range(len(self.runs)), key=lambda i: (self.runs[i].job.arrival, i))
        for i in order:
            run = self.runs[i]
            if run.job.arrival > self.env.now:
                yield self.env.timeout(run.job.arrival - self.env.now)
            self.rec.instant(FLEET, "arrival", self.env.now, job=run.job.name)
            if not self._try_place(run):
                self.queue.append(run)

    def _demand(self, run: JobRun) -> Demand:
        """What admission knows of a job: its worst-case profile (and, under
        `worst_and_mean`, a typical run of its own), never the iterations it will run."""
        p = run.profile
        migrates = self.policy == "multiplex" and self.mux.migration and p.tail_fraction < 1
        if self.mux.slo_check == "worst_and_mean" and self.policy in ("multiplex", "gavel"):
            if not p.adm_roll_s:
                raise ValueError(f"job {run.job.name}: slo_check worst_and_mean needs the "
                                 "typical admission profile (profile with this fleet's "
                                 "Profiler)")
            roll_seq, train_seq = p.adm_roll_s, p.adm_train_s
            roll_mean, train_mean = float(np.mean(roll_seq)), float(np.mean(train_seq))
            tail_at = float(np.mean(p.adm_tail_at))
            iter_s = roll_mean + train_mean + p.sync_s
        else:  # the paper's check: the worst case is all admission knows
            roll_seq, train_seq = (), ()
            roll_mean, train_mean = p.roll_worst_s, p.train_worst_s
            tail_at = p.tail_at_worst
            iter_s = p.iter_worst_s
        return Demand(
            run.job.name, len_nodes(run.job.rollout.gpus, self.rpool.node_size),
            len_nodes(run.job.train.gpus, self.tpool.node_size), p.roll_worst_s,
            p.train_worst_s, roll_mean, train_mean, p.sync_s, p.warm_roll_s,
            p.warm_train_s, p.host_roll_bytes, p.host_train_bytes, run.job.slo,
            roll_seq=roll_seq, train_seq=train_seq,
            # the one-off delays are spread over the run admission expects
            solo_jct_s=p.cold_roll_s + p.cold_train_s + run.steps * iter_s,
            cold_roll_s=p.cold_roll_s, cold_train_s=p.cold_train_s,
            tail_at=tail_at if migrates else 1.0,
            tail_at_worst=p.tail_at_worst if migrates else 1.0,
            tail_fraction=p.tail_fraction if migrates else 1.0,
            tail_stretch=p.tail_stretch, migration_s=self.mux.migration_s)

    def _try_place(self, run: JobRun) -> bool:
        d = self._demand(run)
        t0 = time.perf_counter()
        placement: Placement | None
        if self.policy in ("multiplex", "gavel"):
            placement = self.sched.decide(d)
        elif self.policy == "solo":
            placement = self.sched._new_group(d)
        else:  # colocated: the train nodes only
            if self.pools.available("train") < d.train_nodes:
                placement = None
            else:
                t = self.pools.peek("train", d.train_nodes)
                placement = Placement(d.name, self.sched._next_gid, "new", (), t, (), t,
                                      d.train_nodes * self.node_usd["train"])
        self.decision_s += time.perf_counter() - t0
        if placement is None:
            return False
        if self.policy == "colocated":
            d = replace(d, roll_nodes=0)
        self.sched.admit(d, placement)
        self.allocated["roll"] += len(placement.new_roll)
        self.allocated["train"] += len(placement.new_train)
        self._record_cost()
        run.roll, run.train, run.gid, run.kind = (placement.roll, placement.train,
                                                  placement.gid, placement.kind)
        run.start = self.env.now
        self.rec.instant(FLEET, "placement", self.env.now, job=d.name, group=placement.gid,
                         kind=placement.kind, rollout_nodes=list(placement.roll),
                         train_nodes=list(placement.train),
                         delta_usd_per_hour=placement.delta_usd_per_hour)
        run.proc = self.env.process(self._job(run))
        return True

    # -------------------------------------------------------------------- jobs
    def _job(self, run: JobRun) -> Generator[simpy.Event, Any, None]:
        track = f"job.{run.job.name}"
        try:
            for step in range(run.steps):
                k = int(run.draws[step])
                t0 = self.env.now
                if self.policy == "colocated":
                    yield from self._colocated(run, step, k)
                elif self.policy == "gavel":
                    yield from self._whole_iteration(run, step, k)
                else:
                    yield from self._rollout(run, step, k)
                    yield from self._train(run, step, k)
                    yield from self._sync(run, step)
                self.rec.span(track, "iteration", t0, self.env.now, step=step, group=run.gid)
                run.done_steps += 1
        except simpy.Interrupt:
            for key, req in run.held:  # give back what it holds, leave the queues
                if req.triggered:
                    self.nodes[key].res.release(req)
                else:
                    req.cancel()
            run.held.clear()
            self.rec.instant(FLEET, "crash", self.env.now, job=run.job.name,
                             done_steps=run.done_steps, steps=run.steps)
            self._leave(run)
            return
        self._finish(run)

    def _acquire(self, run: JobRun, keys: list[tuple[str, int]]
                 ) -> Generator[simpy.Event, Any, list[simpy.resources.resource.Request]]:
        reqs = []
        for key in sorted(keys):  # one global order: gangs never deadlock
            req = self.nodes[key].res.request()
            run.held.append((key, req))
            yield req
            reqs.append(req)
        return reqs

    def _release(self, run: JobRun, keys: list[tuple[str, int]],
                 reqs: list[simpy.resources.resource.Request]) -> None:
        for key, req in zip(sorted(keys), reqs, strict=True):
            self.nodes[key].res.release(req)
        gone = set(map(id, reqs))
        run.held = [h for h in run.held if id(h[1]) not in gone]

    def _switch(self, run: JobRun, keys: list[tuple[str, int]], step: int
                ) -> Generator[simpy.Event, Any, None]:
        """Bring the job onto its nodes: cold the first time, warm after another job."""
        p, name = run.profile, run.job.name
        worst = 0.0
        kinds = []
        for key in keys:
            node = self.nodes[key]
            if name not in node.seen:
                cost, kind = (p.cold_roll_s if key[0] == "roll" else p.cold_train_s), "cold"
            elif node.last != name:
                cost, kind = (p.warm_roll_s if key[0] == "roll" else p.warm_train_s), "warm"
            else:
                cost, kind = 0.0, ""
            node.seen.add(name)
            node.last = name
            kinds.append((key, cost, kind))
            worst = max(worst, cost)
        if worst > 0:
            t0 = self.env.now
            yield self.env.timeout(worst)
            for key, cost, kind in kinds:
                if kind:
                    self.rec.span(self.nodes[key].track, "switch", t0, t0 + cost, job=name,
                                  step=step, what=kind)

    def _rollout(self, run: JobRun, step: int, k: int) -> Generator[simpy.Event, Any, None]:
        p, name = run.profile, run.job.name
        keys = [("roll", n) for n in run.roll]
        reqs = yield from self._acquire(run, keys)
        yield from self._switch(run, keys, step)
        t0 = self.env.now
        dur = max(stretched_s(t0, p.roll_s[k], self.nodes[key].tails) for key in keys)
        for key in keys:
            node = self.nodes[key]
            node.tails = [(u, f) for u, f in node.tails if u > t0]
        head = dur * p.tail_at[k]
        if (self.policy == "multiplex" and self.mux.migration and p.tail_at[k] < 1.0
                and p.tail_fraction < 1.0):
            yield self.env.timeout(head)
            if any(self.nodes[key].res.queue for key in keys):
                rest = (dur - head) * p.tail_stretch + self.mux.migration_s
                t1 = self.env.now
                for key in keys:
                    node = self.nodes[key]
                    node.tails.append((t1 + rest, p.tail_fraction))
                    self.rec.span(node.track, "rollout", t0, t1, job=name, step=step)
                    self.rec.span(node.track, "tail", t1, t1 + rest, job=name, step=step,
                                  fraction=p.tail_fraction)
                self._release(run, keys, reqs)
                yield self.env.timeout(rest)
                return
            yield self.env.timeout(dur - head)
        else:
            yield self.env.timeout(dur)
        for key in keys:
            self.rec.span(self.nodes[key].track, "rollout", t0, self.env.now, job=name,
                          step=step)
        self._release(run, keys, reqs)

    def _train(self, run: JobRun, step: int, k: int) -> Generator[simpy.Event, Any, None]:
        keys = [("train", n) for n in run.train]
        reqs = yield from self._acquire(run, keys)
        yield from self._switch(run, keys, step)
        t0 = self.env.now
        yield self.env.timeout(run.profile.train_s[k])
        for key in keys:
            self.rec.span(self.nodes[key].track, "train", t0, self.env.now, job=run.job.name,
                          step=step)
        self._release(run, keys, reqs)

    def _sync(self, run: JobRun, step: int) -> Generator[simpy.Event, Any, None]:
        t0 = self.env.now
        yield self.env.timeout(run.profile.sync_s)
        self.rec.span(f"job.{run.job.name}", "weight_sync", t0, self.env.now, step=step)

    def _whole_iteration(self, run: JobRun, step: int, k: int
                         ) -> Generator[simpy.Event, Any, None]:
        """Job-level sharing: all of the job's nodes for the whole iteration."""
        rkeys = [("roll", n) for n in run.roll]
        tkeys = [("train", n) for n in run.train]
        reqs = yield from self._acquire(run, rkeys + tkeys)
        yield from self._switch(run, rkeys + tkeys, step)
        p, name = run.profile, run.job.name
        t0 = self.env.now
        yield self.env.timeout(p.roll_s[k])
        t1 = self.env.now
        yield self.env.timeout(p.train_s[k])
        for key in rkeys:
            self.rec.span(self.nodes[key].track, "rollout", t0, t1, job=name, step=step)
        for key in tkeys:
            self.rec.span(self.nodes[key].track, "train", t1, self.env.now, job=name,
                          step=step)
        self._release(run, rkeys + tkeys, reqs)
        yield from self._sync(run, step)

    def _colocated(self, run: JobRun, step: int, k: int) -> Generator[simpy.Event, Any, None]:
        p = run.profile
        keys = [("train", n) for n in run.train]
        if step == 0:  # engines and trainer start cold on the same GPUs
            t0 = self.env.now
            yield self.env.timeout(p.cold_roll_s + p.cold_train_s)
            for key in keys:
                self.rec.span(self.nodes[key].track, "switch", t0, self.env.now,
                              job=run.job.name, step=step, what="cold")
        t0 = self.env.now
        yield self.env.timeout(p.coloc_s[k])
        for key in keys:
            self.rec.span(self.nodes[key].track, "iteration", t0, self.env.now,
                          job=run.job.name, step=step)

    def _finish(self, run: JobRun) -> None:
        now = self.env.now
        jct = now - run.job.arrival
        samples = run.steps * run.profile.samples
        self.rec.instant(FLEET, "job_done", now, job=run.job.name, group=run.gid,
                         kind=run.kind, arrival=run.job.arrival, start=run.start, finish=now,
                         steps=run.steps, samples=samples, solo_jct_s=run.solo_jct_s,
                         slowdown=jct / run.solo_jct_s, slo=run.job.slo,
                         rollout_nodes=len(run.roll), train_nodes=len(run.train))
        self._leave(run)

    def _leave(self, run: JobRun) -> None:
        """The job is gone (done or crashed): free its nodes, place waiting jobs."""
        run.proc = None
        freed_r, freed_t = self.sched.depart(run.job.name)
        self.allocated["roll"] -= len(freed_r)
        self.allocated["train"] -= len(freed_t)
        self._record_cost()
        waiting, self.queue = self.queue, []
        for other in waiting:
            if not self._try_place(other):
                self.queue.append(other)


def len_nodes(gpus: int | None, node_size: int) -> int:
    return (gpus or 0) // node_size
