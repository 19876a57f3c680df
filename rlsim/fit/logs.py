"""Reading a measured RL run's log into per-step records: `read_log(path) -> MeasuredRun`.

Owns the log containers rlsim reads and the key vocabularies inside them:

- **veRL console** (`verl-console`): the `step:N - key:value - ...` lines veRL's console
  logger prints (verl/utils/logger/aggregate_logger.py:26-32 @ volcengine/verl b178a3c:
  `pprint.pformat` of every numeric value, so numpy scalars may read `np.float64(0.5)`).
  Anything else in the file (Ray worker output, warnings, tracebacks, progress bars, ANSI
  colours, a `(TaskRunner pid=..)` prefix) is skipped.
- **W&B CSV** (`wandb-csv`): a header row with the metric keys as columns and a `_step`,
  `step` or `Step` column (a history export, or a panel export whose columns read
  `RUN - key`); empty and NaN cells mean "not logged".
- **W&B / veRL JSON** (`wandb-json`): a JSON array of row objects or JSON lines, each a flat
  row with `_step` or `step` (W&B history), or veRL's file logger rows `{"step": N, "data":
  {...}}` (verl/utils/tracking.py:250-252), or ROLL's `{"step": N, "metrics": {...}}`.
- **ROLL console** (`roll`): the `metrics_tag: {"step": N, "metrics": {...}}` lines ROLL's
  stdout tracker prints (roll/utils/tracking.py:161 @ alibaba/ROLL 8eb27cc).

The key vocabulary (veRL's `timing_s/*` or ROLL's `time/*`) is detected from the keys, so a
W&B export of a ROLL run reads as well. Each framework timer maps onto rlsim's canonical
phases (`PHASES`); the tables below cite the line that names each key.

Lines logged twice for one step (veRL's fully-async trainer logs its weight-sync timings in a
second `log` call with the same step) merge into one record. A step number that comes back
with a second step time starts a new run segment (a resumed run re-doing steps), whose first
timed step is a warm-up again.

Bad input raises `ScenarioError("FILE:LINE", ...)` (or `"FILE"` for whole-file problems):
a damaged or truncated `step:` line, a non-numeric value for a key this module uses (unknown
keys are ignored), a file with no step lines, an empty file, a CSV without a step column.
A number cut short at the end of a line (`timing_s/step:9` from `96.551`) cannot be told
from a real one.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsim.config.errors import ScenarioError

PHASES = ("gen", "generate_sequences", "reward", "old_log_prob", "ref", "values", "adv",
          "update_critic", "update_actor", "update_weights", "step", "testing")
"""Canonical phases. `generate_sequences` is veRL's timer of the engines' generation alone,
inside its `gen` (verl/workers/fsdp_workers.py `generate_sequences`: the switch to rollout
mode, the timed generation, the switch back to trainer mode), so gen less it is what the
colocated switch cost."""

FORMATS = ("verl-console", "wandb-csv", "wandb-json", "roll")
"""The log containers `read_log` reads (`MeasuredRun.format`); docs/fit.md shows an example
of each, which tests/test_docs.py reads with `read_log`."""

# ---------------------------------------------------------------------------------------------
# veRL vocabulary (volcengine/verl @ b178a3cd56f58b2d502255daba591e92833930a7).
# verl/trainer/ppo/metric_utils.py:262 logs every timer as `timing_s/{name}`; veRL from
# 2856be4 (2025-01-02) to b43dcd9 (2025-01-21) spelled it `timing/{name}`. Both are read.
# Timer names, verl/trainer/ppo/ray_trainer.py: step :1388, gen :1390, reward :1466,
# old_log_prob :1501, ref :1537 (`str(Role.RefPolicy)` is "ref", verl/trainer/ppo/utils.py:49),
# values :1543, adv :1547, update_critic :1598, update_actor :1606, update_weights :1610,
# testing :1627.
_VERL_TIMERS: dict[str, str] = {name: name for name in PHASES}
# The off-policy recipes name their weight sync differently; both are the trainer-to-rollout
# weight transfer on the step's critical path, so both are `update_weights`:
# - verl/experimental/one_step_off_policy/ray_trainer.py:509 `sync_rollout_weights`.
# - verl/experimental/fully_async_policy/fully_async_trainer.py:545 `timing_s/param_sync`
#   (timed into its own dict and logged as is at :567, so it reads `timing_s/param_sync`).
# In both recipes `gen` (one_step_off :501, fully_async :321) is the trainer's wait for the
# batch generated in the background, which is what sits on the step's critical path.
# The fully-async trainer logs once per parameter version (fully_async_trainer.py:536) with
# each `timing_s/*` summed over the trainer steps between two syncs (detach_utils.py:256).
_VERL_TIMERS["sync_rollout_weights"] = "update_weights"
_VERL_TIMERS["param_sync"] = "update_weights"
_VERL_TIMING_PREFIXES = ("timing_s/", "timing/")

# Lengths: verl/trainer/ppo/metric_utils.py:190-209 (`response_length/mean|max|min|
# clip_ratio`, `prompt_length/mean|max|min|clip_ratio`).
_VERL_LENGTHS = {"response_length/": "response", "prompt_length/": "prompt"}
_LEN_STATS = ("mean", "max", "min", "clip_ratio")
# perf/throughput: metric_utils.py:302 (all tokens / (step time * GPUs)), tokens/s/GPU.
# MFU: `perf/mfu/actor` (ray_trainer.py:1265, fsdp_workers.py:912); `mfu/actor` before
# 6133ae9 (2025-03-15).
_VERL_THROUGHPUT = ("perf/throughput",)
# perf/total_num_tokens: metric_utils.py:299, the trained batch's prompt and response tokens
# (the attention mask's sum), the numerator of perf/throughput.
_VERL_TOTAL_TOKENS = "perf/total_num_tokens"
_VERL_MFU = ("perf/mfu/actor", "mfu/actor")

# ---------------------------------------------------------------------------------------------
# ROLL vocabulary (alibaba/ROLL @ 8eb27cc2dc34c4d1310b169d9b86d339004d811a). Several ROLL
# timers can feed one phase; the phase is their sum.
# RLVR pipeline, roll/pipeline/rlvr/rlvr_pipeline.py:
#   time/step_model_update :521 -> update_weights   time/val_step :533 -> testing
#   time/step_generate :566 -> gen (reward workers run inside generation, so there is no
#     separate reward timer)
#   time/ref_log_probs_values :615 -> ref           time/old_log_probs :677 -> old_log_prob
#   {domain}/time/get_sample_level_mask :689, {domain}/time/reward_postprocess :698,
#   {domain}/time/get_token_reward :707, {domain}/time/compute_advantage :727 -> adv
#     (per-domain keys, metrics_manager.py:41-47 prefixes the domain; summed over domains)
#   time/step_train :803 -> update_actor (the critic trains inside the same timer)
#   time/step_total :496 is logged at the START of step N and holds step N-1's total
#     (`pre_step_total_time`, set at :842), so step N's time is read from step N+1's line.
# Agentic pipeline, roll/pipeline/agentic/agentic_pipeline.py:
#   time/step_model_update :258 -> update_weights   time/step_rollout :312 -> gen
#   time/step_ref_log_probs_values_reward :412 -> ref (its timer, "cal_ref_log_probs" :366,
#     covers the reference log-probs only)
#   time/step_old_log_probs_values :467 -> old_log_prob (critic values inside with GAE)
#   time/step_cal_response_level_mask :475, time/step_cal_norm_rewards :486,
#   time/step_cal_token_reward :494, time/step_adv :510 -> adv
#   time/step_train :550 -> update_actor            time/step_total :616 -> step (this step)
#   time/step_val :673 -> testing
_ROLL_TIMERS: dict[str, str] = {
    "time/step_model_update": "update_weights",
    "time/val_step": "testing",
    "time/step_generate": "gen",
    "time/ref_log_probs_values": "ref",
    "time/old_log_probs": "old_log_prob",
    "time/step_train": "update_actor",
    "time/step_rollout": "gen",
    "time/step_ref_log_probs_values_reward": "ref",
    "time/step_old_log_probs_values": "old_log_prob",
    "time/step_cal_response_level_mask": "adv",
    "time/step_cal_norm_rewards": "adv",
    "time/step_cal_token_reward": "adv",
    "time/step_adv": "adv",
    "time/step_val": "testing",
}
_ROLL_DOMAIN_TIMERS: dict[str, str] = {
    "time/get_sample_level_mask": "adv",
    "time/reward_postprocess": "adv",
    "time/get_token_reward": "adv",
    "time/compute_advantage": "adv",
}
_ROLL_STEP_TOTAL = "time/step_total"
# Keys only the RLVR pipeline logs: their presence means time/step_total lags one step.
_ROLL_RLVR_ONLY = ("time/step_generate", "time/ref_log_probs_values", "time/old_log_probs")
# Lengths: RLVR metrics_manager.py:108-119 (`token/...`, add_token_metrics prefix "token");
# agentic agentic_pipeline.py:1046-1052 (`tokens/...`, the train batch) and :993-999
# (`rollout/...`, before the batch is adjusted; read only when `tokens/` is absent).
_ROLL_LENGTH_PREFIXES = ("token/", "tokens/", "rollout/")
# system/tps_gpu: metrics_manager.py:67 - tokens per second per GPU over the step timer, a
# mean over the last 5 steps (ray.util.timer._Timer(window_size=5), rlvr_pipeline.py:466).
_ROLL_THROUGHPUT = ("system/tps_gpu",)

# Keys whose presence in a row means "this row carries a step time" (restart detection).
_STEP_TIME_KEYS = ("timing_s/step", "timing/step", _ROLL_STEP_TOTAL)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Ray's log deduplication suffix on a line repeated by several workers.
_RAY_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
_VERL_STEP = re.compile(r"(?:^|\s)step:(\S+)(?: - (.*))?$")
_NP_SCALAR = re.compile(r"^(?:np|numpy)\.\w+\((.*)\)$")
_JSON_ARRAY = re.compile(r"^\s*\[\s*[{\]]")
_STEP_COLUMNS = ("_step", "step", "Step")


@dataclass
class StepRecord:
    """One logged training step, in rlsim's units (seconds, tokens)."""

    step: int
    phases_s: dict[str, float]   # canonical names: `PHASES`
    response_len: dict[str, float]  # mean / max / min / clip_ratio when logged
    prompt_len: dict[str, float]    # mean / max / min (/ clip_ratio) when logged
    throughput: float | None        # tokens/s/GPU when logged (veRL perf/throughput)
    mfu: float | None               # veRL perf/mfu/actor when logged
    validation: bool                # a step that ran validation (testing > 0)
    line: int                       # source line (or row) it came from
    warmup: bool = False            # the first timed step of a run segment (see kept())
    other_s: dict[str, float] = field(default_factory=dict)  # other timers, as logged
    total_tokens: float | None = None  # the trained batch's tokens (veRL perf/total_num_tokens)


