"""Turns a measured run record into an rlsim scenario, or into the reason it cannot be one.

Owns the mapping from a record to a scenario dict that rlsim.config's Scenario validates.
Each value comes from, in order: the record's own fields, its inline `config` (each entry
with its source), its framework's cited public config (sources.py: NeMo-RL's recipes,
veRL's one-step-off scripts and trainer defaults), and last rlsim's own default
(defaults.py). Every value not read off the record's top level is listed in
`Translation.taken` with its source ("record config: ...", a cited file:line, or "default
(not stated)"); every stated fact rlsim has no field for is listed in `dropped`. A
framework with no tables here (OpenRLHF, slime, AReaL, ROLL, veRL without a mapped script)
is translated from the record and its `config` alone. Nothing is fitted.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibration.realruns.defaults import NOT_STATED, fill_defaults, schema_default
from calibration.realruns.lengths import dapo_lognormal, median_for_capped_mean
from calibration.realruns.records import RunRecord
from calibration.realruns.sources import (
    FA_RESPONSE_CAP,
    MODEL_NAMES,
    NEMO_RL,
    NEMO_RL_BATCHING,
    NEMO_RL_COMMON,
    NEMO_RL_RECIPES,
    NEMO_RL_VLLM,
    VERL,
    VERL_BATCHING,
    VERL_COMMON,
    VERL_CPU_OPTIMIZER,
    VERL_RELEASE_DEFAULTS,
    VERL_SCRIPTS,
    VLLM_V0,
    Cited,
    nemo_rl_path,
)
from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import GPUS, lookup_model

STEPS = 5          # simulated steps per record
WARMUP_STEPS = 1   # left out of the step time (output.warmup_steps)
GPUS_PER_NODE = 8  # DGX/HGX nodes: NeMo-RL recipes' cluster.gpus_per_node, veRL's scripts
_VERL_DEFAULTS = "verl/trainer/config/_generated_ppo_trainer.yaml"

# Words of a record's free-text `mode` that say the run was not on-policy and colocated;
# such a record needs config.policy / config.placement unless a mapped script says it.
_OFF_POLICY_WORDS = ("async", "off-policy", "off_policy", "one-step", "one_off", "disagg",
                     "partial", "stale")


@dataclass
class Translation:
    """A record as an rlsim scenario (`scenario`), or why it is not simulated (`reason`)."""

    record: RunRecord
    scenario: dict[str, Any] | None = None
    reason: str | None = None
    taken: list[str] = field(default_factory=list)     # "field = value (source)"
    dropped: list[str] = field(default_factory=list)   # stated facts rlsim cannot express
    lengths: str = ""                                   # how response lengths were set
    gen_with_sync: bool = False  # the record's gen timer holds the colocated weight sync
    # the record's update_weights holds one direction of the colocated switch (NeMo-RL's
    # refit: the state's copy to host and the weight transfer; the copy back runs in its
    # prep phases)
    refit_one_way: bool = False

    @property
    def policy(self) -> str:
        if self.scenario is None:
            return "-"
        p = self.scenario["policy"]
        alpha = p.get("asynchronous", {}).get("alpha")
        name = f"async a={alpha}" if alpha is not None else p["name"]
        return f"{name}, {p['placement']}"


# ---------------------------------------------------------------- helpers
def resolve_gpu(text: str | None) -> str | None:
    """The catalogue GPU a record names: its first word, if that is a catalogue GPU and the
    rest only states memory (e.g. "A100 80GB"); None for anything else (NPUs, GH200,
    descriptions that doubt the type)."""
    if not text:
        return None
    words = text.split()
    rest = " ".join(words[1:])
    if words[0] in GPUS and (not rest or re.fullmatch(r"\d+\s*GB", rest)):
        return words[0]
    return None


def catalogue_model(hf_name: str | None) -> tuple[str | None, str, str]:
    """(rlsim model name, why not, how it was matched) for a record's Hugging Face name:
    sources.MODEL_NAMES first (same architecture under another name), else the importers'
    name match (the name's last part is a catalogue name, possibly with -Instruct etc.)."""
    if not hf_name:
        return None, "model not stated", ""
    cited = MODEL_NAMES.get(hf_name)
    if cited is None:
        from rlsim.importers.base import resolve_model

        try:
            return (resolve_model(hf_name, "model"), "",
                    "its name is a catalogue name, rlsim.importers.base.resolve_model")
        except ScenarioError:
            return None, f"model missing: {hf_name} has no rlsim catalogue entry", ""
    try:
        lookup_model(cited.value)
    except KeyError:
        return (None, f"model missing: {hf_name} ({cited.value}) is not in rlsim's catalogue "
                "yet", "")
    return cited.value, "", ""


def backend_name(text: str) -> str | None:
    """rlsim's train.backend for a record's train_backend, None when rlsim has no such."""
    t = text.lower()
    if "fsdp2" in t:
        return "fsdp2"
    if "fsdp" in t:
        return "fsdp"
    if "megatron" in t or "mcore" in t:
        return "megatron"
    return None


_NOTE_PATTERNS = {
    "g_gbs": r"G-GBS (\d+)",
    "t_gbs": r"T-GBS (\d+)",
    "generation": r"Generation \[TP,PP\]=\[(\d+),(\d+)\]",
    "training": r"Training \[TP,CP,EP,PP,VPP\]=\[(\d+),(\d+),(\d+),(\d+),[^,\]]+\]",
    "recipe": r"Recipe (\S+?\.yaml)",
}


def note_facts(notes: str) -> dict[str, Any]:
    """What a NeMo-RL record's notes quote of the performance table (the measured run's own
    layout and batch sizes) and the recipe they name; a garbled entry is left out."""
    facts: dict[str, Any] = {}
    for key, pattern in _NOTE_PATTERNS.items():
        m = re.search(pattern, notes)
        if m is None:
            continue
        if key == "recipe":
            facts[key] = m.group(1)
        elif key in ("generation", "training"):
            facts[key] = tuple(int(g) for g in m.groups())
        else:
            facts[key] = int(m.group(1))
    return facts


# ---------------------------------------------------------------- the translator
class _Builder:
    def __init__(self, rec: RunRecord) -> None:
        self.rec = rec
        self.t = Translation(rec)
        self.problems: list[str] = []

    def take(self, name: str, cited: Cited | None, where: str = "") -> Any:
        """A value from a cited config, logged in `taken`; None when there is none."""
        if cited is None:
            return None
        source = nemo_rl_path(cited.source) if where == NEMO_RL else cited.source
        text = f"{where}{source}".replace("examples/configs/../../", "")
        self.t.taken.append(f"{name} = {cited.value} ({text})")
        return cited.value

    def first(self, name: str, stated: Any, *fallbacks: tuple[Cited | None, str]) -> Any:
        if stated is not None:
            return stated
        for cited, where in fallbacks:
            if cited is not None:
                return self.take(name, cited, where)
        return None

    def cfg(self, key: str, name: str) -> Any:
        """What the record states for a `config` name: its top level (older records) or its
        `config` entry, logged in `taken` with the entry's source; None if neither."""
        value, entry = self.rec.stated(key)
        if entry is not None:
            self.t.taken.append(f"{name} = {value} (record config: {entry.source})")
        return value

    def default(self, path: str) -> Any:
        """rlsim's default for a field, logged as not stated."""
        value = schema_default(path)
        self.t.taken.append(f"{path} = {value} ({NOT_STATED})")
        return value


def verl_release(rec: RunRecord) -> tuple[int, int, int] | None:
    """The veRL release a record states (`framework_version` "0.5.0", "v0.6.1 (patched)",
    "release/v0.7.1", "0.9.0.dev0"), or None (unstated, or a bare commit)."""
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", str(rec.raw.get("framework_version") or ""))
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def verl_release_default(rec: RunRecord, name: str) -> tuple[Cited, str]:
    """veRL's default `name` for this record: that of the release it states where the
    default changed between releases (VERL_RELEASE_DEFAULTS), else veRL's at VERL."""
    release = verl_release(rec)
    if release is not None and name in VERL_RELEASE_DEFAULTS:
        for first, cited in VERL_RELEASE_DEFAULTS[name]:
            if release >= first:
                return (Cited(cited.value, f"{cited.source}; the record's veRL "
                                           f"{rec.raw.get('framework_version')}"), "")
    return VERL_COMMON[name], VERL


def gen_holds_weight_sync(rec: RunRecord, fw: str, policy: dict[str, Any]) -> bool:
    """Whether the record's gen time holds the engine's weight sync, wake-up and sleep:
    veRL's hybrid engine (colocated sync) up to v0.7.0 runs generate_sequences inside its
    rollout sharding manager (fsdp_workers.py at 503ea75f5: `with
    self.rollout_sharding_manager`; the async manager wakes and sleeps inside its own
    generate_sequences), all under the trainer's `gen` timer. veRL times it apart as
    `update_weights` only since #5031 (2026-01-27, after v0.7.0): a record stating a later
    release, or timing update_weights, keeps gen alone."""
    if fw != "verl" or "update_weights" in rec.timing_s:
        return False
    if (policy.get("name"), policy.get("placement")) != ("sync", "colocated"):
        return False
    release = verl_release(rec)
    return release is None or release <= (0, 7, 0)


def _framework(rec: RunRecord) -> str:
    """Whose cited tables apply: "nemo-rl", "verl", or "" (none: the record and rlsim)."""
    fw = rec.framework.lower()
    if fw.startswith("nemo-rl"):
        return "nemo-rl"
    if fw in ("verl", "verl (fully_async_policy)"):  # veRL itself, its own recipe folders
        return "verl"
    return ""


def script_key(rec: RunRecord, fw: str) -> tuple[str, str] | None:
    """(backend, layout) of the veRL one-step-off or fully_async script a record names,
    else None (a fully_async row whose split has no script, e.g. the 128-GPU ablations)."""
    if fw != "verl":
        return None
    disaggregated = (rec.mode or "").startswith("async")
    if "one_step_off_policy" in rec.source_url:
        return (rec.train_backend or "", "4_12" if disaggregated else "colocate")
    if ("fully_async" in rec.source_url and rec.model == "Qwen/Qwen2.5-Math-7B"
            and rec.max_response_len == FA_RESPONSE_CAP):  # the doc's 28k 7B table
        if not disaggregated:
            return (rec.train_backend or "", "fa_colocate")
        gen, train = rec.stated("rollout_gpus")[0], rec.stated("train_gpus")[0]
        if gen is not None and train is None and rec.gpus_total is not None:
            train = rec.gpus_total - gen
        key = (rec.train_backend or "", f"fa_{gen}_{train}")
        return key if key in VERL_SCRIPTS else None
    return None


_BATCH_FIELDS = ("ppo_epochs", "micro_batch_size_per_gpu", "max_token_len_per_gpu",
                 "log_prob_micro_batch_size_per_gpu", "log_prob_max_token_len_per_gpu",
                 "param_offload", "optimizer_offload")


def _framework_layer(b: _Builder, train: dict[str, Any], fw: str, recipe: dict[str, Cited],
                     facts: dict[str, Any], key: tuple[str, str] | None, prompts: int, n: int,
                     old: bool | None, old_stated: bool) -> bool | None:
    """Fill the trainer's framework-layer fields (backend, optimizer steps, micro-batching,
    recompute, offload) from the record, its config and its framework's tables; return
    whether the old-log-prob pass runs (a stated batch size can rule out a recipe's
    force_on_policy_ratio)."""
    rec = b.rec
    stated = {f: b.cfg(f, f"train.{f}") for f in ("ppo_mini_batch_size", *_BATCH_FIELDS)}
    stated_recompute = "recompute" in train
    if fw == "nemo-rl" and recipe:
        batching = NEMO_RL_BATCHING[facts["recipe"]]
        train["backend"] = b.first("train.backend", rec.train_backend,
                                   (batching["backend"], NEMO_RL))
        if not stated_recompute:
            train["recompute"] = "full" if train.get("recompute_activations") else "none"
            if train["recompute"] == "full":
                b.take("train.recompute", NEMO_RL_COMMON["recompute_granularity"], NEMO_RL)
        samples = prompts * n
        t_gbs = b.first("train_global_batch_size (samples per optimizer step)",
                        facts.get("t_gbs"), (batching["train_gbs"], NEMO_RL))
        if stated["ppo_mini_batch_size"] is not None:
            train["ppo_mini_batch_size"] = stated["ppo_mini_batch_size"]
            t_gbs = train["ppo_mini_batch_size"] * n
        elif t_gbs % n == 0 and samples % t_gbs == 0:
            train["ppo_mini_batch_size"] = t_gbs // n
        else:
            b.t.dropped.append(f"T-GBS {t_gbs} (not whole prompts of {n} samples)")
        if old is False and not old_stated and t_gbs != samples:
            # The recipe's force_on_policy_ratio needs T-GBS == G-GBS (grpo.py asserts it);
            # the measured run's T-GBS differs, so it ran with the default and computed
            # the previous-policy log-probs.
            b.take("force_on_policy_ratio (recipe's true impossible at T-GBS "
                   f"{t_gbs} != {samples}, {NEMO_RL_COMMON['force_on_policy_check'].source})",
                   NEMO_RL_COMMON["force_on_policy_default"], NEMO_RL)
            old = True
        b.take("sequence packing (dynamic micro-batches)", NEMO_RL_COMMON["sequence_packing"],
               NEMO_RL)
        max_total = recipe["max_total"].value
        cp = train.get("cp", 1)
        # With sequence packing a micro-batch is a token budget: max_total_sequence_length
        # x the micro-batch size (train_micro_batch_size, logprob_batch_size). A stated
        # micro-batch size (config) replaces the recipe's in that product.
        for field_name, mbs_field, mbs_key, what in (
                ("max_token_len_per_gpu", "micro_batch_size_per_gpu", "train_mbs",
                 "train_micro_batch_size"),
                ("log_prob_max_token_len_per_gpu", "log_prob_micro_batch_size_per_gpu",
                 "logprob_mbs", "logprob_batch_size")):
            mbs = stated[mbs_field]
            if stated[field_name] is not None:
                train[field_name] = stated[field_name]
            elif mbs is not None:
                train[field_name] = math.ceil(max_total * mbs / cp)
                b.t.taken.append(
                    f"train.{field_name} (max_total_sequence_length x {what} / cp) = "
                    f"{train[field_name]} ({NEMO_RL}{nemo_rl_path(recipe['max_total'].source)}"
                    f"; {what} {mbs} as the record's config states)")
            else:
                train[field_name] = b.take(
                    f"train.{field_name} (max_total_sequence_length x {what} / cp)",
                    Cited(math.ceil(max_total * batching[mbs_key].value / cp),
                          f"{recipe['max_total'].source}, {batching[mbs_key].source}"),
                    NEMO_RL)
        for f in _BATCH_FIELDS:
            if stated[f] is not None and f not in train and "micro_batch_size" not in f:
                train[f] = stated[f]
        b.t.dropped.append("sequence packing by modified_first_fit_decreasing "
                           "(grpo_math_1B.yaml:335; rlsim packs next-fit in order)")
    elif fw == "verl" and key in VERL_BATCHING:
        assert key is not None
        v = VERL_BATCHING[key]
        train["backend"] = b.first("train.backend", rec.train_backend, (v["backend"], VERL))
        if not stated_recompute:
            train["recompute"] = b.take("train.recompute", v["recompute"], VERL)
            train["recompute_activations"] = train["recompute"] != "none"
        if "cp" in v and "cp" not in train:
            train["cp"] = b.take("train.cp (Ulysses sequence parallel)", v["cp"], VERL)
        train["ppo_mini_batch_size"] = b.first("train.ppo_mini_batch_size",
                                               stated["ppo_mini_batch_size"],
                                               (v["mini"], VERL))
        train["ppo_epochs"] = b.first("train.ppo_epochs", stated["ppo_epochs"],
                                      (VERL_COMMON["ppo_epochs"], VERL))
        for field_name, k in (("micro_batch_size_per_gpu", "micro"),
                              ("log_prob_micro_batch_size_per_gpu", "log_prob_micro"),
                              ("max_token_len_per_gpu", "max_token_len"),
                              ("log_prob_max_token_len_per_gpu", "log_prob_max_token_len"),
                              ("param_offload", "param_offload"),
                              ("optimizer_offload", "optimizer_offload"),
                              ("grad_offload", "grad_offload"),
                              ("fsdp_size", "fsdp_size")):
            value = b.first(f"train.{field_name}", stated.get(field_name), (v.get(k), VERL))
            if value is not None:
                train[field_name] = value
    else:
        # No batching tables for this run: the record and its config, then veRL's trainer
        # defaults for a veRL run, then rlsim's (defaults.py).
        if not rec.train_backend and fw == "verl":
            # veRL's actor strategy defaults to FSDP (rlsim's own default is megatron)
            train["backend"] = b.take("train.backend", Cited(
                "fsdp", f"{_VERL_DEFAULTS}:49 (actor_rollout_ref.actor.strategy)"), VERL)
        if rec.train_backend:
            backend = backend_name(rec.train_backend)
            if backend is None:
                b.t.dropped.append(f"train_backend={rec.train_backend} (rlsim has no such "
                                   "trainer backend)")
                train["backend"] = schema_default("train.backend")
                b.t.taken.append(f"train.backend = {train['backend']} (rlsim's default: the "
                                 f"stated {rec.train_backend} is no rlsim backend)")
            else:
                train["backend"] = backend
        if stated["ppo_mini_batch_size"] is not None:
            train["ppo_mini_batch_size"] = stated["ppo_mini_batch_size"]
        for f in _BATCH_FIELDS:
            if stated[f] is not None:
                train[f] = stated[f]
        if fw == "verl" and "ppo_epochs" not in train:
            train["ppo_epochs"] = b.take("train.ppo_epochs", VERL_COMMON["ppo_epochs"], VERL)
    _cpu_optimizer(b, train)
    if train.get("backend") in ("fsdp", "fsdp2") and "tp" not in train:
        train["tp"] = 1  # FSDP shards parameters over data-parallel ranks: no TP
    return old


def _cpu_optimizer(b: _Builder, train: dict[str, Any]) -> None:
    """A record whose `optimizer_offload` quotes `optimizer_cpu_offload` ran Megatron's hybrid
    CPU optimizer: its share on the CPU and veRL's own optimizer_offload from the run's
    cited settings (sources.VERL_CPU_OPTIMIZER); without them the stated flag stands and the
    translation says what it misses."""
    entry = b.rec.config.get("optimizer_offload")
    if entry is None or "optimizer_cpu_offload" not in entry.quote:
        return
    cited = VERL_CPU_OPTIMIZER.get(b.rec.id)
    if cited is None:
        b.t.dropped.append("optimizer_cpu_offload (Megatron's hybrid CPU optimizer: its "
                           "optimizer_offload_fraction is not cited for this record)")
        return
    # The record's own optimizer_offload entry was the CPU optimizer's switch: its line in
    # `taken` gives way to the run's cited settings.
    b.t.taken[:] = [x for x in b.t.taken if not x.startswith("train.optimizer_offload = ")]
    for name in ("optimizer_offload_fraction", "optimizer_offload",
                 "overlap_cpu_optimizer_d2h_h2d"):
        train[name] = b.take(f"train.{name}", cited[name])


def _engine_options(b: _Builder, fw: str, script: dict[str, Cited]) -> dict[str, Any]:
    """Rollout engine switches (CUDA graphs, weight and KV dtypes, expert parallelism): the
    record's config, else the framework's settings (a veRL run's launch script, then the
    default of the veRL release it states), else rlsim's (filled later)."""
    eager = b.cfg("enforce_eager", "vLLM enforce_eager (rollout.cuda_graphs = not it)")
    ep = b.cfg("rollout_ep", "rollout.ep")
    out: dict[str, Any] = {}
    if eager is not None:
        out["cuda_graphs"] = not eager
    if b.rec.id in VLLM_V0:
        out["vllm_v0"] = b.take("rollout.vllm_v0", VLLM_V0[b.rec.id])
    if fw not in ("nemo-rl", "verl"):
        if ep is not None:
            out["ep"] = ep
        return out
    common = NEMO_RL_COMMON if fw == "nemo-rl" else VERL_COMMON
    src = NEMO_RL if fw == "nemo-rl" else VERL
    if eager is None:
        name = "vLLM enforce_eager (rollout.cuda_graphs = not it)"
        if fw == "verl":
            eager = b.first(name, None, (script.get("enforce_eager"), ""),
                            verl_release_default(b.rec, "enforce_eager"))
        else:
            eager = b.take(name, common["enforce_eager"], src)
        out["cuda_graphs"] = not eager
    out["dtype"] = b.take("rollout.dtype", common["precision"], src)
    out["kv_cache_dtype"] = b.take("rollout.kv_cache_dtype", common["kv_cache_dtype"], src)
    out["ep"] = b.first("rollout.ep", ep, (common["rollout_ep"], src))
    return out


def _padding(b: _Builder, fw: str, train: dict[str, Any], script: dict[str, Cited],
             max_prompt: int | None) -> None:
    """veRL's FSDP workers without use_remove_padding run every pass over the padded batch,
    [n, max_prompt_len + max_response_len] (dp_actor.py _forward_micro_batch): train.pad_to.
    The record's config, else its launch script, else the default of its veRL release."""
    if fw != "verl" or train.get("backend") not in ("fsdp", "fsdp2"):
        return
    name = "veRL use_remove_padding"
    rmpad = b.first(name, b.cfg("use_remove_padding", name),
                    (script.get("use_remove_padding"), VERL),
                    verl_release_default(b.rec, "use_remove_padding"))
    if rmpad:
        return
    if max_prompt is None:
        b.problems.append("use_remove_padding false pads every sample to max_prompt_len + "
                          "max_response_len, and max_prompt_len is not stated")
        return
    train["pad_to"] = max_prompt + (b.rec.max_response_len or 0)
    b.t.taken.append(f"train.pad_to = {train['pad_to']} (use_remove_padding false: every "
                     "sample padded to max_prompt_len + max_response_len)")


def _weight_sync(b: _Builder, fw: str, colocated: bool, gpu: str) -> dict[str, Any]:
    """The weight-sync scheme, bucket size and engine sleep level the framework uses
    (empty for a framework without tables: rlsim's defaults, filled later)."""
    if fw == "nemo-rl":
        c = NEMO_RL_COMMON
        framework = b.take("weight_sync.framework", c["refit_framework"], NEMO_RL)
        if colocated:
            b.t.dropped.append("colocated refit buckets of 0.3 x free GPU memory at refit "
                               "(run-time; DeepSeek-V3's measured H100 buffer used)")
            return {"scheme": b.take("weight_sync.scheme", c["colocated_refit"], NEMO_RL),
                    "framework": framework,
                    "bucket_size": b.take("weight_sync.bucket_size",
                                          c["colocated_bucket_bytes"], NEMO_RL),
                    "engine_sleep_level": b.take("weight_sync.engine_sleep_level",
                                                 c["sleep_level"], NEMO_RL)}
        hbm = GPUS[gpu].hbm
        bucket = min(int(hbm * c["collective_bucket_fraction"].value),
                     c["collective_bucket_max_bytes"].value)
        return {"scheme": b.take("weight_sync.scheme", c["collective_refit"], NEMO_RL),
                "framework": framework,
                "bucket_size": b.take(
                    "weight_sync.bucket_size (min(0.02 x GPU memory, 5 GiB))",
                    Cited(bucket, c["collective_bucket_fraction"].source), NEMO_RL)}
    if fw == "verl":
        c = VERL_COMMON
        if not colocated:
            return {"scheme": b.take("weight_sync.scheme", c["broadcast"], VERL)}
        return {"scheme": b.take("weight_sync.scheme", c["bucketed"], VERL),
                "bucket_size": b.take("weight_sync.bucket_size", c["bucket_bytes"], VERL),
                "engine_sleep_level": b.take("weight_sync.engine_sleep_level",
                                             c["sleep_level"], VERL)}
    return {}


def _policy(b: _Builder, fw: str, recipe: dict[str, Cited], script: dict[str, Cited],
            rollout: dict[str, Any], train: dict[str, Any], gpus: int) -> dict[str, Any] | None:
    """The scheduling policy and placement (and the GPU split when disaggregated): the
    record's config, else its NeMo-RL recipe or veRL one-step-off script, else rlsim's
    default (sync, colocated). None, with a problem noted, when the run is off-policy or
    disaggregated in words only, or its GPU split is not stated."""
    rec = b.rec
    name = b.cfg("policy", "policy.name")
    placement = b.cfg("placement", "policy.placement")
    src = NEMO_RL if fw == "nemo-rl" else VERL
    recipe_split = bool(recipe) and not recipe["colocated"].value
    script_split = fw == "verl" and bool(script) and (rec.mode or "").startswith("async")
    if name is None and placement is None and not (recipe_split or script_split):
        words = (rec.mode or "").lower()
        if fw != "nemo-rl" and any(w in words for w in _OFF_POLICY_WORDS):
            b.problems.append(f"mode stated only in words ({rec.mode!r}): state "
                              "config.policy and config.placement")
            return None
    if placement is None:
        placement = "disaggregated" if recipe_split or script_split else None
    if name is None:
        name = "async" if recipe_split else "one_off" if script_split else None
    if placement == "disaggregated":
        gen_gpus = b.cfg("rollout_gpus", "rollout.gpus")
        if gen_gpus is None and recipe_split:
            gen_gpus = b.take("rollout.gpus (generation nodes x 8)",
                              Cited(recipe["gen_nodes"].value * GPUS_PER_NODE,
                                    recipe["gen_nodes"].source), src)
        elif gen_gpus is None and script_split:
            gen_gpus = b.take("rollout.gpus", script.get("rollout_gpus"), VERL)
        if gen_gpus is None:
            b.problems.append("disaggregated run: the rollout/train GPU split is not stated")
            return None
        train_gpus = b.cfg("train_gpus", "train.gpus")
        if train_gpus is None:
            train_gpus = gpus - gen_gpus
        if gen_gpus + train_gpus > gpus or train_gpus <= 0:
            b.problems.append(f"GPU split {gen_gpus} rollout + {train_gpus} train does not "
                              f"fit the {gpus} GPUs stated")
            return None
        rollout["gpus"], train["gpus"] = gen_gpus, train_gpus
    policy: dict[str, Any] = {
        "name": name if name is not None else b.default("policy.name"),
        "placement": placement if placement is not None else b.default("policy.placement"),
    }
    if policy["name"] == "async":
        alpha = b.cfg("async_alpha", "policy.asynchronous.alpha")
        if alpha is None and recipe_split:
            alpha = b.take("policy.asynchronous.alpha", recipe["age"], src)
        if alpha is None:
            alpha = b.default("policy.asynchronous.alpha")
        policy["asynchronous"] = {"alpha": alpha}
    return policy


def _response_lengths(b: _Builder, script: dict[str, Cited], cap: int | None
                      ) -> dict[str, Any] | None:
    """The response-length lognormal: a stated median (config) or mean (top level), the
    spread from config or the DAPO trace; for the veRL one-step-off and fully_async README
    runs alone (the records a mapped script covers), which state no length, the DAPO
    trace's own lognormal (kept from the first version of this harness: those runs are DAPO
    math runs like the trace; `make verl-readmes` shows them across a range of lengths).
    None, with a problem noted, for any other record without a length."""
    rec = b.rec
    median0, sigma0 = dapo_lognormal()
    sigma = b.cfg("response_len_sigma", "workload.response_len.sigma")
    sigma_from = "as stated" if sigma is not None else "of the DAPO trace"
    if sigma is None:
        sigma = sigma0
    median = b.cfg("response_len_median", "workload.response_len.median")
    if median is not None:
        b.t.lengths = f"lognormal, median {median:g} as stated, sigma {sigma:.3f} {sigma_from}"
    elif rec.response_len_mean is not None:
        if cap is None:
            return None  # the missing cap is reported on its own
        try:
            median = median_for_capped_mean(rec.response_len_mean, sigma, cap)
        except ValueError:
            b.problems.append(f"stated mean response length {rec.response_len_mean:g} is not "
                              f"below max_response_len {cap}")
            return None
        b.t.lengths = (f"lognormal, mean {rec.response_len_mean:g} as stated (median "
                       f"{median:.0f}, sigma {sigma:.3f} {sigma_from})")
    elif script:
        median = median0
        b.t.lengths = (f"not stated: the DAPO trace's lognormal (median {median:.0f}, sigma "
                       f"{sigma:.3f}); kept for the veRL one-step-off and fully_async README "
                       "runs only, DAPO math runs like the trace")
    else:
        b.problems.append("response length not stated (neither response_len_mean nor "
                          "config.response_len_median)")
        return None
    return {"dist": "lognormal", "median": round(float(median), 3), "sigma": round(sigma, 6)}


def _prompt_lengths(b: _Builder, max_prompt: int) -> dict[str, Any] | None:
    """A lognormal of the stated mean prompt length (rlsim's default spread), or None for
    rlsim's default distribution (filled later)."""
    mean = b.cfg("prompt_len_mean", "workload.prompt_len (mean)")
    if mean is None:
        return None
    sigma = schema_default("workload.prompt_len")["sigma"]
    b.t.taken.append(f"workload.prompt_len.sigma = {sigma} ({NOT_STATED})")
    try:
        median = median_for_capped_mean(mean, sigma, max_prompt)
    except ValueError:
        b.problems.append(f"stated mean prompt length {mean:g} is not below max_prompt_len "
                          f"{max_prompt}")
        return None
    return {"dist": "lognormal", "median": round(median, 3), "sigma": sigma}


def _pool(b: _Builder, gpu: str, gpus: int) -> dict[str, Any] | None:
    """One pool of the stated GPUs: the record's node count, else nodes of 8."""
    rec = b.rec
    if rec.nodes is not None:
        if rec.nodes <= 0 or gpus % rec.nodes:
            b.problems.append(f"{gpus} GPUs do not split evenly over the {rec.nodes} nodes "
                              "stated")
            return None
        return {"name": "cluster", "gpu": gpu, "nodes": rec.nodes,
                "gpus_per_node": gpus // rec.nodes}
    if gpus > GPUS_PER_NODE and gpus % GPUS_PER_NODE:
        b.problems.append(f"{gpus} GPUs are not whole nodes of {GPUS_PER_NODE} and the node "
                          "count is not stated")
        return None
    per_node = min(gpus, GPUS_PER_NODE)
    if gpus > GPUS_PER_NODE:
        b.t.taken.append(f"pools.0.gpus_per_node = {per_node} ({NOT_STATED}: nodes of "
                         f"{GPUS_PER_NODE} GPUs, DGX/HGX)")
    return {"name": "cluster", "gpu": gpu, "nodes": max(1, gpus // GPUS_PER_NODE),
            "gpus_per_node": per_node}


def translate(rec: RunRecord) -> Translation:
    """The record as a scenario dict, or the reasons it is not simulated."""
    b = _Builder(rec)
    fw = _framework(rec)
    gpu = resolve_gpu(rec.gpu)
    if gpu is None:
        b.problems.append(f"GPU missing: {rec.gpu!r} is not a catalogue GPU" if rec.gpu
                          else "GPU type not stated")
    if rec.gpus_total is None:
        b.problems.append("GPU count not stated")
    model, why, matched = catalogue_model(rec.model)
    if model is None:
        b.problems.append(why)
    if rec.multi_turn:
        b.problems.append("multi-turn agentic run: its environment is not stated")

    recipe: dict[str, Cited] = {}
    script: dict[str, Cited] = {}
    facts = note_facts(rec.notes) if fw == "nemo-rl" else {}
    if fw == "nemo-rl":
        recipe = NEMO_RL_RECIPES.get(facts.get("recipe", ""), {})
    elif script_key(rec, fw) is not None:
        script = VERL_SCRIPTS.get(script_key(rec, fw) or ("", ""), {})
    src = NEMO_RL if fw == "nemo-rl" else VERL

    # Prompts and responses per step: a recipe fills them only where its product is the
    # sequences per step the record states (a recipe changed since the run is not used).
    prompts, n = rec.train_batch_size, rec.rollout_n
    if (prompts is None or n is None) and recipe:
        product = recipe["prompts"].value * recipe["generations"].value
        if facts.get("g_gbs") in (None, product):
            prompts = b.first("workload.prompts_per_step", prompts, (recipe["prompts"], src))
            n = b.first("workload.samples_per_prompt", n, (recipe["generations"], src))
        else:
            b.problems.append(f"prompts per step not stated; the recipe at the cited commit "
                              f"({recipe['prompts'].value} x {recipe['generations'].value}) "
                              f"contradicts G-GBS {facts['g_gbs']}")
    if prompts is None and not any("prompts per step" in p for p in b.problems):
        named = facts.get("recipe")
        b.problems.append("prompts per step (train_batch_size) not stated" + (
            f", and the recipe the notes name ({named}) is not at the cited commit"
            if named and not recipe else ""))
    if n is None and not any("prompts per step" in p for p in b.problems):
        b.problems.append("responses per prompt (rollout_n) not stated")
    if rec.max_response_len is None:
        b.problems.append("max response length not stated")
    response_len = _response_lengths(b, script, rec.max_response_len)
    if "step" not in rec.timing_s:
        b.problems.append("no measured step time")
    pool = _pool(b, gpu, rec.gpus_total) if gpu and rec.gpus_total else None
    if b.problems:
        b.t.reason = "; ".join(b.problems)
        return b.t
    assert gpu is not None and rec.gpus_total is not None and model is not None
    assert prompts is not None and n is not None and rec.max_response_len is not None
    assert response_len is not None and pool is not None
    if matched:
        b.t.taken.append(f"model = {model} ({rec.model}: {matched})")

    # ------------------------------------------------------------ engines
    gen_tp = facts["generation"][0] if "generation" in facts else None
    # veRL's default TP 2 applies only where the run had 2 GPUs for an engine: a record of
    # one GPU ran TP 1, whatever the default (its engine could not span GPUs it lacked).
    verl_default = (Cited(2, f"{_VERL_DEFAULTS}:206"), VERL) if rec.gpus_total > 1 else \
        (Cited(1, f"the record's {rec.gpus_total} GPU (veRL's default 2 "
                  f"{_VERL_DEFAULTS}:206 needs 2)"), "")
    rollout_tp = b.first("rollout.tp", rec.rollout_tp or gen_tp,
                         (recipe.get("rollout_tp"), src), (script.get("rollout_tp"), src),
                         verl_default if fw == "verl" else (None, ""))
    stated_seqs = b.cfg("max_num_seqs", "rollout.max_running_seqs")
    stated_batched = b.cfg("max_num_batched_tokens", "rollout.max_batched_tokens")
    stated_mem = b.cfg("gpu_memory_utilization", "rollout.gpu_memory_utilization")
    if fw == "nemo-rl":
        max_seqs = b.first("rollout.max_running_seqs", stated_seqs,
                           (NEMO_RL_VLLM["max_num_seqs"], ""))
        max_batched = b.first("rollout.max_batched_tokens", stated_batched,
                              (NEMO_RL_VLLM["max_num_batched_tokens"], ""))
        gpu_mem = b.first("rollout.gpu_memory_utilization", stated_mem,
                          (recipe.get("gpu_mem"), src))
    elif fw == "verl":
        max_seqs = b.first("rollout.max_running_seqs", stated_seqs,
                           (script.get("max_num_seqs"), ""),
                           verl_release_default(rec, "max_num_seqs"))
        max_batched = b.first(
            "rollout.max_batched_tokens", stated_batched, (script.get("max_batched"), VERL),
            (Cited(8192, f"{_VERL_DEFAULTS}:210"), VERL))
        gpu_mem = b.first(
            "rollout.gpu_memory_utilization", stated_mem, (script.get("gpu_mem"), VERL),
            (Cited(0.5, f"{_VERL_DEFAULTS}:201"), VERL))
    else:
        max_seqs, max_batched, gpu_mem = stated_seqs, stated_batched, stated_mem

    # ------------------------------------------------------------ trainer
    training = facts.get("training")  # (TP, CP, EP, PP) of the measured run
    train_tp = b.first("train.tp", b.cfg("train_tp", "train.tp")
                       or (training[0] if training else None),
                       (recipe.get("train_tp"), src), (script.get("train_tp"), src))
    train_cp = b.first("train.cp", b.cfg("train_cp", "train.cp")
                       or (training[1] if training else None), (recipe.get("train_cp"), src))
    train_pp = b.first("train.pp", b.cfg("train_pp", "train.pp")
                       or (training[3] if training else None),
                       (recipe.get("train_pp"), src), (script.get("train_pp"), src))
    ep = b.cfg("train_ep", "train.ep") or (
        training[2] if training else (recipe["train_ep"].value if recipe else None))
    train: dict[str, Any] = {"pool": "cluster"}
    for key, value in (("tp", train_tp), ("pp", train_pp), ("cp", train_cp)):
        if value is not None:
            train[key] = value
    if fw == "verl" and rec.train_backend and rec.train_backend.startswith("fsdp"):
        train["tp"] = 1  # FSDP shards parameters over data-parallel ranks: no TP
    recompute_mode = b.cfg("recompute", "train.recompute")
    if recompute_mode is not None:
        train["recompute"] = recompute_mode
        train["recompute_activations"] = recompute_mode != "none"
    else:
        recompute = b.first("train.recompute_activations", None,
                            (recipe.get("recompute"), src), (script.get("recompute"), src))
        if recompute is not None:
            train["recompute_activations"] = bool(recompute)
    if ep and ep > 1:
        train["ep"] = ep  # expert_model_parallel_size of the measured run (or its recipe)

    algorithm = re.split(r"[\s(,]", (rec.algorithm or "").strip().lower(), maxsplit=1)[0]
    if algorithm == "ppo":
        train["critic"] = True
        b.t.taken.append("train.critic = True (algorithm ppo: a value model trained beside "
                         "the actor, veRL algorithm.adv_estimator gae)")
    elif algorithm:
        train["critic"] = False  # GRPO, DAPO, GSPO, RLOO, ...: no value model

    use_kl = b.cfg("use_kl", "train.ref_logprob (use_kl)")
    if use_kl is not None:
        ref = use_kl
    elif recipe:
        ref = b.take("reference_policy_kl_penalty (reference pass when != 0)", recipe["kl"],
                     src) != 0
    elif fw == "verl":
        ref = b.first("train.ref_logprob", None, (script.get("kl"), VERL),
                      (Cited(False, f"{_VERL_DEFAULTS}:576 (use_kl_in_reward)"), VERL))
    else:
        ref = None
    if ref is not None:
        train["ref_logprob"] = bool(ref)
    old = b.cfg("old_logprob", "train.old_logprob")
    old_stated = old is not None
    if old is None and recipe:
        old = not b.take("force_on_policy_ratio (true: no old-log-prob pass)",
                         recipe["force_on_policy"], src)
    elif old is None and "old_logprob" in script:
        old = b.take("train.old_logprob", script["old_logprob"], VERL)
    elif old is None and fw == "verl":
        old = True  # veRL recomputes old log-probs every step (timing_s/old_log_prob)
    old = _framework_layer(b, train, fw, recipe, facts, script_key(rec, fw), prompts, n,
                           old, old_stated)
    if old is not None:
        train["old_logprob"] = bool(old)

    # ------------------------------------------------------------ placement and policy
    rollout: dict[str, Any] = {"pool": "cluster"}
    for key, value in (("tp", rollout_tp), ("max_running_seqs", max_seqs),
                       ("max_batched_tokens", max_batched),
                       ("gpu_memory_utilization", gpu_mem)):
        if value is not None:
            rollout[key] = value
    rollout.update(_engine_options(b, fw, script))
    policy = _policy(b, fw, recipe, script, rollout, train, rec.gpus_total)
    if policy is None:
        b.t.reason = "; ".join(b.problems)
        return b.t
    weight_sync = _weight_sync(b, fw, policy["placement"] == "colocated", gpu)

    # ------------------------------------------------------------ workload
    max_prompt = b.first("workload.max_prompt_len", b.cfg("max_prompt_len",
                                                          "workload.max_prompt_len"),
                         (script.get("max_prompt"), VERL),
                         (Cited(rec.max_response_len, "grpo_math_1B.yaml:446 "
                                "(max_input_seq_length = max_total_sequence_length)"), src)
                         if fw == "nemo-rl" else (None, ""))
    workload: dict[str, Any] = {
        "prompts_per_step": prompts, "samples_per_prompt": n,
        "response_len": response_len, "max_response_len": rec.max_response_len,
    }
    if max_prompt is not None:
        workload["max_prompt_len"] = max_prompt
    _padding(b, fw, train, script, max_prompt)
    prompt_len = _prompt_lengths(b, max_prompt or schema_default("workload.max_prompt_len"))
    if b.problems:
        b.t.reason = "; ".join(b.problems)
        return b.t
    if prompt_len is not None:
        workload["prompt_len"] = prompt_len

    scenario: dict[str, Any] = {
        "name": rec.id,
        "description": f"Measured run {rec.id} ({rec.source_url}), translated by "
                       "calibration/realruns (docs/validation.md, 'Public real runs').",
        "seed": 0, "steps": STEPS, "model": model, "pools": [pool], "rollout": rollout,
        "train": train, "workload": workload, "policy": policy,
        "weight_sync": weight_sync, "output": {"warmup_steps": WARMUP_STEPS},
    }
    fill_defaults(scenario, lookup_model(model).moe is not None, b.t.taken)
    b.t.scenario = scenario
    b.t.gen_with_sync = gen_holds_weight_sync(rec, fw, policy)
    # NeMo-RL's refit (prepare_for_generation: offload_before_refit, the weight transfer,
    # offload_after_refit, the KV cache back) holds the switch to rollout; the state comes
    # back in logprob_inference_prep / training_prep (nemo_rl/algorithms/grpo.py).
    b.t.refit_one_way = (fw == "nemo-rl" and "update_weights" in rec.timing_s
                         and policy.get("placement") == "colocated")
    return b.t


def write_scenario(t: Translation, folder: Path) -> Path | None:
    """The translated scenario as a YAML file (generated; `rlsim run` accepts it)."""
    import yaml

    if t.scenario is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{t.record.id}.yaml"
    header = (f"# Generated by `make real-runs` (calibration/realruns) from the measured run\n"
              f"# {t.record.id}: {t.record.source_url}\n"
              "# Values not in the record, with their sources:\n"
              + "".join(f"#   {line}\n" for line in t.taken)
              + "".join(f"# Stated but not expressible in rlsim: {d}\n" for d in t.dropped))
    path.write_text(header + yaml.safe_dump(t.scenario, sort_keys=False), encoding="utf-8")
    return path
