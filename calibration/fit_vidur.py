"""Offline fit of the built-in GPU profiles to Vidur's measured operator and all-reduce times.

Owns reading the Vidur CSVs (tests/data/vidur, MIT, microsoft/vidur@7d47513), the scipy
fits of the GEMM, elementwise and all-reduce constants, the fidelity table of the fitted
linear-layer model, and writing `rlsim/cost/profiles/*.json`. Run it by hand after a model
change; the simulator only reads the JSON it writes (nothing is fitted at simulation start,
and rlsim never imports this offline scipy fit: it lives with the calibration):

    .venv/bin/python -m calibration.fit_vidur [--data DIR] [--out DIR] [--docs FILE]

H100 and A100 are fitted on their own data. H800, H200 and H20 are Hopper parts: they reuse
the H100 efficiency fit, and the cost models scale it by their own GpuSpec peaks, bandwidths
and SM counts. A GPU outside the catalogue gets the `generic` profile (the A100 fit: the
more conservative of the two). The GEMM fit below has a numpy twin of
`rlsim.cost.kernels.GemmModel.time_s` for speed; tests check that both agree.
"""

from __future__ import annotations

import argparse
import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import least_squares

from rlsim.config.hardware import GpuSpec, ModelSpec, lookup_gpu, lookup_model
from rlsim.cost.inference import InferenceCost, act_bytes_per_token, linear_shapes
from rlsim.cost.network import nvlink_one_way_bytes_per_s
from rlsim.cost.profile import (
    DEFAULT_GEMM_TILES,
    GENERIC_PROFILE,
    PROFILE_DIR,
    PROVENANCE_FIELDS,
    Profile,
)

Array = NDArray[np.float64]

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "vidur"
MODEL_NAME = "llama-2-7b"
MLP_CSV = "compute/{gpu}/meta-llama/Llama-2-7b-hf/mlp.csv"
ALLREDUCE_CSV = "network/h100_dgx/all_reduce.csv"
GEMM_OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
# The operators whose per-layer sum is the fidelity target (linear_s of InferenceCost).
LINEAR_OPS = (*GEMM_OPS, "mlp_act")
# Elementwise operators used to fit the elementwise constants. Vidur's separate residual
# `add` is left out: vLLM fuses it into RMSNorm, and Vidur's `emb` is a gather, not a stream.
ELEMENTWISE_OPS = ("mlp_act", "input_layernorm", "post_attention_layernorm", "attn_rope")
FIT_TPS = (1, 2, 4, 8)
FITTED_GPUS = ("H100", "A100")
HOPPER_DERIVED = ("H800", "H200", "H20")
# No public operator timings for these: the generic (A100) fit under their own names, so each
# catalogue GPU has a built-in profile; the cost models scale it by the GPU's own spec.
UNMEASURED = ("B200", "GB200", "MI300X")
SPLITK_MIN_K = 256
DTYPE_BYTES = 2
TABLE_START = "<!-- fidelity-table:start -->"
TABLE_END = "<!-- fidelity-table:end -->"
CONSTANTS_START = "<!-- profile-constants:start -->"
CONSTANTS_END = "<!-- profile-constants:end -->"


@dataclass(frozen=True)
class MlpRow:
    """One Vidur mlp.csv row: per-layer median times (seconds) at one (tokens, TP)."""

    tp: int
    num_tokens: int
    op_s: dict[str, float]

    @property
    def linear_layer_s(self) -> float:
        return sum(self.op_s[op] for op in LINEAR_OPS)


def mlp_csv_path(data_dir: Path, gpu: str) -> Path:
    return data_dir / MLP_CSV.format(gpu=gpu.lower())


MLP_SHAPE_COLUMNS = ("n_head", "n_kv_head", "n_embd", "n_expanded_embd")
MLP_KEY_COLUMNS = ("num_tokens", "num_tensor_parallel_workers")
ALLREDUCE_COLUMNS = ("num_workers", "size", "time_stats.all_reduce.median")


def _read_csv(path: Path, required: Sequence[str]) -> list[dict[str, str]]:
    """Rows of a CSV that has every `required` column; one-line ValueError otherwise."""
    try:
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in required if c not in header]
            if missing:
                raise ValueError(f"{path}: missing column {missing[0]!r}")
            rows = list(reader)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not rows:
        raise ValueError(f"{path}: no data rows")
    return rows


