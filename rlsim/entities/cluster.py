"""Builds the simulated cluster of one scenario: pools, engines, trainer, rewards, env, link.

Owns the wiring from a prepared job (a loaded `Scenario` and its checked cost models,
`rlsim.cost.job.CostModels`, from the prepare step, rlsim/prepare.py) to entities. It
checks nothing itself: what cannot run was refused before, with the field to change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import simpy

from rlsim.config.hardware import ModelSpec
from rlsim.config.placement import Placement
from rlsim.config.scenario import Scenario
from rlsim.cost.inference import InferenceCost
from rlsim.cost.job import CostModels, cost_models, engine_cost
from rlsim.cost.profile import Profile
from rlsim.cost.training import TrainCost
from rlsim.entities.engine import RolloutEngine
from rlsim.entities.env import EnvPool
from rlsim.entities.link import Link
from rlsim.entities.reward import RewardPool
from rlsim.entities.trainer import Trainer
from rlsim.trace import Recorder


@dataclass
class Cluster:
    """Everything a policy drives."""

    env: simpy.Environment
    recorder: Recorder
    scenario: Scenario
    placement: Placement
    model: ModelSpec
    engines: list[RolloutEngine]
    engine_cost: InferenceCost
    trainer: Trainer
    train_cost: TrainCost
    reward: RewardPool
    judges: list[RolloutEngine]
    link: Link
    weight_bytes: float
    env_pool: EnvPool
    """Environment workers for the steps between the turns of multi-turn rollouts."""
    judge_load_s: float = 0.0
    """Seconds to bring a time-shared judge's weights onto the rollout GPUs before it judges
    (a warm start); 0 for dedicated and mps judges, which stay loaded."""
    engines_at: Callable[[int], tuple[list[RolloutEngine], InferenceCost]] | None = None
    """Rollout engines re-laid out at another TP degree over the same GPUs (built once per
    degree, then reused), for policies that change the rollout TP between steps."""
    closables: list[RolloutEngine | Trainer] = field(default_factory=list)
    """Every engine, judge and trainer built for the run (other TP layouts and a stream
    trainer included), for `close`."""

    def close(self) -> None:
        """The run has ended: every entity writes the spans and gauges it still holds open
        (a busy engine's `busy` span, a trainer pass in flight), ended at the run's end."""
        for entity in self.closables:
            entity.close()

    def relayout(self, tp: int) -> None:
        """Make the engines at TP `tp` the current ones (they must all be idle); the weight
        sync link is re-rated for the new layout. Raises ScenarioError when the model cannot
        run at that TP (e.g. TP does not divide its attention heads)."""
        if self.engines_at is None:
            raise RuntimeError("this cluster cannot change its rollout TP")
        self.engines, self.engine_cost = self.engines_at(tp)


def build_cluster(scenario: Scenario, env: simpy.Environment, recorder: Recorder,
                  costs: CostModels | None = None) -> Cluster:
    """Create every entity of the scenario on its checked cost models (`costs`, from the
    prepare step, rlsim/prepare.py; built here when not given, for tests and tools that
    build a cluster alone)."""
    costs = costs or cost_models(scenario)
    place, profiles = costs.placement, costs.profiles
    engine_cost_, kv, reserved = costs.engine_cost, costs.kv_tokens, costs.reserved_bytes_per_gpu
    engine_options, train_cost = costs.engine_options, costs.train_cost
    judge_cost, judge_kv = costs.judge_cost, costs.judge_kv
    model = scenario.model_spec
    r = scenario.rollout
    rpool, tpool = place.rollout_pool, place.train_pool
    rprofile, tprofile = profiles[rpool.name], profiles[tpool.name]
    jc = scenario.reward.judge if scenario.uses_judge else None
    engines = [
        RolloutEngine(env, f"engine{i}", engine_cost_, kv, r.max_running_seqs,
                      r.max_batched_tokens, recorder, scenario.engine_mode, rpool.name,
                      r.tp * r.pp, r.prefix_caching, r.request_overhead,
                      scenario.framework.rollout_speed)
        for i in range(place.engines)
    ]
    trainer = Trainer(env, "trainer", train_cost, tpool.name, place.train_gpus, recorder)
    judges: list[RolloutEngine] = []
    if jc is not None and judge_cost is not None:
        dedicated = jc.placement == "dedicated"
        judge_pool = scenario.pool(jc.pool) if dedicated and jc.pool else rpool
        count = (jc.gpus or 0) // jc.tp if dedicated else place.rollout_gpus // jc.tp
        judges = [
            RolloutEngine(env, f"judge{i}", judge_cost, judge_kv, r.max_running_seqs,
                          r.max_batched_tokens, recorder, scenario.engine_mode,
                          judge_pool.name, jc.tp)
            for i in range(count)
        ]
    reward = RewardPool(env, scenario.reward.workers, recorder)
    link = Link(env, "weight_sync", _sync_bandwidth(scenario, place, tprofile),
                scenario.link.latency, recorder)
    for pool in scenario.pools:
        prof = profiles[pool.name]
        recorder.instant("cluster", "pool", 0.0, pool=pool.name, gpu=pool.gpu_spec.name,
                         gpus=pool.gpus, usd_per_gpu_hour=pool.price,
                         profile=pool.profile or f"builtin:{prof.gpu}",
                         profile_hash=prof.content_hash())
    env_pool = EnvPool(env, scenario.env.workers, recorder)
    _record_entities(recorder, engines, judges, trainer, reward, env_pool, link)
    layouts: dict[int, tuple[list[RolloutEngine], InferenceCost]] = {r.tp: (engines,
                                                                            engine_cost_)}
    closables: list[RolloutEngine | Trainer] = [*engines, *judges, trainer]
    recorder.instant("cluster", "run", 0.0, steps=scenario.steps,
                     warmup_steps=scenario.output.warmup_steps, policy=scenario.policy.name)

    def engines_at(tp: int) -> tuple[list[RolloutEngine], InferenceCost]:
        # Each engine of the new layout receives the weights over its own tp GPUs.
        link.bandwidth = _sync_bandwidth(scenario, place, tprofile, tp)
        if tp not in layouts:
            cost, kv_tp = engine_cost(model, rpool, tp, r.gpu_memory_utilization, rprofile,
                                      "rollout.tp", reserved, options=engine_options)
            built = [RolloutEngine(env, f"tp{tp}-engine{i}", cost, kv_tp, r.max_running_seqs,
                                   r.max_batched_tokens, recorder, scenario.engine_mode,
                                   rpool.name, tp * r.pp, r.prefix_caching,
                                   r.request_overhead, scenario.framework.rollout_speed)
                     for i in range(place.rollout_gpus // (tp * r.pp))]
            _record_entities(recorder, built, [], None, None, None, None)
            closables.extend(built)
            layouts[tp] = (built, cost)
        return layouts[tp]

    return Cluster(env, recorder, scenario, place, model, engines, engine_cost_, trainer,
                   train_cost, reward, judges, link, train_cost.weight_bytes(), env_pool,
                   judge_cost.warm_start_s() if isinstance(judge_cost, InferenceCost)
                   and jc is not None and jc.placement == "time_shared" else 0.0,
                   engines_at, closables)


def _record_entities(recorder: Recorder, engines: list[RolloutEngine],
                     judges: list[RolloutEngine], trainer: Trainer | None,
                     reward: RewardPool | None, env_pool: EnvPool | None,
                     link: Link | None) -> None:
    """One `cluster`/`entity` instant per track-owning entity, so readers (Perfetto's
    process per pool, the report's KV plots) know each track's pool, GPUs and capacity."""
    for kind, group in (("engine", engines), ("judge", judges)):
        for e in group:
            recorder.instant("cluster", "entity", 0.0, track=f"rollout.{e.name}", kind=kind,
                             pool=e.pool, gpus=e.gpus, kv_capacity_tokens=e.kv_capacity)
    if trainer is not None:
        recorder.instant("cluster", "entity", 0.0, track=trainer.track, kind="trainer",
                         pool=trainer.pool, gpus=trainer.gpus)
    if reward is not None:
        recorder.instant("cluster", "entity", 0.0, track=reward.track, kind="reward",
                         pool=None, workers=reward.workers)
    if env_pool is not None:
        recorder.instant("cluster", "entity", 0.0, track=env_pool.track, kind="env",
                         pool=None, workers=env_pool.workers)
    if link is not None:
        recorder.instant("cluster", "entity", 0.0, track=f"link.{link.name}", kind="link",
                         pool=None)


def _sync_bandwidth(scenario: Scenario, place: Placement, profile: Profile,
                    tp: int | None = None) -> float:
    """Effective bandwidth of one weight-sync broadcast, per engine (all engines in parallel).

    Each engine needs the full weights over its `tp` GPUs. Colocated, they are gathered
    from the trainer's shards: the shards on the engine's own node come over NVLink, the
    rest over the inter-node network, in proportion to where the shards live.
    Disaggregated, the trainer sends parallel shards over the network, unless both roles
    sit on one node (then NVLink). The narrower of sender ports and receiver ports bounds it.

    That is the `link` scheme's rate (the weight bytes over the engine's `tp` ports). Every
    other scheme (`rlsim.cost.weightsync`) sends the bytes each engine *rank* receives, so
    its link is one GPU's port: the same without the `tp` / ports factor. A given
    `link.bandwidth` is the path's rate either way.
    """
    if scenario.link.bandwidth is not None:
        return scenario.link.bandwidth
    per_rank = scenario.weight_sync.scheme != "link"
    rollout_tp = 1 if per_rank else (scenario.rollout.tp if tp is None else tp)
    rpool, tpool = place.rollout_pool, place.train_pool
    rgpu, tgpu = rpool.gpu_spec, tpool.gpu_spec
    nvlink = rgpu.nvlink_bandwidth / 2 * profile.allreduce_bus_efficiency  # one direction
    network = min(rgpu.network_bandwidth, tgpu.network_bandwidth) * profile.network_efficiency
    if place.colocated:
        local = min(1.0, rpool.nvlink_domain / place.train_gpus)
        per_gpu = 1.0 / (local / nvlink + (1.0 - local) / network)
        return per_gpu * rollout_tp
    one_node = rpool.name == tpool.name and rpool.gpus <= rpool.nvlink_domain
    ports = 1 if per_rank else min(rollout_tp, place.train_gpus)
    return (nvlink if one_node else network) * ports
