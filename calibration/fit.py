"""Fit a calibration run's measurements into the rlsim `Profile` the simulator reads.

Owns `fit_profile` (MeasurementSet -> Profile + per-benchmark error report), the held-back
protocol (`holdout_mask`), the predictions of every benchmark through rlsim's own cost
formulas (`predict`), `write_profile` (atomic JSON) and `fit_report_markdown`. Torch-free:
it reads the JSON-able `MeasurementSet` that `calibration/run.py` writes.

Every compute benchmark is predicted with the simulator's classes (`GemmModel`,
`ElementwiseModel`, `InferenceCost.decode_attention_s / prefill_attention_s /
layer_step_s`), so the held-back error is the error of exactly what the simulator computes.
Whole-engine iterations (`engine_decode`, `engine_prefill`) are predicted with
`InferenceCost.step` and whole trainer steps (`train_step`, `forward`) with `TrainCost`;
when present they fit the per-iteration engine overheads and the trainer's MFUs and fixed
overheads, after every other constant. A quarter of each compute, engine and trainer grid
is held back (spread over the grid, `holdout_mask`), the constants are fitted on the rest
with scipy, and the report gives both errors. Which constant comes from which benchmark:
docs/calibration.md.

Absolute rates are fitted first, then split into a device spec and efficiencies: the
device's peak FLOP/s is the highest fitted compute rate (GEMM peak, attention), its memory
bandwidth the highest fitted stream rate (large copies, GEMM weight streams, KV reads,
elementwise), so every efficiency is <= 1 and the products the formulas use are unchanged.
Links (all-reduce bus, host<->device) are stored as achieved bandwidths with efficiency 1.
"""

from __future__ import annotations

import functools
import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import least_squares

from calibration.measurements import Measurement, MeasurementSet
from rlsim.config.hardware import GPUS, GpuSpec, ModelSpec
from rlsim.cost.inference import InferenceCost, StepCost
from rlsim.cost.kernels import ElementwiseModel, GemmModel, cache_resident_fraction
from rlsim.cost.profile import Profile
from rlsim.cost.training import TrainCost

Array = NDArray[np.float64]
Report = dict[str, dict[str, float]]

# Grids a quarter of which is held back from the fit and predicted afterwards.
COMPUTE_BENCHES = ("gemm", "attention_decode", "attention_prefill", "layer_decode",
                   "layer_prefill")
# Whole iterations of a small real engine (embedding, all layers, LM head, sampling,
# bookkeeping) and whole steps of a small real trainer: they fit the per-iteration engine
# overheads and the trainer MFUs and overheads, after the compute grids.
ENGINE_BENCHES = ("engine_decode", "engine_prefill", "engine_mixed", "engine_trace")
# Trace points (iterations of a running engine) enough to fit the engine overheads alone.
MIN_TRACE_POINTS = 20
TRAINER_BENCHES = ("train_step", "forward")
# Every grid a quarter of which is held back, and every benchmark `Predictor` prices.
HELD_BACK_BENCHES = (*COMPUTE_BENCHES, *ENGINE_BENCHES, *TRAINER_BENCHES)
PREDICTED_BENCHES = (*HELD_BACK_BENCHES, "elementwise")
# Bytes an elementwise op moves per byte of its output tensor, as the cost model counts them
# (calibration/benchmarks/elementwise.py): silu_mul and add read 2x and write 1x, rmsnorm
# reads and writes 1x. Unfused eager sub-ops show up as a lower efficiency, not more bytes.
ELEMENTWISE_BYTES_PER_OUTPUT_BYTE = {"silu_mul": 3.0, "add": 3.0, "rmsnorm": 2.0}
# The efficiency constant each elementwise benchmark op informs (and is predicted with).
ELEMENTWISE_CONSTANT = {"silu_mul": "activation_hbm_efficiency",
                        "add": "elementwise_hbm_efficiency",
                        "rmsnorm": "norm_hbm_efficiency"}
ELEMENTWISE_LAUNCH = {"silu_mul": "activation_launch_s", "add": "elementwise_launch_s",
                      "rmsnorm": "norm_launch_s"}
# Benchmarks that repeat one kernel on the same operands (their working set may sit in cache);
# the layer benchmarks stream a whole layer's weights between repeats, like an engine.
WARM_CACHE_BENCHES = ("gemm", "elementwise", "attention_decode", "attention_prefill")
DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2, "float8_e4m3fn": 1}

# Output tiles (rows x columns) of the CPU GEMM model: a CPU BLAS splits the output into
# blocks over its threads, and the register micro-kernel of AVX2/AVX-512 sgemm is a few rows
# by 16-64 columns, so narrow-row blocks exist for GEMV-like small m (unlike a GPU's 8-row
# minimum). Same model as on GPUs, with cores for SMs (docs/calibration.md).
CPU_GEMM_TILES: tuple[tuple[int, int], ...] = (
    (1, 64), (4, 64), (8, 64), (16, 64), (32, 64), (64, 64), (128, 128), (256, 256),
)
CPU_SPLITK_MIN_K = 1 << 30  # CPU BLAS parallelizes over the output, not over K
# Row counts up to which a CPU BLAS may run a GEMM as one GEMV per row; the fit picks the one
# that explains the small-M points best (0: no GEMV path).
CPU_GEMV_ROW_CANDIDATES = (0, 1, 3)
# Prefill attention blocks of torch's CPU flash-attention kernel (aten FlashAttentionKernel:
# query blocks of 32 rows below 192 tokens, 64 below 768, then 256; key blocks of 512).
CPU_ATTENTION_Q_BLOCK_TIERS: tuple[tuple[int, int], ...] = ((0, 32), (192, 64), (768, 256))
CPU_ATTENTION_KV_BLOCK = 512
# FlashAttention-2 forward blocks on CUDA (128 query rows x 64 keys for head_dim 128).
CUDA_ATTENTION_Q_BLOCK_TIERS: tuple[tuple[int, int], ...] = ((0, 128),)
CUDA_ATTENTION_KV_BLOCK = 64

GEMM_FIT_NAMES = ("hbm_efficiency", "kernel_launch_s", "gemm_overlap_exponent",
                  "gemm_peak_efficiency", "gemm_tile_overhead_elems", "gemm_weight_passes",
                  "cache_bytes", "cache_speedup", "gemm_pack_row_elems")
ATTENTION_FIT_NAMES = ("attention_launch_s", "attention_decode_launch_s",
                       "attention_flops_efficiency", "attention_decode_flops_efficiency",
                       "attention_decode_hbm_efficiency")