def _number(path: Path, rec: dict[str, str], column: str) -> float:
    try:
        return float(rec[column])
    except (TypeError, ValueError):
        raise ValueError(f"{path}: column {column!r} has a non-number {rec[column]!r}") from None


def model_from_mlp_csv(path: Path, name: str) -> ModelSpec:
    """The layer shape a Vidur mlp.csv was profiled with (the per-layer ops need no more)."""
    rec = _read_csv(path, MLP_SHAPE_COLUMNS)[0]
    heads, kv_heads, hidden, ffn = (int(_number(path, rec, c)) for c in MLP_SHAPE_COLUMNS)
    gated = rec.get("use_gated_mlp", "True").strip().lower() != "false"
    vocab = int(_number(path, rec, "vocab_size")) if rec.get("vocab_size") else 32000
    try:
        return ModelSpec(name=name, layers=1, hidden=hidden, heads=heads, kv_heads=kv_heads,
                         ffn=ffn, vocab=vocab, gated_mlp=gated)
    except ValueError as exc:
        raise ValueError(f"{path}: bad model shape: {exc}".replace("\n", " ")) from None


def load_mlp_rows(path: Path, model: ModelSpec | None = None,
                  ops: Sequence[str] = LINEAR_OPS) -> list[MlpRow]:
    """Read a Vidur mlp.csv (which must time `ops`); check its shape matches `model`."""
    required = (*MLP_KEY_COLUMNS, *(f"time_stats.{op}.median" for op in ops))
    rows = []
    for rec in _read_csv(path, (*required, *(MLP_SHAPE_COLUMNS if model else ()))):
        if model is not None:
            shape = tuple(int(_number(path, rec, c)) for c in MLP_SHAPE_COLUMNS)
            expect = (model.heads, model.kv_heads, model.hidden, model.ffn)
            if shape != expect:
                raise ValueError(f"{path}: shape {shape} is not {model.name}'s {expect}")
        names = {k.split(".")[1] for k in rec if k and k.startswith("time_stats.")}
        rows.append(MlpRow(
            tp=int(_number(path, rec, "num_tensor_parallel_workers")),
            num_tokens=int(_number(path, rec, "num_tokens")),
            op_s={op: _number(path, rec, f"time_stats.{op}.median") * 1e-3 for op in names
                  if rec.get(f"time_stats.{op}.median")},
        ))
    return rows


def load_allreduce_rows(path: Path) -> tuple[Array, Array, Array]:
    """(ranks, size_bytes, median_s) arrays of Vidur's all_reduce.csv."""
    ranks, sizes, times = [], [], []
    for rec in _read_csv(path, ALLREDUCE_COLUMNS):
        ranks.append(_number(path, rec, "num_workers"))
        sizes.append(_number(path, rec, "size"))  # Vidur writes bytes (elements x 2)
        times.append(_number(path, rec, "time_stats.all_reduce.median") * 1e-3)
    return np.array(ranks), np.array(sizes), np.array(times)


# ----- GEMM fit -----

@dataclass(frozen=True)
class GemmPoints:
    m: Array
    n: Array
    k: Array
    measured_s: Array


def gemm_points(rows: Sequence[MlpRow], model: ModelSpec) -> GemmPoints:
    m, n, k, y = [], [], [], []
    for row in rows:
        shapes = linear_shapes(model, row.tp)
        for op in GEMM_OPS:
            n_, k_ = shapes[op]
            m.append(row.num_tokens)
            n.append(n_)
            k.append(k_)
            y.append(row.op_s[op])
    return GemmPoints(np.array(m, float), np.array(n, float), np.array(k, float), np.array(y))


def gemm_time_np(
    pts: GemmPoints, gpu: GpuSpec, params: Sequence[float] | Array,
    tiles: Sequence[tuple[int, int]] = DEFAULT_GEMM_TILES, splitk_min_k: int = SPLITK_MIN_K,
    dtype_bytes: int = DTYPE_BYTES,
) -> Array:
    """Vectorized twin of GemmModel.time_s; params = (hbm_eff, launch_s, p, peak_eff, c)."""
    hbm_eff, launch_s, p, peak_eff, overhead = params
    m, n, k = pts.m, pts.n, pts.k
    sms = float(gpu.sm_count)
    per_sm = gpu.bf16_tflops * 1e12 / sms
    t_mem = (k * n + m * k + m * n) * dtype_bytes / (gpu.hbm_bandwidth * hbm_eff)
    best = np.full_like(m, np.inf)
    for tm, tn in tiles:
        eff = peak_eff / (1.0 + overhead * (tm + tn) / (tm * tn))
        n_tiles = np.ceil(m / tm) * np.ceil(n / tn)
        split = np.maximum(1.0, np.minimum(np.floor(sms / n_tiles), np.floor(k / splitk_min_k)))
        waves = np.ceil(n_tiles * split / sms)
        t_c = waves * (2.0 * tm * tn / (per_sm * eff)) * (k / split)
        best = np.minimum(best, (t_c**p + t_mem**p) ** (1.0 / p))
    return best + launch_s


