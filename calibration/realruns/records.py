"""Loads the corpus of measured public RL runs (validation/real_runs/*.jsonl) into typed records.

Owns the record type, its timing keys and its optional inline `config` (settings rlsim needs
that the record's top level does not hold, each with its source and quote); what a record
means for a simulation is translate.py's job. A value the source did not state is None,
never a default. Every file of the corpus folder is read, in name order; record ids are
unique across files. Bad input is a ScenarioError whose field is `FILE:LINE` (the CLI
prints it as one line and exits 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibration.jsonlines import json_objects
from rlsim.config.errors import ScenarioError

ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIR = ROOT / "validation" / "real_runs"
DEFAULT_PATH = CORPUS_DIR  # load_records() reads every *.jsonl file in it

# The phases a record may time, in seconds (validation/real_runs/README.md): veRL's
# timing_s keys (values and update_critic under PPO), NeMo-RL's and slime's mapped onto
# them by the collector.
TIMING_KEYS = ("gen", "generate_sequences", "reward", "old_log_prob", "ref", "values", "adv",
               "update_critic", "update_actor", "update_weights", "step", "testing",
               "logprobs")
# `logprobs`: the log-prob forwards timed together (NeMo-RL's policy_and_reference_logprobs:
# the old-policy and the reference pass), for a record that does not split them.
# `generate_sequences`: veRL's timer of the engines' generation alone, inside gen (the
# hybrid engine's switch is the rest: rlsim.fit.logs.PHASES).


def _positive_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _positive_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and v > 0


def _boolean(v: Any) -> bool:
    return isinstance(v, bool)


def _one_of(*choices: str) -> Any:
    def check(v: Any) -> bool:
        return v in choices
    check.__doc__ = " | ".join(repr(c) for c in choices)
    return check


# The names a record's `config` may hold (docs: validation/real_runs/README.md) and what
# each value must be.
CONFIG_KEYS: dict[str, tuple[Any, str]] = {
    "placement": (_one_of("colocated", "disaggregated"), '"colocated" or "disaggregated"'),
    "rollout_gpus": (_positive_int, "a GPU count > 0"),
    "train_gpus": (_positive_int, "a GPU count > 0"),
    "policy": (_one_of("sync", "one_off", "async"), '"sync", "one_off" or "async"'),
    "async_alpha": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                    "an integer >= 0"),
    "rollout_ep": (_positive_int, "an integer > 0"),
    "max_num_seqs": (_positive_int, "an integer > 0"),
    "max_num_batched_tokens": (_positive_int, "an integer > 0"),
    "gpu_memory_utilization": (lambda v: _positive_number(v) and v <= 1,
                               "a fraction in (0, 1]"),
    "enforce_eager": (_boolean, "true or false"),
    "use_remove_padding": (_boolean, "true or false"),
    "train_tp": (_positive_int, "an integer > 0"),
    "train_pp": (_positive_int, "an integer > 0"),
    "train_cp": (_positive_int, "an integer > 0"),
    "train_ep": (_positive_int, "an integer > 0"),
    "recompute": (_one_of("none", "selective", "full"), '"none", "selective" or "full"'),
    "ppo_mini_batch_size": (_positive_int, "prompts per optimizer step, an integer > 0"),
    "ppo_epochs": (_positive_int, "an integer > 0"),
    "micro_batch_size_per_gpu": (_positive_int, "an integer > 0"),
    "max_token_len_per_gpu": (_positive_int, "tokens, an integer > 0"),
    "log_prob_micro_batch_size_per_gpu": (_positive_int, "an integer > 0"),
    "log_prob_max_token_len_per_gpu": (_positive_int, "tokens, an integer > 0"),
    "param_offload": (_boolean, "true or false"),
    "optimizer_offload": (_boolean, "true or false"),
    "use_kl": (_boolean, "true or false"),
    "old_logprob": (_boolean, "true or false"),
    "max_prompt_len": (_positive_int, "tokens, an integer > 0"),
    "prompt_len_mean": (_positive_number, "tokens, a number > 0"),
    "response_len_median": (_positive_number, "tokens, a number > 0"),
    "response_len_sigma": (_positive_number, "log-space spread, a number > 0"),
}
# Keys an entry of `config` holds: value, source and quote are required.
_ENTRY_KEYS = {"value", "source", "quote", "note"}

# Top-level keys of the older records that state a `config` name (top-level name -> config
# name). A record stating both must agree.
TOP_LEVEL_ALIASES: dict[str, str] = {
    "ppo_mini_batch_size": "ppo_mini_batch_size",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "param_offload": "param_offload",
    "optimizer_offload": "optimizer_offload",
    "max_token_len_per_gpu": "max_token_len_per_gpu",
    "micro_batch_per_gpu": "micro_batch_size_per_gpu",
    "use_kl": "use_kl",
    "actor_tp": "train_tp",
    "actor_pp": "train_pp",
    "prompt_len_mean": "prompt_len_mean",
    "max_prompt_len": "max_prompt_len",
}


@dataclass(frozen=True)
class ConfigEntry:
    """One setting of a record's `config`: its value and where the source writes it."""

    value: Any
    source: str
    quote: str


