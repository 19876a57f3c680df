"""Where each role runs: the GPUs of rollout, trainer and judge, checked against the pools.

Owns `Placement` (how many GPUs and engines each role gets) and `check_placement`, which
raises `ScenarioError` naming the field for impossible placements: a missing pool, a
trainer or judge TP larger than a node, a rollout engine (tp x pp GPUs) that spans nodes
without filling whole ones, roles that do not fit in their pool, colocation across
different pools; first of all, `policy_checks.check_policy` (the placement, multi-turn
samples and faults the policy supports). `Placement` also owns which GPU belongs to which
engine (tp x pp GPUs each) or trainer rank, and how many instances each fault kind has.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rlsim.config.errors import ScenarioError
from rlsim.config.policy_checks import check_policy
from rlsim.config.scenario import PoolConfig, Scenario


@dataclass(frozen=True, slots=True)
class Placement:
    """The resolved GPU counts of each role, and which GPU belongs to which engine or
    trainer rank: the rollout GPUs come first, engine by engine (`engine_gpus` = tp x pp
    each), then the training GPUs (none of their own when colocated)."""

    colocated: bool
    rollout_pool: PoolConfig
    train_pool: PoolConfig
    rollout_gpus: int
    train_gpus: int
    engines: int
    engine_gpus: int = 1

    @property
    def gpus(self) -> int:
        """The job's distinct GPUs (what `faults.gpu` counts: rollout, then training)."""
        return self.rollout_gpus + (0 if self.colocated else self.train_gpus)

    def gpu_role(self, gpu: int) -> tuple[str, int]:
        """("engine", its engine) for a rollout GPU, ("trainer", its rank) for a training
        GPU of a disaggregated job; GPU i of a colocated job is both, its engine first."""
        if not 0 <= gpu < self.gpus:
            raise IndexError(f"GPU {gpu} of {self.gpus}")
        if gpu < self.rollout_gpus:
            return "engine", gpu // self.engine_gpus
        return "trainer", gpu - self.rollout_gpus

    @property
    def rollout_nodes(self) -> int:
        """Nodes the rollout GPUs take (the last may be partly the job's)."""
        return -(-self.rollout_gpus // self.rollout_pool.node_size)

    @property
    def nodes(self) -> int:
        """The job's nodes (what `faults.node` counts): the rollout GPUs' nodes, then the
        training GPUs' when disaggregated."""
        if self.colocated:
            return self.rollout_nodes
        return self.rollout_nodes + -(-self.train_gpus // self.train_pool.node_size)

    def node_gpus(self, node: int) -> range:
        """The job's GPUs (as `faults.gpu` numbers them) on node `node`."""
        if not 0 <= node < self.nodes:
            raise IndexError(f"node {node} of {self.nodes}")
        size = self.rollout_pool.node_size
        if node < self.rollout_nodes:
            return range(node * size, min((node + 1) * size, self.rollout_gpus))
        size = self.train_pool.node_size
        start = self.rollout_gpus + (node - self.rollout_nodes) * size
        return range(start, min(start + size, self.gpus))

    def instances(self, kind: str) -> int:
        """How many instances a fault kind (`faults.<kind>`) has: engines, one trainer,
        one weight-sync link, GPUs, nodes."""
        return {"engine": self.engines, "trainer": 1, "link": 1, "gpu": self.gpus,
                "node": self.nodes}[kind]


def _pool(scenario: Scenario, name: str, field: str) -> PoolConfig:
    try:
        return scenario.pool(name)
    except KeyError:
        names = ", ".join(p.name for p in scenario.pools)
        raise ScenarioError(field, f"no pool named {name!r}; pools are: {names}") from None


def _check_tp(tp: int, pool: PoolConfig, field: str) -> None:
    if tp & (tp - 1):
        raise ScenarioError(field, f"TP {tp} must be a power of two (1, 2, 4, 8)")
    if tp > pool.nvlink_domain:
        raise ScenarioError(
            field, f"TP {tp} is larger than a node of pool {pool.name!r} "
            f"({pool.nvlink_domain} GPUs); TP runs inside one node (NVLink domain)",
        )


def _check_engine(tp: int, pp: int, pool: PoolConfig, gpus: int) -> None:
    """A rollout engine of tp x pp GPUs: TP inside a node or a whole number of nodes (vLLM
    runs TP over the network then), the engine inside a node or on whole nodes, and the
    rollout GPUs a whole number of engines. The node here is the NVLink domain (a GB200
    NVL72 rack joins its trays)."""
    node = pool.nvlink_domain
    if tp & (tp - 1):
        raise ScenarioError("rollout.tp", f"TP {tp} must be a power of two (1, 2, 4, 8, ...)")
    if tp > node and tp % node:
        raise ScenarioError(
            "rollout.tp", f"TP {tp} spans nodes of pool {pool.name!r} ({node} GPUs) but is not "
            f"a whole number of nodes; use a TP up to {node} or a multiple of it")
    size = tp * pp
    if size > node and size % node:
        raise ScenarioError(
            "rollout.pp", f"an engine of tp x pp = {tp} x {pp} = {size} GPUs spans nodes of "
            f"pool {pool.name!r} ({node} GPUs) but is not a whole number of nodes; make "
            f"tp x pp a multiple of {node} or at most {node}")
    if gpus % size:
        field = "rollout.pp" if pp > 1 else "rollout.tp"
        raise ScenarioError(field, f"rollout GPUs ({gpus}) must be a multiple of the engine's "
                            f"tp x pp = {tp} x {pp} = {size} GPUs")


def resolve_placement(scenario: Scenario) -> Placement:
    """Resolve and check the placement; raises ScenarioError on an impossible one (at
    load, `check_placement`, after the policy's own checks; the prepare step resolves it
    again for the result)."""
    r, t = scenario.rollout, scenario.train
    rpool = _pool(scenario, r.pool, "rollout.pool")
    tpool = _pool(scenario, t.pool, "train.pool")
    colocated = scenario.policy.placement == "colocated"
    if colocated and rpool.name != tpool.name:
        raise ScenarioError(
            "train.pool", f"colocated placement needs rollout and train on one pool, got "
            f"{r.pool!r} and {t.pool!r}; set policy.placement=disaggregated or use one pool",
        )
    shared = rpool.name == tpool.name
    if colocated:
        rg = r.gpus or rpool.gpus
        tg = t.gpus or rg
        if tg != rg:
            raise ScenarioError("train.gpus", f"colocated roles share GPUs: train.gpus ({tg}) "
                                f"must equal rollout.gpus ({rg})")
    elif shared:
        half = (rpool.nodes // 2) * rpool.node_size or rpool.gpus // 2
        rg = r.gpus or (rpool.gpus - t.gpus if t.gpus else half)
        tg = t.gpus or rpool.gpus - rg
        if rg + tg > rpool.gpus:
            raise ScenarioError(
                "train.gpus", f"rollout ({rg}) + train ({tg}) GPUs exceed pool {rpool.name!r} "
                f"({rpool.gpus} GPUs)",
            )
    else:
        rg, tg = r.gpus or rpool.gpus, t.gpus or tpool.gpus
    for gpus, pool, field in ((rg, rpool, "rollout.gpus"), (tg, tpool, "train.gpus")):
        if gpus <= 0:
            raise ScenarioError(field, f"no GPUs left for this role in pool {pool.name!r}")
        if gpus > pool.gpus:
            raise ScenarioError(field, f"{gpus} GPUs requested but pool {pool.name!r} has "
                                f"{pool.gpus}")
    _check_engine(r.tp, r.pp, rpool, rg)
    _check_tp(t.tp, tpool, "train.tp")
    shard = t.tp * t.pp * t.cp
    if tg % shard:
        raise ScenarioError("train.gpus", f"train GPUs ({tg}) must be a multiple of "
                            f"TP x PP x CP = {shard}")
    judge = scenario.reward.judge
    if scenario.uses_judge and judge is not None and judge.placement != "dedicated":
        # One judge engine per judge.tp rollout GPUs, inside a node.
        _check_tp(judge.tp, rpool, "reward.judge.tp")
        if rg % judge.tp:
            raise ScenarioError("reward.judge.tp", f"a {judge.placement} judge runs on the "
                                f"{rg} rollout GPUs, which must be a multiple of its TP "
                                f"{judge.tp}")
    elif scenario.uses_judge and judge is not None:
        assert judge.pool is not None and judge.gpus is not None  # JudgeConfig checks
        jpool = _pool(scenario, judge.pool, "reward.judge.pool")
        _check_tp(judge.tp, jpool, "reward.judge.tp")
        if judge.gpus % judge.tp:
            raise ScenarioError("reward.judge.gpus", f"{judge.gpus} GPUs must be a multiple "
                                f"of TP {judge.tp}")
        # Judge engines hold their GPUs for the whole run: they must fit beside the roles
        # already placed on the same pool.
        taken = (rg if jpool.name == rpool.name else 0) + \
            (tg if jpool.name == tpool.name and not colocated else 0)
        if judge.gpus + taken > jpool.gpus:
            raise ScenarioError(
                "reward.judge.gpus", f"{judge.gpus} judge GPUs do not fit in pool "
                f"{jpool.name!r}: {taken} of its {jpool.gpus} GPUs already run rollout/train")
    return Placement(colocated, rpool, tpool, rg, tg, rg // (r.tp * r.pp), r.tp * r.pp)


def check_placement(scenario: Scenario, base_dir: Path) -> None:
    """All cross-field checks that need no cost model, plus referenced files existing:
    the policy's own checks first (what it supports), then the placement."""
    check_policy(scenario)
    resolve_placement(scenario)
    trace = scenario.workload.trace
    if trace is not None and not (base_dir / trace.path).exists():
        raise ScenarioError("workload.trace.path", f"trace {trace.path!r} not found "
                            f"(relative to {base_dir})")
