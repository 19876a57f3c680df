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
    NEMO_RL_RECIPES,
    NEMO_RL_VLLM,
    VERL,
    VERL_ROLLOUT,
    VERL_SCRIPTS,
    Cited,
    nemo_rl_path,
)
from rlsim.config.hardware import GPUS, lookup_model
from rlsim.config.scenario import TrainConfig

STEPS = 5          # simulated steps per record
WARMUP_STEPS = 1   # left out of the step time (output.warmup_steps)
GPUS_PER_NODE = 8  # DGX/HGX nodes: NeMo-RL recipes' cluster.gpus_per_node, veRL's scripts
DAPO_TRACE = ROOT / "traces" / "polytrace" / "dapo-qwen2.5-32b"

# A stated fact -> the TrainConfig field that would carry it, first name the schema has.
# Used only when rlsim's schema has such a field (issue 19 adds training backends).
OPTIONAL_TRAIN_FIELDS: dict[str, tuple[str, ...]] = {
    "backend": ("backend",),
    "ep": ("ep", "expert_model_parallel_size"),
    "use_dynamic_bsz": ("use_dynamic_bsz",),
    "ppo_max_token_len_per_gpu": ("ppo_max_token_len_per_gpu",),
    "offload": ("param_offload",),
    "optimizer_offload": ("optimizer_offload",),
}


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
        self.t.taken.append(f"{name} = {cited.value} ({where}{source})")
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
    elif fw == "verl" and "one_step_off_policy" in rec.source_url:
        layout = "4_12" if (rec.mode or "").startswith("async") else "colocate"
        script = VERL_SCRIPTS.get((rec.train_backend or "", layout), {})
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
    train["ref_logprob"], train["old_logprob"] = bool(ref), bool(old)

    optional: dict[str, Any] = {}
    if rec.train_backend:
        optional["backend"] = rec.train_backend
    if ep and ep > 1:
        optional["ep"] = ep
    for key in ("use_dynamic_bsz", "ppo_max_token_len_per_gpu", "offload"):
        if key in script:
            optional[key] = script[key].value
    if script.get("offload") is not None:
        optional["optimizer_offload"] = script["offload"].value
    for key, value in optional.items():
        name = next((f for f in OPTIONAL_TRAIN_FIELDS[key] if f in TrainConfig.model_fields),
                    None)
        if name is None:
            b.t.dropped.append(f"{key}={value}")
        else:
            train[name] = value
    if facts.get("t_gbs") and facts.get("g_gbs") and facts["g_gbs"] > facts["t_gbs"]:
        b.t.dropped.append(f"optimizer steps per RL step={facts['g_gbs'] // facts['t_gbs']}")

    # ------------------------------------------------------------ placement and policy
    gpus = rec.gpus_total
    pool = {"name": "cluster", "gpu": gpu, "nodes": max(1, gpus // GPUS_PER_NODE),
            "gpus_per_node": min(gpus, GPUS_PER_NODE)}
    rollout: dict[str, Any] = {"pool": "cluster", "tp": rollout_tp,
                               "max_running_seqs": max_seqs, "max_batched_tokens": max_batched,
                               "gpu_memory_utilization": gpu_mem}
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
        "output": {"warmup_steps": WARMUP_STEPS},
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
