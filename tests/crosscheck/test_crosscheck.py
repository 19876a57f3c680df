"""The Vidur cross-check's parts that run without Vidur: the request-batch builder, the
comparison arithmetic, and rlsim's side (crosscheck/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crosscheck.batches import draw_batch, load_pairs, read_batch, write_batch
from crosscheck.compare import compare, percentile, rel_error, summary
from crosscheck.rlsim_side import engine_cost, kv_capacity_tokens, price_iterations, run_batch


def _trace(tmp_path: Path) -> Path:
    rows = [{"input": 100, "output": [10, 20, 4000]}, {"input": 50, "output": [5]}]
    (tmp_path / "packed_lengths_step_0.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "packed_lengths_step_1.jsonl").write_text(
        json.dumps({"input": 7, "output": [3]}) + "\n")
    return tmp_path


def test_pairs_drop_what_exceeds_the_context(tmp_path):
    pairs = load_pairs(_trace(tmp_path), 4096)
    assert pairs.pairs == ((100, 10), (100, 20), (50, 5), (7, 3))
    assert pairs.dropped == 1  # 100 + 4000 > 4096


def test_batch_is_deterministic_and_round_trips(tmp_path):
    pairs = load_pairs(_trace(tmp_path), 4096)
    a, b = draw_batch(pairs, 50, 19), draw_batch(pairs, 50, 19)
    assert a == b and len(a) == 50 and set(a) <= set(pairs.pairs)
    assert draw_batch(pairs, 50, 20) != a
    write_batch(tmp_path / "b.jsonl", a)
    assert read_batch(tmp_path / "b.jsonl") == a


@pytest.mark.parametrize("call", [
    lambda d: load_pairs(d, 1),
    lambda d: load_pairs(d / "missing", 4096),
    lambda d: draw_batch(load_pairs(d, 4096), 0, 1),
])
def test_bad_inputs_raise(tmp_path, call):
    _trace(tmp_path)
    (tmp_path / "missing").mkdir()
    with pytest.raises(ValueError):
        call(tmp_path)


def test_percentile_interpolates_between_closest_ranks():
    xs = [4.0, 1.0, 3.0, 2.0]  # sorted 1, 2, 3, 4
    assert percentile(xs, 0.0) == 1.0 and percentile(xs, 1.0) == 4.0
    assert percentile(xs, 0.5) == pytest.approx(2.5)
    assert percentile(xs, 0.9) == pytest.approx(3.7)  # pos 2.7
    assert percentile([5.0], 0.99) == 5.0
    with pytest.raises(ValueError):
        percentile([], 0.5)
    with pytest.raises(ValueError):
        percentile(xs, 1.5)


def test_summary_and_errors():
    s = summary([float(i) for i in range(1, 101)])
    assert s["makespan_s"] == 100.0
    assert s["p50_s"] == pytest.approx(50.5) and s["p99_s"] == pytest.approx(99.01)
    assert rel_error(110.0, 100.0) == pytest.approx(0.10)
    cmp = compare([1.0, 2.0, 4.0], [1.0, 2.0, 5.0])
    assert cmp["makespan_s"]["error"] == pytest.approx(-0.2)
    assert cmp["p50_s"]["error"] == 0.0
    with pytest.raises(ValueError, match="different batches"):
        compare([1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        summary([1.0, float("nan")])
    with pytest.raises(ValueError):
        rel_error(1.0, 0.0)


def test_rlsim_side_single_request_is_prefill_plus_decodes():
    """One request alone: one prefill iteration (which samples the first token), then
    output - 1 decode iterations, each priced by `step`."""
    cost = engine_cost()
    p, o = 100, 20
    out = run_batch([(p, o)], cap=128, budget=4096, kv_tokens=kv_capacity_tokens(cost),
                    cost=cost)
    expect = cost.step(0, 0, p, 0, [(p, 0)]).total_s
    for i in range(o - 1):
        expect += cost.step(1, p + 1 + i).total_s
    assert out["completions_s"][0] == pytest.approx(expect, rel=1e-9)
    assert out["preemptions"] == 0


def test_rlsim_side_is_deterministic_and_in_request_order():
    batch = [(150, 400), (60, 30), (300, 900)] * 20
    kv = kv_capacity_tokens()
    a = run_batch(batch, 16, 4096, kv)
    assert a == run_batch(batch, 16, 4096, kv)
    t = a["completions_s"]
    assert t[1] < t[0] < t[2]  # shorter outputs finish first within the first wave


def test_priced_iterations_follow_vidur_durations():
    cost = engine_cost()
    trace = [{"end_s": 0.5, "decodes": 0, "decode_kv_tokens": 0,
              "prefill_chunks": [[100, 0], [50, 0]]},
             {"end_s": 0.6, "decodes": 2, "decode_kv_tokens": 152, "prefill_chunks": []}]
    priced = price_iterations(trace, cost)
    assert [x["vidur_s"] for x in priced] == pytest.approx([0.5, 0.1])
    assert priced[0]["rlsim_s"] == pytest.approx(
        cost.step(0, 0, 150, 0, [(100, 0), (50, 0)]).total_s)
    # Vidur's kv count includes the new token of each decode: rlsim reads 152 - 2.
    assert priced[1]["rlsim_s"] == pytest.approx(cost.step(2, 150).total_s)
