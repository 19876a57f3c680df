"""Rollout engines' recovery: fail-stop crashes and fail-slow engines (docs/faults.md).

A crashed engine comes back by its scheme (`recovery.engine.scheme`):
- `cold_restart`: noticed after detect_s, a full cold start, its requests in flight run
  again from scratch;
- `shadow` (Belayer): noticed at the next poll, a pre-started shadow promoted in
  promote_s, its requests re-prefill their prompt and logged tokens; the shadow then needs
  a cold start of its own before it covers another fault, and costs KV memory all along
  (see `entities.cluster`);
- with `recovery.scope: role` (RobustRL), its turns in flight move to the live engines
  once it is noticed, while a replacement cold-starts (`_reassign`).
Requests come back to the samples that still wait for them (`Rollout.requeue`).

A slow engine decodes `factor` times slower for the fault's duration; after detect_s it is
mitigated (`recovery.slow.mitigation`): its queue moved to the healthy engines
(`rebalance`), or replaced as if it had crashed (`fail_stop`). Slowness belongs to the
hardware: it outlasts crashes and restarts, and only the fault that set it ends it.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import simpy

from rlsim.config.faults import FaultSpec, RecoveryConfig
from rlsim.entities.cluster import Cluster
from rlsim.entities.engine import Request, RolloutEngine
from rlsim.entities.rollout import Rollout
from rlsim.policies.recovery.costs import engine_cold_start_s
from rlsim.policies.recovery.ledger import TRACK, Ledger


class EngineRecovery:
    """The crashes and slowdowns of a run's rollout engines, and their recovery."""

    def __init__(self, cluster: Cluster, ledger: Ledger, cfg: RecoveryConfig) -> None:
        self.cluster = cluster
        self.ledger = ledger
        self.env = cluster.env
        self.cfg = cfg
        self.engines: list[RolloutEngine] = cluster.engines
        ecfg = cfg.engine
        self.cold_start_s = engine_cold_start_s(cluster.engine_cost, cfg)
        self.role = cfg.scope == "role"
        self.shadow_ready = [ecfg.scheme == "shadow"] * len(self.engines)
        # the fail-slow fault in force on each engine (its id)
        self._slow: list[int | None] = [None] * len(self.engines)

    # ------------------------------------------------------------------ fail-stop
    def crash(self, i: int, extra_s: float = 0.0, node: int | None = None) -> None:
        """Engine `i` dies now; its scheme brings it back (a fault on a dead engine, or
        during a job restart, changes nothing). A node fault (`node`) also takes its
        shadow (on the same GPUs): it starts cold, `extra_s` later (the replacement
        node's wait), and its shadow is armed again after it."""
        engine = self.engines[i]
        if engine.down or self.ledger.restarting:
            return
        attrs: dict[str, Any] = {} if node is None else {"node": node, "node_wait_s": extra_s}
        fid = self.ledger.fault("engine", i, **attrs)
        lost = engine.crash()
        if node is not None and self.shadow_ready[i]:
            self.shadow_ready[i] = False
            self.env.process(self._rearm_shadow(i, extra_s))
        self.env.process(self._recover(fid, i, lost, self.env.now, extra_s))

    def _recover(self, fid: int, i: int, lost: list[Request],
                 t0: float, extra_s: float = 0.0) -> Generator[simpy.Event, Any, None]:
        cfg = self.cfg.engine
        engine = self.engines[i]
        epoch = self.ledger.epoch
        shadow = self.shadow_ready[i]  # false after a node fault (it took the shadow)
        moved: dict[str, Any] = {}
        if shadow:
            # the watcher notices at its next poll (strictly after the fault)
            wait = cfg.poll_s - math.fmod(t0, cfg.poll_s)
            yield self.env.timeout(wait + cfg.promote_s)
            self.shadow_ready[i] = False
            self.env.process(self._rearm_shadow(i))
        elif self.role and lost:
            # RobustRL: the engine is isolated once noticed; its turns in flight go to the
            # live engines while a replacement starts
            yield self.env.timeout(cfg.detect_s)
            if epoch != self.ledger.epoch:
                return
            lost, moved = self._reassign(engine, lost)
            yield self.env.timeout(extra_s + self.cold_start_s)
        else:
            yield self.env.timeout(cfg.detect_s + extra_s + self.cold_start_s)
        if epoch != self.ledger.epoch:
            return  # the job restarted meanwhile: it restarted this engine too
        engine.restart()
        regenerate = reprefill = 0
        # ahead of requests sent while it was down, the oldest admissions first, as the
        # engine had them (submitted to the front in reverse)
        for r in sorted(lost, key=lambda r: (r.t_submit, r.rid), reverse=True):
            keep = (r.generated // cfg.token_log_every) * cfg.token_log_every if shadow else 0
            keep = max(keep, r.prefix_tokens if shadow else 0)
            regenerate += r.generated - keep
            owner = r.tag
            if isinstance(owner, Rollout):
                if not owner.requeue(r, keep, engine):
                    continue  # its sample no longer waits for it (cancelled, stopped...)
            else:
                r.prefix_tokens = keep
                engine.submit(r, front=True)
            reprefill += r.prompt_tokens + keep
        if moved:
            regenerate += moved["lost_tokens"]
            reprefill += moved["reprefill_tokens"]
        self.ledger.recovered(
            fid, "engine", t0, scheme="shadow" if shadow else "cold_restart",
            requests=len(lost) + moved.get("requests", 0), lost_tokens=regenerate,
            reprefill_tokens=reprefill, gpus=engine.gpus,
            **({"reassigned": moved["reassigned"]} if moved else {}))

    def _reassign(self, crashed: RolloutEngine,
                  lost: list[Request]) -> tuple[list[Request], dict[str, Any]]:
        """Role-based recovery of a crashed engine: its requests go to the least-loaded live
        engines, each turn generated again from its start (RobustRL keeps a trajectory's
        finished turns, not the tokens of the one in flight), oldest first; the requests
        of samples that no longer wait are dropped. Returns what is left for the engine
        itself (all, when no engine is live) and what was moved."""
        live = [e for e in self.cluster.engines if e is not crashed and not e.down]
        if not live:
            return lost, {}
        n = tokens = prefill = 0
        for r in sorted(lost, key=lambda r: (r.t_submit, r.rid)):
            target = min(live, key=lambda e: (e.load, e.name))
            owner = r.tag
            tokens += r.generated
            if isinstance(owner, Rollout):
                if not owner.requeue(r, 0, target):
                    continue
            else:
                r.prefix_tokens = 0
                target.submit(r, front=True)
            n += 1
            prefill += r.prompt_tokens
        self.ledger.rec.instant(TRACK, "reassign", self.env.now, engine=crashed.name,
                                requests=n)
        return [], {"requests": len(lost), "reassigned": n, "lost_tokens": tokens,
                    "reprefill_tokens": prefill}

    def _rearm_shadow(self, i: int, after_s: float = 0.0) -> Generator[simpy.Event, Any, None]:
        """After a promotion (or a node fault, `after_s` its replacement's wait) the engine
        has no shadow until a new one has cold-started."""
        yield self.env.timeout(after_s + self.cold_start_s)
        self.shadow_ready[i] = True

    # ------------------------------------------------------------------ fail-slow
    def slow(self, i: int, spec: FaultSpec) -> Generator[simpy.Event, Any, None]:
        """Engine `i` runs `spec.factor` times slower for `spec.duration` (a process)."""
        engine = self.engines[i]
        if self._slow[i] is not None:
            return  # already slow: a second slowdown of the same hardware changes nothing
        t0 = self.env.now
        fid = self.ledger.fault("engine", i, "slow", factor=spec.factor)
        self._slow[i] = fid
        engine.set_slowdown(spec.factor)
        scfg = self.cfg.slow
        end = t0 + spec.duration
        if scfg.mitigation != "none" and scfg.detect_s < spec.duration:
            yield self.env.timeout(scfg.detect_s)
            if scfg.mitigation == "fail_stop":
                # replaced: the recovery scheme brings a healthy engine
                self._slow[i] = None
                engine.set_slowdown(1.0)
                self.ledger.recovered(fid, "engine", t0, mitigation="fail_stop")
                self.crash(i)
                return
            self._rebalance(i)
        if end > self.env.now:
            yield self.env.timeout(end - self.env.now)
        if self._slow[i] == fid:
            self._slow[i] = None
            engine.set_slowdown(1.0)
        self.ledger.recovered(fid, "engine", t0, mitigation=scfg.mitigation)

    def _rebalance(self, i: int) -> None:
        """Move a slow engine's waiting requests to the least-loaded healthy engines."""
        slow = self.engines[i]
        others = [e for e in self.engines if e is not slow and not e.down
                  and e.slowdown == 1.0]
        waiting = list(slow.waiting)
        if not others or not waiting:
            return
        hooks = [r.on_done for r in waiting]
        for r in waiting:
            r.on_done = None
        slow.abort(waiting)
        for r, hook in zip(waiting, hooks, strict=True):
            r.on_done = hook
            r.prefix_tokens = r.generated
            min(others, key=lambda e: (e.load, e.name)).submit(r)
        self.ledger.rec.instant(TRACK, "rebalance", self.env.now, engine=i,
                                requests=len(waiting))
