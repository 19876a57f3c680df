"""One engine iteration's cost for `rlsim estimate`: validation, fit checks, throughput.

Owns the argument checks a user-facing estimate needs (one-line ValueError naming the bad
argument) and the summary `rlsim estimate` prints; the fit checks are `rlsim run`'s
(`cost.fit`: weights in GPU memory, the context within the model's, the batch within the KV
cache) and the numbers come from `InferenceCost`.
"""

from __future__ import annotations

from typing import Any

from rlsim.config.hardware import GpuSpec, ModelSpec
from rlsim.cost.fit import FitError, check_sequence, engine_fit
from rlsim.cost.inference import InferenceCost
from rlsim.cost.profile import Profile, builtin_profile

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's default, and a scenario's `rollout.gpu_memory_utilization` default."""


def _check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")


def _fitted(gpu: GpuSpec, model: ModelSpec, tp: int, batch: int, context: int,
            prefill_tokens: int, util: float, profile: Profile) -> tuple[InferenceCost, int]:
    """The engine and its KV tokens, after the checks `rlsim run` makes: FitError("tp") when
    the weights or the batch's KV do not fit, FitError("context") past the model's context."""
    _check_count("batch", batch)
    _check_count("context", context)
    _check_count("prefill_tokens", prefill_tokens)
    need = batch * context + prefill_tokens
    cost, kv = engine_fit(model, gpu, tp, util, profile, need_tokens=max(need, context, 1))
    check_sequence(model, gpu, tp, util, profile, kv, context, "context")
    if need > kv:
        most = kv // max(context, 1)
        raise FitError("batch", (
            f"batch x context + prefill_tokens = {need} tokens exceeds the engine's KV cache "
            f"({kv} tokens at TP {tp} on {gpu.name}); at context {context} at most {most} "
            "sequences fit: lower the batch or raise tp"))
    return cost, kv


def estimate(
    gpu: GpuSpec,
    model: ModelSpec,
    tp: int,
    batch: int,
    context: int,
    prefill_tokens: int = 0,
    profile: Profile | None = None,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
) -> dict[str, float]:
    """StepCost dict of one iteration: `batch` sequences decoding at `context` tokens each
    (kv_tokens = batch * context) plus `prefill_tokens` prompt tokens. Raises ValueError
    (FitError for a configuration that cannot run) with a one-line message."""
    return dict(engine_estimate(gpu, model, tp, batch, context, prefill_tokens, profile,
                                gpu_memory_utilization)["step_s"])


def engine_estimate(
    gpu: GpuSpec,
    model: ModelSpec,
    tp: int,
    batch: int,
    context: int,
    prefill_tokens: int = 0,
    profile: Profile | None = None,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
) -> dict[str, Any]:
    """What `rlsim estimate` reports: the iteration's seconds by component (`step_s`),
    tokens/s of the engine and per GPU (decoded tokens plus prefilled ones, over the
    iteration), the engine's KV capacity in tokens and the largest batch that fits at
    `context` (KV capacity // context). Same checks and errors as `estimate`."""
    prof = profile if profile is not None else builtin_profile(gpu)
    cost, kv = _fitted(gpu, model, tp, batch, context, prefill_tokens, gpu_memory_utilization,
                       prof)
    step = cost.step(batch, batch * context, prefill_tokens).as_dict()
    tokens_per_s = (batch + prefill_tokens) / step["total_s"] if step["total_s"] > 0 else 0.0
    return {
        "gpu": gpu.name, "model": model.name, "tp": tp, "batch": batch, "context": context,
        "prefill_tokens": prefill_tokens, "gpu_memory_utilization": gpu_memory_utilization,
        "step_s": step,
        "tokens_per_s_per_engine": tokens_per_s,
        "tokens_per_s_per_gpu": tokens_per_s / tp,
        "kv_capacity_tokens": kv,
        "max_batch_at_context": kv // max(context, 1),
        "model_max_context": model.max_context,
    }