# Parameters that define the whole model of an engine or trainer benchmark.
_MODEL_KEYS = ("hidden", "heads", "kv_heads", "head_dim", "ffn", "layers", "vocab")
# Fit bounds; efficiencies are relative to the reference rates (may exceed 1 until
# `_normalized`), cache_bytes' upper bound is set from the grid.
GEMM_FIT_BOUNDS = {"hbm_efficiency": (0.05, 20.0), "kernel_launch_s": (0.0, 1e-3),
                   "gemm_overlap_exponent": (1.0, 20.0), "gemm_peak_efficiency": (0.05, 20.0),
                   "gemm_tile_overhead_elems": (0.0, 500.0), "gemm_weight_passes": (0.5, 10.0),
                   "cache_bytes": (0.0, np.inf), "cache_speedup": (1.0, 20.0),
                   "gemm_pack_row_elems": (0.0, 1e5)}
ENGINE_FIT_NAMES = ("decode_overhead_s", "decode_overhead_per_seq_s")
TRAIN_FIT_NAMES = {"train_step": ("train_mfu", "train_step_overhead_s"),
                   "forward": ("forward_mfu", "forward_overhead_s")}
ATTENTION_FIT_BOUNDS = {"attention_launch_s": (0.0, 1.0), "attention_decode_launch_s": (0.0, 1.0),
                        "attention_flops_efficiency": (1e-3, 100.0),
                        "attention_decode_flops_efficiency": (1e-3, 100.0),
                        "attention_decode_hbm_efficiency": (1e-3, 100.0)}

# Soft-L1 residual scale: relative errors beyond ~5% count linearly (outliers of a noisy
# machine do not dominate), smaller ones quadratically.
_F_SCALE = 0.05


# ----- held-back protocol -----

def _rank_table(points: Sequence[Mapping[str, Any]]) -> dict[str, dict[Any, int]]:
    keys = sorted({k for p in points for k in p})
    table: dict[str, dict[Any, int]] = {}
    for key in keys:
        values = sorted({p.get(key) for p in points}, key=lambda v: (type(v).__name__, v))
        table[key] = {v: i for i, v in enumerate(values)}
    return table


def holdout_mask(points: Sequence[Mapping[str, Any]], fraction: float = 0.25,
                 seed: int = 0) -> list[bool]:
    """Which grid points to hold back: a deterministic `fraction`, spread over the grid.

    Each point gets its grid coordinates (the rank of its value along every parameter that
    varies); a point is held back when the weighted coordinate sum, with odd weights 1, 3, 5,
    ... in parameter-name order, is `stride // 2 + seed` modulo `stride = round(1 /
    fraction)`. Along every line of the grid (one parameter varying, the others fixed) that
    holds back one point in `stride`, so every value of every parameter keeps most of its
    points in the fit and the held-back points spread over the whole range. The unequal
    weights keep the pattern off the anti-diagonals of geometric grids, where batch x context
    (the KV size) is constant: a plain coordinate sum would hold back only a few KV sizes.
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"holdout_fraction must be in [0, 1), got {fraction}")
    if fraction == 0.0 or len(points) < 2:
        return [False] * len(points)
    stride = max(2, round(1.0 / fraction))
    table = {k: ranks for k, ranks in _rank_table(points).items() if len(ranks) > 1}
    weights = {k: 2 * i + 1 for i, k in enumerate(table)}
    target = (stride // 2 + seed) % stride
    return [sum(weights[k] * table[k][p.get(k)] for k in table) % stride == target
            for p in points]


# ----- the calibration model's shapes -----

def layer_model(params: Mapping[str, Any]) -> ModelSpec:
    """A one-layer ModelSpec with the benchmark's dimensions (vocab unused per layer)."""
    heads, kv_heads, head_dim = int(params["heads"]), int(params["kv_heads"]), \
        int(params["head_dim"])
    hidden = int(params.get("hidden", heads * head_dim))
    ffn = int(params.get("ffn", 4 * hidden))
    return ModelSpec(name="calibration-layer", layers=1, hidden=hidden, heads=heads,
                     kv_heads=kv_heads, head_dim=head_dim, ffn=ffn, vocab=1)


def engine_model(params: Mapping[str, Any]) -> ModelSpec:
    """The whole model of an engine or trainer benchmark: `layer_model`'s layer dimensions
    with `layers` layers and a `vocab`-wide untied embedding and LM head (gated MLP)."""
    layer = layer_model(params)
    return layer.model_copy(update={"name": "calibration-model",
                                    "layers": int(params["layers"]),
                                    "vocab": int(params["vocab"]),
                                    "tied_embeddings": False, "gated_mlp": True})


def _dtype_bytes(name: str) -> int:
    try:
        return DTYPE_BYTES[name.removeprefix("torch.")]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(DTYPE_BYTES)}") from None


# ----- predictions through rlsim's own formulas -----

K = TypeVar("K")
V = TypeVar("V")


def _memo(cache: dict[K, V], key: K, make: Callable[[], V]) -> V:
    """cache[key], built by `make()` the first time."""
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = make()
    return hit


