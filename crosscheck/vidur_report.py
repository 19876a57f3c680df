"""`make crosscheck-vidur`: rlsim's rollout engine against Vidur, written to
reports/crosscheck-vidur.md. Runs in the project's `.venv`; Vidur runs in `.venv-vidur`
(a subprocess: `crosscheck/vidur_side.py`), never imported here.

For each batch size (256, 1,024, 4,096 requests, drawn from PolyTrace with a fixed seed,
all arriving at t = 0): the same requests, GPU (A100), model (Llama-2-7B), TP 1, running cap,
token budget and KV capacity on both sides; makespan and completion p50/p90/p99 and the
error. The 256-request batch is also compared iteration by iteration (Vidur's batch shapes
priced by rlsim's `InferenceCost.step`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from crosscheck.batches import DEFAULT_TRACE_DIR, draw_batch, load_pairs, write_batch  # noqa: E402
from crosscheck.compare import compare  # noqa: E402
from crosscheck.rlsim_side import (  # noqa: E402
    GPU,
    MODEL,
    kv_capacity_tokens,
    price_iterations,
    run_batch,
)

SIZES = (256, 1024, 4096)
SEED = 19
CONTEXT_TOKENS = 4096  # Llama-2-7B's context; Vidur's profiles stop there too
CAP = 128  # max running sequences: Vidur's decode-attention profile covers batches 1-128
BUDGET = 4096  # tokens per iteration: vLLM v0's default max_num_batched_tokens here
LIMIT = 0.10


# (Vidur scheduler, Vidur execution-time predictor): the vLLM scheduler with each of Vidur's
# two predictors (random forest is Vidur's default), and the chunked-prefill scheduler.
RUNS = (("vllm", "random_forrest"), ("vllm", "linear_regression"),
        ("sarathi", "linear_regression"))


def _vidur(python: Path, batch: Path, out: Path, kv: int, work: Path, scheduler: str,
           predictor: str, iterations: bool) -> dict:
    cmd = [str(python), str(ROOT / "crosscheck" / "vidur_side.py"), str(batch), "--out",
           str(out), "--cap", str(CAP), "--budget", str(BUDGET), "--kv-tokens", str(kv),
           "--work", str(work), "--scheduler", scheduler, "--predictor", predictor]
    if iterations:
        cmd.append("--iterations")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def _row(size: int, scheduler: str, cmp: dict) -> str:
    """One table row; `scheduler` names the Vidur run."""
    cells = []
    for k in ("makespan_s", "p50_s", "p90_s", "p99_s"):
        c = cmp[k]
        flag = "" if abs(c["error"]) <= LIMIT else " **miss**"
        cells.append(f"{c['rlsim']:.1f} / {c['reference']:.1f} ({_pct(c['error'])}{flag})")
    return f"| {size} | {scheduler} | " + " | ".join(cells) + " |"


def _iteration_table(priced: list[dict]) -> list[str]:
    groups = {
        "prefill batches": [x for x in priced if x["prefill_tokens"]],
        "decode, 1-8 sequences": [x for x in priced if not x["prefill_tokens"]
                                  and x["decodes"] <= 8],
        "decode, 9-64 sequences": [x for x in priced if not x["prefill_tokens"]
                                   and 8 < x["decodes"] <= 64],
        "decode, 65-128 sequences": [x for x in priced if not x["prefill_tokens"]
                                     and x["decodes"] > 64],
    }
    lines = ["| iterations | count | Vidur mean (ms) | rlsim mean (ms) | error | rlsim "
             "without overhead_s (ms) | error | rlsim overhead_s (ms) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, xs in groups.items():
        if not xs:
            continue
        n = len(xs)
        v = sum(x["vidur_s"] for x in xs) / n * 1e3
        r = sum(x["rlsim_s"] for x in xs) / n * 1e3
        o = sum(x["overhead_s"] for x in xs) / n * 1e3
        lines.append(f"| {name} | {n} | {v:.2f} | {r:.2f} | {_pct(r / v - 1)} | "
                     f"{r - o:.2f} | {_pct((r - o) / v - 1)} | {o:.2f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vidur-python", type=Path, default=ROOT / ".venv-vidur/bin/python")
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "crosscheck-vidur")
    ap.add_argument("--report", type=Path, default=ROOT / "reports" / "crosscheck-vidur.md")
    ap.add_argument("--trace-dir", type=Path, default=DEFAULT_TRACE_DIR)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    pairs = load_pairs(args.trace_dir, CONTEXT_TOKENS)
    kv = kv_capacity_tokens()
    rows: list[str] = []
    results = []
    priced_by: dict[str, list[dict]] = {}
    vconfig: dict = {}
    walls: dict[str, float] = {}
    misses = 0
    for size in sizes:
        batch = draw_batch(pairs, size, SEED)
        bpath = work / f"batch_{size}.jsonl"
        write_batch(bpath, batch)
        t0 = time.perf_counter()
        mine = run_batch(batch, CAP, BUDGET, kv)
        walls[f"rlsim {size}"] = time.perf_counter() - t0
        for scheduler, predictor in RUNS:
            name = f"{scheduler}, {predictor}"
            t0 = time.perf_counter()
            ref = _vidur(args.vidur_python, bpath,
                         work / f"vidur_{scheduler}_{predictor}_{size}.json", kv,
                         work / "vidur-cache", scheduler, predictor, size == sizes[0])
            walls[f"vidur {name} {size}"] = time.perf_counter() - t0
            vconfig[name] = ref["config"]
            cmp = compare(mine["completions_s"], ref["completions_s"])
            if scheduler == "vllm":
                misses += sum(abs(c["error"]) > LIMIT for c in cmp.values())
            if size == sizes[0] and scheduler == "vllm":
                priced_by[predictor] = price_iterations(ref["iterations"])
            rows.append(_row(size, name, cmp))
            results.append({"size": size, "scheduler": scheduler, "predictor": predictor,
                            "compare": cmp,
                            "rlsim_iterations": mine["iterations"],
                            "rlsim_preemptions": mine["preemptions"],
                            "vidur_batches": len(ref["iterations"]) or None,
                            "vidur_restarts": ref["restarts"]})
    (work / "results.json").write_text(json.dumps(results, indent=1))
    mean_prompt = sum(p for p, _ in pairs.pairs) / len(pairs.pairs)
    mean_out = sum(o for _, o in pairs.pairs) / len(pairs.pairs)
    lines = [
        "# rlsim's rollout engine against Vidur",
        "",
        "Generated by `make crosscheck-vidur` (crosscheck/vidur_report.py; how it works and "
        "what differs between the engines: crosscheck/README.md). Do not edit by hand.",
        "",
        f"Requests: {', '.join(map(str, sizes))} (prompt, output) pairs drawn with seed {SEED} "
        f"from PolyTrace's DAPO Qwen2.5-32B trace ({len(pairs.pairs)} pairs within Llama-2-7B's "
        f"{CONTEXT_TOKENS}-token context, {pairs.dropped} longer ones dropped; mean prompt "
        f"{mean_prompt:.0f}, mean output {mean_out:.0f} tokens), all arriving at t = 0. Both "
        f"sides: {GPU}, {MODEL} (Vidur: meta-llama/Llama-2-7b-hf), TP 1, at most {CAP} running "
        f"sequences, {BUDGET} tokens per iteration, {kv} KV tokens (rlsim's capacity at "
        "gpu_memory_utilization 0.9; Vidur's num_blocks = that / 16).",
        "",
        "Each cell: rlsim / Vidur in seconds (rlsim's error against Vidur). The check is "
        f"the `vllm` rows (Vidur's vLLM scheduler), within {LIMIT:.0%}; the `sarathi` rows run "
        "Vidur's chunked-prefill scheduler, whose policy is rlsim's (and vLLM v1's), to "
        "separate the policy difference from the cost difference.",
        "",
        "| requests | Vidur scheduler, predictor | makespan | completion p50 | "
        "completion p90 | "
        "completion p99 |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"Metrics outside {LIMIT:.0%} on the vllm rows: {misses} of "
        f"{4 * len(sizes) * sum(1 for s, _ in RUNS if s == 'vllm')}.",
        "",
        f"## Iteration by iteration ({sizes[0]} requests, Vidur's vLLM scheduler)",
        "",
        "Every batch Vidur ran, priced by rlsim's `InferenceCost.step` at the same shape "
        "(decodes and the KV tokens they read, or the prefill chunks). `overhead_s` is "
        "rlsim's per-iteration engine overhead (scheduler, sampler, launch; "
        "docs/cost-model.md), a cost Vidur 0.0.26 does not model.",
        "",
        *[line for predictor, priced in priced_by.items()
          for line in (f"Vidur's predictor: {predictor}", "", *_iteration_table(priced), "")],
        "## Vidur's configuration",
        "",
        "```json",
        json.dumps(vconfig, indent=1),
        "```",
        "",
        "Wall time (s): " + ", ".join(f"{k} {v:.0f}" for k, v in walls.items()) + ".",
        "",
    ]
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text("\n".join(lines))
    print(f"wrote {args.report} ({misses} metrics outside {LIMIT:.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