@dataclass
class MeasuredRun:
    """A measured run: its steps in log order and where they came from."""

    source: str          # the log path
    format: str          # one of FORMATS
    steps: list[StepRecord]
    framework: str = "verl"   # the key vocabulary: "verl" | "roll"
    notes: list[str] = field(default_factory=list)  # how the log was read, for the report

    def kept(self) -> list[StepRecord]:
        """The steps a fit uses. The rule, applied to every logged step:

        1. drop a step without a step time (veRL's `step:0` line holds only the
           validation before training; ROLL RLVR's last step, whose total is never logged);
        2. drop the warm-up: the first step with a step time in each run segment (the first
           step pays compilation, cache warm-up and first allocations; a resumed run pays
           them again). A log that starts mid-run loses one ordinary step to this rule;
        3. drop a step that ran validation (`testing` > 0): in veRL v0.5.0 validation runs
           inside the step timer (ray_trainer.py:1354 under :1167), at b178a3c after it
           (:1627), and in ROLL inside it; either way the step is not a plain training step.
        """
        return [r for r in self.steps if _why_dropped(r) is None]

    def dropped(self) -> list[tuple[StepRecord, str]]:
        """The steps kept() leaves out, each with the rule that dropped it."""
        out: list[tuple[StepRecord, str]] = []
        for r in self.steps:
            why = _why_dropped(r)
            if why is not None:
                out.append((r, why))
        return out


