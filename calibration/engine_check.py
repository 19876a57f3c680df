"""rlsim's engine iteration against the published decode-speed points (issue 36, item 2).

Owns how a point becomes a prediction: which catalogue model and engine switches a point's
model stands for (`MAPPED`, each with why), which measured value is compared (`metric`),
and the iteration that value measures (`predict_ms`), then the table of errors, per side
of the split and per engine, written to reports/engine-points.md by `make engine-points`
(`python -m calibration.engine_check`). Nothing here is fitted: the engine is rlsim's
(InferenceCost with the GPU's built-in profile), the same for every engine family.

What a point measures, and the iteration that prices it (docs/validation.md, "Engine
points"):
- a median ITL is one decode iteration of `load` sequences at the mean context (prompt +
  half the response); a fitted ITL intercept the same at zero context and one sequence;
- a mean TPOT (or ITL) of a serving run also carries the prefills the run interleaves:
  `load x input / output` prompt tokens per iteration, each new request's prompt spread
  over the iterations of one response;
- an output throughput of a serving run is `load` tokens per such iteration; per user, one;
- an offline static batch's output throughput is `batch x output` tokens over the batch's
  prefill and `output` decode iterations at the mean context; an end-to-end latency is that
  time.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from calibration.engine_points import EnginePoint, load_points
from rlsim.config.hardware import GPUS, MODELS
from rlsim.cost.inference import EngineOptions, InferenceCost
from rlsim.cost.profile import builtin_profile

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports" / "engine-points.md"


@dataclass(frozen=True)
class Mapping:
    """A point's model as rlsim's catalogue has it, and the switches the source implies."""

    model: str
    dtype: str = "bf16"  # weights: "bf16" or "fp8"
    kv_cache_dtype: str = "auto"
    why: str = ""


# Point model names (as the points write them, lower case, up to a space) -> the catalogue
# entry of the same architecture. A model rlsim has no entry for is not mapped (its points
# are listed as not compared, never priced as a look-alike).
MAPPED: dict[str, Mapping] = {
    "meta-llama/llama-3.1-70b": Mapping("llama-3.1-70b"),
    "deepseek-ai/deepseek-r1-0528": Mapping(
        "deepseek-v3", "fp8", why="DeepSeek-R1 is DeepSeek-V3's architecture; its released "
        "checkpoint is FP8 (the SGLang cookbook serves it as released)"),
    "deepseek-ai/deepseek-r1": Mapping(
        "deepseek-v3", "fp8", why="DeepSeek-V3's architecture, served in FP8 (the point's "
        "dtype)"),
    "qwen/qwen3-235b-a22b-instruct-2507": Mapping(
        "qwen3-235b-a22b", why="the 2507 instruct release of Qwen3-235B-A22B"),
    "meta-llama/meta-llama-3-8b": Mapping("llama-3-8b"),
    "llama-3.1-8b": Mapping("llama-3.1-8b"),
    "llama-3.1": Mapping("llama-3.1-8b", why="the point names Llama 3.1 8B"),
    "llama-3": Mapping("llama-3-70b", why="the point names Llama 3 70B"),
    "meta/llama-3.3-70b-instruct": Mapping(
        "llama-3.1-70b", "fp8", why="Llama 3.3 70B has Llama 3.1 70B's architecture; NIM "
        "serves it in FP8 (the point's dtype)"),
    "llama2-7b": Mapping("llama-2-7b"),
    "llama2-70b": Mapping("llama-2-70b"),
    "meta/llama3-8b-instruct": Mapping(
        "llama-3-8b", "fp8", why="NIM serves it in FP8 (the point's dtype)"),
    "meta/llama3-70b-instruct": Mapping(
        "llama-3-70b", "fp8", why="NIM serves it in FP8 (the point's dtype)"),
    "meta/llama-3_1-70b-instruct": Mapping("llama-3.1-70b"),
    "llama_70b": Mapping(
        "llama-2-70b", "fp8", why="TensorRT-LLM v0.5's llama_70b (November 2023, before "
        "Llama 3) is Llama 2 70B; FP8 as the blog states"),
    "llama-70b": Mapping("llama-2-70b", "fp8", why="the blog's footnote names Llama2-70B; "
                         "FP8 as it states"),
    "qwen3-30b-a3b-base": Mapping("qwen3-30b-a3b", why="the base checkpoint of the same "
                                  "architecture"),
    "minimaxai/minimax-m2.5": Mapping(
        "minimax-m2.5", "fp8", why="its released checkpoint is FP8 (block-wise e4m3); the "
        "SGLang cookbook serves it as released"),
    "zai-org/glm-4.7-flash": Mapping("glm-4.7-flash"),
    "ibm-granite/granite-3.1-3b-a800m-instruct": Mapping(
        "granite-3.1-3b-a800m", why="the instruct release of the same architecture"),
    "llama2-13b": Mapping("llama-2-13b"),
    # Qwen3 and Qwen2.5 as their sources name them (the instruct and 2507 releases share
    # the architecture; an "-FP8" checkpoint is served in FP8, the point's dtype).
    **{name: Mapping(name) for name in (
        "qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b",
        "qwen3-30b-a3b", "qwen3-235b-a22b")},
    **{f"qwen/{name}": Mapping(name) for name in ("qwen3-8b", "qwen3-14b", "qwen3-32b")},
    "qwen/qwen3-8b-fp8": Mapping("qwen3-8b", "fp8", why="Qwen's FP8 release of Qwen3-8B"),
    "qwen/qwen3-14b-fp8": Mapping("qwen3-14b", "fp8", why="Qwen's FP8 release of Qwen3-14B"),
    "meta-llama/meta-llama-3-70b": Mapping("llama-3-70b"),
    "meta-llama/meta-llama-3-8b-instruct": Mapping(
        "llama-3-8b", why="the instruct release of the same architecture"),
    "meta-llama/meta-llama-3-70b-instruct": Mapping(
        "llama-3-70b", why="the instruct release of the same architecture"),
    "qwen/qwen2.5-0.5b-instruct": Mapping(
        "qwen2.5-0.5b", why="the instruct release of the same architecture"),
    "amd/llama-3.1-70b-instruct-fp8-kv": Mapping(
        "llama-3.1-70b", "fp8", "fp8", why="AMD's FP8 quantization of Llama 3.1 70B "
        "Instruct, FP8 weights and KV cache (its name's -FP8-KV)"),
    "qwen/qwen2.5-32b-instruct": Mapping(
        "qwen2.5-32b", why="the instruct release of the same architecture"),
    "llama-2-13b-chat-hf": Mapping("llama-2-13b", why="the chat release of Llama 2 13B"),
}
# Points whose model name is shared by several sizes: the size comes from the id.
_BY_ID = {"trtllm-perfdoc-v0.6.1-llama7b": "llama-2-7b",
          "trtllm-perfdoc-v0.6.1-llama70b": "llama-2-70b"}
# Points measured with speculative decoding: not one token per iteration.
SPECULATIVE = ("trtllm-blog-dsr1-h200-min-latency", "trtllm-blog-dsr1-b200-min-latency")


@dataclass
class Check:
    """One point: what it measured, what rlsim predicts, or why it is not compared."""

    point: EnginePoint
    metric: str = ""
    measured_ms: float | None = None
    predicted_ms: float | None = None
    reason: str = ""

    @property
    def error(self) -> float | None:
        if self.measured_ms is None or self.predicted_ms is None:
            return None
        return (self.predicted_ms - self.measured_ms) / self.measured_ms


def _mapping(p: EnginePoint) -> Mapping | None:
    for prefix, model in _BY_ID.items():
        if p.id.startswith(prefix):
            return Mapping(model, "fp8" if "fp8" in str(p.raw.get("dtype")).lower() else "bf16")
    key = (p.model or "").split(" ")[0].lower()
    m = MAPPED.get(key)
    if m is None:
        return None
    dtype = str(p.raw.get("dtype") or "").lower()
    if "fp8" in dtype and "kv" in dtype and m.dtype == "bf16":
        return Mapping(m.model, "bf16", "fp8" if "fp8 kv" in dtype else "auto", m.why)
    if dtype == "fp8" and m.dtype == "bf16":
        # FP8 weights, as the point states (an FP8 checkpoint or --quantization fp8)
        return Mapping(m.model, "fp8", m.kv_cache_dtype, m.why)
    return m


def _ep(p: EnginePoint) -> int:
    """The engine's expert parallelism as rlsim prices it (an all-to-all each way per MoE
    layer). SGLang's `--ep` without `--moe-a2a-backend` (its default, "none") keeps the
    tokens on every GPU and combines the experts' outputs with an all-reduce, as tensor-
    parallel experts do: priced as ep 1."""
    if p.ep is None or p.engine == "sglang":
        return 1
    return p.ep


def _gpu(p: EnginePoint) -> str | None:
    word = (p.gpu or "").split(" ")[0].upper()
    return word if word in GPUS else None


def metric(p: EnginePoint) -> tuple[str, float] | None:
    """The measured value compared, in ms per output token of one sequence (or of the
    request, for an end-to-end latency): the first the point has, in this order."""
    v = p.values
    for key in ("tpot_ms_mean", "tpot_ms_median", "tpot_ms", "itl_ms_median", "itl_ms_mean",
                "itl_fit_intercept_ms", "e2e_latency_ms_mean"):
        if key in v:
            return key, v[key]
    load = p.load
    if "output_tok_s_per_user" in v:
        return "output_tok_s_per_user", 1000.0 / v["output_tok_s_per_user"]
    if "output_tok_s" in v and load:
        return "output_tok_s", 1000.0 * load / v["output_tok_s"]
    if "output_tok_s_per_gpu" in v and load and p.tp:
        return "output_tok_s_per_gpu", 1000.0 * load / (v["output_tok_s_per_gpu"] * p.tp)
    return None


def predict_ms(cost: InferenceCost, p: EnginePoint, key: str) -> float:
    """The measured quantity `key` as rlsim prices it (the module docstring)."""
    inp, out = p.input_len or 0, p.output_len or 1
    if key == "itl_fit_intercept_ms":
        return 1000.0 * cost.step(1, 0).total_s
    load = p.load or 1
    ctx = inp + out // 2
    if key == "itl_ms_median":
        # The median iteration is a decode step, in a serving run or a static batch alike
        # (a static batch prefills once, never its median iteration).
        return 1000.0 * cost.step(load, load * ctx).total_s
    if p.batch_size is not None and p.concurrency is None:  # an offline static batch
        # every sequence prefills its own prompt (its attention over its own tokens only)
        prefill = cost.step(0, 0, load * inp, prefill_chunks=[(inp, 0)] * load).total_s \
            if inp else 0.0
        total = prefill + out * cost.step(load, load * ctx).total_s
        return 1000.0 * total if key.startswith("e2e") else 1000.0 * total / out
    prefill = round(load * inp / out) if inp else 0
    return 1000.0 * cost.step(load, load * ctx, prefill, inp // 2).total_s


def check(p: EnginePoint, host: tuple[float, float] | None = None) -> Check:
    """The point priced by rlsim's engine, or why not; `host`: (decode_overhead_s,
    decode_overhead_per_seq_s) in place of the built-in profile's (calibration/engine_fit)."""
    c = Check(p)
    found = metric(p)
    if found is None:
        c.reason = "no value at a stated load"
        return c
    c.metric, c.measured_ms = found
    if p.id.startswith(SPECULATIVE):
        c.reason = "speculative decoding (MTP): not one token per iteration"
        return c
    if p.dp_attention:
        c.reason = "attention data parallelism is not modelled"
        return c
    if (p.concurrency is not None and p.num_prompts is not None
            and p.concurrency >= p.num_prompts):
        c.reason = ("every prompt sent at once: the engine's running batch (capped by its "
                    "KV cache) is not stated")
        return c
    m, gpu = _mapping(p), _gpu(p)
    if m is None or m.model not in MODELS:
        c.reason = f"model {p.model!r} has no rlsim catalogue entry of its architecture"
        return c
    if gpu is None:
        c.reason = f"GPU {p.gpu!r} not stated or not in the catalogue"
        return c
    # One GPU is TP 1 whether or not the source says so.
    tp = p.tp if p.tp is not None else (1 if p.gpus == 1 else None)
    if tp is None:
        c.reason = "tensor parallelism not stated"
        return c
    if p.load is None and c.metric != "itl_fit_intercept_ms":
        c.reason = "load (concurrency or batch) not stated"
        return c
    if p.input_len is None and p.output_len is None and (p.load or 1) > 1:
        # One sequence is priced at an empty context (its attention a small share of the
        # step at chat lengths); a batch's attention and prefills depend on the lengths.
        c.reason = "lengths not stated (priced only for one sequence)"
        return c
    spec = GPUS[gpu]
    options = EngineOptions(cuda_graphs=p.cuda_graphs is not False, dtype=m.dtype,  # type: ignore[arg-type]
                            kv_cache_dtype=m.kv_cache_dtype,  # type: ignore[arg-type]
                            ep=_ep(p))
    profile = builtin_profile(spec)
    if host is not None:
        profile = profile.model_copy(update={"decode_overhead_s": host[0],
                                             "decode_overhead_per_seq_s": host[1]})
    try:
        cost = InferenceCost(MODELS[m.model], spec, tp, profile, options=options)
    except ValueError as err:
        c.reason = f"rlsim cannot build the engine: {err}"
        return c
    c.predicted_ms = predict_ms(cost, p, c.metric)
    return c


