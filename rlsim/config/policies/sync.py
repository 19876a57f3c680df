"""`sync`'s declaration: on-policy, phases in sequence, and ROLL's rollout scheduling.

Owns `ScheduleConfig` (policy.schedule: how sync dispatches, refills and filters a step's
prompts) and `SYNC`, the declaration: its capabilities and its settings. Its facts are the
defaults (config/policies/declaration.py): it launches exactly the batch (queue
scheduling's additional prompts and filtered groups aside, which the run-size estimate
leaves out) and trains on-policy. Its behaviour: rlsim/policies/sync.py.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, field_validator, model_validator

from rlsim.config.base import Frozen
from rlsim.config.policies.declaration import (
    FAULT_KINDS,
    PolicyCaps,
    PolicyDeclaration,
    ScenarioView,
    settings_of,
)


class ScheduleConfig(Frozen):
    """ROLL's Sync-ROLL rollout scheduling (ROLL Flash 5.1) of policy sync.

    How the sync policy dispatches, refills and filters a step's prompts (docs/design.md,
    `sync`). The defaults are veRL's batch rollout, rlsim's plain sync."""

    queue_scheduling: bool = Field(
        default=False,
        validation_alias=AliasChoices("queue_scheduling", "generate_opt_level"),
        description="Queue scheduling (ROLL's generate_opt_level 1; 0 is false): every "
        "prompt is a task dispatched on its own to the least-loaded engine, a new prompt "
        "starts as soon as a slot frees, and generation ends at the first "
        "workload.prompts_per_step groups that pass the filter. false: the batch in equal "
        "contiguous chunks, one per engine, all launched at once.",
    )
    prompt_replication: bool = Field(
        default=False,
        validation_alias=AliasChoices("prompt_replication", "is_num_return_sequences_expand"),
        description="Prompt replication (ROLL's is_num_return_sequences_expand): each of a "
        "prompt's responses is its own request on the least-loaded engine, instead of the "
        "prompt's group kept together on one. Only with queue_scheduling changes where "
        "samples land (ROLL's batch interface keeps a prompt's copies in one chunk).",
    )
    additional_prompts: int = Field(
        default=0, ge=0,
        validation_alias=AliasChoices("additional_prompts", "max_additional_running_prompts"),
        description="With queue_scheduling: prompts in flight beyond prompts_per_step "
        "(ROLL's max_additional_running_prompts). With use_additional_prompts every prompt "
        "that completes or is filtered is replaced at once, so prompts_per_step + "
        "additional_prompts stay in flight until the batch is complete; then every prompt "
        "still in flight is aborted and dropped.",
    )
    use_additional_prompts: bool | None = Field(
        default=None,
        validation_alias=AliasChoices("use_additional_prompts", "is_use_additional_prompts"),
        description="ROLL's is_use_additional_prompts, with queue_scheduling. true: every "
        "prompt that completes or is filtered is replaced, the first prompts_per_step "
        "passing groups train (ROLL at the paper's release, cec5234a). false: exactly the "
        "batch, a prompt replaced only when its group is filtered (ROLL's ReplayBuffer at "
        "8eb27cc2), additional_prompts ignored. Unset: true when additional_prompts or "
        "zero_variance_fraction is above 0 (ROLL cec5234a filters only with it on).",
    )
    max_running_requests: int | None = Field(
        default=None, ge=1,
        description="With queue_scheduling: requests the dispatcher keeps on one engine "
        "at most (ROLL's max_running_requests, default 128 there); a request is a prompt's "
        "whole group, or one response with prompt_replication. Further prompts wait in the "
        "dispatcher for the first engine to free. Unset: no cap (the engine's own "
        "max_running_seqs queues them).",
    )
    gen_batch_prompts: int | None = Field(
        default=None, ge=1,
        validation_alias=AliasChoices("gen_batch_prompts", "gen_batch_size"),
        description="Batch rollout only: prompts each round generates (veRL DAPO's "
        "data.gen_batch_size with algorithm.filter_groups). Rounds of this many prompts "
        "repeat while fewer than workload.prompts_per_step groups have passed the filter; "
        "the first prompts_per_step passing groups train and the rest of the last round "
        "is dropped, as veRL truncates the batch. Unset: prompts_per_step (ROLL's "
        "get_batch_opt_level_0).",
    )
    zero_variance_fraction: float = Field(
        default=0.0, ge=0.0, lt=1.0,
        description="Share of prompt groups whose responses all get the same reward and are "
        "filtered out (DAPO's dynamic sampling; ROLL's query_filter_config std_filter). "
        "Each prompt's draw is its own, the same under every setting. The batch waits for "
        "prompts_per_step groups that pass: batch rollout generates whole further batches "
        "(ROLL's get_batch_opt_level_0), queue scheduling replaces each filtered prompt. "
        "0: nothing is filtered.",
    )

    @field_validator("queue_scheduling", mode="before")
    @classmethod
    def _opt_level(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool) and value not in (0, 1):
            raise ValueError(f"generate_opt_level {value}: ROLL has levels 0 (batch rollout) "
                             "and 1 (queue scheduling); write 0 or 1")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ScheduleConfig:
        if not self.queue_scheduling and self.additional_prompts > 0 \
                and self.use_additional_prompts is not False:
            raise ValueError("additional_prompts needs queue_scheduling: true (batch rollout "
                             "launches exactly the batch)")
        if self.queue_scheduling and self.gen_batch_prompts is not None:
            raise ValueError("gen_batch_prompts applies to batch rollout (queue_scheduling: "
                             "false); queue scheduling replaces prompts one at a time: "
                             "remove gen_batch_prompts or set additional_prompts")
        return self

    @property
    def refill(self) -> bool:
        """Whether queue scheduling replaces every prompt that completes (see
        use_additional_prompts)."""
        if self.use_additional_prompts is not None:
            return self.use_additional_prompts
        return self.additional_prompts > 0 or self.zero_variance_fraction > 0.0

    @property
    def extra_prompts(self) -> int:
        """The additional prompts in flight that apply (0 when use_additional_prompts is
        false)."""
        return 0 if self.use_additional_prompts is False else self.additional_prompts

    @property
    def is_default(self) -> bool:
        """Whether this is plain sync's batch rollout (nothing to schedule)."""
        return not self.queue_scheduling and not self.prompt_replication \
            and self.zero_variance_fraction == 0.0 and self.gen_batch_prompts is None


class Sync(PolicyDeclaration):
    """`sync`: the batch, on-policy; settings policy.schedule."""

    def settings(self, scenario: ScenarioView) -> ScheduleConfig:
        return settings_of(scenario, "schedule", ScheduleConfig)

    def samples_per_step(self, scenario: ScenarioView) -> float:
        """At least one round of batch rollout: gen_batch_prompts groups where that is more
        than the batch (the rounds filtering adds are left out, as queue scheduling's)."""
        w = scenario.workload
        rounds = self.settings(scenario).gen_batch_prompts or w.prompts_per_step
        return float(max(rounds, w.prompts_per_step)) * float(w.samples_per_prompt)


SYNC = Sync(PolicyCaps(
    name="sync",
    doc="on-policy, phases in sequence; colocated (veRL) or disaggregated (Solo-D)",
    placements=("colocated", "disaggregated"),
    logged_gen=True,
    multi_turn=True,
    faults=FAULT_KINDS,
    job_restarts=True,
    fleets=True,
    schedule=True,
))