def _why_dropped(r: StepRecord) -> str | None:
    if "step" not in r.phases_s:
        return "no step time logged"
    if r.warmup:
        return "warm-up (first timed step of the run)"
    if r.validation:
        return "validation ran in this step"
    return None


def summary(run: MeasuredRun) -> dict[str, Any]:
    """What the fitter compares against: medians over the kept steps.

    `phases_s[p]` is the median of phase p over the kept steps that logged it (`counts[p]`
    of them); `response_len[stat]` / `prompt_len[stat]` the median over kept steps of the
    per-step statistic (mean, max, ...); `throughput` / `mfu` medians or None.
    """
    kept = run.kept()
    if not kept:
        reasons = "; ".join(f"step {r.step}: {why}" for r, why in run.dropped()) or "none"
        raise ScenarioError(run.source, "no step is left to fit: the log needs at least two "
                            f"timed training steps (dropped: {reasons})")

    def medians(per_step: list[dict[str, float]], names: tuple[str, ...]) -> dict[str, float]:
        out = {}
        for name in names:
            values = [d[name] for d in per_step if name in d]
            if values:
                out[name] = float(statistics.median(values))
        return out

    phases = medians([r.phases_s for r in kept], PHASES)
    throughputs = [r.throughput for r in kept if r.throughput is not None]
    mfus = [r.mfu for r in kept if r.mfu is not None]
    totals = [r.total_tokens for r in kept if r.total_tokens is not None]
    # GPUs: veRL's throughput is the batch's tokens / (step seconds x GPUs) (metric_utils.py:
    # 302), so each step that logs all three says how many GPUs ran it.
    gpus = [r.total_tokens / (r.throughput * r.phases_s["step"]) for r in kept
            if r.total_tokens and r.throughput and r.phases_s.get("step")]
    return {
        "source": run.source,
        "format": run.format,
        "framework": run.framework,
        "steps_logged": len(run.steps),
        "steps_kept": [r.step for r in kept],
        "dropped": {r.step: why for r, why in run.dropped()},
        "phases_s": phases,
        "counts": {p: sum(1 for r in kept if p in r.phases_s) for p in phases},
        "response_len": medians([r.response_len for r in kept], _LEN_STATS),
        "prompt_len": medians([r.prompt_len for r in kept], _LEN_STATS),
        "throughput": float(statistics.median(throughputs)) if throughputs else None,
        "mfu": float(statistics.median(mfus)) if mfus else None,
        "total_tokens": float(statistics.median(totals)) if totals else None,
        "gpus": float(statistics.median(gpus)) if gpus else None,
        "notes": list(run.notes),
    }


