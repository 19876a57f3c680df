"""Vidur's side of the engine cross-check; runs in `.venv-vidur` (the `vidur` package), never
in rlsim's environment.

Runs one request batch (all arriving at t = 0) through Vidur's own simulator, its vLLM
replica scheduler (`ReplicaSchedulerType.VLLM`) and its sklearn execution-time predictor,
trained on Vidur's measured A100 Llama-2-7B profiles. The `vidur` release downloads its
profiles from Hugging Face at run time; here the predictor is pointed at local files
instead (`_get_input_files`), which is the only part of Vidur replaced:
- `mlp.csv`: Vidur's measured per-operator times, whole (tests/data/vidur/, MIT);
- attention: `crosscheck/.vidur-data/attention.csv` (Vidur's whole measured file) if present,
  else the measured sample in `crosscheck/data/` (README there).

Output: JSON with each request's completion time (s) in batch order, the configuration,
and (`--iterations`) every batch Vidur ran: its start, duration and shape.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from crosscheck.batches import read_batch  # noqa: E402

MLP_CSV = ROOT / "tests" / "data" / "vidur" / "compute" / "a100" / "meta-llama" / \
    "Llama-2-7b-hf" / "mlp.csv"
FULL_ATTENTION_CSV = HERE / ".vidur-data" / "attention.csv"
SAMPLE_ATTENTION_CSV = HERE / "data" / "a100_llama2_7b_attention_samples.csv"
# Llama-2-7B's shape, as Vidur's profile rows record it.
_SHAPE = {"n_embd": 4096, "n_q_head": 32, "n_kv_head": 32, "block_size": 16,
          "num_tensor_parallel_workers": 1}


def sample_to_vidur_csv(sample: Path, out: Path) -> int:
    """Write the transcribed sample in the columns of Vidur's attention.csv; returns rows."""
    rows = list(csv.DictReader(sample.read_text().splitlines()))
    cols = [*_SHAPE, "max_model_len", "batch_size", "prefill_chunk_size", "kv_cache_size",
            "is_prefill", "time_stats.attn_decode.median", "time_stats.attn_prefill.median"]
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            decode = r["kind"] == "decode"
            w.writerow([*_SHAPE.values(), 4096, r["batch_size"], r["prefill_chunk_size"],
                        r["kv_cache_size"], not decode, r["median_ms"] if decode else "",
                        "" if decode else r["median_ms"]])
    return len(rows)