GEMM_PARAM_NAMES = ("hbm_efficiency", "kernel_launch_s", "gemm_overlap_exponent",
                    "gemm_peak_efficiency", "gemm_tile_overhead_elems")
# Bounds keep the constants physical: no DRAM stream beats ~95% of its spec bandwidth.
GEMM_LOWER = (0.3, 0.0, 1.0, 0.3, 0.0)
GEMM_UPPER = (0.95, 30e-6, 20.0, 1.0, 200.0)


def concat_gemm_points(parts: Sequence[GemmPoints]) -> GemmPoints:
    return GemmPoints(*(np.concatenate([getattr(p, f) for p in parts])
                        for f in ("m", "n", "k", "measured_s")))


def fit_gemm_points(
    pts: GemmPoints, gpu: GpuSpec,
    lower: Sequence[float] = GEMM_LOWER, upper: Sequence[float] = GEMM_UPPER,
    tiles: Sequence[tuple[int, int]] = DEFAULT_GEMM_TILES, splitk_min_k: int = SPLITK_MIN_K,
    dtype_bytes: int = DTYPE_BYTES, launch0_s: float = 4e-6,
) -> dict[str, float]:
    """Least squares on the relative error of every GEMM's median time (soft L1 loss);
    returns the GEMM_PARAM_NAMES constants."""

    def residual(x: Array) -> Array:
        out: Array = gemm_time_np(pts, gpu, x, tiles, splitk_min_k, dtype_bytes) \
            / pts.measured_s - 1.0
        return out

    best = None
    # A few starts: the tile minimum makes the objective piecewise smooth.
    for p0 in (1.5, 2.5, 4.0):
        for c0 in (5.0, 30.0):
            x0 = np.clip([0.8, launch0_s, p0, 0.9, c0], lower, upper)
            res = least_squares(residual, x0, bounds=(lower, upper), loss="soft_l1",
                                f_scale=0.1)
            if best is None or res.cost < best.cost:
                best = res
    assert best is not None
    return dict(zip(GEMM_PARAM_NAMES, (float(v) for v in best.x), strict=True))


def fit_gemm(rows: Sequence[MlpRow], gpu: GpuSpec, model: ModelSpec) -> dict[str, float]:
    """fit_gemm_points on every GEMM of Vidur's `rows` of one model."""
    return fit_gemm_points(gemm_points(rows, model), gpu)


# ----- elementwise fit -----

