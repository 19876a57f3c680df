"""The torch microbenchmarks: timing helper, every family on a tiny grid, sandbox round trip."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from calibration import timing  # noqa: E402
from calibration.benchmarks import (  # noqa: E402
    attention,
    collectives,
    common,
    elementwise,
    engine_start,
    gemm,
    layer,
    memcpy,
    model_dims,
    sandbox,
    transfer,
)
from calibration.measurements import Measurement, MeasurementSet  # noqa: E402
from calibration.run import BENCHES, measure, resolve_device, selected  # noqa: E402

TINY = model_dims.ModelDims(hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=96)
HEADS = {"heads", "kv_heads", "head_dim"}
DIMS = {"hidden", "heads", "kv_heads", "head_dim", "ffn"}

# bench -> (tiny grid, the params keys the fitting code relies on)
CONTRACT: dict[str, tuple[list[common.Point], set[str]]] = {
    "gemm": ([{"m": 1, "n": 32, "k": 48}, {"m": 16, "n": 32, "k": 48}], {"m", "n", "k", "dtype"}),
    "gemm_dtype": ([{"m": 4, "n": 32, "k": 48, "dtype": "bfloat16"}], {"m", "n", "k", "dtype"}),
    "elementwise": ([{"size_bytes": 8192, "op": op} for op in elementwise.OPS],
                    {"size_bytes", "op"}),
    "memcpy": ([{"size_bytes": 1 << 16}, {"size_bytes": 1 << 18}], {"size_bytes"}),
    "attention_decode": ([{"batch": 1, "context": 8}, {"batch": 3, "context": 32}],
                         {"batch", "context"} | HEADS),
    "attention_prefill": ([{"tokens": 4}, {"tokens": 24}], {"tokens"} | HEADS),
    "layer_decode": ([{"batch": 1, "context": 8}, {"batch": 2, "context": 16}],
                     {"batch", "context"} | DIMS),
    "layer_prefill": ([{"tokens": 4}, {"tokens": 12}], {"tokens"} | DIMS),
    "warm_reload": ([{"weights_bytes": 1 << 16}], {"weights_bytes"}),
    "sandbox_checkpoint": ([{"tree_bytes": 1 << 14, "files": 4}], {"tree_bytes", "files"}),
    "sandbox_restore": ([{"tree_bytes": 1 << 14, "files": 4}], {"tree_bytes", "files"}),
}
FAMILY = {"gemm": gemm, "gemm_dtype": gemm, "elementwise": elementwise, "memcpy": memcpy,
          "attention_decode": attention, "attention_prefill": attention,
          "layer_decode": layer, "layer_prefill": layer, "warm_reload": engine_start,
          "sandbox_checkpoint": sandbox, "sandbox_restore": sandbox}
COMPUTE = ("gemm", "attention_decode", "attention_prefill", "layer_decode", "layer_prefill")


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny model, tiny grids, tiny timing budgets."""
    monkeypatch.setattr(model_dims, "CPU_DIMS", TINY)
    monkeypatch.setattr(common, "QUICK", common.Budget(warmup=1, min_time_s=0.002, min_reps=3,
                                                       max_reps=10))
    monkeypatch.setattr(common, "GRID_OVERRIDE", {b: g for b, (g, _) in CONTRACT.items()})
    monkeypatch.setattr(sandbox, "REPS_QUICK", 2)
    monkeypatch.setattr(sandbox, "STATE_BYTES", 4096)
    monkeypatch.setattr(engine_start, "COLD_REPS_QUICK", 1)


# --- timing ---------------------------------------------------------------------------------

def test_sleep_of_2ms_times_as_2ms() -> None:
    median, p10, p90, reps = timing.time_call(lambda: time.sleep(0.002), "cpu", warmup=1,
                                              min_time_s=0.03)
    assert 0.0019 < median < 0.004  # sleep overshoots a little, never undershoots
    assert p10 <= median <= p90
    assert reps >= 3