def median_text(errors: Sequence[float]) -> str:
    """'median |error| over n' as the reports write it."""
    return f"{statistics.median(abs(e) for e in errors):.0%} over {len(errors)}" \
        if errors else "- (none)"


def report(checks: Sequence[Check]) -> list[str]:
    compared = [c for c in checks if c.error is not None]
    lines = ["# Engine decode-speed points against rlsim's engine iteration", "",
             "Generated by `make engine-points` (`python -m calibration.engine_check`); do not "
             "edit. Points: validation/engine_points/points.jsonl (each with its source and "
             "quote); method: calibration/engine_check.py and docs/validation.md, 'Engine "
             "points'. error = (rlsim - measured) / measured. The table prices every point "
             "with the built-in profile (nothing fitted); the last section fits each engine "
             "family's host terms on the calibration side.", "",
             "| points | median \\|error\\| |", "|---|---|"]
    groups = [("all compared", compared),
              ("calibration side", [c for c in compared if c.point.side == "calibrate"]),
              ("validation side", [c for c in compared if c.point.side == "validate"])]
    for engine in sorted({c.point.engine for c in compared}):
        groups.append((f"{engine} only", [c for c in compared if c.point.engine == engine]))
    groups += [("load <= 8", [c for c in compared if (c.point.load or 1) <= 8]),
               ("load >= 64", [c for c in compared if (c.point.load or 1) >= 64])]
    lines += [f"| {name} | {median_text([c.error for c in sel if c.error is not None])} |"
              for name, sel in groups]
    lines += ["", f"{len(compared)} of {len(checks)} points compared.", "",
              "ms: per output token of one sequence (the metric converted: 1000 x load / "
              "throughput, 1000 / per-user throughput), or per request for an end-to-end "
              "latency.", "",
              "| point | side | engine | GPU x TP | load | metric | measured ms | rlsim ms "
              "| error | not compared because |", "|" + "---|" * 10]
    for c in checks:
        p = c.point
        cells = [f"`{p.id}`", p.side, p.engine, f"{p.gpu or '?'} x {p.tp or '?'}",
                 str(p.load or ""), c.metric,
                 "" if c.measured_ms is None else f"{c.measured_ms:.2f}",
                 "" if c.predicted_ms is None else f"{c.predicted_ms:.2f}",
                 "" if c.error is None else f"{c.error:+.0%}", c.reason.replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    from calibration import engine_fit

    points = load_points()
    checks = [check(p) for p in points]
    spec = GPUS["H100"]
    profile = builtin_profile(spec)
    builtin = (profile.decode_overhead_s, profile.decode_overhead_per_seq_s)
    lines = [*report(checks), "", *engine_fit.report(engine_fit.rows(points), builtin)]
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    compared = [c.error for c in checks if c.error is not None]
    print(f"wrote {REPORT.relative_to(ROOT)}: {len(compared)} of {len(checks)} points "
          f"compared, median |error| {median_text(compared)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
