"""calibration/eager_traffic.py: the count is exact on a hand-checkable op, linear in the
tokens, and reproduces the constants rlsim/cost/backends.py holds."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from calibration import eager_traffic  # noqa: E402
from rlsim.cost.backends import HF_LLAMA_EAGER_TRAFFIC as T  # noqa: E402


def test_counts_bytes_of_memory_bound_ops_only() -> None:
    x = torch.ones(8, 16, dtype=torch.bfloat16)
    w = torch.ones(16, 4, dtype=torch.bfloat16)
    counter = eager_traffic._ByteCounter()
    with counter:
        y = torch.nn.functional.silu(x)  # reads 256 B, writes 256 B
        _ = x @ w  # a GEMM: not counted
    assert y.shape == x.shape
    assert (counter.bytes, counter.kernels) == (512, 1)


def test_layer_bytes_are_linear_in_tokens() -> None:
    args = (64, 4, 2, 128, 256, "forward_grad")
    one = [eager_traffic.pass_bytes(n, *args, tokens=32)[0] for n in (1, 2)]
    two = [eager_traffic.pass_bytes(n, *args, tokens=64)[0] for n in (1, 2)]
    assert (two[1] - two[0]) == pytest.approx(2 * (one[1] - one[0]), rel=0.02)


def test_fit_reproduces_the_backend_constants() -> None:
    fit = eager_traffic.fit()
    fwd, bwd = fit["forward_grad"], fit["backward"]
    assert fwd["layer_residual"] < 0.01 and bwd["layer_residual"] < 0.01
    for got, want in ((fwd["hidden"], T.hidden), (fwd["kv_dim"], T.kv_dim),
                      (fwd["ffn"], T.ffn), (fwd["head_vocab"], T.head_vocab),
                      (fwd["head_hidden"], T.head_hidden), (bwd["hidden"], T.bwd_hidden),
                      (bwd["kv_dim"], T.bwd_kv_dim), (bwd["ffn"], T.bwd_ffn),
                      (bwd["head_vocab"], T.bwd_head_vocab),
                      (bwd["head_hidden"], T.bwd_head_hidden)):
        assert got == pytest.approx(want, rel=0.01, abs=0.1)
    assert (fwd["kernels_per_layer"], bwd["kernels_per_layer"]) == (T.kernels, T.bwd_kernels)
