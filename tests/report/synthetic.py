"""Synthetic record streams that follow the records contract (docs/design.md, docs/reports.md):
small ones with every record kind, and a big one with a million spans for the scale test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rlsim.report.html import RunData
from rlsim.report.metrics import summarize
from rlsim.trace import Recorder, Span


def _cluster(rec: Recorder, engines: int, train_gpus: int, kv_tokens: int) -> Recorder:
    """The t = 0 records of a rollout pool of 1-GPU engines and a train pool."""
    rec.instant("cluster", "pool", 0.0, pool="rollout", gpu="H100", gpus=engines,
                usd_per_gpu_hour=3.0, profile="builtin:H100", profile_hash="x")
    rec.instant("cluster", "pool", 0.0, pool="train", gpu="H100", gpus=train_gpus,
                usd_per_gpu_hour=3.0, profile="builtin:H100", profile_hash="x")
    for e in range(engines):
        rec.instant("cluster", "entity", 0.0, track=f"rollout.engine{e}", kind="engine",
                    pool="rollout", gpus=1, kv_capacity_tokens=kv_tokens)
    return rec


def contract_recorder(steps: int = 4, engines: int = 3, one_off: bool = False,
                      detail: str = "phase", seed: int = 0) -> Recorder:
    """Every record kind of the contract on a small run (sync, or one_off overlap)."""
    rng = np.random.default_rng(seed)
    rec = _cluster(Recorder(detail), engines, train_gpus=8, kv_tokens=100_000)
    rec.instant("cluster", "entity", 0.0, track="train.trainer", kind="trainer", pool="train",
                gpus=8)
    rec.instant("cluster", "entity", 0.0, track="reward", kind="reward", pool=None, workers=8)
    rec.instant("cluster", "entity", 0.0, track="link.weight_sync", kind="link", pool=None)
    t = 0.0
    for k in range(steps):
        gen = 20.0 + 5 * rng.random()
        t_gen0 = t if not one_off or k == 0 else t - 10.0
        rec.span("controller", "gen", t_gen0, t_gen0 + gen, step=k, samples=16)
        for e in range(engines):
            end = t_gen0 + gen * (0.6 + 0.4 * rng.random())
            rec.span(f"rollout.engine{e}", "busy", t_gen0, end, pool="rollout", gpus=1,
                     requests=5, tokens=4000)
            for j, (tc, kv) in enumerate(((t_gen0, 0), (t_gen0 + 1, 60_000),
                                          (t_gen0 + 5, 95_000), (end, 0))):
                rec.counter(f"rollout.engine{e}", "kv_tokens", tc, kv)
                rec.counter(f"rollout.engine{e}", "running", tc, [0, 4, 5, 0][j])
                rec.counter(f"rollout.engine{e}", "waiting", tc, [0, 1, 0, 0][j])
            if detail == "request":
                rec.span(f"rollout.engine{e}.requests", "finished", t_gen0, end, rid=e)
        lengths = rng.lognormal(6, 0.8, 16).astype(int).tolist()
        rec.instant("controller", "responses", t_gen0 + gen, step=k, response_tokens=lengths,
                    latency_s=sorted(rng.uniform(1, gen, 16).round(3).tolist()))
        if k == 1:
            rec.instant("rollout.engine0", "abort", t_gen0 + gen, requests=2)
        t = t_gen0 + gen
        rec.span("reward", "score", t, t + 3, samples=16)
        rec.span("controller", "reward", t, t + 3, step=k, samples=16)
        t += 3
        for work, dur in (("ref_logprob", 2.0), ("old_logprob", 2.0)):
            rec.span("train.trainer", "busy", t, t + dur, pool="train", gpus=8, work=work)
            rec.span("train.trainer", work, t, t + dur, tokens=1000)
            t += dur
        rec.span("controller", "ref", t - 4, t, step=k)
        stale = {"0": 16} if not one_off or k == 0 else {"0": 6, "1": 10}
        rec.span("train.trainer", "busy", t, t + 10, pool="train", gpus=8, work="train")
        rec.span("train.trainer", "train", t, t + 10, step=k, tokens=8000)
        rec.span("controller", "train", t, t + 10, step=k, samples=16, tokens=8000,
                 seq_tokens=500.0, response_tokens=6000,
                 staleness_mean=0.0 if stale == {"0": 16} else 10 / 16,
                 staleness_max=0 if stale == {"0": 16} else 1, staleness_hist=stale)
        t += 10
        rec.span("link.weight_sync", "weights", t, t + 0.5, size_bytes=1e9)
        rec.span("controller", "weight_sync", t, t + 0.5, step=k)
        t += 0.5
        step_t0 = t_gen0 if k == 0 or not one_off else t_gen0 + 10.0
        rec.span("controller", "step", step_t0 if k else 0.0, t, step=k, samples=16)
    return rec


def run_data(name: str = "run", **kw: Any) -> RunData:
    rec = contract_recorder(**kw)
    policy = {"name": "one_off" if kw.get("one_off") else "sync",
              "placement": "disaggregated"}
    scenario = {"name": name, "description": "synthetic", "policy": policy,
                "model": "qwen2.5-7b", "seed": 0, "steps": kw.get("steps", 4),
                "workload": {"prompts_per_step": 4, "samples_per_prompt": 4}}
    return RunData(name, summarize(rec, 0.01, 100), rec, scenario)


def big_recorder(spans: int = 1_000_000, engines: int = 64, steps: int = 2000,
                 seed: int = 0) -> Recorder:
    """~`spans` spans: controller phases for `steps` steps, ~60% engine busy spans, the rest
    per-request spans, plus engine counters and responses instants."""
    rng = np.random.default_rng(seed)
    rec = _cluster(Recorder("request"), engines, train_gpus=64, kv_tokens=200_000)
    step_s = 10.0
    out: list[Span] = []
    for k in range(steps):
        t = k * step_s
        for name, a, b in (("gen", 0, 6), ("reward", 6, 7), ("ref", 7, 8), ("train", 8, 9.8),
                           ("weight_sync", 9.8, 10)):
            attrs: dict[str, Any] = {"step": k}
            if name == "train":
                attrs.update(samples=64, tokens=64_000, staleness_mean=0.0, staleness_max=0,
                             staleness_hist={"0": 64})
            out.append(Span("controller", name, t + a, t + b, attrs))
        out.append(Span("controller", "step", t, t + step_s, {"step": k}))
        out.append(Span("train.trainer", "train", t + 8, t + 9.8, {"step": k}))
        out.append(Span("train.trainer", "busy", t + 8, t + 9.8,
                        {"pool": "train", "gpus": 64, "work": "train"}))
        rec.instant("controller", "responses", t + 6, step=k,
                    response_tokens=rng.integers(10, 4000, 64).tolist(),
                    latency_s=rng.uniform(0.1, 6, 64).round(3).tolist())
    rest = spans - len(out)
    n_busy = int(rest * 0.6)
    n_req = rest - n_busy
    per_engine = n_busy // engines
    end = steps * step_s
    for e in range(engines):
        # Busy bursts within gen phases: many short spans (continuous batching churn).
        starts = np.sort(rng.uniform(0, end, per_engine))
        durs = rng.exponential(end / per_engine * 0.5, per_engine)
        track = f"rollout.engine{e}"
        busy = {"pool": "rollout", "gpus": 1, "requests": 3, "tokens": 900}
        out.extend(Span(track, "busy", float(a), float(a + d), busy)
                   for a, d in zip(starts.tolist(), durs.tolist(), strict=True))
        times = np.sort(rng.uniform(0, end, 2000))
        kv = rng.integers(0, 200_000, 2000)
        for tc, v in zip(times.tolist(), kv.tolist(), strict=True):
            rec.counter(track, "kv_tokens", tc, v)
            rec.counter(track, "running", tc, v // 1000)
            rec.counter(track, "waiting", tc, v // 5000)
    req_starts = rng.uniform(0, end, n_req)
    req_engine = rng.integers(0, engines, n_req)
    status = {"rid": 0}
    out.extend(Span(f"rollout.engine{e}.requests", "finished", float(a), float(a + 3.0), status)
               for e, a in zip(req_engine.tolist(), req_starts.tolist(), strict=True))
    rec.spans = out
    return rec


def write_fake_sweep(root: Path, keys: tuple[str, ...] = ("rollout.tp", "workload.batch"),
                     reps: int = 2, with_error: bool = True) -> Path:
    """A sweep folder like `rlsim sweep --out` writes: sweep.json and results/*.parquet."""
    import json

    root.mkdir(parents=True, exist_ok=True)
    values = {"rollout.tp": [1, 2, 4, 8], "workload.batch": [32, 64, 128],
              "policy.name": ["sync", "one_off"]}
    grid: list[dict[str, Any]] = [{}]
    for key in keys:
        grid = [{**g, key: v} for g in grid for v in values[key]]
    (root / "sweep.json").write_text(json.dumps({
        "scenario": "quickstart", "keys": list(keys), "reps": reps,
        "grid": {k: values[k] for k in keys}}))
    results = root / "results"
    results.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    for point, g in enumerate(grid):
        rows: dict[str, list[Any]] = {"point": [], "replicate": [], "seed": [], "error": []}
        for k in keys:
            rows[k] = []
        for name in ("step_time_s.mean", "throughput.samples_per_s", "cost.usd_per_1k_samples",
                     "goodput_samples_per_s", "gpu_util.cluster", "phase_time_s.gen",
                     "phase_time_s.train", "staleness.max", "wall_s"):
            rows[name] = []
        for r in range(reps):
            tp = float(g.get("rollout.tp", 1))
            batch = float(g.get("workload.batch", 64))
            failed = with_error and point == 1 and r == 0
            step = 100 * batch / 64 / tp ** 0.5 * (1 + 0.05 * rng.standard_normal())
            rows["point"].append(point)
            rows["replicate"].append(r)
            rows["seed"].append(r)
            rows["error"].append("ScenarioError: rollout.tp: too large" if failed else None)
            for k in keys:
                rows[k].append(g[k])
            vals = {"step_time_s.mean": step, "throughput.samples_per_s": batch * 8 / step,
                    "cost.usd_per_1k_samples": step / batch, "goodput_samples_per_s":
                    batch * 8 / step, "gpu_util.cluster": min(1.0, 0.4 + 0.1 * tp),
                    "phase_time_s.gen": step * 0.6, "phase_time_s.train": step * 0.3,
                    "staleness.max": 0.0, "wall_s": float(rng.uniform(0.1, 1))}
            for name, v in vals.items():
                rows[name].append(None if failed else v)
        types = {"error": pa.string(), "point": pa.int64(), "replicate": pa.int64(),
                 "seed": pa.int64()}
        table = pa.table({k: pa.array(v, types.get(k, None if k in keys else pa.float64()))
                          for k, v in rows.items()})
        pq.write_table(table, results / f"point-{point:05d}.parquet")
    return root