# ---------------------------------------------------------------------------------------------
# Reading.

@dataclass
class _Row:
    """One logged row before the vocabulary is applied. `values` holds the raw values as
    read; after _merge, `(raw value, "FILE:LINE" it came from)` pairs."""

    step: int
    where: str            # FILE:LINE of the row
    line: int
    values: dict[str, Any]


def read_log(path: Path) -> MeasuredRun:
    """Read a veRL console log, a W&B CSV/JSON export or a ROLL console log (detected from
    the content). Raises ScenarioError("FILE:LINE" or "FILE", how to fix it)."""
    path = Path(path)
    src = str(path)
    if not path.is_file():
        raise ScenarioError(src, "is a directory; pass the log file" if path.is_dir()
                            else "no such log file")
    # utf-8-sig: spreadsheet and W&B CSV exports may start with a byte-order mark.
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    if not text.strip():
        raise ScenarioError(src, "the log is empty; pass the console output of the training "
                            "run or a W&B CSV/JSON export of its history")
    fmt, rows = _read_rows(src, text)
    if not rows:
        raise ScenarioError(src, "found no step lines: no veRL `step:N - key:value` line, no "
                            "ROLL `metrics_tag:` line, and no CSV/JSON rows; is this the "
                            "training run's console output?")
    segments = _merge(rows)
    framework = _vocabulary(src, segments)
    run = MeasuredRun(source=src, format=fmt, steps=[], framework=framework)
    for segment in segments:
        records = [_record(r, framework) for r in segment]
        if framework == "roll":
            _roll_step_times(run, segment, records)
        timed = [r for r in records if "step" in r.phases_s]
        if timed:
            timed[0].warmup = True
        run.steps.extend(records)
    if framework == "verl" and any(k.startswith("fully_async/")
                                   for seg in segments for row in seg for k in row.values):
        run.notes.append("veRL fully-async: each logged step is one parameter version, its "
                         "timings summed over the trainer steps between two weight syncs")
    if len(segments) > 1:
        run.notes.append(f"the log holds {len(segments)} run segments (a resumed run re-did "
                         "steps); each segment's first timed step is a warm-up")
    return run


