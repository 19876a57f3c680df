"""A job's cost models and the memory fit: the checks that need a cost model, once.

Owns `cost_models(scenario, placement)`, the memory-fit stage of the prepare step
(rlsim/prepare.py): each pool's profile; the rollout engine (weights, KV cache, the FP8 /
EP / PP options, one longest sequence within the model's context and the KV cache); a judge
on the rollout GPUs or on its own; the trainer (its layout, and its state per GPU as the
trainer prices it: what stays resident in GPU memory beside what `param_offload` /
`grad_offload` / `optimizer_offload` keep in host memory, and the host memory each node
then needs). Each impossible configuration is one `ScenarioError` naming the field to
change, from the cost models' own structured errors (`FitError.kind`, `KnobError.knob`),
never from their text. `CostModels` holds what the cluster builder and job profiling
(`rlsim.fleet.profile`) build on, and `MemoryFit` the figures `rlsim check` prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import GpuSpec, ModelSpec
from rlsim.config.placement import Placement, resolve_placement
from rlsim.config.scenario import PoolConfig, Scenario
from rlsim.cost.errors import KnobError
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
from rlsim.cost.weightsync import framework_constants

GIB = 2.0**30
JudgeCost = InferenceCost | StreamedWeightsCost
"""What prices a judge's iterations: an engine's, or one streaming its weights (mps)."""


def _profile(pool: PoolConfig, field: str) -> Profile:
    """The pool's calibrated profile if it names one, else its GPU type's built-in one."""
    if pool.profile is None:
        return builtin_profile(pool.gpu_spec)
    try:
        return load_profile(pool.profile)
    except (OSError, ValueError) as err:
        raise ScenarioError(field, f"cannot use profile {pool.profile!r}: {err}") from None


def node_gpu(pool: PoolConfig) -> GpuSpec:
    """The pool's GPU with the pool's NVLink domain as its node: the GPUs collectives stay
    inside before they cross the network (the node, or a GB200 NVL72 rack of trays)."""
    gpu = pool.gpu_spec
    if gpu.gpus_per_node == pool.nvlink_domain:
        return gpu
    return gpu.model_copy(update={"gpus_per_node": pool.nvlink_domain})


def engine_cost(model: ModelSpec, pool: PoolConfig, tp: int, util: float, profile: Profile,
                field: str, reserved_bytes_per_gpu: float = 0.0, need_tokens: int = 1,
                options: EngineOptions = DEFAULT_OPTIONS) -> tuple[InferenceCost, int]:
    """An engine's cost model and KV capacity; `reserved_bytes_per_gpu` is memory another
    model on the same GPUs holds (an mps judge, a shadow engine), taken from the KV cache;
    `need_tokens` is the KV an engine must hold (one longest sequence), for the advice when
    it cannot. The checks are `rlsim estimate`'s (`cost.fit`); `options` (CUDA graphs, FP8,
    EP, PP: the scenario's rollout switches) are checked first, each error naming its
    field."""
    gpu = node_gpu(pool)
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
    except KnobError as err:
        raise ScenarioError(f"rollout.{err.knob}", str(err)) from None
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
class MemoryFit:
    """Memory per GPU of each role and host memory per node, in bytes (what `rlsim check`
    prints): the rollout engine's weights and KV cache, the trainer's state resident on a
    GPU and offloaded to host memory, and the host memory a training node then holds
    against its pool's `host_memory`."""

    engine_weight_bytes_per_gpu: float
    engine_kv_bytes_per_gpu: float
    reserved_bytes_per_gpu: float
    train_state_bytes_per_gpu: float
    train_resident_bytes_per_gpu: float
    train_offloaded_bytes_per_gpu: float
    train_gpus_per_node: int
    host_bytes_per_node: float
    host_memory_per_node: float


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
    judge_cost: JudgeCost | None
    """A judge's engines: on the rollout GPUs (time_shared or mps) or dedicated; None
    without a judge."""
    judge_kv: int
    memory: MemoryFit


def cost_models(scenario: Scenario, placement: Placement | None = None) -> CostModels:
    """The rollout engines', the trainer's and a judge's cost models, with every check that
    needs one; raises ScenarioError for impossible ones. `placement`: the scenario's,
    resolved by the caller (resolved here when not given)."""
    place = placement or resolve_placement(scenario)
    model = scenario.model_spec
    r = scenario.rollout
    rpool, tpool = place.rollout_pool, place.train_pool
    pool_index = {p.name: i for i, p in enumerate(scenario.pools)}
    profiles = {p.name: _profile(p, f"pools.{pool_index[p.name]}.profile")
                for p in scenario.pools}
    w = scenario.workload
    jc = scenario.reward.judge if scenario.uses_judge else None
    judge_cost: JudgeCost | None = None
    judge_kv, reserved = 0, 0.0
    if jc is not None and jc.placement != "dedicated":
        judge_cost, judge_kv, reserved = _judge_on_rollout_gpus(scenario, rpool, profiles)
    if scenario.recovery.engine.scheme == "shadow":
        # Belayer's idle shadow shares the weights and the KV arena but holds its own
        # context and workspace on every GPU: memory the KV cache gives up, faults or not
        reserved += scenario.recovery.engine.shadow_memory
    engine_options = EngineOptions(cuda_graphs=r.cuda_graphs, dtype=r.dtype,
                                   kv_cache_dtype=r.kv_cache_dtype, ep=r.ep, pp=r.pp,
                                   vllm_v0=r.vllm_v0)
    rollout_cost, kv = engine_cost(model, rpool, r.tp, r.gpu_memory_utilization,
                                   profiles[rpool.name], "rollout.tp", reserved,
                                   w.max_prompt_len + w.max_response_len, engine_options)
    _check_longest(scenario, rpool, rollout_cost, kv, r.gpu_memory_utilization, reserved)
    try:  # the scenario's backend and batching, or its whole-step MFU (train.mfu)
        constants = framework_constants(scenario.weight_sync.framework)
        train_cost = TrainCost.from_config(
            model, node_gpu(tpool), place.train_gpus, scenario.train, profiles[tpool.name],
            scenario.framework,
            (constants.optimizer_copy_bytes_per_s, constants.buffer_copy_bytes_per_s),
            host_gpus=tpool.node_size)
    except KnobError as e:
        raise ScenarioError(f"train.{e.knob}", str(e)) from None
    except ValueError as e:
        raise ScenarioError("train", str(e)) from None
    memory = _trainer_fit(scenario, place, rollout_cost, kv, reserved, train_cost)
    if jc is not None and jc.placement == "dedicated":
        judge_cost, judge_kv = _dedicated_judge(scenario, profiles)
    return CostModels(place, profiles, rollout_cost, kv, reserved, engine_options, train_cost,
                      judge_cost, judge_kv, memory)