class Predictor:
    """Predicted median time of any benchmark point for one (profile, device)."""

    def __init__(self, profile: Profile, device: GpuSpec) -> None:
        self.profile = profile
        self.device = device
        self._gemm: dict[int, GemmModel] = {}
        self._ews: dict[str, ElementwiseModel] = {}
        self._engines: dict[tuple[str, ...], InferenceCost] = {}
        self._models: dict[tuple[str, ...], InferenceCost] = {}
        self._trainers: dict[tuple[str, ...], TrainCost] = {}

    def _engine(self, params: Mapping[str, Any]) -> InferenceCost:
        key = tuple(str(params.get(k)) for k in ("hidden", "heads", "kv_heads", "head_dim", "ffn"))
        return _memo(self._engines, key, lambda: InferenceCost(
            layer_model(params), self.device, 1, self.profile))

    def _whole_engine(self, params: Mapping[str, Any]) -> InferenceCost:
        """A TP-1 engine of the benchmark's whole model (all layers, embedding, LM head)."""
        key = tuple(str(params.get(k)) for k in _MODEL_KEYS)
        return _memo(self._models, key, lambda: InferenceCost(
            engine_model(params), self.device, 1, self.profile))

    def _trainer(self, params: Mapping[str, Any]) -> TrainCost:
        """A one-GPU trainer of the benchmark's model, without activation recomputation."""
        key = tuple(str(params.get(k)) for k in (*_MODEL_KEYS, "dtype"))
        d = _dtype_bytes(str(params["dtype"])) if "dtype" in params else None
        return _memo(self._trainers, key, lambda: TrainCost(
            engine_model(params), self.device, 1, 1, 1, 1, self.profile,
            recompute_activations=False, dtype_bytes=d))

    def engine_step(self, bench: str, params: Mapping[str, Any]) -> StepCost:
        """The `InferenceCost.step` of one engine iteration: `engine_decode` runs `batch`
        decodes over `batch * context` cached tokens, `engine_prefill` prefills one prompt
        of `tokens` tokens (one prefilling sequence, no decodes)."""
        eng = self._whole_engine(params)
        if bench == "engine_decode":
            b, c = int(params["batch"]), int(params["context"])
            return eng.step(b, b * c)
        if bench == "engine_prefill":
            return eng.step(0, 0, int(params["tokens"]))
        if bench == "engine_trace":
            lens = [int(x) for x in str(params["prefill"]).split(",") if x]
            return eng.step(int(params["decode"]), int(params["kv_tokens"]), sum(lens), 0,
                            [(t, 0) for t in lens] if lens else None)
        if bench == "engine_mixed":
            b, c = int(params["batch"]), int(params["context"])
            n, t = int(params["prefills"]), int(params["tokens"])
            return eng.step(b, b * c, n * t, 0, [(t, 0)] * n)
        raise ValueError(f"{bench!r} is not an engine benchmark")

    def gemm_s(self, params: Mapping[str, Any]) -> float:
        d = _dtype_bytes(str(params["dtype"])) if "dtype" in params else self.profile.dtype_bytes
        model = self._gemm.get(d)
        if model is None:
            model = GemmModel(self.device, self.profile, d)
            self._gemm[d] = model
        return model.time_s(int(params["m"]), int(params["n"]), int(params["k"]),
                            warm_cache=True)

    def elementwise_s(self, params: Mapping[str, Any]) -> float:
        op = str(params["op"])
        model = self._ews.get(op)
        if model is None:
            model = ElementwiseModel(self.device, self.profile,
                                     getattr(self.profile, ELEMENTWISE_CONSTANT[op]),
                                     getattr(self.profile, ELEMENTWISE_LAUNCH[op]))
            self._ews[op] = model
        size = ELEMENTWISE_BYTES_PER_OUTPUT_BYTE[op] * float(params["size_bytes"])
        return model.time_s(size, warm_cache=True)

    def __call__(self, bench: str, params: Mapping[str, Any]) -> float:
        if bench == "gemm":
            return self.gemm_s(params)
        if bench == "elementwise":
            return self.elementwise_s(params)
        if bench == "attention_decode":
            b, c = int(params["batch"]), int(params["context"])
            return self._engine(params).decode_attention_s(b, b * c, warm_cache=True)
        if bench == "attention_prefill":
            return self._engine(params).prefill_attention_s(int(params["tokens"]),
                                                            warm_cache=True)
        if bench == "layer_decode":
            # The step appends the new token and attends to context + 1 tokens.
            b, c = int(params["batch"]), int(params["context"])
            return self._engine(params).layer_step_s(b, b * (c + 1))
        if bench == "layer_prefill":
            return self._engine(params).layer_step_s(0, 0, int(params["tokens"]))
        if bench in ENGINE_BENCHES:
            return self.engine_step(bench, params).total_s
        if bench == "train_step":
            return self._trainer(params).train_step(
                int(params["tokens"]), float(params["seq_tokens"])).total_s
        if bench == "forward":
            return self._trainer(params).forward_s(int(params["tokens"]),
                                                   float(params["seq_tokens"]))
        raise ValueError(f"no rlsim prediction for benchmark {bench!r}")


def predict(bench: str, params: Mapping[str, Any], profile: Profile,
            device: GpuSpec | None = None) -> float:
    """Predicted median seconds of one compute, engine or trainer benchmark point (device:
    the profile's)."""
    dev = device if device is not None else profile.device
    if dev is None:
        raise ValueError("predict needs a device: the profile has none, pass device=")
    return Predictor(profile, dev)(bench, params)


# ----- small fitting helpers -----

def _mape(pred: Sequence[float], meas: Sequence[float]) -> float:
    if not meas:
        return float("nan")
    return float(np.mean([abs(p / m - 1.0) for p, m in zip(pred, meas, strict=True)]))


def _max_err(pred: Sequence[float], meas: Sequence[float]) -> float:
    if not meas:
        return float("nan")
    return float(max(abs(p / m - 1.0) for p, m in zip(pred, meas, strict=True)))


def _fit_relative(
    fn: Callable[[Array], Array], measured: Array, x0: Sequence[float],
    lower: Sequence[float], upper: Sequence[float], starts: Sequence[Sequence[float]] = (),
) -> Array:
    """argmin of soft-L1 relative residuals of `fn(x)` against `measured`, best of starts."""

    def residual(x: Array) -> Array:
        out: Array = fn(x) / measured - 1.0
        return out

    best = None
    for start in (x0, *starts):
        x = np.clip(np.asarray(start, float), lower, upper)
        res = least_squares(residual, x, bounds=(lower, upper), loss="soft_l1",
                            f_scale=_F_SCALE, x_scale="jac")
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    out: Array = best.x
    return out


def _affine(x: Array, y: Array, relative: bool = True) -> tuple[float, float]:
    """(intercept >= 0, slope >= 0) of y ~ a + b x, on relative error, or on absolute
    error when the slope must hold for sizes far beyond the grid (bandwidths of GB-scale
    moves: the largest points decide it)."""
    b0 = float(np.max(y) / max(np.max(x), 1e-30))
    a0 = float(np.min(y) / 2)
    if relative:
        res = _fit_relative(lambda p: p[0] + p[1] * x, y, [a0, b0], [0.0, 0.0],
                            [np.inf, np.inf])
        return float(res[0]), float(res[1])
    fit = least_squares(lambda p: (p[0] + p[1] * x - y) / np.max(y), [a0, b0],
                        bounds=([0.0, 0.0], [np.inf, np.inf]), x_scale="jac")
    return float(fit.x[0]), float(fit.x[1])


def _arrays(ms: Sequence[Measurement], *keys: str) -> tuple[Array, ...]:
    cols = [np.array([float(m.params[k]) for m in ms]) for k in keys]
    return (*cols, np.array([m.median_s for m in ms]))


# ----- whole-engine and whole-trainer stages -----

def _prefills(m: Measurement) -> bool:
    if m.bench == "engine_decode":
        return False
    if m.bench == "engine_trace":
        return bool(str(m.params["prefill"]))
    return True


