"""rlsim's side of the engine cross-check; runs in the project's `.venv`.

Drives `rlsim.entities.engine.RolloutEngine` directly (as tests/entities/test_engine.py
does) on one request batch, every request submitted at t = 0, with rlsim's built-in
profile of the GPU and the catalogue's model, TP 1. Also prices, with the same
`InferenceCost.step`, every iteration shape Vidur recorded, to show which part of an
iteration the two disagree on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import simpy  # noqa: E402

from crosscheck.batches import read_batch  # noqa: E402
from rlsim.config.hardware import lookup_gpu, lookup_model  # noqa: E402
from rlsim.cost.inference import InferenceCost  # noqa: E402
from rlsim.cost.profile import builtin_profile  # noqa: E402
from rlsim.entities.engine import Request, RolloutEngine  # noqa: E402
from rlsim.trace import Recorder  # noqa: E402

GPU = "A100"
MODEL = "llama-2-7b"
GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default, and rlsim's `rollout.gpu_memory_utilization`


def engine_cost(gpu: str = GPU, model: str = MODEL) -> InferenceCost:
    spec = lookup_gpu(gpu)
    return InferenceCost(lookup_model(model), spec, 1, builtin_profile(spec))


def kv_capacity_tokens(cost: InferenceCost | None = None) -> int:
    """rlsim's KV capacity of the engine; both sides are given this one number."""
    return (cost or engine_cost()).kv_capacity_tokens(GPU_MEMORY_UTILIZATION)


def run_batch(batch: list[tuple[int, int]], cap: int, budget: int, kv_tokens: int,
              cost: InferenceCost | None = None, mode: str = "skip") -> dict:
    """Completion time (s) of every request, in batch order, and the engine's counters."""
    cost = cost or engine_cost()
    env = simpy.Environment()
    eng = RolloutEngine(env, "e0", cost, kv_tokens, cap, budget, Recorder("phase"), mode)
    reqs = [Request(i, p, o) for i, (p, o) in enumerate(batch)]
    for r in reqs:
        eng.submit(r)
    env.run()
    if any(r.status != "finished" for r in reqs):
        raise RuntimeError("rlsim left requests unfinished")
    return {"side": "rlsim", "completions_s": [r.t_finish for r in reqs],
            "iterations": eng.iterations, "preemptions": eng.preemptions}


def price_iterations(trace: list[dict], cost: InferenceCost | None = None) -> list[dict]:
    """rlsim's `step` cost of each Vidur batch shape next to Vidur's own duration, split
    by kind of work. A Vidur batch is all prefills or all decodes (vLLM's v0 policy)."""
    cost = cost or engine_cost()
    out = []
    prev = 0.0
    for it in trace:
        chunks = [(int(q), int(ctx)) for q, ctx in it["prefill_chunks"]]
        prefill = sum(q for q, _ in chunks)
        # Vidur's kv counts include this batch's new token; rlsim's kv_tokens are the
        # tokens read, i.e. the context before it.
        kv_read = max(it["decode_kv_tokens"] - it["decodes"], 0)
        step = cost.step(it["decodes"], kv_read, prefill, 0, chunks or None)
        out.append({"vidur_s": it["end_s"] - prev, "rlsim_s": step.total_s,
                    "decodes": it["decodes"], "prefill_tokens": prefill,
                    "kv_tokens": kv_read, **{k: v for k, v in step.as_dict().items()
                                             if k != "total_s"}})
        prev = it["end_s"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("batch", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cap", type=int, required=True)
    ap.add_argument("--budget", type=int, required=True)
    ap.add_argument("--kv-tokens", type=int, required=True)
    ap.add_argument("--vidur", type=Path, default=None,
                    help="Vidur's result with --iterations: price its batch shapes too")
    args = ap.parse_args(argv)
    result = run_batch(read_batch(args.batch), args.cap, args.budget, args.kv_tokens)
    if args.vidur is not None:
        trace = json.loads(args.vidur.read_text()).get("iterations") or []
        result["priced_vidur_iterations"] = price_iterations(trace)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
