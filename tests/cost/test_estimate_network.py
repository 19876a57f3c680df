"""estimate(): validation and agreement with InferenceCost; transfer helpers; import rule."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlsim.config.hardware import lookup_gpu, lookup_model
from rlsim.cost import InferenceCost, builtin_profile, estimate, transfer_s
from rlsim.cost.network import ring_allreduce_s

H100 = lookup_gpu("H100")


def test_estimate_is_the_step_dict() -> None:
    model = lookup_model("qwen2.5-7b")
    got = estimate(H100, model, 2, batch=64, context=2000, prefill_tokens=512)
    cost = InferenceCost(model, H100, 2, builtin_profile(H100))
    assert got == cost.step(64, 64 * 2000, 512).as_dict()
    assert set(got) == {"linear_s", "attention_s", "other_s", "comm_s", "overhead_s", "total_s"}


@pytest.mark.parametrize(("model", "tp", "match"), [
    ("qwen2.5-7b", 3, "power of two"),
    ("qwen2.5-7b", 16, "attention heads"),  # spans 2 nodes (allowed), 28 heads do not split
    ("qwen2.5-7b", 0, "positive"),
    ("qwen2.5-0.5b", 4, "attention heads"),  # 14 heads
])
def test_estimate_rejects_bad_tp(model: str, tp: int, match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        estimate(H100, lookup_model(model), tp, batch=1, context=10)
    assert "tp" in str(err.value)
    assert "\n" not in str(err.value)


def test_estimate_accepts_replicated_kv_heads() -> None:
    out = estimate(H100, lookup_model("qwen2.5-3b"), 8, batch=8, context=100)  # 2 KV heads
    assert out["total_s"] > 0


@pytest.mark.parametrize("arg", ["batch", "context", "prefill_tokens"])
def test_estimate_rejects_negative_counts(arg: str) -> None:
    counts = {"batch": 1, "context": 1, "prefill_tokens": 0, arg: -1}
    with pytest.raises(ValueError, match=arg):
        estimate(H100, lookup_model("qwen2.5-7b"), 1, batch=counts["batch"],
                 context=counts["context"], prefill_tokens=counts["prefill_tokens"])


def test_transfer_s() -> None:
    assert transfer_s(1e9, 1e9) == 1.0
    assert transfer_s(0, 1e9, 0.5) == 0.5
    with pytest.raises(ValueError, match="bandwidth"):
        transfer_s(1.0, 0.0)
    assert ring_allreduce_s(1e6, 1, 1e9, 1e-5) == 0.0
    assert ring_allreduce_s(1e6, 4, 1e9, 1e-5) == pytest.approx(1e-5 + 1.5e-3)


def test_cost_package_imports_neither_torch_nor_simpy() -> None:
    code = ("import sys, rlsim.cost; "
            "bad = [m for m in ('torch', 'simpy') if m in sys.modules]; "
            "print(','.join(bad)); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
