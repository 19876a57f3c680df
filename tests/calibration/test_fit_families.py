"""calibration.fitting: each benchmark family's stage recovers known constants on its own.

Every stage runs on a `FitContext` whose reference rates are the synthetic device's
(`TRUE_DEVICE`), with noise-free points from `tests.calibration.synthetic` and, where a stage
prices its points with constants fitted before it, those set to the truth. The whole fit
(`fit_profile`, stages in `calibration.fit.STAGES` order) is tested in test_fit.py and
test_fit_whole.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from calibration.fit import STAGES
from calibration.fitting import (
    attention,
    collectives,
    elementwise,
    engine_start,
    gemm,
    joint,
    layer,
    live_engine,
    live_trainer,
    memcpy,
    sandbox,
    transfer,
)
from calibration.fitting.context import DeviceFacts, FitContext, catalogue_gpu
from calibration.fitting.holdout import split
from calibration.fitting.normalize import normalized
from calibration.fitting.predict import ELEMENTWISE_CONSTANT, ELEMENTWISE_LAUNCH
from calibration.fitting.report import FAMILY_PREDICTIONS, error_report
from calibration.measurements import DeviceInfo, Measurement
from rlsim.cost.profile import Profile
from tests.calibration.synthetic import (
    MEMCPY_CACHE_BYTES,
    MEMCPY_CACHE_SPEEDUP,
    MEMCPY_LAT,
    TRUE_DEVICE,
    TRUE_PROFILE,
    synthetic_set,
)

# Profile fields that are not fitted constants.
NOT_CONSTANTS = {"gpu", "provenance", "fit_error", "held_back_error", "meta", "device",
                 "measurements", "dtype_bytes"}
TRUTH = {k: v for k, v in TRUE_PROFILE.model_dump().items() if k not in NOT_CONSTANTS}
CUDA = DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3", cores=132, memory_bytes=80e9,
                  torch_version="2.13.0", host="gpu1", dtype="bfloat16",
                  created="2025-01-01T00:00:00Z")
H100 = catalogue_gpu(CUDA.name)
assert H100 is not None


def context(benches: Iterable[str], fitting: Iterable[str] = (), *,
            device: DeviceInfo | None = None, whole: bool = False) -> FitContext:
    """A context over the noise-free synthetic points of `benches` (none held back), the
    references at the true device's rates, every constant but `fitting` at the truth."""
    base = synthetic_set(noise=0.0, whole=whole)
    keep = set(benches)
    ms = base.model_copy(update={
        "measurements": [m for m in base.measurements if m.bench in keep],
        **({"device": device} if device is not None else {})})
    ctx = FitContext(ms=ms, split=split(ms, 0.0, 0), facts=DeviceFacts.of(ms),
                     ref_flops=TRUE_DEVICE.bf16_tflops * 1e12,
                     ref_bw=TRUE_DEVICE.hbm_bandwidth, copy_law=None)
    skip = set(fitting)
    ctx.consts.update({k: v for k, v in TRUTH.items() if k not in skip})
    return ctx


def _point(bench: str, median_s: float, **params: Any) -> Measurement:
    return Measurement(bench=bench, params=params, median_s=median_s, p10_s=median_s,
                       p90_s=median_s, reps=3)


ELEMENTWISE_NAMES = (*ELEMENTWISE_CONSTANT.values(), *ELEMENTWISE_LAUNCH.values())


@pytest.mark.parametrize(("family", "names"), [
    (gemm, (*gemm.GEMM_FIT_NAMES, "gemm_gemv_max_rows")),
    (attention, attention.ATTENTION_FIT_NAMES),
    (elementwise, ELEMENTWISE_NAMES),
    (layer, ("layer_overhead_s",)),
], ids=lambda v: getattr(v, "__name__", "").rsplit(".", 1)[-1] or None)
def test_compute_family_recovers_its_constants(family: Any, names: tuple[str, ...]) -> None:
    ctx = context(family.BENCHES, names)
    family.fit(ctx)
    assert not ctx.notes
    for name in names:
        # gemm_pack_row_elems is 0 in truth; a hundredth of an element per row is nothing.
        assert ctx.consts[name] == pytest.approx(TRUTH[name], rel=1e-4, abs=0.05
                                                 if name == "gemm_pack_row_elems" else 0.0)


def test_cpu_gemm_and_attention_set_the_cpu_kernel_structure() -> None:
    ctx = context(("gemm",), gemm.GEMM_FIT_NAMES)
    ctx.consts.clear()
    gemm.fit(ctx)
    attention.fit(ctx)
    assert ctx.consts["gemm_tiles"] == gemm.CPU_GEMM_TILES
    assert ctx.consts["gemm_splitk_min_k"] == gemm.CPU_SPLITK_MIN_K
    assert ctx.consts["attention_q_block_tiers"] == attention.CPU_ATTENTION_Q_BLOCK_TIERS
    assert ctx.notes == ["too few attention points: attention constants are defaults"]