def _elementwise_bytes(op: str, model: ModelSpec, tp: int, tokens: int) -> float:
    d = DTYPE_BYTES
    if op == "mlp_act":
        return float(tokens * act_bytes_per_token(model, tp, d))
    if op in ("input_layernorm", "post_attention_layernorm"):
        return float(tokens * 2 * model.hidden * d)  # read x, write normed x
    if op == "attn_rope":
        q_heads = model.heads // tp
        kv_heads = max(1, model.kv_heads // tp)
        return float(tokens * 2 * (q_heads + kv_heads) * model.dim_head * d)  # q, k in+out
    raise ValueError(f"no byte count for elementwise op {op!r}")


# Which efficiency constant each elementwise operator's kind of kernel uses.
ELEMENTWISE_KIND = {"mlp_act": "elementwise_hbm_efficiency",
                    "input_layernorm": "norm_hbm_efficiency",
                    "post_attention_layernorm": "norm_hbm_efficiency",
                    "attn_rope": "rotary_hbm_efficiency"}


def elementwise_arrays(rows: Sequence[MlpRow], model: ModelSpec,
                       ops: Sequence[str] = ELEMENTWISE_OPS) -> tuple[Array, Array, list[str]]:
    """(bytes moved, measured seconds, efficiency constant) of every elementwise op."""
    size = np.array([_elementwise_bytes(op, model, r.tp, r.num_tokens)
                     for r in rows for op in ops])
    y = np.array([r.op_s[op] for r in rows for op in ops])
    kinds = [ELEMENTWISE_KIND[op] for _ in rows for op in ops]
    return size, y, kinds


def fit_elementwise_arrays(size: Array, y: Array, bandwidth_bytes_per_s: float,
                           kinds: Sequence[str] | None = None,
                           launch0_s: float = 2e-6, max_launch_s: float = 20e-6,
                           min_efficiency: float = 0.05) -> dict[str, float]:
    """bytes / (bandwidth * efficiency[kind]) + launch on relative error (soft L1).

    One efficiency per kind of kernel (the constant names in `kinds`, default all
    elementwise_hbm_efficiency) and one shared launch latency; `_mape` too.
    """
    names = sorted(set(kinds)) if kinds is not None else ["elementwise_hbm_efficiency"]
    idx = np.array([names.index(k) for k in kinds]) if kinds is not None \
        else np.zeros(size.size, int)

    def residual(x: Array) -> Array:
        eff = x[:-1][idx]
        out: Array = (size / (bandwidth_bytes_per_s * eff) + x[-1]) / y - 1.0
        return out

    n = len(names)
    res = least_squares(residual, [0.6] * n + [launch0_s],
                        bounds=([min_efficiency] * n + [0.0], [1.0] * n + [max_launch_s]),
                        loss="soft_l1", f_scale=0.1)
    out = {name: float(v) for name, v in zip(names, res.x[:-1], strict=True)}
    out["elementwise_launch_s"] = float(res.x[-1])
    out["_mape"] = float(np.mean(np.abs(residual(res.x))))
    return out


def fit_elementwise(rows: Sequence[MlpRow], gpu: GpuSpec, model: ModelSpec) -> dict[str, float]:
    size, y, kinds = elementwise_arrays(rows, model)
    return fit_elementwise_arrays(size, y, gpu.hbm_bandwidth, kinds)


# ----- all-reduce fit -----

def fit_allreduce_arrays(ranks: Array, size: Array, y: Array, one_way_bytes_per_s: float,
                         latency0_s: float = 20e-6, max_latency_s: float = 1e-3,
                         min_efficiency: float = 0.05) -> dict[str, float]:
    """Ring all-reduce: latency + 2(n-1)/n * bytes / (one-way bandwidth * efficiency)."""

    def residual(x: Array) -> Array:
        out: Array = (x[0] + 2 * (ranks - 1) / ranks * size / (one_way_bytes_per_s * x[1])) \
            / y - 1.0
        return out

    res = least_squares(residual, [latency0_s, 0.7],
                        bounds=([0.0, min_efficiency], [max_latency_s, 1.0]), loss="soft_l1",
                        f_scale=0.1)
    mape = float(np.mean(np.abs(residual(res.x))))
    return {"allreduce_latency_s": float(res.x[0]),
            "allreduce_bus_efficiency": float(res.x[1]), "_mape": mape}


def fit_allreduce(path: Path, gpu: GpuSpec) -> dict[str, float]:
    """fit_allreduce_arrays on Vidur's all_reduce.csv against `gpu`'s one-way NVLink."""
    ranks, size, y = load_allreduce_rows(path)
    return fit_allreduce_arrays(ranks, size, y, nvlink_one_way_bytes_per_s(gpu.nvlink_bandwidth))


# ----- fidelity of the runtime model -----

@dataclass(frozen=True)
class Fidelity:
    gpu: str
    tp: int
    mape: float
    max_error: float
    worst_tokens: int
    points: int


def linear_errors(profile: Profile, gpu: GpuSpec, model: ModelSpec, rows: Sequence[MlpRow],
                  tp: int) -> list[tuple[int, float]]:
    """(tokens, relative error) of InferenceCost.linear_s against Vidur at one TP degree."""
    cost = InferenceCost(model, gpu, tp, profile, DTYPE_BYTES)
    out = []
    for row in rows:
        if row.tp != tp:
            continue
        measured = model.layers * row.linear_layer_s
        out.append((row.num_tokens, cost.linear_s(row.num_tokens) / measured - 1.0))
    return out


def fidelity(profile: Profile, gpu: GpuSpec, model: ModelSpec, rows: Sequence[MlpRow],
             tp: int) -> Fidelity:
    errs = linear_errors(profile, gpu, model, rows, tp)
    if not errs:
        raise ValueError(f"no Vidur rows for {gpu.name} at tp={tp}")
    worst = max(errs, key=lambda e: abs(e[1]))
    return Fidelity(gpu.name, tp, float(np.mean([abs(e) for _, e in errs])), abs(worst[1]),
                    worst[0], len(errs))


# ----- building profiles -----

def _provenance(fitted_on: str, tps: Sequence[int], note: str = "") -> str:
    tp_list = ", ".join(str(t) for t in tps)
    # The module's name before it moved to calibration/: the shipped profiles carry this
    # text, and a refit must write them byte for byte as they are.
    text = (
        f"rlsim.cost.fit_vidur: GEMM and elementwise constants fitted to Vidur "
        f"(microsoft/vidur@7d47513, MIT) {fitted_on} Llama-2-7B mlp.csv at TP {tp_list}; "
        f"all-reduce constants fitted to Vidur h100_dgx all_reduce.csv; the other constants "
        f"are the documented defaults of docs/cost-model.md."
    )
    return f"{text} {note}" if note else text


def fit_profile(data_dir: Path, gpu_name: str, tps: Sequence[int] = FIT_TPS) -> Profile:
    """Fit one GPU's profile on its Vidur rows at TP degrees `tps`."""
    gpu = lookup_gpu(gpu_name)
    model = lookup_model(MODEL_NAME)
    rows = [r for r in load_mlp_rows(mlp_csv_path(data_dir, gpu_name), model) if r.tp in tps]
    gemm = fit_gemm(rows, gpu, model)
    ew = fit_elementwise(rows, gpu, model)
    # Only H100 collectives were measured; A100 (NVSwitch, NCCL ring) reuses their fit.
    ar = fit_allreduce(data_dir / ALLREDUCE_CSV, lookup_gpu("H100"))
    prof = Profile(
        gpu=gpu.name, provenance=_provenance(gpu.name, tps),
        gemm_tiles=DEFAULT_GEMM_TILES, gemm_splitk_min_k=SPLITK_MIN_K,
        **gemm,
        **{k: v for k, v in ew.items() if not k.startswith("_")},
        allreduce_latency_s=ar["allreduce_latency_s"],
        allreduce_bus_efficiency=ar["allreduce_bus_efficiency"],
    )
    errors: dict[str, float] = {}
    for tp in tps:
        fid = fidelity(prof, gpu, model, rows, tp)
        errors[f"linear_mape_tp{tp}"] = round(fid.mape, 6)
        errors[f"linear_max_error_tp{tp}"] = round(fid.max_error, 6)
    gemm_err = np.abs(gemm_time_np(gemm_points(rows, model), gpu, list(gemm.values()))
                      / gemm_points(rows, model).measured_s - 1.0)
    errors["gemm_op_mape"] = round(float(gemm_err.mean()), 6)
    errors["elementwise_op_mape"] = round(ew["_mape"], 6)
    errors["allreduce_mape"] = round(ar["_mape"], 6)
    return prof.model_copy(update={"fit_error": errors})


def derived_profile(base: Profile, gpu_name: str, note: str) -> Profile:
    """`base`'s constants under another GPU name (fit error stays the base GPU's)."""
    return base.model_copy(update={
        "gpu": gpu_name,
        "provenance": _provenance(base.gpu, FIT_TPS, f"Used for {gpu_name}: {note}"),
    })


def build_profiles(data_dir: Path) -> dict[str, Profile]:
    fitted = {name: fit_profile(data_dir, name) for name in FITTED_GPUS}
    out = dict(fitted)
    for name in HOPPER_DERIVED:
        out[name] = derived_profile(
            fitted["H100"], name,
            "Hopper efficiencies from the H100 fit, scaled by this GPU's own spec numbers "
            "(peak, HBM and NVLink bandwidth, SM count) in the cost models.",
        )
    for name in UNMEASURED:
        out[name] = derived_profile(
            fitted["A100"], name,
            "no public operator timings for this GPU: the generic profile's A100 fit, the "
            "more conservative of the two fitted architectures, scaled by this GPU's own "
            "spec numbers (peak, HBM and NVLink/xGMI bandwidth, SM/CU count) in the cost "
            "models.",
        )
    out[GENERIC_PROFILE] = derived_profile(
        fitted["A100"], GENERIC_PROFILE,
        "fallback for GPUs without a built-in profile: the A100 fit, the more conservative "
        "of the two fitted architectures, scaled by the GPU's own spec numbers.",
    )
    return out


def write_profiles(profiles: dict[str, Profile], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, prof in profiles.items():
        path = out_dir / f"{name.lower()}.json"
        path.write_text(prof.to_json())
        paths.append(path)
    return paths


# ----- tables for docs -----

def fidelity_rows(data_dir: Path, profiles: dict[str, Profile],
                  tps: Sequence[int] = FIT_TPS) -> list[Fidelity]:
    model = lookup_model(MODEL_NAME)
    out: list[Fidelity] = []
    for name in FITTED_GPUS:
        rows = load_mlp_rows(mlp_csv_path(data_dir, name), model)
        out.extend(fidelity(profiles[name], lookup_gpu(name), model, rows, tp) for tp in tps)
    return out


def generalization(data_dir: Path, fit_tps: Sequence[int] = (1, 2),
                   eval_tp: int = 4) -> list[Fidelity]:
    """Fit on `fit_tps` rows only and measure the error at the held-out `eval_tp`."""
    model = lookup_model(MODEL_NAME)
    out = []
    for name in FITTED_GPUS:
        prof = fit_profile(data_dir, name, fit_tps)
        rows = load_mlp_rows(mlp_csv_path(data_dir, name), model)
        out.append(fidelity(prof, lookup_gpu(name), model, rows, eval_tp))
    return out


def fidelity_markdown(rows: Sequence[Fidelity]) -> str:
    lines = ["| GPU | TP | MAPE | max error | worst at tokens | points |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.gpu} | {r.tp} | {100 * r.mape:.1f}% | {100 * r.max_error:.1f}% "
                     f"| {r.worst_tokens} | {r.points} |")
    return "\n".join(lines)


def generalization_markdown(rows: Sequence[Fidelity]) -> str:
    lines = ["| GPU | fitted on | evaluated on | MAPE | max error | points |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.gpu} | TP 1, 2 | TP {r.tp} | {100 * r.mape:.1f}% "
                     f"| {100 * r.max_error:.1f}% | {r.points} |")
    return "\n".join(lines)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, tuple):
        return " ".join(f"{a}x{b}" for a, b in value) if value and isinstance(value[0], tuple) \
            else str(value)
    return str(value)


def constants_markdown(profiles: dict[str, Profile]) -> str:
    """Every Profile constant with its H100 and A100 values and its meaning."""
    skip = {"gpu", "device", *PROVENANCE_FIELDS}
    lines = ["| constant | H100 (and H800/H200/H20) | A100 (and generic) | meaning |",
             "|---|---|---|---|"]
    for name, field in Profile.model_fields.items():
        if name in skip:
            continue
        h100, a100 = getattr(profiles["H100"], name), getattr(profiles["A100"], name)
        lines.append(f"| `{name}` | {_fmt(h100)} | {_fmt(a100)} | {field.description} |")
    return "\n".join(lines)


def replace_block(text: str, start: str, end: str, body: str) -> str:
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"markers {start} ... {end} not found")
    return pattern.sub(lambda _: f"{start}\n{body}\n{end}", text)