def fit_engine_overheads(points: Sequence[Measurement], profile: Profile,
                         device: GpuSpec, total: bool = False
                         ) -> tuple[float, float, float, bool]:
    """(decode_overhead_s, decode_overhead_per_seq_s, prefill_overhead_s, per-seq fitted)
    for `engine_decode` / `engine_prefill` / `engine_mixed` points, every other constant
    from `profile`.

    `InferenceCost.step(...).total_s` is its kernel time plus `decode_overhead_s +
    decode_overhead_per_seq_s * sequences (+ prefill_overhead_s if it prefills)`, so each
    point is priced once with a unit per-sequence overhead (which yields its sequence count)
    and the overheads (>= 0) are fitted by relative soft-L1 least squares. When every point
    has the same sequence count the per-sequence term cannot be told from the fixed one: it
    stays 0 (fourth value False); without both decode-only and prefilling points the prefill
    term cannot be told from the fixed one either, and stays 0.
    """
    if not points:
        raise ValueError("no engine points to fit")
    unit = profile.model_copy(update={"decode_overhead_s": 0.0,
                                      "decode_overhead_per_seq_s": 1.0,
                                      "prefill_overhead_s": 0.0})
    pred = Predictor(unit, device)
    steps = [pred.engine_step(m.bench, m.params) for m in points]
    seqs = np.array([s.overhead_s for s in steps])
    base = np.array([s.linear_s + s.attention_s + s.other_s + s.comm_s for s in steps])
    pre = np.array([1.0 if _prefills(m) else 0.0 for m in points])
    y = np.array([m.median_s for m in points])
    ymin = float(np.min(y))
    per_seq = len(set(seqs.tolist())) >= 2
    with_pre = 0.0 < float(pre.sum()) < len(points)
    smax = float(np.max(seqs))

    def fn(p: Array) -> Array:
        out: Array = base + p[0] + (p[1] * seqs if per_seq else 0.0) \
            + (p[2] * pre if with_pre else 0.0)
        return out

    x0 = [ymin / 10, 0.0, 0.0]
    lower, upper = [0.0, 0.0, 0.0], [1.0, 0.1, 1.0]
    starts = [[0.0, ymin / (10 * smax), 0.0], [ymin / 2, ymin / (2 * smax), ymin / 4]]
    if total:
        x = _fit_total(fn, y, x0, lower, upper, starts)
    else:
        x = _fit_relative(fn, y, x0, lower, upper, starts=starts)
    return (float(x[0]), float(x[1]) if per_seq else 0.0, float(x[2]) if with_pre else 0.0,
            per_seq)


def _fit_total(fn: Callable[[Array], Array], measured: Array, x0: Sequence[float],
               lower: Sequence[float], upper: Sequence[float],
               starts: Sequence[Sequence[float]]) -> Array:
    """argmin of the squared absolute errors of `fn(x)` (scaled by the mean), best of
    starts: each point weighs by its seconds, so the fit holds the points' total time."""
    scale = float(np.mean(measured))
    best = None
    for start in (x0, *starts):
        x = np.clip(np.asarray(start, float), lower, upper)
        res = least_squares(lambda p: (fn(p) - measured) / scale, x, bounds=(lower, upper),
                            x_scale="jac")
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    out: Array = best.x
    return out


def fit_trainer_constants(bench: str, points: Sequence[Measurement], profile: Profile,
                          device: GpuSpec) -> tuple[float, float]:
    """(MFU, fixed overhead seconds) of `train_step` (train_mfu, train_step_overhead_s) or
    `forward` (forward_mfu, forward_overhead_s) points, priced by `TrainCost` on one GPU
    without recomputation; the MFU is relative to `device.bf16_tflops`, the optimizer's
    traffic uses `profile`'s constants. With a single distinct point shape the overhead
    cannot be told from the FLOP time: it stays 0."""
    if bench not in TRAIN_FIT_NAMES:
        raise ValueError(f"{bench!r} is not a trainer benchmark")
    if not points:
        raise ValueError(f"no {bench} points to fit")
    mfu_name, overhead_name = TRAIN_FIT_NAMES[bench]
    y = np.array([m.median_s for m in points])
    ymin = float(np.min(y))
    shapes = {tuple(sorted((k, str(v)) for k, v in m.params.items())) for m in points}
    with_overhead = len(shapes) >= 2

    def fn(x: Array) -> Array:
        update = {mfu_name: float(x[0]), overhead_name: float(x[1]) if with_overhead else 0.0}
        pred = Predictor(profile.model_copy(update=update), device)
        return np.array([pred(m.bench, m.params) for m in points])

    starts = [[mfu, oh] for mfu in (0.1, 0.5, 2.0) for oh in (0.0, ymin / 4)]
    x = _fit_relative(fn, y, starts[0], [1e-4, 0.0], [100.0, 10.0], starts=starts[1:])
    return float(x[0]), float(x[1]) if with_overhead else 0.0


# ----- the fit -----

@dataclass
class _Split:
    train: list[Measurement]
    held: list[Measurement]


def _split(ms: MeasurementSet, fraction: float, seed: int) -> dict[str, _Split]:
    out: dict[str, _Split] = {}
    for bench in sorted({m.bench for m in ms.measurements}):
        points = ms.of(bench)
        if bench in HELD_BACK_BENCHES:
            mask = holdout_mask([m.params for m in points], fraction, seed)
        else:
            mask = [False] * len(points)
        out[bench] = _Split([m for m, h in zip(points, mask, strict=True) if not h],
                            [m for m, h in zip(points, mask, strict=True) if h])
    return out


def _catalogue_gpu(name: str) -> GpuSpec | None:
    """The catalogue GPU whose name appears in a CUDA device name ('NVIDIA H100 80GB')."""
    words = name.upper().replace("-", " ").split()
    for key, spec in GPUS.items():
        if key.upper() in words:
            return spec
    return None


