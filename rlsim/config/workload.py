"""The workload schema: how many prompts a step has, and how long prompts and responses are.

Owns the length distributions (a discriminated union on `dist`), the trace replay settings
(PolyTrace lengths or recorded rollouts) and `WorkloadConfig`. Validation only checks shapes
and ranges; it reads no file (empirical `path` and trace `path` are resolved and read by
`rlsim.workload`, relative to the scenario file's directory). How the fields are turned into
lengths (the Gaussian copula that correlates the responses of one prompt) is documented in
docs/workload.md.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

# Tolerance on the sum of mixture weights: YAML authors write decimals like 0.3/0.3/0.4.
GMM_WEIGHT_SUM_TOLERANCE = 1e-6


class _Frozen(BaseModel):
    # NaN or infinite lengths would pass every range check and poison the samples.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class FixedLength(_Frozen):
    """Every length is the same number of tokens."""

    dist: Literal["fixed"] = Field(description="Distribution family tag: a constant length.")
    value: int = Field(ge=1, description="The length in tokens.")


class NormalLength(_Frozen):
    """A normal distribution of lengths, rounded to tokens and clamped to [1, cap]."""

    dist: Literal["normal"] = Field(description="Distribution family tag: normal.")
    mean: float = Field(description="Mean of the (unclamped) normal, in tokens.")
    std: float = Field(gt=0, description="Standard deviation of the normal, in tokens.")


class LognormalLength(_Frozen):
    """A lognormal distribution of lengths: ln(length) ~ N(ln(median), sigma^2).

    Parametrised by the median and the log-space sigma because both read directly off a
    trace (median of the lengths, std of their logs). Mean = median * exp(sigma^2 / 2) and
    CV = sqrt(exp(sigma^2) - 1); `from_mean_std` converts from those.
    """

    dist: Literal["lognormal"] = Field(description="Distribution family tag: lognormal.")
    median: float = Field(gt=0, description="Median length in tokens (exp of the log-mean).")
    sigma: float = Field(
        gt=0, description="Standard deviation of ln(length) (log-space sigma, unitless)."
    )
    mean: float | None = Field(
        default=None, gt=0,
        description="Mean length in tokens, given instead of the median (which is then "
        "mean * exp(-sigma^2 / 2)): what papers state; a drawn sigma then keeps the mean.")

    @model_validator(mode="before")
    @classmethod
    def _median_from_mean(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("mean") is None:
            return data
        mean, sigma = data["mean"], data.get("sigma")
        numbers = [x for x in (mean, sigma) if isinstance(x, int | float)
                   and not isinstance(x, bool) and x > 0]
        if len(numbers) < 2:
            return data  # the fields' own checks say what is wrong
        median = numbers[0] * math.exp(-numbers[1] ** 2 / 2)
        given = data.get("median")
        if given is not None and not math.isclose(given, median, rel_tol=1e-6):
            raise ValueError(f"give the median or the mean, not both (median {given:g} is "
                             f"not mean {mean:g} x exp(-sigma^2/2) = {median:g})")
        return {**data, "median": median}

    @model_serializer(mode="wrap")
    def _without_unset_mean(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A length dumps as it was given: by its median (no `mean: null` in resolved
        # scenarios and fitted files), or by its mean alone, so that a resolved scenario
        # takes another sigma and keeps the mean.
        out = handler(self)
        if isinstance(out, dict):
            out.pop("mean" if out.get("mean") is None else "median", None)
        return out

    @classmethod
    def from_mean_std(cls, mean: float, std: float) -> LognormalLength:
        """The lognormal with this (unclamped) mean and standard deviation, in tokens."""
        if mean <= 0 or std <= 0:
            raise ValueError(f"lognormal needs mean > 0 and std > 0, got {mean}, {std}")
        sigma2 = math.log1p((std / mean) ** 2)
        return cls(dist="lognormal", median=mean / math.exp(sigma2 / 2), sigma=math.sqrt(sigma2))


class GmmLength(_Frozen):
    """A one-dimensional Gaussian mixture of lengths (e.g. the fitted Intern-S1 GMMs)."""

    dist: Literal["gmm"] = Field(description="Distribution family tag: Gaussian mixture.")
    weights: list[float] = Field(
        min_length=1, description="Component weights; each >= 0, summing to 1 (within 1e-6)."
    )
    means: list[float] = Field(
        min_length=1, description="Component means in tokens, one per weight."
    )
    stds: list[PositiveFloat] = Field(
        min_length=1, description="Component standard deviations in tokens (> 0), one per weight."
    )

    @field_validator("weights")
    @classmethod
    def _weights_sum_to_one(cls, weights: list[float]) -> list[float]:
        if any(w < 0 for w in weights):
            raise ValueError(f"weights must be >= 0, got {weights}")
        total = math.fsum(weights)
        if abs(total - 1.0) > GMM_WEIGHT_SUM_TOLERANCE:
            raise ValueError(f"weights must sum to 1 (within 1e-6), they sum to {total:.9g}")
        return weights

    @field_validator("means", "stds")
    @classmethod
    def _one_per_weight(cls, values: list[float], info: ValidationInfo) -> list[float]:
        weights = info.data.get("weights")
        # Absent when the weights themselves failed validation; that error is reported.
        if weights is not None and len(values) != len(weights):
            raise ValueError(
                f"{info.field_name} has {len(values)} entries but weights has {len(weights)}; "
                "give one per mixture component"
            )
        return values


class EmpiricalLength(_Frozen):
    """Lengths resampled from a list of observed lengths (exactly their distribution)."""

    dist: Literal["empirical"] = Field(description="Distribution family tag: empirical.")
    values: list[float] | None = Field(
        default=None, min_length=1, description="Observed lengths in tokens (give this or path)."
    )
    path: Path | None = Field(
        default=None,
        description="File of observed lengths: one number per line, or a JSON list; relative "
        "paths are resolved against the scenario file's directory (give this or values).",
    )

    @field_validator("values")
    @classmethod
    def _not_negative(cls, values: list[float] | None) -> list[float] | None:
        bad = [v for v in values or [] if v < 0]
        if bad:
            raise ValueError(f"observed values must be >= 0, got {bad[0]:g}")
        return values

    @model_validator(mode="after")
    def _exactly_one_source(self) -> EmpiricalLength:
        if (self.values is None) == (self.path is None):
            raise ValueError("empirical needs exactly one of `values` or `path`")
        return self


LengthDist = Annotated[
    FixedLength | NormalLength | LognormalLength | GmmLength | EmpiricalLength,
    Field(discriminator="dist"),
]
"""A length distribution in tokens; `dist` names the family."""


class TraceConfig(_Frozen):
    """Replay of measured prompt and response lengths instead of the distributions."""

    path: Path = Field(
        description="polytrace: a PolyTrace directory (its packed_lengths_step_*.jsonl files "
        "are read in step order) or one packed_lengths_step_*.jsonl file; "
        "polytrace_multiturn: a PolyTrace multi-turn directory (multiturn_workload_step_*"
        ".jsonl, e.g. Search-R1) or one such file; rollouts: one .jsonl file of recorded "
        "rollouts. Relative paths are resolved against the scenario file's directory."
    )
    format: Literal["polytrace", "polytrace_multiturn", "rollouts"] = Field(
        default="polytrace",
        description="Trace format: polytrace packed lengths (JSON lines); "
        "polytrace_multiturn: PolyTrace's agentic multi-turn samples (each turn's generated "
        "tokens, tool latencies and appended observation tokens), replayed as trajectories "
        "by prompt group like polytrace prompts; or rollouts: the per-sample, possibly "
        "multi-turn rollouts of a live run with measured environment-step and reward "
        "latencies (JSON lines, one prompt group per line; docs/workload.md). Rollouts "
        "replay step k's recorded groups at step k.",
    )
    order: Literal["sequential", "shuffle"] = Field(
        default="sequential",
        description="sequential: prompts (prompt groups for polytrace_multiturn) in file "
        "order, files in step order, cycling; shuffle: each drawn with replacement from the "
        "pooled trace by the workload RNG. "
        "Rollouts are always replayed step by step (sequential).",
    )
    scale_response: float = Field(
        default=1.0, gt=0,
        description="Multiplier on every replayed response length (before the cap; each "
        "turn's response for rollouts and polytrace_multiturn), for what-if studies such as "
        "a model that reasons twice as long.",
    )

    @model_validator(mode="after")
    def _rollouts_replay_in_order(self) -> TraceConfig:
        if self.format == "rollouts" and self.order != "sequential":
            raise ValueError(
                "rollouts replay each step's recorded groups at that step; drop `order` "
                "(shuffle is for polytrace)"
            )
        return self


# Defaults below are documented choices (docs/workload.md), measured on the PolyTrace data:
# prompt medians are 152 (DAPO) and 435 (DeepCoder) tokens with log-sigma 0.29 and 0.59.
_DEFAULT_PROMPT_LEN = LognormalLength(dist="lognormal", median=256.0, sigma=0.5)


class TaskConfig(_Frozen):
    """One kind of prompt in a mixed workload (e.g. math, code, QA)."""

    name: str = Field(min_length=1, description="Task name; reward.by_task refers to it.")
    share: float = Field(gt=0, le=1, description="Fraction of each step's prompts.")
    response_len: LengthDist | None = Field(
        default=None,
        description="This task's response length distribution; default workload.response_len.",
    )


class AgenticConfig(_Frozen):
    """Synthetic multi-turn trajectories: turns of generation with environment steps between.

    Latencies use the length distributions' families (fixed, normal, lognormal, gmm,
    empirical) with values in seconds; a normal draw below 0 counts as 0.
    """

    turns: LengthDist = Field(
        description="Turns per trajectory (rounded, at least 1, at most max_turns), e.g. "
        "{dist: empirical, path: ...} for a bimodal count.")
    max_turns: int = Field(default=50, gt=0, description="Cap on turns per trajectory.")
    max_context_len: int | None = Field(
        default=None, gt=0,
        description="Cap on a trajectory's context in tokens (prompt + every turn's response "
        "and observation), as the frameworks end a multi-turn sample: each turn generates at "
        "most the room left, and a trajectory whose context reaches the cap ends there (the "
        "observation that filled it is not kept). ROLL: sequence_length (agentic env "
        "managers' make_decision); veRL agent loop: actor_rollout_ref.rollout.prompt_length "
        "+ response_length (max_assistant_turns is max_turns). None: no cap (only each "
        "response's max_response_len).")
    env_reset: LengthDist | None = Field(
        default=None,
        description="Seconds to reset the environment before the first turn (heavy-tailed in "
        "practice: a lognormal); none: no reset.")
    env_step: LengthDist = Field(
        description="Seconds of each environment step between two turns, e.g. {dist: normal, "
        "mean: 10, std: 5} (ROLL Flash's synthetic Gaussian).")
    obs_tokens: LengthDist = Field(
        default=FixedLength(dist="fixed", value=64),
        description="Observation tokens an environment step appends to the context.")


class WorkloadConfig(_Frozen):
    """GRPO-style prompts per step, responses per prompt, and their lengths."""

    prompts_per_step: int = Field(gt=0, description="Prompts per training step (GRPO batch).")
    samples_per_prompt: int = Field(
        gt=0, description="Responses generated per prompt (GRPO group size n)."
    )
    prompt_len: LengthDist = Field(
        default=_DEFAULT_PROMPT_LEN,
        description="Prompt length distribution in tokens; default lognormal median 256, "
        "sigma 0.5 (between the DAPO and DeepCoder traces).",
    )
    response_len: LengthDist | None = Field(
        default=None,
        description="Response length distribution in tokens (the marginal of every response); "
        "required unless `trace` is set.",
    )
    max_prompt_len: int = Field(
        default=2048, gt=0, description="Cap on prompt length in tokens (longer are clamped)."
    )
    max_response_len: int = Field(
        gt=0,
        description="Cap on response length in tokens (the engine's max_tokens); longer "
        "responses stop at the cap, and count as capped.",
    )
    group_correlation: float = Field(
        default=0.5, ge=0, lt=1,
        description="Correlation rho, on the latent normal scale, between the lengths of two "
        "responses to the same prompt (prompt difficulty). Measured: 0.08 on DAPO "
        "Qwen2.5-32B, 0.84 on DeepCoder-14B; 0 makes responses independent.",
    )
    difficulty_length_correlation: float = Field(
        default=0.0, ge=-1, le=1,
        description="Correlation, on the latent normal scale, between a prompt's length and its "
        "difficulty (the shared part of its responses' lengths). Measured against group mean "
        "log-length: 0.16 on DAPO, 0.62 on DeepCoder.",
    )
    tasks: list[TaskConfig] | None = Field(
        default=None, min_length=1,
        description="A mix of tasks: each batch holds them in these shares (interleaved, "
        "exact up to rounding), each with its own lengths and, through reward.by_task, its "
        "own reward. Not with `trace`.",
    )
    agentic: AgenticConfig | None = Field(
        default=None,
        description="Multi-turn trajectories: each sample alternates generation turns (of "
        "response_len tokens each, capped at max_response_len) with environment steps. Not "
        "with `trace` or `tasks`.",
    )
    trace: TraceConfig | None = Field(
        default=None,
        description="Replay a measured trace: prompt and response lengths come from it and "
        "prompt_len/response_len are ignored. Each trace prompt must have at least "
        "samples_per_prompt responses; the first samples_per_prompt are used. For rollouts, "
        "every recorded step must have exactly prompts_per_step groups.",
    )

    @model_validator(mode="after")
    def _tasks_are_a_mix(self) -> WorkloadConfig:
        if self.tasks is None:
            return self
        if self.trace is not None:
            raise ValueError("tasks and trace exclude each other: a trace has its own lengths")
        names = [t.name for t in self.tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"task names must be unique, got {names}")
        total = sum(t.share for t in self.tasks)
        if abs(total - 1.0) > GMM_WEIGHT_SUM_TOLERANCE:
            raise ValueError(f"task shares must sum to 1, got {total:g}")
        if self.response_len is None and any(t.response_len is None for t in self.tasks):
            raise ValueError("every task needs a response_len when workload.response_len is "
                             "not set")
        return self

    @model_validator(mode="after")
    def _agentic_is_synthetic(self) -> WorkloadConfig:
        if self.agentic is not None and (self.trace is not None or self.tasks is not None):
            raise ValueError("agentic trajectories are synthetic: drop `trace` and `tasks`")
        cap = None if self.agentic is None else self.agentic.max_context_len
        if cap is not None and cap <= self.max_prompt_len:
            raise ValueError(f"agentic.max_context_len ({cap}) must exceed max_prompt_len "
                             f"({self.max_prompt_len}): a prompt must leave room for a turn; "
                             "raise max_context_len (ROLL: sequence_length)")
        return self

    @model_validator(mode="after")
    def _lengths_have_a_source(self) -> WorkloadConfig:
        if self.tasks is not None:
            return self
        if self.trace is None and self.response_len is None:
            raise ValueError(
                "response_len is required unless trace is set; e.g. "
                "response_len: {dist: lognormal, median: 1000, sigma: 1.0}"
            )
        return self