def docs_block(data_dir: Path, profiles: dict[str, Profile]) -> str:
    fid = fidelity_markdown(fidelity_rows(data_dir, profiles))
    gen = generalization_markdown(generalization(data_dir))
    return (
        "Linear layers of Llama-2-7B (`InferenceCost.linear_s`, built-in profiles) against "
        "32 x the sum of Vidur's per-layer medians of attn_pre_proj, attn_post_proj, "
        "mlp_up_proj, mlp_act and mlp_down_proj, every num_tokens from 1 to 4096:\n\n"
        f"{fid}\n\nGeneralization (refit on TP 1 and 2 rows only, error on TP 4):\n\n{gen}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR,
                    help="Vidur data folder (compute/, network/)")
    ap.add_argument("--out", type=Path, default=PROFILE_DIR, help="where to write *.json")
    ap.add_argument("--docs", type=Path, default=None,
                    help="markdown file whose fidelity-table block to regenerate")
    args = ap.parse_args(argv)
    if not (args.data / ALLREDUCE_CSV).is_file():
        ap.error(f"--data {args.data}: no {ALLREDUCE_CSV} there")
    profiles = build_profiles(args.data)
    for path in write_profiles(profiles, args.out):
        print(f"wrote {path}")
    block = docs_block(args.data, profiles)
    print(block)
    if args.docs is not None:
        text = replace_block(args.docs.read_text(), TABLE_START, TABLE_END, block)
        text = replace_block(text, CONSTANTS_START, CONSTANTS_END, constants_markdown(profiles))
        args.docs.write_text(text)
        print(f"updated {args.docs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

