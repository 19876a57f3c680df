"""One engine iteration's cost for `rlsim estimate`: validation plus `InferenceCost.step`.

Owns the argument checks a user-facing estimate needs (one-line ValueError naming the bad
argument) and nothing else; the numbers come from `InferenceCost`.
"""

from __future__ import annotations

from rlsim.config.hardware import GpuSpec, ModelSpec
from rlsim.cost.inference import InferenceCost, check_tp
from rlsim.cost.profile import Profile, builtin_profile


def _check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")


def estimate(
    gpu: GpuSpec,
    model: ModelSpec,
    tp: int,
    batch: int,
    context: int,
    prefill_tokens: int = 0,
    profile: Profile | None = None,
) -> dict[str, float]:
    """StepCost dict of one iteration: `batch` sequences decoding at `context` tokens each
    (kv_tokens = batch * context) plus `prefill_tokens` prompt tokens."""
    check_tp(model, gpu, tp)
    _check_count("batch", batch)
    _check_count("context", context)
    _check_count("prefill_tokens", prefill_tokens)
    cost = InferenceCost(model, gpu, tp, profile if profile is not None else builtin_profile(gpu))
    return cost.step(batch, batch * context, prefill_tokens).as_dict()