def _trainer_fit(scenario: Scenario, place: Placement, rollout: InferenceCost, kv: int,
                 reserved: float, train: TrainCost) -> MemoryFit:
    """The trainer's state fits as the trainer prices it: what stays resident in GPU
    memory, and on the host what the offload flags keep there (and, colocated, the resident
    state a switch to rollout moves there too)."""
    tpool = place.train_pool
    state = train.state_bytes_per_gpu()
    resident = train.resident_state_bytes_per_gpu()
    hbm = tpool.gpu_spec.hbm
    offloaded = state - resident
    if resident > hbm:
        hint = ("use more training GPUs" if offloaded else
                "use more training GPUs, or offload to host memory (train.param_offload, "
                "train.grad_offload, train.optimizer_offload)")
        raise ScenarioError(
            "train.gpus", f"trainer state needs {resident / GIB:.1f} GiB per GPU resident on "
            f"{place.train_gpus} GPUs, more than {tpool.gpu_spec.name}'s {hbm / GIB:.0f} GiB; "
            f"{hint}")
    per_node = min(place.train_gpus, tpool.node_size)
    # Colocated, a switch to rollout moves the resident state to the host as well.
    on_host = (state if place.colocated else offloaded) * per_node
    if on_host > tpool.host_memory:
        index = [p.name for p in scenario.pools].index(tpool.name)
        what = ("its offloaded state" if not place.colocated else
                "its offloaded state and, while rollout runs, its resident state" if offloaded
                else "its state while rollout runs (a colocated switch)")
        raise ScenarioError(
            f"pools.{index}.host_memory", f"the trainer keeps {on_host / 1e12:.2f} TB in host "
            f"memory on each node ({per_node} GPUs x {on_host / per_node / GIB:.1f} GiB: "
            f"{what}), more than pool {tpool.name!r}'s host_memory of "
            f"{tpool.host_memory / 1e12:.2f} TB; give the nodes more host memory, offload "
            "less, or use more training GPUs")
    return MemoryFit(
        engine_weight_bytes_per_gpu=rollout.weight_bytes_per_gpu(),
        engine_kv_bytes_per_gpu=kv * rollout.kv_bytes_per_token_per_gpu,
        reserved_bytes_per_gpu=reserved, train_state_bytes_per_gpu=state,
        train_resident_bytes_per_gpu=resident, train_offloaded_bytes_per_gpu=offloaded,
        train_gpus_per_node=per_node, host_bytes_per_node=on_host,
        host_memory_per_node=tpool.host_memory)


def _judge_on_rollout_gpus(scenario: Scenario, rpool: PoolConfig, profiles: dict[str, Profile],
                           ) -> tuple[JudgeCost, int, float]:
    """(cost, KV tokens, memory taken from each rollout GPU) of a judge on the rollout GPUs.

    time_shared: the judge has the GPUs while the rollout engines sleep, so it gets their
    memory budget and takes nothing from them. mps: it keeps `resident_fraction` of its
    weights and KV room for one longest judge request on every rollout GPU, and streams the
    rest of its weights (`StreamedWeightsCost`)."""
    jc = scenario.reward.judge
    assert jc is not None
    jmodel = jc.model if isinstance(jc.model, ModelSpec) else _judge_model(jc.model)
    util = scenario.rollout.gpu_memory_utilization
    base, kv = engine_cost(jmodel, rpool, jc.tp, util, profiles[rpool.name],
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


def _dedicated_judge(scenario: Scenario, profiles: dict[str, Profile],
                     ) -> tuple[InferenceCost, int]:
    """(cost, KV tokens) of a judge on GPUs of its own; one judge request must fit."""
    jc = scenario.reward.judge
    assert jc is not None and jc.pool is not None and jc.gpus is not None  # JudgeConfig
    jpool = scenario.pool(jc.pool)
    jmodel = jc.model if isinstance(jc.model, ModelSpec) else _judge_model(jc.model)
    jcost, jkv = engine_cost(jmodel, jpool, jc.tp, scenario.rollout.gpu_memory_utilization,
                             profiles[jpool.name], "reward.judge.tp")
    judged = scenario.workload.max_response_len + jc.prompt_overhead_tokens + jc.output_tokens
    if judged > jkv:
        raise ScenarioError(
            "reward.judge.tp", f"a judge request of up to {judged} tokens (response + "
            f"prompt overhead + verdict) exceeds a judge engine's KV cache ({jkv} tokens); "
            "raise reward.judge.tp or lower workload.max_response_len")
    return jcost, jkv


def _judge_model(name: str) -> ModelSpec:
    from rlsim.config.hardware import lookup_model

    try:
        return lookup_model(name)
    except KeyError as err:
        raise ScenarioError("reward.judge.model", str(err.args[0])) from None