@dataclass(frozen=True)
class RunRecord:
    """One measured run: the fields the translator reads, typed; the rest kept in `raw`."""

    id: str
    source_url: str
    framework: str
    complete: bool
    timing_s: dict[str, float]
    gpu: str | None = None
    gpus_total: int | None = None
    nodes: int | None = None
    model: str | None = None
    algorithm: str | None = None
    train_batch_size: int | None = None   # prompts per step
    rollout_n: int | None = None          # responses per prompt
    max_prompt_len: int | None = None
    max_response_len: int | None = None
    response_len_mean: float | None = None
    rollout_tp: int | None = None
    actor_tp: int | None = None
    actor_pp: int | None = None
    train_backend: str | None = None
    use_kl: bool | None = None
    mode: str | None = None
    multi_turn: bool | None = None
    notes: str = ""
    missing: tuple[str, ...] = ()
    config: dict[str, ConfigEntry] = field(default_factory=dict)
    where: str = ""                       # FILE:LINE it was read from
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def stated(self, name: str) -> tuple[Any, ConfigEntry | None]:
        """(value, config entry) of a `config` name the record states: from its top level
        (older records; entry None) or its `config`; (None, None) when it does not."""
        for top, cfg in TOP_LEVEL_ALIASES.items():
            if cfg == name and self.raw.get(top) is not None:
                return self.raw[top], None
        entry = self.config.get(name)
        return (entry.value, entry) if entry is not None else (None, None)