def test_joint_refit_keeps_the_truth_and_needs_layer_points() -> None:
    ctx = context(joint.BENCHES)
    joint.fit(ctx)
    for name in (*gemm.GEMM_FIT_NAMES, *attention.ATTENTION_FIT_NAMES, "layer_overhead_s"):
        assert ctx.consts[name] == pytest.approx(TRUTH[name], rel=1e-6, abs=1e-9), name
    alone = context(("gemm",))
    alone.consts["hbm_efficiency"] = 0.5
    joint.fit(alone)  # no layer grid: nothing to separate the cache from the stream
    assert alone.consts["hbm_efficiency"] == 0.5


def test_memcpy_reference_is_the_uncached_copy_bandwidth() -> None:
    ms = synthetic_set(noise=0.0)
    facts = DeviceFacts.of(ms)
    notes: list[str] = []
    bw, law = memcpy.reference_bandwidth(ms.of("memcpy"), facts, notes)
    assert bw == pytest.approx(TRUE_DEVICE.hbm_bandwidth, rel=1e-3)
    assert law is not None and not notes
    assert law.latency_s == pytest.approx(MEMCPY_LAT, rel=1e-2)
    assert law.cache_bytes == pytest.approx(MEMCPY_CACHE_BYTES, rel=1e-2)
    assert law.cache_speedup == pytest.approx(MEMCPY_CACHE_SPEEDUP, rel=1e-2)
    # Without points: the catalogue GPU's bandwidth on CUDA, else 1e10 B/s, and a note.
    h100 = DeviceFacts.of(ms.model_copy(update={"device": CUDA}))
    assert memcpy.reference_bandwidth([], h100, notes) == (H100.hbm_bandwidth, None)
    assert memcpy.reference_bandwidth([], facts, notes) == (1e10, None)
    assert len(notes) == 2 and notes[0].startswith("no memcpy points")


def test_gemm_reference_is_the_best_measured_rate() -> None:
    pts = [_point("gemm", 2.0, m=10, n=10, k=10), _point("gemm", 1.0, m=10, n=10, k=10)]
    cpu = DeviceFacts(dtype_bytes=4, is_cuda=False, catalogue=None)
    assert gemm.reference_flops(pts, cpu) == 2000.0
    assert gemm.reference_flops([], cpu) == 1e11
    assert gemm.reference_flops([], DeviceFacts(2, True, None)) == 3e14
    assert gemm.reference_flops([], DeviceFacts(2, True, H100)) == \
        H100.bf16_tflops * 1e12


def test_collectives_recover_the_ring_latency_and_link() -> None:
    ctx = context(collectives.BENCHES, ("allreduce_latency_s",))
    collectives.fit(ctx)
    assert ctx.consts["allreduce_latency_s"] == pytest.approx(TRUTH["allreduce_latency_s"],
                                                              rel=1e-4)
    assert ctx.link_one_way == pytest.approx(TRUE_DEVICE.nvlink_bandwidth / 2, rel=1e-4)
    assert ctx.gpus_per_node == 2
    empty = context(())
    collectives.fit(empty)
    assert empty.link_one_way == empty.ref_bw / 2
    assert empty.notes[0].startswith("no all-reduce points")


def test_transfer_fits_pinned_copies_or_a_cpus_warm_reloads() -> None:
    ctx = context(("warm_reload",))  # CPU: the warm reload is a host memory copy
    transfer.fit(ctx)
    assert ctx.pcie == pytest.approx(TRUE_DEVICE.pcie_bandwidth, rel=1e-6)
    cuda = context((), device=CUDA)
    cuda.ms = cuda.ms.model_copy(update={"measurements": [
        _point("h2d", 1e-5 + s / 50e9, size_bytes=s, pinned=True)
        for s in (1 << 20, 1 << 24, 1 << 28)]})
    transfer.fit(cuda)
    assert cuda.pcie == pytest.approx(50e9, rel=1e-3)
    assert cuda.consts["pcie_efficiency"] == 1.0
    none = context(("warm_reload",), device=CUDA)  # CUDA without h2d: the link is unknown
    transfer.fit(none)
    assert none.pcie == none.ref_bw / 2