def test_tiny_ops_are_batched_and_fixed_reps_honoured() -> None:
    median, _, _, reps = timing.time_call(lambda: None, "cpu", min_time_s=0.01)
    assert 0 < median < 1e-4
    assert reps > 100  # many calls per sample, so the timer's resolution does not matter
    _, _, _, reps = timing.time_call(lambda: time.sleep(0.001), "cpu", warmup=1, reps=4)
    assert reps == 4


def test_quantiles_interpolate_like_numpy() -> None:
    assert timing.summarize([float(x) for x in range(1, 11)]) == pytest.approx((5.5, 1.9, 9.1))
    assert timing.summarize([3.0]) == (3.0, 3.0, 3.0)


# --- every family on a tiny grid ------------------------------------------------------------

@pytest.mark.parametrize("bench", sorted(CONTRACT))
def test_family_returns_contracted_points(tiny: None, bench: str) -> None:
    grid, keys = CONTRACT[bench]
    calls: list[tuple[str, int, int]] = []
    mod = FAMILY[bench]
    if len(mod.BENCHES) == 1:
        points = mod.run("cpu", True, lambda b, d, n: calls.append((b, d, n)))
    else:
        points = mod.run("cpu", True, lambda b, d, n: calls.append((b, d, n)), benches=[bench])
    assert [p.bench for p in points] == [bench] * len(grid)
    for p in points:
        assert set(p.params) == keys
        assert 0 < p.p10_s <= p.median_s <= p.p90_s
        assert p.reps >= 1
    assert calls[-1] == (bench, len(grid), len(grid))
    if keys >= DIMS:
        assert {k: points[0].params[k] for k in DIMS} == TINY.params()