class _Fit:
    """State of one fit: the reference device, the constants so far, notes."""

    def __init__(self, ms: MeasurementSet, split: dict[str, _Split]) -> None:
        self.ms = ms
        self.split = split
        self.dtype_bytes = _dtype_bytes(ms.device.dtype)
        self.is_cuda = ms.device.kind.startswith("cuda")
        self.catalogue = _catalogue_gpu(ms.device.name) if self.is_cuda else None
        self.consts: dict[str, Any] = {}
        self._base: Profile | None = None
        self.notes: list[str] = []
        self.fit_error: dict[str, float] = {}
        # Documented defaults rescaled to the normalized device (still defaults, not fits).
        self.scaled_defaults: set[str] = set()
        # Reference rates: absolute rates are fitted as efficiencies relative to these and
        # renormalized at the end (`_normalized`).
        self.ref_flops = self._best_gemm_flops()
        self.ref_bw = self._memcpy_bandwidth()
        self.link_one_way = self.ref_bw / 2
        self.pcie = self.ref_bw / 2
        self.gpus_per_node = 1

    def train(self, bench: str) -> list[Measurement]:
        s = self.split.get(bench)
        return s.train if s is not None else []

    def all(self, bench: str) -> list[Measurement]:
        return self.ms.of(bench)

    # --- references ---

    def _best_gemm_flops(self) -> float:
        pts = self.train("gemm")
        if pts:
            return max(2.0 * m.params["m"] * m.params["n"] * m.params["k"] / m.median_s
                       for m in pts)
        if self.catalogue is not None:
            return self.catalogue.bf16_tflops * 1e12
        return 1e11 if not self.is_cuda else 3e14

    def _memcpy_bandwidth(self) -> float:
        """Copy bandwidth (bytes read + written per second) of copies that miss the cache.

        The small copies of the grid run from cache, so the copy time is fitted with the
        same residency law as the kernels (`kernels.cache_resident_fraction`), with its own
        cache size and speed-up: only the memory bandwidth goes into the device spec.
        """
        pts = self.all("memcpy")
        if len(pts) < 2:
            self.notes.append("no memcpy points: memory bandwidth from the catalogue or 1e10 B/s")
            return self.catalogue.hbm_bandwidth if self.catalogue is not None else 1e10
        size, y = _arrays(pts, "size_bytes")
        moved = 2.0 * size
        bw0 = float(np.max(moved / y))

        def fn(x: Array) -> Array:
            h = np.array([cache_resident_fraction(b, x[2]) for b in moved])
            out: Array = x[0] + moved / x[1] * (1.0 - h + h / x[3])
            return out

        big = float(np.max(moved))
        starts = [[0.0, bw0 / f, c, 4.0] for f in (2.0, 8.0) for c in (big / 64, big / 8)]
        x = _fit_relative(fn, y, [float(np.min(y)) / 4, bw0, 0.0, 1.0], [0.0, 1e6, 0.0, 1.0],
                          [1.0, 1e15, big, 100.0], starts)
        self.fit_error["memcpy"] = _mape(list(fn(x)), list(y))
        self.memcpy_fit = tuple(float(v) for v in x)
        return float(x[1])

    def device(self) -> GpuSpec:
        """The device with the reference rates (efficiencies relative to them)."""
        d = self.ms.device
        cat = self.catalogue
        return GpuSpec(
            name=d.name, bf16_tflops=self.ref_flops / 1e12, hbm=d.memory_bytes,
            hbm_bandwidth=self.ref_bw, nvlink_bandwidth=2.0 * self.link_one_way,
            pcie_bandwidth=self.pcie,
            network_bandwidth=cat.network_bandwidth if cat is not None else 50e9,
            sm_count=d.cores,
            gpus_per_node=cat.gpus_per_node if cat is not None else self.gpus_per_node,
            usd_per_gpu_hour=cat.usd_per_gpu_hour if cat is not None else 0.0,
        )

    def profile(self, **update: Any) -> Profile:
        """A profile of the constants so far; unvalidated, so efficiencies may exceed 1
        relative to the reference rates until `_normalized`."""
        if self._base is None:
            self._base = _default_profile(self.ms, self.dtype_bytes, self.is_cuda)
        return self._base.model_copy(update={**self.consts, **update})

    # --- stages ---

    def elementwise(self) -> None:
        """An efficiency and a launch latency per kind of elementwise kernel."""
        pts = self.train("elementwise")
        if len(pts) < 2:
            self.notes.append("no elementwise points: elementwise constants are defaults")
            return
        ops = sorted({str(m.params["op"]) for m in pts})
        names = [ELEMENTWISE_CONSTANT[op] for op in ops] + [ELEMENTWISE_LAUNCH[op] for op in ops]
        y = np.array([m.median_s for m in pts])
        device = self.device()

        def fn(x: Array) -> Array:
            pred = Predictor(self.profile(**dict(zip(names, x, strict=True))), device)
            return np.array([pred.elementwise_s(m.params) for m in pts])

        n = len(ops)
        ymin = float(np.min(y))
        # No elementwise kernel streams faster than the best stream already fitted (large
        # copies, GEMM weights, KV reads): that rate is the device's memory bandwidth.
        top = max([1.0, *(float(self.consts[k]) for k in ("hbm_efficiency",
                   "attention_decode_hbm_efficiency") if self.consts.get(k) is not None)])
        x = _fit_relative(fn, y, [min(0.5, top)] * n + [ymin / 2] * n, [1e-3] * n + [0.0] * n,
                          [top] * n + [1e-2] * n, starts=[[0.1] * n + [ymin / 10] * n])
        self.consts.update({k: float(v) for k, v in zip(names, x, strict=True)})
        if "add" not in ops:
            # The generic constants (embedding, logits, rotary) fall back to the first op's.
            self.consts["elementwise_hbm_efficiency"] = self.consts[names[0]]
            self.consts["elementwise_launch_s"] = self.consts[names[n]]

    def gemm(self) -> None:
        """GEMM constants, the GEMV row limit and the cache law, on the GEMM grid.

        On a CPU the blocked (non-GEMV) path's weight cost is split between whole weight
        passes (`gemm_weight_passes`) and a fixed packing cost per weight row
        (`gemm_pack_row_elems`, independent of K): the data decide how much of each.
        """
        pts = self.train("gemm")
        if len(pts) < 5:
            self.notes.append("fewer than 5 GEMM points: GEMM constants are defaults")
            return
        if self.is_cuda:
            gemv_candidates: tuple[int, ...] = (0,)
        else:
            self.consts["gemm_tiles"] = CPU_GEMM_TILES
            self.consts["gemm_splitk_min_k"] = CPU_SPLITK_MIN_K
            gemv_candidates = CPU_GEMV_ROW_CANDIDATES
        # GPU GEMMs read the weights in place: no per-row packing cost to fit (it stays 0).
        names = tuple(k for k in GEMM_FIT_NAMES
                      if not (self.is_cuda and k == "gemm_pack_row_elems"))
        y = np.array([m.median_s for m in pts])
        device = self.device()
        ws = [(m.params["k"] * m.params["n"] + m.params["m"] * (m.params["k"] + m.params["n"]))
              * _dtype_bytes(str(m.params.get("dtype", self.ms.device.dtype))) for m in pts]
        ws_max = float(max(ws))
        launch0 = float(np.min(y)) / 4
        lower = [GEMM_FIT_BOUNDS[k][0] for k in names]
        upper = [GEMM_FIT_BOUNDS[k][1] if k != "cache_bytes" else 2.0 * ws_max for k in names]
        # Starts in GEMM_FIT_NAMES order; the last value (gemm_pack_row_elems) is dropped on
        # CUDA. The third start puts the blocked path's weight cost in the per-row packing.
        x0 = [1.0, launch0, 2.0, 1.0, 10.0, 1.0, ws_max / 8, 2.0, 0.0][:len(names)]
        starts = [s[:len(names)] for s in (
            [1.0, launch0, 1.2, 1.0, 5.0, 3.0, ws_max / 4, 3.0, 0.0],
            [0.7, launch0, 4.0, 1.2, 40.0, 1.0, ws_max / 2, 1.5, 0.0],
            [1.0, launch0, 1.2, 1.0, 5.0, 1.0, ws_max / 4, 3.0, 2000.0])]
        if self.is_cuda:
            starts = starts[:2]
        best: tuple[float, int, Array] | None = None
        for rows in gemv_candidates:
            def fn(x: Array, rows: int = rows) -> Array:
                prof = self.profile(**dict(zip(names, x, strict=True)), gemm_gemv_max_rows=rows)
                pred = Predictor(prof, device)
                return np.array([pred.gemm_s(m.params) for m in pts])

            x = _fit_relative(fn, y, x0, lower, upper, starts)
            err = _mape(list(fn(x)), list(y))
            if best is None or err < best[0] - 1e-9:
                best = (err, rows, x)
        assert best is not None
        self.consts.update({k: float(v) for k, v in zip(names, best[2], strict=True)})
        self.consts["gemm_gemv_max_rows"] = best[1]

    def attention(self) -> None:
        """Attention launch and efficiencies on the decode and prefill grids together."""
        dec, pre = self.train("attention_decode"), self.train("attention_prefill")
        if self.is_cuda:
            self.consts["attention_q_block_tiers"] = CUDA_ATTENTION_Q_BLOCK_TIERS
            self.consts["attention_kv_block_tokens"] = CUDA_ATTENTION_KV_BLOCK
        else:
            self.consts["attention_q_block_tiers"] = CPU_ATTENTION_Q_BLOCK_TIERS
            self.consts["attention_kv_block_tokens"] = CPU_ATTENTION_KV_BLOCK
        pts = dec + pre
        if len(pts) < 3:
            self.notes.append("too few attention points: attention constants are defaults")
            return
        launches, effs = [], []
        if pre:
            launches.append("attention_launch_s")
            effs.append("attention_flops_efficiency")
        if dec:
            launches.append("attention_decode_launch_s")
            effs += ["attention_decode_flops_efficiency", "attention_decode_hbm_efficiency"]
        names = launches + effs
        y = np.array([m.median_s for m in pts])
        device = self.device()

        def fn(x: Array) -> Array:
            pred = Predictor(self.profile(**dict(zip(names, x, strict=True))), device)
            return np.array([pred(m.bench, m.params) for m in pts])

        nl, ne = len(launches), len(effs)
        ymin = float(np.min(y))
        # Decode is compute- or memory-bound depending on whether its KV sits in cache, so
        # the objective has separate basins: start from a small grid of efficiencies.
        grid = [[a] * (ne - 2 * bool(dec)) + ([b, c] if dec else [])
                for a in (0.5,) for b in (0.2, 0.5, 1.0) for c in (0.2, 0.5, 1.0)]
        starts = [[ymin / 2] * nl + g for g in grid] + [[ymin / 10] * nl + [1.0] * ne]
        x = _fit_relative(fn, y, starts[0], [0.0] * (nl + ne), [1.0] * nl + [100.0] * ne,
                          starts=starts[1:])
        self.consts.update({k: float(v) for k, v in zip(names, x, strict=True)})
        if not pre:
            self.consts["attention_launch_s"] = self.consts["attention_decode_launch_s"]

    def layer(self) -> None:
        pts = self.train("layer_decode") + self.train("layer_prefill")
        if not pts:
            self.notes.append("no layer points: layer_overhead_s is 0")
            return
        y = np.array([m.median_s for m in pts])
        device = self.device()

        def fn(x: Array) -> Array:
            pred = Predictor(self.profile(layer_overhead_s=float(x[0])), device)
            return np.array([pred(m.bench, m.params) for m in pts])

        x = _fit_relative(fn, y, [0.0], [0.0], [1.0], starts=[[float(np.min(y)) / 10]])
        self.consts["layer_overhead_s"] = float(x[0])

    def joint(self) -> None:
        """Refine the GEMM, cache, attention and layer constants on all compute grids at once.

        The single-kernel benchmarks run with warm caches and the layer benchmarks cold, so
        only together do they separate cache speed-up from memory bandwidth: the GEMM grid
        alone cannot tell a resident weight from a fast stream.
        """
        pts = [m for b in COMPUTE_BENCHES for m in self.train(b)]
        if not self.train("layer_decode") + self.train("layer_prefill") or "cache_bytes" \
                not in self.consts:
            return
        names = [k for k in (*GEMM_FIT_NAMES, *ATTENTION_FIT_NAMES, "layer_overhead_s")
                 if k in self.consts]
        y = np.array([m.median_s for m in pts])
        device = self.device()

        def fn(x: Array) -> Array:
            pred = Predictor(self.profile(**dict(zip(names, x, strict=True))), device)
            return np.array([pred(m.bench, m.params) for m in pts])

        bounds = {**GEMM_FIT_BOUNDS, **ATTENTION_FIT_BOUNDS, "layer_overhead_s": (0.0, 1.0)}
        ws_max = float(self.consts["cache_bytes"]) * 4 + 1.0
        lower = [bounds[k][0] for k in names]
        upper = [bounds[k][1] if k != "cache_bytes" else max(ws_max, 1.0) for k in names]
        x0 = [float(self.consts[k]) for k in names]
        ci = names.index("cache_bytes")
        starts = []
        for scale in (0.25, 0.5):
            alt = list(x0)
            alt[ci] = x0[ci] * scale
            starts.append(alt)
        x = _fit_relative(fn, y, x0, lower, upper, starts)
        self.consts.update({k: float(v) for k, v in zip(names, x, strict=True)})

    def engine(self) -> None:
        """Per-iteration engine overheads on the whole-engine grids, every other constant
        as fitted so far (run after the joint refit).

        What the simulator prices is an iteration of a running engine, whose shape changes
        every iteration. The `engine_trace` points are exactly that; the decode, prefill and
        mixed microbenchmarks repeat one state, with warm caches and a reused allocator, and
        one model cannot fit both: fitted on all of them, the overheads overpriced the
        repeated decode iterations by 17-24% and underpriced the running engine's (the
        trace's by 12-14%, the live job's by 13-23%; docs/validation.md). With at least
        MIN_TRACE_POINTS trace points the overheads are fitted on the trace alone and the
        microbenchmarks stay in the report as held-back checks; without, on every grid.
        The trace is fitted for its total time (absolute error, `_fit_total`): a step costs
        the sum of its iterations, and on relative error the many short decode iterations
        outvoted the few long prefill ones (32 prompts admitted at once) that hold much of
        a step's time, leaving the trace's total about 7% under."""
        pts = [m for b in ENGINE_BENCHES for m in self.train(b)]
        trace = self.train("engine_trace")
        running = len(trace) >= MIN_TRACE_POINTS
        if running:
            pts = trace
        if not pts:
            return
        if len(pts) < 2:
            self.notes.append("fewer than 2 engine points: engine overheads are defaults")
            return
        a, b, c, per_seq = fit_engine_overheads(pts, self.profile(), self.device(),
                                                total=running)
        self.consts["decode_overhead_s"] = a
        self.consts["decode_overhead_per_seq_s"] = b
        self.consts["prefill_overhead_s"] = c
        if not per_seq:
            self.notes.append("one sequence count in the engine points: "
                              "decode_overhead_per_seq_s is 0")

    def trainer(self) -> None:
        """MFU and fixed overhead of a training step and of a forward pass, each on its own
        grid, relative to the reference peak (rescaled with the others in `_normalized`)."""
        for bench in TRAINER_BENCHES:
            pts = self.train(bench)
            if not pts:
                continue
            if len(pts) < 2:
                self.notes.append(f"fewer than 2 {bench} points: its constants are defaults")
                continue
            mfu, overhead = fit_trainer_constants(bench, pts, self.profile(), self.device())
            mfu_name, overhead_name = TRAIN_FIT_NAMES[bench]
            self.consts[mfu_name] = mfu
            self.consts[overhead_name] = overhead

    def fitted(self, name: str) -> bool:
        return name in self.consts and name not in self.scaled_defaults

    def collectives(self) -> None:
        """Ring latency and bus bandwidth, on the all-reduce and all-gather grids together
        (the formulas of `rlsim.cost.network`: 2(n-1)/n and (n-1)/n of the buffer cross each
        link); two collectives pin the latency down better than one noisy grid."""
        pts = self.all("allreduce") + self.all("allgather")
        if len(pts) < 2:
            self.notes.append("no all-reduce points: TP link = memory bandwidth, default latency")
            return
        ranks, size, y = _arrays(pts, "ranks", "size_bytes")
        ring = np.array([2.0 if m.bench == "allreduce" else 1.0 for m in pts])
        lat, inv_bw = _affine(ring * (ranks - 1) / ranks * size, y)
        self.link_one_way = 1.0 / max(inv_bw, 1e-30)
        self.gpus_per_node = max(self.gpus_per_node, int(np.max(ranks)))
        self.consts["allreduce_latency_s"] = lat
        self.consts["allreduce_bus_efficiency"] = 1.0

    def host_link(self) -> None:
        pinned = [m for m in self.all("h2d") if m.params.get("pinned", True)]
        if len(pinned) >= 2:
            size, y = _arrays(pinned, "size_bytes")
            _, inv_bw = _affine(size, y, relative=False)
            self.pcie = 1.0 / max(inv_bw, 1e-30)
            self.consts["pcie_efficiency"] = 1.0
            return
        warm = self.all("warm_reload")
        if not self.is_cuda and len(warm) >= 2:
            # No host<->device link on a CPU: "reloading weights" is a host memory copy into
            # fresh tensors, which is what the warm reload measures.
            w, y = _arrays(warm, "weights_bytes")
            _, inv_bw = _affine(w, y, relative=False)
            self.pcie = 1.0 / max(inv_bw, 1e-30)
        self.consts["pcie_efficiency"] = 1.0

    def starts(self) -> None:
        cold = self.all("cold_start")
        if len(cold) >= 2:
            w, y = _arrays(cold, "weights_bytes")
            base, inv_bw = _affine(w, y, relative=False)
            self.consts["engine_cold_start_s"] = base
            self.consts["checkpoint_load_bandwidth_bytes_per_s"] = 1.0 / max(inv_bw, 1e-30)
        warm = self.all("warm_reload")
        if warm:
            # InferenceCost.warm_start_s = base + weights / (pcie * pcie_efficiency); the base
            # is what the largest reload leaves after the copy.
            w, y = _arrays(warm, "weights_bytes")
            i = int(np.argmax(w))
            self.consts["engine_warm_start_base_s"] = max(0.0, float(y[i] - w[i] / self.pcie))

    def sandboxes(self) -> None:
        for prefix in ("sandbox_checkpoint", "sandbox_restore"):
            pts = self.all(prefix)
            if len(pts) < 3:
                if pts:
                    self.notes.append(f"fewer than 3 {prefix} points: its constants are defaults")
                continue
            size, files, y = _arrays(pts, "tree_bytes", "files")

            def fn(p: Array, size: Array = size, files: Array = files) -> Array:
                out: Array = p[0] + p[1] * size + p[2] * files
                return out

            x = _fit_relative(fn, y,
                              [float(np.min(y)) / 2, float(np.max(y) / np.max(size)) / 2, 0.0],
                              [0.0, 0.0, 0.0], [np.inf, np.inf, np.inf])
            self.consts[f"{prefix}_base_s"] = float(x[0])
            self.consts[f"{prefix}_bandwidth_bytes_per_s"] = 1.0 / max(float(x[1]), 1e-30)
            self.consts[f"{prefix}_per_file_s"] = float(x[2])


