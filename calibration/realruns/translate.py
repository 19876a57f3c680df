"""Turns a measured run record into an rlsim scenario, or into the reason it cannot be one.

Owns the mapping from a record's fields (and, where the record is silent, its framework's
cited public config, sources.py) to a scenario dict that rlsim.config's Scenario validates.
Every value it did not read off the record is listed in `Translation.taken` with its source;
every stated fact rlsim has no field for is listed in `dropped`. Nothing is fitted.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibration.realruns.records import ROOT, RunRecord
from calibration.realruns.sources import (
    MODEL_NAMES,
    NEMO_RL,
    NEMO_RL_BATCHING,
    NEMO_RL_COMMON,
    NEMO_RL_RECIPES,
    NEMO_RL_VLLM,
    VERL,
    VERL_BATCHING,
    VERL_COMMON,
    VERL_ROLLOUT,
    VERL_SCRIPTS,
    Cited,
    nemo_rl_path,
)
from rlsim.config.hardware import GPUS, lookup_model

STEPS = 5          # simulated steps per record
WARMUP_STEPS = 1   # left out of the step time (output.warmup_steps)
GPUS_PER_NODE = 8  # DGX/HGX nodes: NeMo-RL recipes' cluster.gpus_per_node, veRL's scripts
DAPO_TRACE = ROOT / "traces" / "polytrace" / "dapo-qwen2.5-32b"

@dataclass
class Translation:
    """A record as an rlsim scenario (`scenario`), or why it is not simulated (`reason`)."""

    record: RunRecord
    scenario: dict[str, Any] | None = None
    reason: str | None = None
    taken: list[str] = field(default_factory=list)     # "field = value (source)"
    dropped: list[str] = field(default_factory=list)   # stated facts rlsim cannot express
    lengths: str = ""                                   # how response lengths were set

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


def catalogue_model(hf_name: str | None) -> tuple[str | None, str]:
    """(rlsim model name, why not) for a record's Hugging Face name."""
    if not hf_name:
        return None, "model not stated"
    cited = MODEL_NAMES.get(hf_name)
    if cited is None:
        return None, f"model missing: {hf_name} has no rlsim catalogue entry"
    try:
        lookup_model(cited.value)
    except KeyError:
        return None, f"model missing: {hf_name} ({cited.value}) is not in rlsim's catalogue yet"
    return cited.value, ""


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


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def capped_lognormal_mean(median: float, sigma: float, cap: float) -> float:
    """E[min(X, cap)] for ln X ~ N(ln median, sigma^2) (a closed form)."""
    mu = math.log(median)
    z = (math.log(cap) - mu) / sigma
    return math.exp(mu + sigma**2 / 2) * _phi(z - sigma) + cap * (1.0 - _phi(z))


def median_for_capped_mean(mean: float, sigma: float, cap: float) -> float:
    """The lognormal median whose lengths, capped at `cap`, have this mean (bisection in
    log space; the capped mean rises monotonically with the median)."""
    if not 0 < mean < cap:
        raise ValueError(f"a mean length of {mean:g} cannot be reached under a cap of {cap:g}")
    lo, hi = math.log(1e-3), math.log(cap) + 12 * sigma
    for _ in range(200):
        mid = (lo + hi) / 2
        if capped_lognormal_mean(math.exp(mid), sigma, cap) < mean:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