def test_gemm_time_grows_with_m(tiny: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(common.GRID_OVERRIDE, "gemm",
                        [{"m": m, "n": 512, "k": 512} for m in (64, 1024)])
    # One thread: a neighbour process on this 2-core box stalls every multi-threaded op by
    # scheduler ticks, which would hide the growth this test is about.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        small, large = gemm.run("cpu", True, benches=("gemm",))
    finally:
        torch.set_num_threads(threads)
    assert large.median_s > 3 * small.median_s  # 16x the flops; compute bound at this size


def test_cold_start_spawns_a_process_that_loads_the_weights(tiny: None,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.setitem(common.GRID_OVERRIDE, "cold_start", [{"weights_bytes": 1 << 20}])
    (point,) = engine_start.run("cpu", True, benches=["cold_start"])
    assert point.params == {"weights_bytes": 1 << 20}
    assert 0.05 < point.median_s < 60  # an interpreter start and `import torch` at least


def test_host_device_copies_only_on_cuda() -> None:
    assert transfer.run("cpu", True) == []


@pytest.mark.slow
def test_two_process_gloo_allreduce(tiny: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(common.GRID_OVERRIDE, "allreduce",
                        [{"size_bytes": 4096}, {"size_bytes": 1 << 20}])
    calls: list[tuple[str, int, int]] = []
    points = collectives.run("cpu", True, lambda b, d, n: calls.append((b, d, n)),
                             benches=["allreduce"])
    assert [p.params for p in points] == [
        {"size_bytes": 4096, "ranks": 2, "backend": "gloo"},
        {"size_bytes": 1 << 20, "ranks": 2, "backend": "gloo"}]
    assert all(p.median_s > 0 and p.reps >= 3 for p in points)
    assert calls[-1] == ("allreduce", 2, 2)


# --- the layer computes a real transformer layer -------------------------------------------

def test_grouped_decode_attention_matches_sdpa_gqa() -> None:
    q = torch.randn(3, 8, 1, 16)
    k, v = torch.randn(3, 2, 20, 16), torch.randn(3, 2, 20, 16)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    assert torch.allclose(attention.decode_attention(q, k, v), expected, atol=1e-5)


def test_layer_decode_step_continues_its_prefill() -> None:
    """Prefill of T+1 tokens == prefill of T tokens then one decode step (cache and output)."""
    torch.manual_seed(0)
    lay = layer.Layer(TINY, "cpu", torch.float32, max_positions=16)
    x = torch.randn(9, TINY.hidden)
    shape = (1, TINY.kv_heads, 9, TINY.head_dim)
    k_full, v_full = torch.zeros(shape), torch.zeros(shape)
    full = lay.prefill(x, k_full, v_full)
    k, v = torch.zeros(shape), torch.zeros(shape)
    lay.prefill(x[:8], k, v)
    last = lay.decode(x[8:], k, v, pos=8)
    assert torch.allclose(last[0], full[8], atol=1e-4)
    assert torch.allclose(k, k_full, atol=1e-5) and torch.allclose(v, v_full, atol=1e-5)


# --- grids and the run ----------------------------------------------------------------------

@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("quick", [True, False])
def test_compute_grids_leave_points_to_hold_back(device: str, quick: bool) -> None:
    grids = {
        "gemm": gemm.default_grid(device, quick),
        "attention_decode": attention.decode_grid(device, quick),
        "attention_prefill": attention.prefill_grid(device, quick),
        "layer_decode": layer.decode_grid(device, quick),
        "layer_prefill": layer.prefill_grid(device, quick),
    }
    assert set(grids) == set(COMPUTE)
    for bench, points in grids.items():
        assert len(points) >= 12, bench


def test_measure_collects_a_set(tiny: None) -> None:
    seen: set[str] = set()
    result = measure("cpu", quick=True, only=["gemm", "attention", "sandbox_restore"],
                     progress=lambda b, d, n: seen.add(b))
    assert {m.bench for m in result.measurements} == {
        "gemm", "gemm_dtype", "attention_decode", "attention_prefill", "sandbox_restore"}
    assert seen == {m.bench for m in result.measurements}
    info = result.device
    assert (info.kind, info.dtype, info.torch_version) == ("cpu", "float32", torch.__version__)
    assert info.cores == torch.get_num_threads() and info.memory_bytes > 1e8
    assert info.created.endswith("+00:00")
    again = MeasurementSet.model_validate_json(result.model_dump_json())
    assert again == result and isinstance(again.measurements[0], Measurement)


def test_device_and_selection_errors() -> None:
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA"):
            resolve_device("cuda")
        assert resolve_device("auto") == "cpu"
    with pytest.raises(ValueError, match="unknown benchmark"):
        selected(["gemm", "nonsense"])
    assert selected(["layer_prefill", "memcpy"]) == {"memcpy": ("memcpy",),
                                                     "layer": ("layer_prefill",)}
    assert len(set(BENCHES)) == len(BENCHES) == 23


# --- sandbox checkpoint/restore round trip --------------------------------------------------

def test_sandbox_restore_round_trips_tree_and_process_state(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.setattr(sandbox, "STATE_BYTES", 1 << 16)
    box = sandbox.Sandbox(tmp_path / "box", tree_bytes=100_003, files=70)
    try:
        tree = sandbox.read_tree(box.work)
        assert len(tree) == 70 and sum(map(len, tree.values())) == 100_003
        for _ in range(3):
            box.ask("step")
        saved_digest = box.digest
        box.checkpoint(tmp_path / "ckpt")
        # The sandbox moves on: its state and its files change.
        next_digest = box.ask("step")
        assert next_digest != saved_digest
        victim = sorted(box.work.rglob("*.bin"))[5]
        victim.unlink()
        (box.work / "d000" / "f00000.bin").write_bytes(b"changed")
        (box.work / "new.txt").write_text("not in the snapshot")
        box.restore(tmp_path / "ckpt")
        assert sandbox.read_tree(box.work) == tree
        assert box.digest == saved_digest  # the fresh process loaded the saved state
        assert box.ask("step") == next_digest  # and continues exactly as the old one did
    finally:
        box.stop()


# --- a busy neighbour is noticed and the point measured again ------------------------------

def test_other_load_sees_a_busy_neighbour() -> None:
    import subprocess
    import sys

    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.1)
        with timing.OtherLoad() as load:
            time.sleep(0.3)
    finally:
        spinner.kill()
        spinner.wait()
    if load.cores is None:
        pytest.skip("no /proc/stat here")
    assert load.cores > 0.5


def test_contended_points_are_retried_and_the_fastest_kept(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    class Busy:
        cores = 1.0

        def __enter__(self) -> Busy:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    medians = iter([3e-3, 1e-3, 2e-3, 4e-3])
    monkeypatch.setattr(common, "OtherLoad", Busy)
    monkeypatch.setattr(common, "time_call", lambda *a, **k: (next(medians), 0.0, 9.0, 5))
    monkeypatch.setattr(common, "RETRY_PAUSE_S", 0.0)
    common.allow_retries(5.0)
    point = common.timed_point("gemm", {"m": 1}, lambda: None, "cpu", quick=True)
    assert point.median_s == 1e-3 and next(medians, None) is None  # all 4 attempts made
    common.allow_retries(0.0)
    medians = iter([3e-3, 1e-3])
    point = common.timed_point("gemm", {"m": 1}, lambda: None, "cpu", quick=True)
    assert point.median_s == 3e-3  # no allowance left: the first attempt stands


def test_gemm_dtype_sweeps_the_other_dtypes() -> None:
    cpu = {p["dtype"] for p in gemm.dtype_grid("cpu", True)}
    cuda = {p["dtype"] for p in gemm.dtype_grid("cuda", False)}
    assert cpu == {"bfloat16"}  # the CPU serves in float32; no fp16 GEMM path there
    assert cuda == {"float32", "float16"}  # a GPU serves in bfloat16


def test_time_call_can_time_each_call_after_idle_time() -> None:
    # The trainer's forward (`ref`) runs once per step after the trainer idled; back-to-back
    # calls hide what that costs, so its benchmark times one call after each idle gap.
    calls: list[float] = []
    _, _, _, n = timing.time_call(lambda: calls.append(time.perf_counter()), "cpu",
                                  warmup=1, reps=3, idle_s=0.03)
    assert n == 3 and len(calls) == 4  # one warm-up call, then one call per sample
    assert all(b - a >= 0.03 for a, b in itertools.pairwise(calls))


def test_trainer_batches_are_long_tailed_at_the_grid_length() -> None:
    import statistics

    import torch

    from calibration.benchmarks import live_trainer
    from calibration.live.model import LMConfig

    cfg = LMConfig(vocab=48)
    batch = live_trainer._batch(2048, 24, cfg, torch.Generator().manual_seed(0))
    lens = [len(t.ids) for t in batch]
    assert sum(lens) >= 2048
    assert sum(n * n for n in lens) / sum(lens) == pytest.approx(24, rel=0.15)
    assert max(lens) > 1.8 * statistics.median(lens)  # a tail, as the job's batches have


def test_rlsim_packs_the_live_trainer_s_rows() -> None:
    """`train.pack_rows` prices the rows the live trainer computes: the same count, as wide."""
    import torch

    from calibration.benchmarks import live_trainer
    from calibration.live.grpo import pack
    from calibration.live.model import LMConfig
    from rlsim.cost.backends import packed_rows

    cfg = LMConfig(vocab=48)
    gen = torch.Generator().manual_seed(1)
    for tokens, seq in ((512, 16), (2048, 24), (1024, 64)):
        batch = live_trainer._batch(tokens, seq, cfg, gen)
        batches = pack(batch, max_tokens=1 << 30)  # one micro-batch: every row
        assert len(batches) == 1
        rows, width = batches[0].ids.shape
        assert packed_rows([len(t.ids) for t in batch]) == (rows, width)