def _default_profile(ms: MeasurementSet, dtype_bytes: int, is_cuda: bool) -> Profile:
    d = ms.device
    return Profile(
        gpu=d.name, provenance="", dtype_bytes=dtype_bytes,
        hbm_efficiency=0.8, kernel_launch_s=5e-6 if is_cuda else 10e-6,
        gemm_peak_efficiency=0.8, gemm_tile_overhead_elems=10.0, gemm_overlap_exponent=2.0,
        elementwise_hbm_efficiency=0.5, elementwise_launch_s=2e-6 if is_cuda else 5e-6,
        allreduce_latency_s=3e-5, allreduce_bus_efficiency=0.8,
    )


def _normalized(fit: _Fit) -> tuple[Profile, GpuSpec]:
    """Device = the highest fitted rates; efficiencies rescaled to <= 1 (same products)."""
    c = dict(fit.consts)
    bw_effs = [k for k in ("hbm_efficiency", "attention_decode_hbm_efficiency",
                           "elementwise_hbm_efficiency", "activation_hbm_efficiency",
                           "norm_hbm_efficiency", "rotary_hbm_efficiency")
               if c.get(k) is not None]
    flop_effs = [k for k in ("gemm_peak_efficiency", "attention_flops_efficiency",
                             "attention_decode_flops_efficiency", "train_mfu", "forward_mfu")
                 if c.get(k) is not None]
    bw_scale = max([1.0, *(c[k] for k in bw_effs)])
    flop_scale = max([1.0, *(c[k] for k in flop_effs)])
    for k in bw_effs:
        c[k] = min(1.0, c[k] / bw_scale)
    for k in flop_effs:
        c[k] = min(1.0, c[k] / flop_scale)
    fit.ref_bw *= bw_scale
    fit.ref_flops *= flop_scale
    if "hbm_efficiency" not in c:
        c["hbm_efficiency"] = min(1.0, 1.0 / bw_scale)
    # A documented default that no benchmark measured (train_mfu without a train_step
    # point) is a fraction of the reference peak (the best measured GEMM); the device peak
    # just grew by flop_scale, so the default shrinks by it to keep the same FLOP/s.
    if "train_mfu" not in c:
        c["train_mfu"] = Profile.model_fields["train_mfu"].default / flop_scale
        fit.scaled_defaults.add("train_mfu")
    device = fit.device()
    fit.consts = c
    base = fit.profile().model_dump()
    return Profile.model_validate({**base, "device": device.model_dump()}), device