def run(batch: list[tuple[int, int]], cap: int, budget: int, kv_tokens: int,
        predictor: str, work: Path, iterations: bool, scheduler: str = "vllm") -> dict:
    """`scheduler`: "vllm" (Vidur's vLLM v0 policy: whole prompts in prefill-only batches
    that pause the decodes) or "sarathi" (chunked prefill mixed with the decodes under a
    token budget, the policy rlsim's engine and vLLM v1 follow)."""
    from vidur import config as vc
    from vidur.entities import Request
    from vidur.events import RequestArrivalEvent
    from vidur.execution_time_predictor import sklearn_execution_time_predictor as sk
    from vidur.simulator import Simulator

    attention = FULL_ATTENTION_CSV
    attention_source = "whole measured attention.csv"
    if not attention.exists():
        attention = work / "attention.csv"
        n = sample_to_vidur_csv(SAMPLE_ATTENTION_CSV, attention)
        attention_source = f"measured sample, {n} points ({SAMPLE_ATTENTION_CSV.name})"
    unused = str(work / "unused.csv")  # all-reduce / send-recv: not read at TP 1, PP 1

    def local_inputs(self):  # replaces the Hugging Face download
        return str(MLP_CSV), str(attention), unused, unused

    def no_hub(self):
        raise RuntimeError("offline: predictions are trained from the local profiles")

    sk.SklearnExecutionTimePredictor._get_input_files = local_inputs
    sk.SklearnExecutionTimePredictor._load_predictions_from_hf = no_hub
    # vidur 0.0.26 leaves `_get_kv_parallel_communication_time` abstract (a body under
    # @abstractmethod), so its sklearn predictors cannot be instantiated; the method is never
    # called (KV parallelism 1, and `get_execution_time` does not add it), so clear the flag.
    from vidur.execution_time_predictor.linear_regression_execution_time_predictor import (
        LinearRegressionExecutionTimePredictor,
    )
    from vidur.execution_time_predictor.random_forrest_execution_time_predictor import (
        RandomForrestExecutionTimePredictor,
    )

    for cls in (LinearRegressionExecutionTimePredictor, RandomForrestExecutionTimePredictor):
        cls.__abstractmethods__ = frozenset()

    common = dict(cache_dir=str(work / "cache"), prediction_max_batch_size=cap,
                  prediction_max_tokens_per_request=4096,
                  prediction_max_prefill_chunk_size=4096, num_training_job_threads=1)
    if predictor == "linear_regression":
        pred_cfg = vc.LinearRegressionExecutionTimePredictorConfig(**common)
    else:  # Vidur's default model, with a one-point grid to keep the fit short on 2 cores
        pred_cfg = vc.RandomForrestExecutionTimePredictorConfig(
            num_estimators=[250], max_depth=[16], min_samples_split=[2], **common)
    block = 16
    sim_cfg = vc.SimulationConfig(
        log_level="warning",
        cluster_config=vc.ClusterConfig(
            num_replicas=1,
            replica_config=vc.ReplicaConfig(
                model_name="meta-llama/Llama-2-7b-hf", device="a100",
                network_device="a100_pairwise_nvlink", num_pipeline_stages=1,
                tensor_parallel_size=1),
            cache_config=vc.CacheConfig(block_size=block, num_blocks=kv_tokens // block),
            replica_scheduler_config=(
                vc.VllmSchedulerConfig(batch_size_cap=cap, max_tokens_in_batch=budget)
                if scheduler == "vllm" else
                vc.SarathiSchedulerConfig(batch_size_cap=cap, chunk_size=budget)),
        ),
        request_generator_config=vc.SyntheticRequestGeneratorConfig(num_requests=1),
        execution_time_predictor_config=pred_cfg,
        metrics_config=vc.MetricsConfig(
            write_metrics=False, enable_chrome_trace=False, store_plots=False,
            store_request_metrics=False, store_batch_metrics=False,
            store_utilization_metrics=False, output_dir=str(work / "metrics")),
    )
    reqs = [Request(arrived_at=0.0, num_prefill_tokens=p, num_decode_tokens=o)
            for p, o in batch]

    class FixedBatch(Simulator):
        def _init_event_queue(self) -> None:
            for r in reqs:
                self._add_event(RequestArrivalEvent(r.arrived_at, r))

        def _write_output(self) -> None:
            pass

    trace: list[dict] = []
    if iterations:
        from vidur.events import batch_end_event

        orig = batch_end_event.BatchEndEvent.__init__

        def record(self, time_s, replica_id, b):
            orig(self, time_s, replica_id, b)
            q = list(b.num_q_tokens)
            kv = list(b.num_kv_tokens)  # context after this batch, per request
            pairs = list(zip(q, kv, strict=True))
            trace.append({"end_s": time_s, "decodes": sum(1 for x in q if x == 1),
                          "decode_kv_tokens": int(sum(k for x, k in pairs if x == 1)),
                          "prefill_chunks": [[x, k - x] for x, k in pairs if x != 1]})

        batch_end_event.BatchEndEvent.__init__ = record
    t0 = time.perf_counter()
    sim = FixedBatch(sim_cfg)
    setup_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim.run()
    run_s = time.perf_counter() - t0
    if not all(r.completed for r in reqs):
        raise RuntimeError("Vidur left requests unfinished")
    return {
        "side": "vidur",
        "completions_s": [r.completed_at for r in reqs],
        "restarts": sum(r.num_restarts for r in reqs),
        "config": {
            "vidur_version": _version(), "scheduler": scheduler,
            "batch_size_cap": cap, "max_tokens_in_batch": budget,
            "block_size": block, "num_blocks": kv_tokens // block,
            "watermark_blocks_fraction": sim_cfg.cluster_config.cache_config
            .watermark_blocks_fraction,
            "device": "a100", "model": "meta-llama/Llama-2-7b-hf", "tp": 1, "pp": 1,
            "execution_time_predictor": predictor,
            "predictor_grid": {k: v for k, v in vars(pred_cfg).items()
                               if isinstance(v, list)},
            "k_fold_cv_splits": pred_cfg.k_fold_cv_splits,
            "kv_cache_prediction_granularity": pred_cfg.kv_cache_prediction_granularity,
            "profiles": {"mlp": "tests/data/vidur/compute/a100/meta-llama/Llama-2-7b-hf/"
                         "mlp.csv (measured, whole)", "attention": attention_source},
        },
        "iterations": trace,
        "wall_s": {"predictor_fit": setup_s, "simulation": run_s},
    }


def _version() -> str:
    from importlib.metadata import version

    return version("vidur")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("batch", type=Path, help="batch file (crosscheck.batches.write_batch)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cap", type=int, required=True, help="max running sequences")
    ap.add_argument("--budget", type=int, required=True, help="max tokens per batch")
    ap.add_argument("--kv-tokens", type=int, required=True, help="KV cache capacity")
    ap.add_argument("--predictor", choices=("linear_regression", "random_forrest"),
                    default="linear_regression")
    ap.add_argument("--work", type=Path, default=None,
                    help="folder for Vidur's fitted-model cache (reused between batches)")
    ap.add_argument("--iterations", action="store_true", help="record every batch")
    ap.add_argument("--scheduler", choices=("vllm", "sarathi"), default="vllm")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = args.work or Path(tempfile.mkdtemp(prefix="vidur-"))
    work.mkdir(parents=True, exist_ok=True)
    result = run(read_batch(args.batch), args.cap, args.budget, args.kv_tokens,
                 args.predictor, work, args.iterations, args.scheduler)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