def _opt(raw: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ScenarioError(where, f"field {key!r} should be {kind.__name__}, got {value!r}; "
                            "fix the record")
    return value


def _config(raw: dict[str, Any], where: str) -> dict[str, ConfigEntry]:
    """The record's `config` entries, checked: known names, values of the right kind, each
    with its source and quote, and no contradiction with the record's top level."""
    cfg = raw.get("config")
    if cfg is None:
        return {}
    if not isinstance(cfg, dict):
        raise ScenarioError(where, "field 'config' should be an object of "
                            '{"name": {"value", "source", "quote"}}')
    out: dict[str, ConfigEntry] = {}
    for name, entry in cfg.items():
        if name not in CONFIG_KEYS:
            raise ScenarioError(where, f"unknown config name {name!r}; known: "
                                f"{', '.join(sorted(CONFIG_KEYS))}")
        if not isinstance(entry, dict) or "value" not in entry:
            raise ScenarioError(where, f"config.{name} should be an object "
                                '{"value": V, "source": "...", "quote": "..."}')
        extra = sorted(set(entry) - _ENTRY_KEYS)
        if extra:
            raise ScenarioError(where, f"config.{name}: unknown key(s) {', '.join(extra)}; an "
                                "entry holds value, source, quote (and an optional note)")
        for key in ("source", "quote"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise ScenarioError(where, f"config.{name}.{key} is required (a non-empty "
                                    "string): where the value is written and its exact text")
        check, what = CONFIG_KEYS[name]
        value = entry["value"]
        if not check(value):
            raise ScenarioError(where, f"config.{name}.value should be {what}, got {value!r}")
        for top, alias in TOP_LEVEL_ALIASES.items():
            if alias == name and raw.get(top) is not None and raw[top] != value:
                raise ScenarioError(where, f"config.{name} ({value!r}) contradicts the "
                                    f"record's {top} ({raw[top]!r}); keep one")
        out[name] = ConfigEntry(value=value, source=entry["source"], quote=entry["quote"])
    return out


def parse_record(raw: dict[str, Any], where: str = "record") -> RunRecord:
    """A RunRecord from one JSON object; ScenarioError naming `where` (FILE:LINE), the
    record and the field if it is bad."""
    for key in ("id", "source_url", "framework"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ScenarioError(where, f"field {key!r} is required (a non-empty string)")
    loc = f"{where} ({raw['id']})"
    timing = raw.get("timing") or {}
    if not isinstance(timing, dict):
        raise ScenarioError(loc, "field 'timing' should be an object of seconds")
    unknown = sorted(set(timing) - set(TIMING_KEYS))
    if unknown:
        raise ScenarioError(loc, f"unknown timing key(s) {', '.join(unknown)}; known: "
                            f"{', '.join(TIMING_KEYS)}")
    for key, value in timing.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ScenarioError(loc, f"timing.{key} should be seconds >= 0, got {value!r}")
    if "logprobs" in timing and {"old_log_prob", "ref"} & set(timing):
        raise ScenarioError(loc, "timing.logprobs is the log-prob passes together: state it "
                            "or old_log_prob / ref, not both")
    complete = raw.get("complete", False)
    if not isinstance(complete, bool):
        raise ScenarioError(loc, "field 'complete' should be true or false")
    return RunRecord(
        id=raw["id"], source_url=raw["source_url"], framework=raw["framework"],
        complete=complete, timing_s={k: float(v) for k, v in timing.items()},
        gpu=_opt(raw, "gpu", str, loc), gpus_total=_opt(raw, "gpus_total", int, loc),
        nodes=_opt(raw, "nodes", int, loc),
        model=_opt(raw, "model", str, loc), algorithm=_opt(raw, "algorithm", str, loc),
        train_batch_size=_opt(raw, "train_batch_size", int, loc),
        rollout_n=_opt(raw, "rollout_n", int, loc),
        max_prompt_len=_opt(raw, "max_prompt_len", int, loc),
        max_response_len=_opt(raw, "max_response_len", int, loc),
        response_len_mean=_opt(raw, "response_len_mean", float, loc),
        rollout_tp=_opt(raw, "rollout_tp", int, loc),
        actor_tp=_opt(raw, "actor_tp", int, loc), actor_pp=_opt(raw, "actor_pp", int, loc),
        train_backend=_opt(raw, "train_backend", str, loc),
        use_kl=_opt(raw, "use_kl", bool, loc), mode=_opt(raw, "mode", str, loc),
        multi_turn=_opt(raw, "multi_turn", bool, loc),
        notes=_opt(raw, "notes", str, loc) or "",
        missing=tuple(_opt(raw, "missing", list, loc) or ()),
        config=_config(raw, loc),
        where=where,
        raw=raw,
    )


def _shown(path: Path) -> str:
    """The path as the user sees it: relative to the project when inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def corpus_files(path: Path = DEFAULT_PATH) -> list[Path]:
    """The JSON-lines files of the corpus: `path` itself if a file, else every *.jsonl in
    the folder, in name order."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ScenarioError(_shown(path), "no such corpus file or folder of *.jsonl files")
    files = sorted(path.glob("*.jsonl"))
    if not files:
        raise ScenarioError(_shown(path), "the corpus folder holds no *.jsonl file")
    return files


def load_records(path: Path = DEFAULT_PATH) -> list[RunRecord]:
    """Every record of the corpus (a folder of *.jsonl files, or one file), file by file
    in name order and in file order within each; an id repeated anywhere is an error
    naming both places."""
    records: list[RunRecord] = []
    first_seen: dict[str, str] = {}
    for file in corpus_files(path):
        for where, raw in json_objects(file, _shown(file)):
            rec = parse_record(raw, where)
            if rec.id in first_seen:
                raise ScenarioError(where, f"record id {rec.id!r} repeats the record at "
                                    f"{first_seen[rec.id]}; ids are unique across the "
                                    "corpus")
            first_seen[rec.id] = where
            records.append(rec)
    return records