def _predict_point(pred: Predictor, bench: str, m: Measurement) -> float:
    return pred(bench, m.params)


def _report(prof: Profile, device: GpuSpec, split: dict[str, _Split],
            fit: _Fit) -> Report:
    pred = Predictor(prof, device)
    report: Report = {}
    for bench, s in split.items():
        f: Callable[[Measurement], float] | None
        if bench in PREDICTED_BENCHES:
            f = functools.partial(_predict_point, pred, bench)
        else:
            f = _simple_prediction(bench, prof, device, fit)
        if f is None:
            continue
        tr_p, tr_m = [f(m) for m in s.train], [m.median_s for m in s.train]
        he_p, he_m = [f(m) for m in s.held], [m.median_s for m in s.held]
        row = {"points": float(len(s.train) + len(s.held)),
               "train_mape": _mape(tr_p, tr_m),
               "max_error": _max_err(tr_p + he_p, tr_m + he_m)}
        if s.held:
            row["held_back_mape"] = _mape(he_p, he_m)
            row["held_back_points"] = float(len(s.held))
        report[bench] = row
    return report


def _simple_prediction(bench: str, prof: Profile, device: GpuSpec,
                       fit: _Fit) -> Callable[[Measurement], float] | None:
    """Prediction of a non-compute benchmark by the formula its constants feed."""
    p = prof
    if bench == "memcpy" and hasattr(fit, "memcpy_fit"):
        lat, bw, cache, speedup = fit.memcpy_fit

        def memcpy(m: Measurement) -> float:
            moved = 2.0 * float(m.params["size_bytes"])
            h = cache_resident_fraction(moved, cache)
            return lat + moved / bw * (1.0 - h + h / speedup)
        return memcpy
    if bench == "allreduce":
        one_way = device.nvlink_bandwidth / 2 * p.allreduce_bus_efficiency

        def allreduce(m: Measurement) -> float:
            n = float(m.params["ranks"])
            return p.allreduce_latency_s + 2 * (n - 1) / n * float(m.params["size_bytes"]) \
                / one_way
        return allreduce
    if bench in ("allgather", "broadcast"):
        one_way = device.nvlink_bandwidth / 2 * p.allreduce_bus_efficiency
        # Ring all-gather of a size_bytes OUTPUT: (n-1)/n of it crosses each link; a
        # pipelined ring broadcast moves the same (reported, not fitted).
        return lambda m: p.allreduce_latency_s + (float(m.params["ranks"]) - 1) / float(
            m.params["ranks"]) * float(m.params["size_bytes"]) / one_way
    if bench in ("h2d", "d2h"):
        return lambda m: float(m.params["size_bytes"]) / (device.pcie_bandwidth
                                                          * p.pcie_efficiency)
    if bench == "cold_start":
        return lambda m: p.engine_cold_start_s + float(m.params["weights_bytes"]) \
            / p.checkpoint_load_bandwidth_bytes_per_s
    if bench == "warm_reload":
        return lambda m: p.engine_warm_start_base_s + float(m.params["weights_bytes"]) / (
            device.pcie_bandwidth * p.pcie_efficiency)
    if bench == "sandbox_checkpoint":
        return lambda m: p.sandbox_checkpoint_s(float(m.params["tree_bytes"]),
                                                int(m.params["files"]))
    if bench == "sandbox_restore":
        return lambda m: p.sandbox_restore_s(float(m.params["tree_bytes"]),
                                             int(m.params["files"]))
    return None