def _read_rows(src: str, text: str) -> tuple[str, list[_Row]]:
    if _JSON_ARRAY.match(text):
        return "wandb-json", list(_json_array_rows(src, text))
    lines = text.split("\n")
    first = next(ln for ln in lines if ln.strip())
    if _is_json_object(first):
        return "wandb-json", list(_json_lines_rows(src, lines))
    for ln in lines:
        clean = _ANSI.sub("", ln)
        if "metrics_tag: {" in clean:
            return "roll", list(_roll_rows(src, lines))
        if _VERL_STEP.search(clean.rstrip("\r")):
            return "verl-console", list(_verl_rows(src, lines))
    if _looks_like_csv_header(first):
        return "wandb-csv", list(_csv_rows(src, text))
    return "verl-console", []


def _is_json_object(line: str) -> bool:
    # A console log may open with veRL's pprint of its config (`{'actor_rollout_ref': ..`),
    # which is not JSON: only a line that parses as an object makes the file JSON lines.
    if not line.lstrip().startswith("{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False


def _verl_rows(src: str, lines: list[str]) -> Iterator[_Row]:
    for i, raw in enumerate(lines, start=1):
        line = _RAY_REPEATED.sub("", _ANSI.sub("", raw).rstrip("\r"))
        m = _VERL_STEP.search(line)
        if not m:
            continue
        where = f"{src}:{i}"
        step = _step_number(m.group(1), where)
        values: dict[str, Any] = {}
        rest = m.group(2)
        fields = rest.split(" - ") if rest else []
        for j, item in enumerate(fields):
            key, sep, value = item.rpartition(":")
            if not sep or not key.strip() or not value.strip():
                what = ("ends in the middle of a field" if j == len(fields) - 1
                        else "has a field without `key:value`")
                raise ScenarioError(where, f"this `step:` line {what} ({item.strip()!r}): "
                                    "the line is truncated or another process's output is "
                                    "mixed into it; restore the full line or delete it")
            values[key.strip()] = value.strip()
        yield _Row(step, where, i, values)


def _roll_rows(src: str, lines: list[str]) -> Iterator[_Row]:
    decoder = json.JSONDecoder()
    for i, raw in enumerate(lines, start=1):
        line = _ANSI.sub("", raw).rstrip("\r")
        at = line.find("metrics_tag: ")
        if at < 0:
            continue
        where = f"{src}:{i}"
        payload = line[at + len("metrics_tag: "):].strip()
        try:
            obj, _ = decoder.raw_decode(payload)
        except json.JSONDecodeError as e:
            raise ScenarioError(where, f"this `metrics_tag:` line is not complete JSON ({e.msg} "
                                f"at column {e.pos + 1}): the line is truncated; restore "
                                "it or delete it") from None
        yield _row_from_object(obj, where, i)


def _json_lines_rows(src: str, lines: list[str]) -> Iterator[_Row]:
    for i, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{src}:{i}"
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ScenarioError(where, f"not a JSON object ({e.msg}): a JSON-lines export "
                                "holds one complete object per line; the line is truncated or "
                                "the file is not JSON lines") from None
        yield _row_from_object(obj, where, i)


def _json_array_rows(src: str, text: str) -> Iterator[_Row]:
    # Decode element by element so each row keeps the line it starts on.
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    line, counted = 1, 0     # line numbers counted incrementally: exports can be large
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "]":
            return
        line, counted = line + text.count("\n", counted, pos), pos
        where = f"{src}:{line}"
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise ScenarioError(where, f"the JSON array breaks off here ({e.msg}); the export "
                                "is truncated or is not a list of row objects") from None
        yield _row_from_object(obj, where, line)
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos >= len(text) or text[pos] != "]":
            raise ScenarioError(f"{src}:{line + text.count(chr(10), counted, pos)}",
                                "expected `,` or `]` after a row: the JSON array is "
                                "truncated or malformed")


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _row_from_object(obj: Any, where: str, line: int) -> _Row:
    if not isinstance(obj, dict):
        raise ScenarioError(where, f"a row must be a JSON object, not {type(obj).__name__}")
    # veRL's file logger nests the metrics under "data", ROLL's stdout tracker under "metrics".
    for inner in ("data", "metrics"):
        if isinstance(obj.get(inner), dict) and "step" in obj:
            return _Row(_step_number(obj["step"], where), where, line, dict(obj[inner]))
    for key in _STEP_COLUMNS:
        if key in obj:
            values = {k: v for k, v in obj.items() if k not in _STEP_COLUMNS}
            return _Row(_step_number(obj[key], where), where, line, values)
    raise ScenarioError(where, "this row has no step number: a W&B history row needs `_step` "
                        "(or `step`), a veRL file-logger row `step` and `data`")


def _looks_like_csv_header(first: str) -> bool:
    cells = next(csv.reader([first]), [])
    return len(cells) >= 2 and any(
        c.strip() in _STEP_COLUMNS or "/" in c for c in cells)


def _csv_rows(src: str, text: str) -> Iterator[_Row]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [c.strip() for c in next(reader)]
    step_col = next((header.index(c) for c in _STEP_COLUMNS if c in header), None)
    if step_col is None:
        raise ScenarioError(src, "the CSV has no `_step` or `step` column; export the run's "
                            "history from W&B with its step column")
    keys = _csv_keys(src, header)
    for cells in reader:
        line = reader.line_num
        if not any(c.strip() for c in cells):
            continue
        where = f"{src}:{line}"
        if len(cells) > len(header):
            raise ScenarioError(where, f"this row has {len(cells)} cells but the header has "
                                f"{len(header)}; the CSV is damaged")
        values = {}
        for col, cell in enumerate(cells):
            key = keys[col]
            if key is None or col == step_col or not cell.strip():
                continue
            values[key] = cell.strip()
        step_cell = cells[step_col].strip() if step_col < len(cells) else ""
        if not step_cell:
            raise ScenarioError(where, f"this row has no value in the `{header[step_col]}` "
                                "column; the CSV is truncated or damaged")
        yield _Row(_step_number(step_cell, where), where, line, values)


def _csv_keys(src: str, header: list[str]) -> list[str | None]:
    """The metric key of each column (None: not a metric). A W&B panel export names its
    columns `RUN - key`, with `__MIN`/`__MAX` companions for the smoothing band."""
    runs = {c.rsplit(" - ", 1)[0] for c in header if " - " in c}
    if len(runs) > 1:
        raise ScenarioError(src, f"the CSV holds several runs ({', '.join(sorted(runs))}); "
                            "export one run")
    keys: list[str | None] = []
    for c in header:
        key = c.rsplit(" - ", 1)[1] if " - " in c else c
        keys.append(None if not key or key.endswith(("__MIN", "__MAX")) else key)
    return keys


def _step_number(raw: Any, where: str) -> int:
    try:
        value = float(_unwrap(raw)) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value != int(value) or value < 0:
        raise ScenarioError(where, f"step number {raw!r} is not a whole number; the line is "
                            "damaged")
    return int(value)


def _unwrap(raw: Any) -> Any:
    """`np.float64(0.5)` -> `0.5`: veRL's console logger prints numpy scalars by repr."""
    if isinstance(raw, str):
        s = raw.strip()
        m = _NP_SCALAR.match(s)
        return m.group(1) if m else s
    return raw


# ---------------------------------------------------------------------------------------------
# Merging rows into steps, and the vocabularies.

def _merge(rows: list[_Row]) -> list[list[_Row]]:
    """Rows of one step merge (later keys win); a step number that comes back carrying a
    second step time starts a new segment (a resumed run)."""
    segments: list[list[_Row]] = []
    by_step: dict[int, _Row] = {}
    current: list[_Row] = []
    for row in rows:
        seen = by_step.get(row.step)
        if seen is not None and _has_step_time(seen) and _has_step_time(row):
            segments.append(current)
            current, by_step, seen = [], {}, None
        if seen is None:
            merged = _Row(row.step, row.where, row.line, {})
            current.append(merged)
            by_step[row.step] = merged
            seen = merged
        for key, value in row.values.items():
            seen.values[key] = (value, row.where)
    segments.append(current)
    return [s for s in segments if s]


def _has_step_time(row: _Row) -> bool:
    return any(k in row.values for k in _STEP_TIME_KEYS)


def _vocabulary(src: str, segments: list[list[_Row]]) -> str:
    keys = {k for seg in segments for row in seg for k in row.values}
    if any(k.startswith(_VERL_TIMING_PREFIXES) for k in keys):
        return "verl"
    if any(k.startswith("time/") or "/time/" in k for k in keys):
        return "roll"
    raise ScenarioError(src, "the log's steps carry no phase timings (veRL `timing_s/...` or "
                        "ROLL `time/...` keys); log with veRL's console/W&B logger or ROLL's "
                        "tracker so per-phase times are recorded")


def _number(key: str, value: Any, where: str, *, nonneg: bool = False) -> float | None:
    """A used key's value as a float; None when it is NaN (how W&B and pandas mark 'not
    logged'). Anything else that is not a finite number is an error naming the line."""
    raw = _unwrap(value)
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise ScenarioError(where, f"`{key}` is {value!r}, not a number; fix or delete the line")
    try:
        x = float(raw)
    except ValueError:
        raise ScenarioError(where, f"`{key}` is {value!r}, not a number; the line is damaged "
                            "(fix the value or delete the line)") from None
    if math.isnan(x):
        return None
    if math.isinf(x) or (nonneg and x < 0):
        raise ScenarioError(where, f"`{key}` is {value!r}, which no run logs; fix the value or "
                            "delete the line")
    return x


def _record(row: _Row, framework: str) -> StepRecord:
    rec = StepRecord(step=row.step, phases_s={}, response_len={}, prompt_len={},
                     throughput=None, mfu=None, validation=False, line=row.line)
    if framework == "verl":
        _verl_record(row, rec)
    else:
        _roll_record(row, rec)
    rec.validation = rec.phases_s.get("testing", 0.0) > 0
    return rec


def _add_phase(rec: StepRecord, phase: str, seconds: float) -> None:
    rec.phases_s[phase] = rec.phases_s.get(phase, 0.0) + seconds


def _keep_other(rec: StepRecord, name: str, value: Any) -> None:
    """A timer rlsim does not use: kept when it is a number, ignored otherwise."""
    raw = _unwrap(value)
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return
    try:
        x = float(raw)
    except ValueError:
        return
    if math.isfinite(x):
        rec.other_s[name] = x


def _verl_record(row: _Row, rec: StepRecord) -> None:
    for key, (value, where) in row.values.items():
        prefix = next((p for p in _VERL_TIMING_PREFIXES if key.startswith(p)), None)
        if prefix is not None:
            name = key[len(prefix):]
            phase = _VERL_TIMERS.get(name)
            if phase is not None:
                x = _number(key, value, where, nonneg=True)
                if x is not None:
                    _add_phase(rec, phase, x)
            elif "/" not in name:
                _keep_other(rec, name, value)   # e.g. save_checkpoint
            continue
        if key == _VERL_TOTAL_TOKENS:
            rec.total_tokens = _number(key, value, where, nonneg=True)
            continue
        _read_common(key, value, where, rec, _VERL_LENGTHS, _VERL_THROUGHPUT, _VERL_MFU)


def _read_common(key: str, value: Any, where: str, rec: StepRecord,
                 length_prefixes: dict[str, str], throughput_keys: tuple[str, ...],
                 mfu_keys: tuple[str, ...]) -> None:
    for prefix, which in length_prefixes.items():
        stat = key[len(prefix):] if key.startswith(prefix) else None
        if stat in _LEN_STATS:
            x = _number(key, value, where, nonneg=True)
            if x is not None:
                (rec.response_len if which == "response" else rec.prompt_len)[stat] = x
            return
    if key in throughput_keys:
        rec.throughput = _number(key, value, where)
    elif key in mfu_keys and rec.mfu is None:
        rec.mfu = _number(key, value, where)


def _roll_record(row: _Row, rec: StepRecord) -> None:
    lengths: dict[str, dict[str, float]] = {}
    for key, (value, where) in row.values.items():
        phase = _ROLL_TIMERS.get(key)
        if phase is None and "/time/" in key:
            phase = _ROLL_DOMAIN_TIMERS.get("time/" + key.split("/time/", 1)[1])
        if phase is not None:
            x = _number(key, value, where, nonneg=True)
            if x is not None:
                _add_phase(rec, phase, x)
            continue
        if key == _ROLL_STEP_TOTAL:
            continue   # placed by _roll_step_times
        if key.startswith("time/"):
            _keep_other(rec, key[len("time/"):], value)   # e.g. step_stop_server, step_log
            continue
        for prefix in _ROLL_LENGTH_PREFIXES:
            rest = key[len(prefix):] if key.startswith(prefix) else ""
            which, _, stat = rest.partition("/")
            if which in ("response_length", "prompt_length") and stat in _LEN_STATS:
                x = _number(key, value, where, nonneg=True)
                if x is not None:
                    lengths.setdefault(prefix + which, {})[stat] = x
        if key in _ROLL_THROUGHPUT:
            rec.throughput = _number(key, value, where)
    for prefix in _ROLL_LENGTH_PREFIXES:   # the first prefix logged wins, in this order
        if not rec.response_len and prefix + "response_length" in lengths:
            rec.response_len = lengths[prefix + "response_length"]
        if not rec.prompt_len and prefix + "prompt_length" in lengths:
            rec.prompt_len = lengths[prefix + "prompt_length"]


def _roll_step_times(run: MeasuredRun, segment: list[_Row], records: list[StepRecord]) -> None:
    """Place ROLL's time/step_total: the RLVR pipeline logs step N-1's total on step N's
    line, the agentic pipeline logs the step's own total."""
    rlvr = any(k in row.values for row in segment for k in _ROLL_RLVR_ONLY)
    totals: dict[int, float | None] = {}
    for row in segment:
        if _ROLL_STEP_TOTAL in row.values:
            value, where = row.values[_ROLL_STEP_TOTAL]
            totals[row.step] = _number(_ROLL_STEP_TOTAL, value, where, nonneg=True)
    for r in records:
        total = totals.get(r.step + 1) if rlvr else totals.get(r.step)
        # RLVR's first step logs 0 (nothing before it): not a measured time.
        if total is not None and total > 0:
            r.phases_s["step"] = total
    note = ("ROLL RLVR logs `time/step_total` one step late (rlvr_pipeline.py:496); step N's "
            "time is taken from step N+1's line, so the last step has none")
    if rlvr and note not in run.notes:
        run.notes.append(note)
