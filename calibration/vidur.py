"""Import Vidur's profiling CSVs as an rlsim profile (`rlsim calibrate --from-vidur DIR`).

Owns finding the files in a Vidur `data/profiling`-style folder, picking the GPU, and
turning them into a `Profile` with a per-operator error report. The fitting itself is
`calibration.fit_vidur`'s (the same functions that built the shipped H100/A100 profiles), so
an import of the data those were fitted on reproduces them.

Layout (as in microsoft/vidur `data/profiling/`, copied in tests/data/vidur):

    DIR/compute/<gpu>/<org>/<model>/mlp.csv      per-layer operator medians (ms) by tokens, TP
    DIR/network/<node>/all_reduce.csv            NCCL all-reduce medians (ms) by size, ranks

DIR may also be a `compute/<gpu>` folder itself. Every mlp.csv under the GPU's folder is
used (one GEMM fit over all models' shapes). The all-reduce constants come from the node
folder named after the GPU (`h100_dgx`), else from the only/first one there (noted in the
provenance), else they keep the defaults. Bad input raises ValueError with a one-line
message naming the missing file or column.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calibration import fit_vidur as fv
from rlsim.config.hardware import GPUS, GpuSpec, ModelSpec
from rlsim.cost.kernels import ElementwiseModel, GemmModel
from rlsim.cost.network import nvlink_one_way_bytes_per_s
from rlsim.cost.profile import DEFAULT_GEMM_TILES, Profile, builtin_profile

Report = dict[str, dict[str, float]]
# Operators the import predicts one by one (Vidur's names); `add` and `emb` are not rlsim
# kernels (vLLM fuses the residual add into RMSNorm; the embedding is a gather).
OPERATORS = (*fv.GEMM_OPS, *fv.ELEMENTWISE_OPS)


def _gpu_from_name(name: str) -> GpuSpec | None:
    """Catalogue GPU a Vidur folder name starts with: 'h100' -> H100, 'h100_dgx' -> H100."""
    low = name.lower()
    for key in sorted(GPUS, key=len, reverse=True):
        if low == key.lower() or low.startswith(key.lower() + "_"):
            return GPUS[key]
    return None


@dataclass(frozen=True)
class VidurFiles:
    """What an import reads: the GPU, its mlp.csv files and the all-reduce CSV (if any)."""

    gpu: GpuSpec
    compute: Path
    mlp_csvs: tuple[Path, ...]
    allreduce_csv: Path | None
    allreduce_gpu: GpuSpec


def find_vidur_files(directory: Path, gpu: GpuSpec | None = None) -> VidurFiles:
    """Locate the CSVs of one GPU in a Vidur folder; ValueError (one line) naming what is
    missing or ambiguous."""
    compute, network, spec = _locate(Path(directory), gpu)
    csvs = tuple(sorted(compute.glob("*/*/mlp.csv")))
    if not csvs:
        raise ValueError(f"no mlp.csv under {compute} (expected <org>/<model>/mlp.csv)")
    ar_path, ar_gpu = _allreduce_csv(network, spec)
    return VidurFiles(spec, compute, csvs, ar_path, ar_gpu)


def _locate(directory: Path, gpu: GpuSpec | None) -> tuple[Path, Path | None, GpuSpec]:
    """(the GPU's compute folder, the network folder or None, the GPU)."""
    if not directory.is_dir():
        raise ValueError(f"Vidur folder {directory} does not exist")
    if (directory / "compute").is_dir():
        root = directory
        gpu_dirs = sorted(p for p in (directory / "compute").iterdir() if p.is_dir())
        if gpu is not None:
            compute = directory / "compute" / gpu.name.lower()
            if not compute.is_dir():
                found = ", ".join(p.name for p in gpu_dirs) or "none"
                raise ValueError(f"no {compute} (GPU folders there: {found})")
        elif len(gpu_dirs) == 1:
            compute = gpu_dirs[0]
        elif not gpu_dirs:
            raise ValueError(f"no GPU folder under {directory / 'compute'}")
        else:
            names = ", ".join(p.name for p in gpu_dirs)
            raise ValueError(f"{directory / 'compute'} holds several GPUs ({names}); "
                             "choose one (gpu=..., or --gpu on the command line)")
    elif directory.parent.name == "compute":
        compute, root = directory, directory.parent.parent
    else:
        raise ValueError(f"no {directory / 'compute'} folder (expected Vidur's "
                         "compute/<gpu>/<org>/<model>/mlp.csv layout)")
    if gpu is None:
        gpu = _gpu_from_name(compute.name)
        if gpu is None:
            raise ValueError(f"cannot tell the GPU from folder name {compute.name!r} "
                             f"(known: {', '.join(GPUS)}); pass the GPU spec")
    network = root / "network"
    return compute, (network if network.is_dir() else None), gpu


def _allreduce_csv(network: Path | None, gpu: GpuSpec) -> tuple[Path | None, GpuSpec]:
    """The node's all_reduce.csv (the GPU's own node first) and the GPU it was measured on."""
    if network is None:
        return None, gpu
    found = sorted(network.glob("*/all_reduce.csv"))
    for path in found:
        if _gpu_from_name(path.parent.name) == gpu:
            return path, gpu
    if found:
        return found[0], _gpu_from_name(found[0].parent.name) or gpu
    return None, gpu


def _model_name(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


def _op_errors(profile: Profile, gpu: GpuSpec,
               data: list[tuple[ModelSpec, list[fv.MlpRow]]]) -> Report:
    gemm = GemmModel(gpu, profile, fv.DTYPE_BYTES)
    ew = {k: ElementwiseModel(gpu, profile, getattr(profile, k))
          for k in set(fv.ELEMENTWISE_KIND.values())}
    errors: dict[str, list[float]] = {op: [] for op in OPERATORS}
    layer: list[float] = []
    for model, rows in data:
        for row in rows:
            shapes = fv.linear_shapes(model, row.tp)
            pred: dict[str, float] = {}
            for op in fv.GEMM_OPS:
                n, k = shapes[op]
                pred[op] = gemm.time_s(row.num_tokens, n, k)
            for op in fv.ELEMENTWISE_OPS:
                size = fv._elementwise_bytes(op, model, row.tp, row.num_tokens)
                pred[op] = ew[fv.ELEMENTWISE_KIND[op]].time_s(size)
            for op, t in pred.items():
                errors[op].append(t / row.op_s[op] - 1.0)
            layer.append(sum(pred.values()) / sum(row.op_s[op] for op in OPERATORS) - 1.0)
    report: Report = {}
    for name, errs in [*errors.items(), ("layer_ops_sum", layer)]:
        a = np.abs(np.array(errs))
        report[name] = {"train_mape": float(a.mean()), "max_error": float(a.max()),
                        "points": float(a.size)}
    every = np.abs(np.concatenate([errors[op] for op in OPERATORS]))
    report["operators"] = {"train_mape": float(every.mean()), "max_error": float(every.max()),
                           "points": float(every.size)}
    gemm_all = np.abs(np.concatenate([errors[op] for op in fv.GEMM_OPS]))
    ew_all = np.abs(np.concatenate([errors[op] for op in fv.ELEMENTWISE_OPS]))
    report["gemm_ops"] = {"train_mape": float(gemm_all.mean()),
                          "max_error": float(gemm_all.max()), "points": float(gemm_all.size)}
    report["elementwise_ops"] = {"train_mape": float(ew_all.mean()),
                                 "max_error": float(ew_all.max()), "points": float(ew_all.size)}
    return report


def profile_from_vidur(directory: Path, gpu: GpuSpec | None = None) -> tuple[Profile, Report]:
    """Fit an rlsim profile to Vidur's CSVs in `directory`; (profile, error report).

    The report maps each operator (attn_pre_proj, ..., attn_rope), `gemm_ops`,
    `elementwise_ops`, `layer_ops_sum` (the per-layer sum of those operators),
    `linear_tp<N>` (InferenceCost.linear_s against the sum of the linear operators) and
    `allreduce` to train_mape, max_error and points (fractions). The profile's `device` is
    the catalogue spec of the GPU, so a pool can use the JSON as its GPU.
    """
    directory = Path(directory)
    files = find_vidur_files(directory, gpu)
    gpu, compute, csvs = files.gpu, files.compute, files.mlp_csvs
    ar_path, ar_gpu = files.allreduce_csv, files.allreduce_gpu
    data: list[tuple[ModelSpec, list[fv.MlpRow]]] = []
    for path in csvs:
        model = fv.model_from_mlp_csv(path, _model_name(path))
        rows = fv.load_mlp_rows(path, model, ops=OPERATORS)
        data.append((model, rows))

    gemm = fv.fit_gemm_points(
        fv.concat_gemm_points([fv.gemm_points(rows, model) for model, rows in data]), gpu)
    parts = [fv.elementwise_arrays(rows, model) for model, rows in data]
    ew = fv.fit_elementwise_arrays(np.concatenate([p[0] for p in parts]),
                                   np.concatenate([p[1] for p in parts]), gpu.hbm_bandwidth,
                                   [k for p in parts for k in p[2]])
    consts: dict[str, Any] = {
        **gemm,
        **{k: v for k, v in ew.items() if not k.startswith("_")},
    }
    sources = [str(p.relative_to(compute.parent.parent)) for p in csvs]
    ar_mape = None
    if ar_path is not None:
        ar = fv.fit_allreduce(ar_path, ar_gpu)
        consts["allreduce_latency_s"] = ar["allreduce_latency_s"]
        consts["allreduce_bus_efficiency"] = ar["allreduce_bus_efficiency"]
        ar_mape = ar["_mape"]
        sources.append(str(ar_path.relative_to(compute.parent.parent)))
    else:
        shipped = builtin_profile(GPUS["H100"])  # the shipped H100 NCCL fit
        consts["allreduce_latency_s"] = shipped.allreduce_latency_s
        consts["allreduce_bus_efficiency"] = shipped.allreduce_bus_efficiency

    note = "" if ar_gpu == gpu else (
        f" All-reduce constants fitted on {ar_gpu.name} data, used for {gpu.name}.")
    if ar_path is None:
        note = " No all_reduce.csv: all-reduce constants are the shipped H100 NCCL fit."
    provenance = (
        f"calibration.vidur: GEMM and elementwise constants fitted to Vidur profiling data "
        f"({', '.join(sources)}) of {gpu.name}; the other constants are the documented "
        f"defaults of docs/cost-model.md.{note}"
    )
    profile = Profile(
        gpu=gpu.name, provenance=provenance, device=gpu, dtype_bytes=fv.DTYPE_BYTES,
        gemm_tiles=DEFAULT_GEMM_TILES, gemm_splitk_min_k=fv.SPLITK_MIN_K, **consts,
    )
    report = _op_errors(profile, gpu, data)
    for model, rows in data:
        for tp in sorted({r.tp for r in rows}):
            try:
                fid = fv.fidelity(profile, gpu, model, rows, tp)
            except ValueError:
                continue  # a TP degree this GPU/model cannot run (check_tp)
            key = f"linear_tp{tp}" if len(data) == 1 else f"linear_{model.name}_tp{tp}"
            report[key] = {"train_mape": fid.mape, "max_error": fid.max_error,
                           "points": float(fid.points)}
    if ar_mape is not None and ar_path is not None:
        ranks, _, _ = fv.load_allreduce_rows(ar_path)
        report["allreduce"] = {"train_mape": ar_mape, "points": float(ranks.size)}
    fit_error = {k: round(v["train_mape"], 6) for k, v in report.items()}
    meta = {
        "source": "vidur", "directory": str(directory), "gpu": gpu.name,
        "models": ", ".join(m.name for m, _ in data), "date": dt.date.today().isoformat(),
        "one_way_nvlink_bytes_per_s": f"{nvlink_one_way_bytes_per_s(gpu.nvlink_bandwidth):g}",
    }
    profile = profile.model_copy(update={"fit_error": fit_error, "meta": meta})
    return Profile.model_validate(profile.model_dump()), report