def fit_profile(ms: MeasurementSet, holdout_fraction: float = 0.25,
                seed: int = 0) -> tuple[Profile, Report]:
    """Fit every constant the measurements inform; (profile, report per benchmark).

    The report maps a benchmark to train_mape, held_back_mape (compute, engine and trainer
    grids only), max_error (over all its points), points and held_back_points, as fractions.
    Constants no benchmark informs keep the documented defaults of docs/cost-model.md.
    """
    if not ms.measurements:
        raise ValueError("the measurement set is empty: nothing to fit")
    split = _split(ms, holdout_fraction, seed)
    fit = _Fit(ms, split)
    fit.collectives()
    fit.host_link()
    fit.gemm()
    fit.attention()
    fit.elementwise()
    fit.layer()
    fit.joint()
    # The joint refit moved the cache constants the elementwise grid is read with.
    fit.elementwise()
    fit.layer()
    fit.engine()
    fit.trainer()
    fit.starts()
    fit.sandboxes()
    prof, device = _normalized(fit)
    report = _report(prof, device, split, fit)
    fit_error = {b: round(r["train_mape"], 6) for b, r in report.items()}
    held = {b: round(r["held_back_mape"], 6) for b, r in report.items()
            if "held_back_mape" in r}
    d = ms.device
    mode = "quick" if ms.quick else "full"
    meta = {"device": d.name, "kind": d.kind, "cores": str(d.cores), "dtype": d.dtype,
            "torch": d.torch_version, "host": d.host, "date": d.created, "mode": mode,
            "holdout_fraction": str(holdout_fraction), "seed": str(seed)}
    if fit.notes:
        meta["notes"] = "; ".join(fit.notes)
    defaults = [k for k in (*ENGINE_FIT_NAMES, "train_mfu", "train_step_overhead_s",
                            "forward_mfu", "forward_overhead_s") if not fit.fitted(k)]
    defaults += ["engine_memory_reserve_bytes", "network_efficiency",
                 "other train_* constants"]
    provenance = (
        f"calibrated on {d.host} {d.name} with torch {d.torch_version} on {d.created} "
        f"({mode}) by calibration.fit; constants no benchmark measured "
        f"({', '.join(defaults)}) are the documented defaults of docs/cost-model.md"
        + (" (train_mfu as that fraction of the best measured GEMM rate)."
           if "train_mfu" in fit.scaled_defaults else ".")
    )
    prof = prof.model_copy(update={
        "provenance": provenance, "fit_error": fit_error, "held_back_error": held,
        "meta": meta, "measurements": [m.model_dump(mode="json") for m in ms.measurements],
    })
    return Profile.model_validate(prof.model_dump()), report


# ----- output -----

def write_profile(profile: Profile, path: str | Path) -> Path:
    """Write the profile JSON atomically: a temp file in the same folder, then rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(profile.to_json())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _pct(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{100 * value:.1f}%"


def fit_report_markdown(report: Report) -> str:
    """One table row per benchmark: points, train and held-back MAPE, max error."""
    first = (*COMPUTE_BENCHES, *ENGINE_BENCHES, *TRAINER_BENCHES)
    order = [*first, *sorted(b for b in report if b not in first)]
    lines = ["| benchmark | points | held back | train MAPE | held-back MAPE | max error |",
             "|---|---|---|---|---|---|"]
    for bench in order:
        row = report.get(bench)
        if row is None:
            continue
        lines.append(
            f"| {bench} | {int(row.get('points', 0))} | {int(row.get('held_back_points', 0))} "
            f"| {_pct(row.get('train_mape'))} | {_pct(row.get('held_back_mape'))} "
            f"| {_pct(row.get('max_error'))} |")
    return "\n".join(lines)
