"""The RL-shaped microbenchmarks (calibration/benchmarks/rl_shapes.py) on the CPU at small
shapes: every benchmark yields its points, dynamic batching removes the padding that fixed
micro-batches pay, and the packing and lengths are what the docstring says."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from calibration.benchmarks import rl_shapes  # noqa: E402
from calibration.benchmarks.rl_shapes import TINY, lengths, pack, run  # noqa: E402


def test_every_bench_measures_on_the_cpu_and_skips_graphs() -> None:
    points = run("cpu", quick=True)
    by = {b: [p for p in points if p.bench == b] for b in rl_shapes.BENCHES}
    assert [len(by[b]) for b in rl_shapes.BENCHES] == [3, 4, 2]
    assert all(p.params["graphs"] == 0 for p in by["decode_step"])  # CUDA graphs need CUDA
    assert all(p.median_s > 0 and p.params["vocab"] == TINY.vocab for p in points)
    dynamic, fixed = by["logprob_pass"]
    assert dynamic.params["padded_tokens"] == dynamic.params["real_tokens"]
    assert fixed.params["padded_tokens"] > fixed.params["real_tokens"]


def test_dynamic_batching_packs_greedily_under_its_cap() -> None:
    assert pack([3, 4, 2, 9, 1], "dynamic", 8, 0) == [[3, 4], [2], [9], [1]]
    assert pack([3, 4, 2, 9, 1], "fixed", 0, 2) == [[3, 4], [2, 9], [1]]


def test_lengths_are_long_tailed_and_add_up() -> None:
    lens = lengths(4096)
    assert 4096 <= sum(lens) < 4096 + max(lens)
    assert max(lens) > 4 * sorted(lens)[len(lens) // 2]  # log-std 1: a long tail
    assert lengths(4096) == lens  # seeded


def test_host_enqueue_times_every_pass_on_the_cpu() -> None:
    from calibration.benchmarks import host_enqueue

    out = host_enqueue.run("cpu", reps=1)
    assert set(out) == {f"{p} L{n}{s}" for n in (4, 8) for p, s in
                        (("train", " rc0"), ("train", " rc1"), ("forward", ""),
                         ("decode", " b1"), ("decode", " b64"))}
    assert all(low > 0 for _, low in out.values())
