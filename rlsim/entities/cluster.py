"""Builds the simulated cluster of one scenario: pools, engines, trainer, rewards, env, link.

Owns the wiring from a validated `Scenario` to entities with their cost models, and the
checks that need a cost model (weights that do not fit in GPU memory, a sequence longer
than an engine's KV cache, trainer state larger than its GPUs), raised as `ScenarioError`
naming the field to change.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import simpy

from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import GpuSpec, ModelSpec
from rlsim.config.placement import Placement, resolve_placement
from rlsim.config.scenario import PoolConfig, Scenario
from rlsim.cost.fit import FitError, check_sequence, engine_fit
from rlsim.cost.inference import (
    DEFAULT_OPTIONS,
    EngineOptions,
    InferenceCost,
    check_options,
    check_tp,
)
from rlsim.cost.profile import Profile, builtin_profile, load_profile
from rlsim.cost.streamed import StreamedWeightsCost
from rlsim.cost.training import TrainCost
from rlsim.entities.engine import EngineCost, RolloutEngine
from rlsim.entities.env import EnvPool
from rlsim.entities.link import Link
from rlsim.entities.reward import RewardPool
from rlsim.entities.trainer import Trainer
from rlsim.trace import Recorder

GIB = 2.0**30


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


def _profile(pool: PoolConfig, field: str) -> Profile:
    """The pool's calibrated profile if it names one, else its GPU type's built-in one."""
    if pool.profile is None:
        return builtin_profile(pool.gpu_spec)
    try:
        return load_profile(pool.profile)
    except (OSError, ValueError) as err:
        raise ScenarioError(field, f"cannot use profile {pool.profile!r}: {err}") from None


def _engine_cost(model: ModelSpec, pool: PoolConfig, tp: int, util: float, profile: Profile,
                 field: str, reserved_bytes_per_gpu: float = 0.0,
                 need_tokens: int = 1,
                 options: EngineOptions = DEFAULT_OPTIONS) -> tuple[InferenceCost, int]:
    """The engine's cost model and KV capacity; `reserved_bytes_per_gpu` is memory another
    model on the same GPUs holds (an mps judge), taken from the KV cache; `need_tokens` is
    the KV an engine must hold (one longest sequence), for the advice when it cannot. The
    checks are `rlsim estimate`'s (`cost.fit`); `options` (CUDA graphs, FP8, EP: the
    scenario's rollout switches) are checked first, each error naming its field."""
    gpu = _node_gpu(pool)
    if options == DEFAULT_OPTIONS:
        try:
            return engine_fit(model, gpu, tp, util, profile, reserved_bytes_per_gpu,
                              need_tokens)
        except ValueError as err:  # too large for its GPUs, or a TP the model cannot take
            raise ScenarioError(field, str(err)) from None
    try:
        check_tp(model, gpu, tp)
    except ValueError as err:
        raise ScenarioError(field, str(err)) from None
    try:
        check_options(model, gpu, tp, options)
    except ValueError as err:
        name = str(err).split("=")[0].split(" ")[0]  # dtype, kv_cache_dtype, ep or pp
        raise ScenarioError(f"rollout.{name}", str(err)) from None
    # FP8 weights and KV change what fits, so the BF16 fit check of `engine_fit` does not
    # apply; the same memory balance, at this engine's own byte counts.
    cost = InferenceCost(model, gpu, tp, profile, options=options)
    kv = cost.kv_capacity_tokens(util) - math.ceil(
        reserved_bytes_per_gpu / cost.kv_bytes_per_token_per_gpu)
    if kv <= 0:
        raise ScenarioError(field, (
            f"{model.name} does not fit: {cost.weight_bytes_per_gpu() / GIB:.1f} GiB of "
            f"{options.dtype} weights per GPU at TP {tp}"
            + (f" x PP {options.pp}" if options.pp > 1 else "") + " leave no KV cache in "
            f"{pool.gpu_spec.name}'s {pool.gpu_spec.hbm / GIB:.1f} GiB x {util} less the "
            f"{profile.engine_memory_reserve_bytes / GIB:.1f} GiB engine reserve; raise tp"))
    return cost, kv


def _train_field(message: str) -> str:
    """The `train` field a TrainCost error is about, from the knob it names first
    (`ep=4 must divide ...` -> `train.ep`); `train` when it names none."""
    for knob in ("ep", "pp", "cp", "tp", "gpus", "backend"):
        if message.startswith((f"{knob}=", f"{knob} ")):
            return f"train.{knob}"
    return "train"


def _node_gpu(pool: PoolConfig) -> GpuSpec:
    """The pool's GPU with the pool's node size: the NVLink domain an engine's collectives
    stay inside before they cross the network."""
    gpu = pool.gpu_spec
    if gpu.gpus_per_node == pool.node_size:
        return gpu
    return gpu.model_copy(update={"gpus_per_node": pool.node_size})