def test_engine_start_recovers_cold_start_and_warm_base() -> None:
    names = ("engine_cold_start_s", "checkpoint_load_bandwidth_bytes_per_s",
             "engine_warm_start_base_s")
    ctx = context(engine_start.BENCHES, names)
    ctx.pcie = TRUE_DEVICE.pcie_bandwidth  # what transfer found
    engine_start.fit(ctx)
    for name in names:
        assert ctx.consts[name] == pytest.approx(TRUTH[name], rel=1e-6), name


def test_sandbox_recovers_base_bandwidth_and_per_file_cost() -> None:
    names = [f"{kind}_{c}" for kind in sandbox.BENCHES
             for c in ("base_s", "bandwidth_bytes_per_s", "per_file_s")]
    ctx = context(sandbox.BENCHES, names)
    sandbox.fit(ctx)
    for name in names:
        assert ctx.consts[name] == pytest.approx(TRUTH[name], rel=1e-4), name
    few = context(())
    few.ms = few.ms.model_copy(update={"measurements": [
        _point("sandbox_restore", 0.1, tree_bytes=1e6, files=3)]})
    sandbox.fit(few)
    assert few.notes == ["fewer than 3 sandbox_restore points: its constants are defaults"]


def test_live_engine_stage_recovers_the_overheads() -> None:
    names = ("decode_overhead_s", "decode_overhead_per_seq_s", "prefill_overhead_s")
    ctx = context(live_engine.BENCHES, names, whole=True)
    live_engine.fit(ctx)
    for name in names:
        assert ctx.consts[name] == pytest.approx(TRUTH[name], rel=1e-3), name
    one = context(live_engine.BENCHES, names, whole=True)
    one.split = {"engine_decode": split(one.ms, 0.0, 0)["engine_decode"]}
    one.split["engine_decode"].train[1:] = []
    live_engine.fit(one)
    assert one.notes == ["fewer than 2 engine points: engine overheads are defaults"]


def test_live_trainer_stage_recovers_mfus_and_overheads() -> None:
    names = [n for pair in live_trainer.TRAIN_FIT_NAMES.values() for n in pair]
    ctx = context(live_trainer.BENCHES, names, whole=True)
    live_trainer.fit(ctx)
    for name in names:
        assert ctx.consts[name] == pytest.approx(TRUTH[name], rel=1e-3), name


def test_normalization_keeps_every_rate() -> None:
    """Efficiencies above 1 lift the device reference; every product stays the same."""
    ctx = context(())
    ctx.consts = {"hbm_efficiency": 2.0, "norm_hbm_efficiency": 0.5,
                  "gemm_peak_efficiency": 4.0, "forward_mfu": 1.0}
    bw, flops = ctx.ref_bw, ctx.ref_flops
    prof, device = normalized(ctx)
    assert device.hbm_bandwidth == 2.0 * bw and device.bf16_tflops * 1e12 == 4.0 * flops
    assert (prof.hbm_efficiency, prof.norm_hbm_efficiency) == (1.0, 0.25)
    assert (prof.gemm_peak_efficiency, prof.forward_mfu) == (1.0, 0.25)
    # train_mfu was not measured: its default, as a fraction of the old reference peak.
    assert prof.train_mfu == Profile.model_fields["train_mfu"].default / 4.0
    assert ctx.scaled_defaults == {"train_mfu"} and not ctx.fitted("train_mfu")


def test_report_prices_each_family_by_its_own_formula() -> None:
    ctx = context(("memcpy", "cold_start", "sandbox_checkpoint", "allgather"))
    prof = TRUE_PROFILE.model_copy(update={"device": TRUE_DEVICE})
    rows = error_report(prof, TRUE_DEVICE, ctx.split, ctx)
    # The truth prices its own points exactly; memcpy has no fitted copy law here.
    assert set(rows) == {"cold_start", "sandbox_checkpoint", "allgather"}
    for row in rows.values():
        assert row["train_mape"] < 1e-9 and "held_back_mape" not in row
    assert {"h2d", "d2h", "broadcast", "warm_reload", "sandbox_restore"} <= set(
        FAMILY_PREDICTIONS)


def test_stages_run_each_family_after_what_it_reads() -> None:
    order = [name for name, _ in STAGES]
    families = {collectives, transfer, gemm, attention, elementwise, layer, joint,
                live_engine, live_trainer, engine_start, sandbox}
    assert {stage.__module__ for _, stage in STAGES} == {f.__name__ for f in families}

    def first(name: str) -> int:
        return order.index(name)

    last_joint = first("joint")
    assert first("gemm") < first("attention") < first("elementwise") < first("layer") \
        < last_joint
    assert order[last_joint + 1:last_joint + 3] == ["elementwise", "layer"]
    assert last_joint < first("live_engine") and last_joint < first("live_trainer")
    assert first("transfer") < first("engine_start")