def dapo_lognormal() -> tuple[float, float]:
    """(median, sigma) of the lognormal fitted to the shipped DAPO math trace's response
    lengths (exp of the mean log length, std of the log lengths): the length shape of a
    math RLVR run, measured (traces/polytrace/README.md)."""
    logs: list[float] = []
    for path in sorted(DAPO_TRACE.glob("packed_lengths_step_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if not row.get("validate"):
                logs.extend(math.log(x) for x in row["output"])
    mean = sum(logs) / len(logs)
    sigma = math.sqrt(sum((x - mean) ** 2 for x in logs) / len(logs))
    return math.exp(mean), sigma


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


def _framework(rec: RunRecord) -> str | None:
    fw = rec.framework.lower()
    if fw.startswith("nemo-rl"):
        return "nemo-rl"
    if fw == "verl":
        return "verl"
    return None


def script_key(rec: RunRecord, fw: str) -> tuple[str, str] | None:
    """(backend, layout) of the veRL one-step-off script a record names, else None."""
    if fw != "verl" or "one_step_off_policy" not in rec.source_url:
        return None
    layout = "4_12" if (rec.mode or "").startswith("async") else "colocate"
    return (rec.train_backend or "", layout)


def _framework_layer(b: _Builder, train: dict[str, Any], fw: str, recipe: dict[str, Cited],
                     facts: dict[str, Any], key: tuple[str, str] | None, prompts: int, n: int,
                     old: bool) -> bool:
    """Fill the trainer's framework-layer fields (backend, optimizer steps, micro-batching,
    recompute, offload) from the record and its framework's config; return whether the
    old-log-prob pass runs (a stated batch size can rule out a recipe's
    force_on_policy_ratio)."""
    rec = b.rec
    if fw == "nemo-rl" and recipe:
        batching = NEMO_RL_BATCHING[facts["recipe"]]
        train["backend"] = b.first("train.backend", rec.train_backend,
                                   (batching["backend"], NEMO_RL))
        train["recompute"] = "full" if train.get("recompute_activations") else "none"
        if train["recompute"] == "full":
            b.take("train.recompute", NEMO_RL_COMMON["recompute_granularity"], NEMO_RL)
        samples = prompts * n
        t_gbs = b.first("train_global_batch_size (samples per optimizer step)",
                        facts.get("t_gbs"), (batching["train_gbs"], NEMO_RL))
        if t_gbs % n == 0 and samples % t_gbs == 0:
            train["ppo_mini_batch_size"] = t_gbs // n
        else:
            b.t.dropped.append(f"T-GBS {t_gbs} (not whole prompts of {n} samples)")
        if not old and t_gbs != samples:
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
        train["max_token_len_per_gpu"] = b.take(
            "train.max_token_len_per_gpu (max_total_sequence_length x train_micro_batch_size"
            " / cp)", Cited(math.ceil(max_total * batching["train_mbs"].value / cp),
                            f"{recipe['max_total'].source}, {batching['train_mbs'].source}"),
            NEMO_RL)
        train["log_prob_max_token_len_per_gpu"] = b.take(
            "train.log_prob_max_token_len_per_gpu (max_total_sequence_length x "
            "logprob_batch_size / cp)",
            Cited(math.ceil(max_total * batching["logprob_mbs"].value / cp),
                  f"{recipe['max_total'].source}, {batching['logprob_mbs'].source}"), NEMO_RL)
        b.t.dropped.append("sequence packing by modified_first_fit_decreasing "
                           "(grpo_math_1B.yaml:335; rlsim packs next-fit in order)")
    elif fw == "verl" and key in VERL_BATCHING:
        assert key is not None
        v = VERL_BATCHING[key]
        train["backend"] = b.first("train.backend", rec.train_backend, (v["backend"], VERL))
        train["recompute"] = b.take("train.recompute", v["recompute"], VERL)
        train["recompute_activations"] = train["recompute"] != "none"
        if "cp" in v:
            train["cp"] = b.take("train.cp (Ulysses sequence parallel)", v["cp"], VERL)
        stated_mini = rec.raw.get("ppo_mini_batch_size")
        train["ppo_mini_batch_size"] = b.first("train.ppo_mini_batch_size", stated_mini,
                                               (v["mini"], VERL))
        train["ppo_epochs"] = b.take("train.ppo_epochs", VERL_COMMON["ppo_epochs"], VERL)
        for field_name, k in (("micro_batch_size_per_gpu", "micro"),
                              ("log_prob_micro_batch_size_per_gpu", "log_prob_micro"),
                              ("max_token_len_per_gpu", "max_token_len"),
                              ("log_prob_max_token_len_per_gpu", "log_prob_max_token_len"),
                              ("param_offload", "param_offload"),
                              ("optimizer_offload", "optimizer_offload"),
                              ("grad_offload", "grad_offload")):
            if k in v:
                train[field_name] = b.take(f"train.{field_name}", v[k], VERL)
        if key[0] != "megatron":  # Megatron's THD packing is the backend's own behaviour
            b.t.dropped.append("fsdp_size=2 (HSDP shard groups of 2 GPUs)")
    elif rec.train_backend:
        b.t.dropped.append(f"train_backend={rec.train_backend} (no config mapped)")
    return old


def _engine_options(b: _Builder, fw: str) -> dict[str, Any]:
    """Rollout engine switches (CUDA graphs, weight and KV dtypes, expert parallelism): the
    framework's settings, which the records never change."""
    common = NEMO_RL_COMMON if fw == "nemo-rl" else VERL_COMMON
    src = NEMO_RL if fw == "nemo-rl" else VERL
    if fw not in ("nemo-rl", "verl"):
        return {}
    return {
        "cuda_graphs": not b.take("vLLM enforce_eager (rollout.cuda_graphs = not it)",
                                  common["enforce_eager"], src),
        "dtype": b.take("rollout.dtype", common["precision"], src),
        "kv_cache_dtype": b.take("rollout.kv_cache_dtype", common["kv_cache_dtype"], src),
        "ep": b.take("rollout.ep", common["rollout_ep"], src),
    }


def _weight_sync(b: _Builder, fw: str, colocated: bool, gpu: str) -> dict[str, Any]:
    """The weight-sync scheme, bucket size and engine sleep level the framework uses."""
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
    model, why = catalogue_model(rec.model)
    if model is None:
        b.problems.append(why)
    if rec.multi_turn:
        b.problems.append("multi-turn agentic run: its environment is not stated")
    if fw is None:
        b.problems.append(f"framework {rec.framework!r}: no public config mapped")
        fw = ""

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
    if "step" not in rec.timing_s:
        b.problems.append("no measured step time")
    if b.problems:
        b.t.reason = "; ".join(b.problems)
        return b.t
    assert gpu is not None and rec.gpus_total is not None and model is not None
    assert prompts is not None and n is not None and rec.max_response_len is not None

    # ------------------------------------------------------------ engines
    gen_tp = facts["generation"][0] if "generation" in facts else None
    rollout_tp = b.first("rollout.tp", rec.rollout_tp or gen_tp,
                         (recipe.get("rollout_tp"), src), (script.get("rollout_tp"), src),
                         (Cited(2, "verl/trainer/config/_generated_ppo_trainer.yaml:206"),
                          VERL) if fw == "verl" else (None, ""))
    if fw == "nemo-rl":
        max_seqs = b.take("rollout.max_running_seqs", NEMO_RL_VLLM["max_num_seqs"])
        max_batched = b.take("rollout.max_batched_tokens", NEMO_RL_VLLM["max_num_batched_tokens"])
        gpu_mem = b.take("rollout.gpu_memory_utilization", recipe.get("gpu_mem"), src)
    else:
        max_seqs = b.take("rollout.max_running_seqs", VERL_ROLLOUT["max_num_seqs"], VERL)
        max_batched = b.first(
            "rollout.max_batched_tokens", None, (script.get("max_batched"), VERL),
            (Cited(8192, "verl/trainer/config/_generated_ppo_trainer.yaml:210"), VERL))
        gpu_mem = b.first(
            "rollout.gpu_memory_utilization", None, (script.get("gpu_mem"), VERL),
            (Cited(0.5, "verl/trainer/config/_generated_ppo_trainer.yaml:201"), VERL))

    # ------------------------------------------------------------ trainer
    training = facts.get("training")  # (TP, CP, EP, PP) of the measured run
    train_tp = b.first("train.tp", rec.actor_tp or (training[0] if training else None),
                       (recipe.get("train_tp"), src), (script.get("train_tp"), src))
    train_cp = b.first("train.cp", training[1] if training else None,
                       (recipe.get("train_cp"), src))
    train_pp = b.first("train.pp", rec.actor_pp or (training[3] if training else None),
                       (recipe.get("train_pp"), src), (script.get("train_pp"), src))
    ep = training[2] if training else (recipe["train_ep"].value if recipe else None)
    recompute = b.first("train.recompute_activations", None,
                        (recipe.get("recompute"), src), (script.get("recompute"), src))
    train: dict[str, Any] = {"pool": "cluster", "tp": train_tp or 1, "pp": train_pp or 1,
                             "cp": train_cp or 1}
    if fw == "verl" and rec.train_backend and rec.train_backend.startswith("fsdp"):
        train["tp"] = 1  # FSDP shards parameters over data-parallel ranks: no TP
    if recompute is not None:
        train["recompute_activations"] = bool(recompute)
    if ep and ep > 1:
        train["ep"] = ep  # expert_model_parallel_size of the measured run (or its recipe)

    if rec.use_kl is not None:
        ref = rec.use_kl
    elif recipe:
        ref = b.take("reference_policy_kl_penalty (reference pass when != 0)", recipe["kl"],
                     src) != 0
    else:
        ref = b.first("train.ref_logprob", None, (script.get("kl"), VERL),
                      (Cited(False, "verl/trainer/config/_generated_ppo_trainer.yaml:576 "
                             "(use_kl_in_reward)"), VERL))
    if recipe:
        old = not b.take("force_on_policy_ratio (true: no old-log-prob pass)",
                         recipe["force_on_policy"], src)
    else:
        old = True  # veRL recomputes old log-probs every step (timing_s/old_log_prob)
    train["ref_logprob"] = bool(ref)

    colocated_run = not (recipe and not recipe["colocated"].value) and not (
        fw == "verl" and (rec.mode or "").startswith("async"))
    old = _framework_layer(b, train, fw, recipe, facts, script_key(rec, fw), prompts, n, old)
    train["old_logprob"] = bool(old)
    rollout_extra = _engine_options(b, fw)
    weight_sync = _weight_sync(b, fw, colocated_run, gpu)

    # ------------------------------------------------------------ placement and policy
    gpus = rec.gpus_total
    pool = {"name": "cluster", "gpu": gpu, "nodes": max(1, gpus // GPUS_PER_NODE),
            "gpus_per_node": min(gpus, GPUS_PER_NODE)}
    rollout: dict[str, Any] = {"pool": "cluster", "tp": rollout_tp,
                               "max_running_seqs": max_seqs, "max_batched_tokens": max_batched,
                               "gpu_memory_utilization": gpu_mem, **rollout_extra}
    policy: dict[str, Any] = {"name": "sync", "placement": "colocated"}
    if recipe and not recipe["colocated"].value:
        gen_gpus = recipe["gen_nodes"].value * GPUS_PER_NODE
        b.take("rollout.gpus (generation nodes x 8)", Cited(gen_gpus, recipe["gen_nodes"].source),
               src)
        age = b.take("policy.asynchronous.alpha", recipe["age"], src)
        rollout["gpus"], train["gpus"] = gen_gpus, gpus - gen_gpus
        policy = {"name": "async", "placement": "disaggregated",
                  "asynchronous": {"alpha": age}}
    elif fw == "verl" and (rec.mode or "").startswith("async"):
        gen_gpus = b.take("rollout.gpus", script.get("rollout_gpus"), VERL)
        if gen_gpus is None:
            b.t.reason = "disaggregated run: the rollout/train GPU split is not stated"
            return b.t
        rollout["gpus"], train["gpus"] = gen_gpus, gpus - gen_gpus
        policy = {"name": "one_off", "placement": "disaggregated"}

    # ------------------------------------------------------------ workload
    max_prompt = b.first("workload.max_prompt_len", rec.max_prompt_len,
                         (script.get("max_prompt"), VERL),
                         (Cited(rec.max_response_len, "grpo_math_1B.yaml:446 "
                                "(max_input_seq_length = max_total_sequence_length)"), src)
                         if fw == "nemo-rl" else (None, ""))
    median0, sigma = dapo_lognormal()
    if rec.response_len_mean is not None:
        median = median_for_capped_mean(rec.response_len_mean, sigma, rec.max_response_len)
        b.t.lengths = (f"lognormal, mean {rec.response_len_mean:g} as stated (median "
                       f"{median:.0f}, sigma {sigma:.3f} of the DAPO trace)")
    else:
        median = median0
        b.t.lengths = (f"not stated: the DAPO trace's lognormal (median {median:.0f}, sigma "
                       f"{sigma:.3f})")
    workload: dict[str, Any] = {
        "prompts_per_step": prompts, "samples_per_prompt": n,
        "response_len": {"dist": "lognormal", "median": round(median, 3),
                         "sigma": round(sigma, 6)},
        "max_response_len": rec.max_response_len,
    }
    if max_prompt is not None:
        workload["max_prompt_len"] = max_prompt

    b.t.scenario = {
        "name": rec.id,
        "description": f"Measured run {rec.id} ({rec.source_url}), translated by "
                       "calibration/realruns (docs/validation.md, 'Public real runs').",
        "seed": 0, "steps": STEPS, "model": model, "pools": [pool], "rollout": rollout,
        "train": train, "workload": workload, "policy": policy,
        "weight_sync": weight_sync, "output": {"warmup_steps": WARMUP_STEPS},
    }
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