def _check_longest(scenario: Scenario, pool: PoolConfig, cost: InferenceCost, kv: int,
                   util: float, reserved_bytes_per_gpu: float) -> None:
    """One longest rollout sequence fits the model's context and an engine's KV cache."""
    w = scenario.workload
    try:
        check_sequence(cost.model, pool.gpu_spec, cost.tp, util, cost.profile, kv,
                       w.max_prompt_len + w.max_response_len,
                       "one sequence of max_prompt_len + max_response_len",
                       reserved_bytes_per_gpu)
    except FitError as err:
        name = "workload.max_response_len" if err.kind == "context" else "rollout.tp"
        raise ScenarioError(name, str(err)) from None


@dataclass(frozen=True)
class CostModels:
    """A scenario's checked cost models, built without a SimPy environment: what
    `build_cluster` puts its entities on, and what job profiling (`rlsim.fleet.profile`)
    prices switches, host memory and migration with."""

    placement: Placement
    profiles: dict[str, Profile]
    """Each pool's profile, by pool name."""
    engine_cost: InferenceCost
    kv_tokens: int
    """One rollout engine's KV cache, in tokens."""
    reserved_bytes_per_gpu: float
    """Rollout GPU memory another model (an mps judge) or a shadow engine holds."""
    engine_options: EngineOptions
    train_cost: TrainCost
    judge_cost: EngineCost | None
    """A judge on the rollout GPUs (time_shared or mps); None otherwise."""
    judge_kv: int


def cost_models(scenario: Scenario) -> CostModels:
    """The rollout engines', the trainer's and a rollout-GPU judge's cost models, with every
    check that needs one; raises ScenarioError for impossible ones (in `build_cluster`'s
    order)."""
    place = resolve_placement(scenario)
    model = scenario.model_spec
    r = scenario.rollout
    rpool, tpool = place.rollout_pool, place.train_pool
    pool_index = {p.name: i for i, p in enumerate(scenario.pools)}
    profiles = {p.name: _profile(p, f"pools.{pool_index[p.name]}.profile")
                for p in scenario.pools}
    w = scenario.workload
    jc = scenario.reward.judge if scenario.uses_judge else None
    judge_cost, judge_kv, reserved = _judge_cost(scenario, rpool, profiles) if (
        jc is not None and jc.placement != "dedicated") else (None, 0, 0.0)
    if scenario.recovery.engine.scheme == "shadow":
        # Belayer's idle shadow shares the weights and the KV arena but holds its own
        # context and workspace on every GPU: memory the KV cache gives up, faults or not
        reserved += scenario.recovery.engine.shadow_memory
    engine_options = EngineOptions(cuda_graphs=r.cuda_graphs, dtype=r.dtype,
                                   kv_cache_dtype=r.kv_cache_dtype, ep=r.ep, pp=r.pp)
    engine_cost, kv = _engine_cost(model, rpool, r.tp, r.gpu_memory_utilization,
                                   profiles[rpool.name], "rollout.tp", reserved,
                                   w.max_prompt_len + w.max_response_len, engine_options)
    _check_longest(scenario, rpool, engine_cost, kv, r.gpu_memory_utilization, reserved)
    try:  # the scenario's backend and batching, or its whole-step MFU (train.mfu)
        train_cost = TrainCost.from_config(model, _node_gpu(tpool), place.train_gpus,
                                           scenario.train, profiles[tpool.name],
                                           scenario.framework)
    except ValueError as e:
        raise ScenarioError(_train_field(str(e)), str(e)) from None
    state = train_cost.state_bytes_per_gpu()
    if state > tpool.gpu_spec.hbm:
        raise ScenarioError(
            "train.gpus", f"trainer state needs {state / GIB:.1f} GiB per GPU on "
            f"{place.train_gpus} GPUs, more than {tpool.gpu_spec.name}'s "
            f"{tpool.gpu_spec.hbm / GIB:.0f} GiB; use more training GPUs")
    return CostModels(place, profiles, engine_cost, kv, reserved, engine_options, train_cost,
                      judge_cost, judge_kv)


