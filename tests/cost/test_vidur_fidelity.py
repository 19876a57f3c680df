"""Fidelity of the linear-layer cost model against Vidur's measured H100/A100 operator times.

Target: 32 layers x the per-layer sum of Vidur's medians of attn_pre_proj, attn_post_proj,
mlp_up_proj, mlp_act and mlp_down_proj (Llama-2-7B), every num_tokens from 1 to 4096.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calibration import fit_vidur as fv
from rlsim.config.hardware import lookup_gpu, lookup_model
from rlsim.cost import InferenceCost, builtin_profile, estimate
from rlsim.cost.kernels import GemmModel

DATA = Path(__file__).resolve().parents[1] / "data" / "vidur"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "cost-model.md"
MODEL = lookup_model("llama-2-7b")
MAPE_LIMIT = 0.15
MAX_LIMIT = 0.30


@pytest.fixture(scope="module")
def rows() -> dict[str, list[fv.MlpRow]]:
    # load_mlp_rows checks the CSV's shape columns against the catalogue model.
    return {g: fv.load_mlp_rows(fv.mlp_csv_path(DATA, g), MODEL) for g in fv.FITTED_GPUS}


@pytest.mark.parametrize("gpu_name", ["H100", "A100"])
@pytest.mark.parametrize("tp", [1, 2, 4])
def test_linear_layers_match_vidur(
    rows: dict[str, list[fv.MlpRow]], gpu_name: str, tp: int
) -> None:
    gpu = lookup_gpu(gpu_name)
    profile = builtin_profile(gpu)
    cost = InferenceCost(MODEL, gpu, tp, profile)
    points = [r for r in rows[gpu_name] if r.tp == tp and 1 <= r.num_tokens <= 4096]
    assert len(points) >= 250
    errors = []
    for r in points:
        linear_s = cost.step(decode_seqs=0, kv_tokens=0, prefill_tokens=r.num_tokens).linear_s
        assert linear_s == cost.linear_s(r.num_tokens)
        errors.append(abs(linear_s / (MODEL.layers * r.linear_layer_s) - 1.0))
    mape, worst = float(np.mean(errors)), max(errors)
    assert mape <= MAPE_LIMIT, f"{gpu_name} tp={tp}: MAPE {mape:.1%}"
    assert worst <= MAX_LIMIT, f"{gpu_name} tp={tp}: max error {worst:.1%}"


@pytest.mark.parametrize("gpu_name", ["H100", "A100"])
@pytest.mark.parametrize("tp", [1, 2, 4])
def test_estimate_agrees_with_step(gpu_name: str, tp: int) -> None:
    gpu = lookup_gpu(gpu_name)
    cost = InferenceCost(MODEL, gpu, tp, builtin_profile(gpu))
    for n in (1, 7, 64, 300, 1024, 4096):
        got = estimate(gpu, MODEL, tp, batch=0, context=0, prefill_tokens=n)
        assert got["linear_s"] == cost.linear_s(n)


def test_generalizes_to_held_out_tp() -> None:
    """Refit on TP 1 and 2 rows only; the TP 4 rows it never saw stay within the limits."""
    for fid in fv.generalization(DATA, fit_tps=(1, 2), eval_tp=4):
        assert fid.points >= 250
        assert fid.mape <= MAPE_LIMIT, fid
        assert fid.max_error <= MAX_LIMIT, fid


def test_shipped_profiles_are_the_fit_output() -> None:
    """The JSON constants are reproduced by fit_vidur (no hand-edited numbers)."""
    for name in fv.FITTED_GPUS:
        refit = fv.fit_profile(DATA, name)
        shipped = builtin_profile(lookup_gpu(name))
        for field in (*fv.GEMM_PARAM_NAMES, "elementwise_hbm_efficiency",
                      "norm_hbm_efficiency", "rotary_hbm_efficiency",
                      "elementwise_launch_s", "allreduce_latency_s", "allreduce_bus_efficiency"):
            assert getattr(refit, field) == pytest.approx(getattr(shipped, field), rel=1e-3), field
        assert refit.gemm_tiles == shipped.gemm_tiles


def test_numpy_twin_matches_runtime_gemm() -> None:
    for name in fv.FITTED_GPUS + fv.HOPPER_DERIVED:
        gpu = lookup_gpu(name)
        prof = builtin_profile(gpu)
        params = [getattr(prof, f) for f in fv.GEMM_PARAM_NAMES]
        ms, ns, ks = np.meshgrid([1, 3, 16, 100, 257, 1024, 4096], [512, 1376, 5504, 22016],
                                 [512, 1376, 4096, 8192])
        pts = fv.GemmPoints(ms.ravel().astype(float), ns.ravel().astype(float),
                            ks.ravel().astype(float), np.ones(ms.size))
        twin = fv.gemm_time_np(pts, gpu, params, prof.gemm_tiles, prof.gemm_splitk_min_k)
        model = GemmModel(gpu, prof)
        runtime = [model.time_s(int(m), int(n), int(k)) for m, n, k in
                   zip(pts.m, pts.n, pts.k, strict=True)]
        np.testing.assert_allclose(twin, runtime, rtol=1e-12)


def test_allreduce_fit_quality() -> None:
    prof = builtin_profile(lookup_gpu("H100"))
    assert prof.fit_error["allreduce_mape"] < 0.15
    assert 5e-6 < prof.allreduce_latency_s < 60e-6
    assert 0.5 < prof.allreduce_bus_efficiency <= 1.0


def test_docs_table_is_generated() -> None:
    """docs/cost-model.md carries the table fit_vidur prints for the shipped profiles."""
    profiles = {g: builtin_profile(lookup_gpu(g)) for g in fv.FITTED_GPUS}
    table = fv.fidelity_markdown(fv.fidelity_rows(DATA, profiles))
    assert table in DOCS.read_text(), "regenerate: python -m calibration.fit_vidur --docs ..."


def test_docs_constants_table_is_generated() -> None:
    profiles = {g: builtin_profile(lookup_gpu(g)) for g in fv.FITTED_GPUS}
    assert fv.constants_markdown(profiles) in DOCS.read_text()
