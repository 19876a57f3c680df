"""The host-overhead benchmark (calibration/benchmarks/host_overhead.py): it runs on a tiny
grid in seconds, counts the ops the backend constants use, and its fit is exact on exact
lines."""

from __future__ import annotations

import pytest

from calibration.measurements import Measurement

torch = pytest.importorskip("torch")

from calibration.benchmarks import common, host_overhead  # noqa: E402
from rlsim.cost.backends import HF_LLAMA_HOST_OPS  # noqa: E402


def _point(kind: str, layers: int, per_layer_s: float, head_s: float,
           ops: tuple[int, int, int]) -> Measurement:
    timed, aten, kernels = ops
    params = {"pass": kind, "layers": layers, "hidden": 32, "tokens": 4,
              "timed_ops": timed * layers + 5, "aten_ops": aten * layers + 7,
              "kernels": kernels * layers + 3}
    t = head_s + per_layer_s * layers
    return Measurement(bench="host_overhead", params=params, median_s=t, p10_s=t, p90_s=t,
                       reps=3)


def test_fit_recovers_lines_and_backward() -> None:
    pts = []
    for n in (1, 2, 4, 8):
        pts.append(_point("forward_grad", n, 200e-6, 40e-6, (78, 82, 49)))
        pts.append(_point("train", n, 550e-6, 300e-6, (222, 230, 135)))
    # One point a neighbour stretched 3x: Theil-Sen keeps the line.
    pts.append(_point("train", 16, 3 * 550e-6, 300e-6, (222, 230, 135)))
    fit = host_overhead.fit_points(pts)
    assert fit["forward_grad"].layer_s == pytest.approx(200e-6)
    assert fit["forward_grad"].op_s == pytest.approx(200e-6 / 78)
    assert fit["train"].layer_ops == pytest.approx(230)
    assert fit["backward"].layer_kernels == pytest.approx(135 - 49)
    assert fit["backward"].layer_s == pytest.approx(350e-6)
    with pytest.raises(ValueError, match="two or more layer counts"):
        host_overhead.fit_points([_point("forward", 2, 1e-4, 0.0, (1, 1, 1))])


def test_bench_on_a_tiny_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    grid = [{"pass": p, "layers": n} for p in host_overhead.PASSES for n in (1, 2)]
    monkeypatch.setitem(common.GRID_OVERRIDE, "host_overhead", grid)
    monkeypatch.setattr(common, "QUICK", common.Budget(warmup=1, min_time_s=0.01,
                                                       min_reps=2, max_reps=5))
    common.allow_retries(0.0)
    points = host_overhead.run("cpu", quick=True)
    assert [(m.params["pass"], m.params["layers"]) for m in points] == [
        (g["pass"], g["layers"]) for g in grid]
    assert all(m.median_s > 0 for m in points)
    fit = host_overhead.fit_points(points)
    # The counts are exact and machine-independent: they are what the backends use.
    h = HF_LLAMA_HOST_OPS
    assert fit["forward"].layer_ops == h.forward_ops
    assert fit["forward"].layer_kernels == h.forward_kernels
    assert fit["forward_grad"].layer_ops == h.grad_forward_ops
    assert fit["backward"].layer_ops == h.backward_ops
    assert fit["backward"].layer_kernels == h.backward_kernels
    assert fit["forward"].head_ops == h.head_forward_ops
    assert fit["train"].head_ops == h.head_forward_ops + h.head_backward_ops
    assert fit["train"].head_kernels == h.head_forward_kernels + h.head_backward_kernels
    assert fit["train"].layer_s > 0


def test_bad_pass() -> None:
    model = host_overhead.TinyLM(1)
    with pytest.raises(ValueError, match="unknown pass 'sideways'"):
        host_overhead.make_pass(model, "sideways", "cpu")
    with pytest.raises(ValueError, match="tokens must be >= 1"):
        host_overhead.make_pass(model, "forward", "cpu", tokens=0)