def build_cluster(scenario: Scenario, env: simpy.Environment, recorder: Recorder) -> Cluster:
    """Create every entity of the scenario; raises ScenarioError for impossible ones."""
    costs = cost_models(scenario)
    place, profiles = costs.placement, costs.profiles
    engine_cost, kv, reserved = costs.engine_cost, costs.kv_tokens, costs.reserved_bytes_per_gpu
    engine_options, train_cost = costs.engine_options, costs.train_cost
    judge_cost, judge_kv = costs.judge_cost, costs.judge_kv
    model = scenario.model_spec
    r = scenario.rollout
    rpool, tpool = place.rollout_pool, place.train_pool
    rprofile, tprofile = profiles[rpool.name], profiles[tpool.name]
    w = scenario.workload
    jc = scenario.reward.judge if scenario.uses_judge else None
    engines = [
        RolloutEngine(env, f"engine{i}", engine_cost, kv, r.max_running_seqs,
                      r.max_batched_tokens, recorder, scenario.engine_mode, rpool.name,
                      r.tp * r.pp, r.prefix_caching, r.request_overhead,
                      scenario.framework.rollout_speed)
        for i in range(place.engines)
    ]
    trainer = Trainer(env, "trainer", train_cost, tpool.name, place.train_gpus, recorder)
    judges: list[RolloutEngine] = []
    if jc is not None and judge_cost is not None:
        judges = [
            RolloutEngine(env, f"judge{i}", judge_cost, judge_kv, r.max_running_seqs,
                          r.max_batched_tokens, recorder, scenario.engine_mode, rpool.name,
                          jc.tp)
            for i in range(place.rollout_gpus // jc.tp)
        ]
    elif jc is not None:
        assert jc.pool is not None and jc.gpus is not None  # JudgeConfig checks
        jpool = scenario.pool(jc.pool)
        jmodel = jc.model if isinstance(jc.model, ModelSpec) else _judge_model(jc.model)
        jcost, jkv = _engine_cost(jmodel, jpool, jc.tp, r.gpu_memory_utilization,
                                  profiles[jpool.name],
                                  "reward.judge.tp")
        judged = w.max_response_len + jc.prompt_overhead_tokens + jc.output_tokens
        if judged > jkv:
            raise ScenarioError(
                "reward.judge.tp", f"a judge request of up to {judged} tokens (response + "
                f"prompt overhead + verdict) exceeds a judge engine's KV cache ({jkv} tokens); "
                "raise reward.judge.tp or lower workload.max_response_len")
        judges = [
            RolloutEngine(env, f"judge{i}", jcost, jkv, r.max_running_seqs,
                          r.max_batched_tokens, recorder, scenario.engine_mode, jpool.name,
                          jc.tp)
            for i in range(jc.gpus // jc.tp)
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
                                                                            engine_cost)}
    closables: list[RolloutEngine | Trainer] = [*engines, *judges, trainer]
    recorder.instant("cluster", "run", 0.0, steps=scenario.steps,
                     warmup_steps=scenario.output.warmup_steps, policy=scenario.policy.name)

    def engines_at(tp: int) -> tuple[list[RolloutEngine], InferenceCost]:
        # Each engine of the new layout receives the weights over its own tp GPUs.
        link.bandwidth = _sync_bandwidth(scenario, place, tprofile, tp)
        if tp not in layouts:
            cost, kv_tp = _engine_cost(model, rpool, tp, r.gpu_memory_utilization, rprofile,
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

    return Cluster(env, recorder, scenario, place, model, engines, engine_cost, trainer,
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


def _judge_cost(scenario: Scenario, rpool: PoolConfig, profiles: dict[str, Profile],
                ) -> tuple[EngineCost, int, float]:
    """(cost, KV tokens, memory taken from each rollout GPU) of a judge on the rollout GPUs.

    time_shared: the judge has the GPUs while the rollout engines sleep, so it gets their
    memory budget and takes nothing from them. mps: it keeps `resident_fraction` of its
    weights and KV room for one longest judge request on every rollout GPU, and streams the
    rest of its weights (`StreamedWeightsCost`)."""
    jc = scenario.reward.judge
    assert jc is not None
    jmodel = jc.model if isinstance(jc.model, ModelSpec) else _judge_model(jc.model)
    util = scenario.rollout.gpu_memory_utilization
    base, kv = _engine_cost(jmodel, rpool, jc.tp, util, profiles[rpool.name],
                            "reward.judge.tp")
    longest = scenario.workload.max_response_len + jc.prompt_overhead_tokens + jc.output_tokens
    if jc.placement == "time_shared":
        if longest > kv:
            raise ScenarioError(
                "reward.judge.tp", f"a judge request of up to {longest} tokens exceeds a judge "
                f"engine's KV cache ({kv} tokens); raise reward.judge.tp")
        return base, kv, 0.0
    streamed = StreamedWeightsCost(base, jc.resident_fraction)
    reserved = streamed.resident_bytes_per_gpu() + longest * base.kv_bytes_per_token_per_gpu
    return streamed, longest, reserved


def _judge_model(name: str) -> ModelSpec:
    from rlsim.config.hardware import lookup_model

    try:
        return lookup_model(name)
    except KeyError as err:
        raise ScenarioError("reward.judge.model", str(err.args[0])) from None


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
        local = min(1.0, rpool.node_size / place.train_gpus)
        per_gpu = 1.0 / (local / nvlink + (1.0 - local) / network)
        return per_gpu * rollout_tp
    one_node = rpool.name == tpool.name and rpool.nodes == 1
    ports = 1 if per_rank else min(rollout_tp, place.train_gpus)
    return (nvlink if one_node else network) * ports
