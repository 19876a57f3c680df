"""GemmModel's tile choice and the training pricing's memos change no result."""

from __future__ import annotations

import math
import random

import pytest

from rlsim.config.hardware import lookup_gpu, lookup_model
from rlsim.cost import builtin_profile
from rlsim.cost.backends import FSDP, MEGATRON
from rlsim.cost.kernels import GemmModel
from rlsim.cost.training import TrainBatching, TrainCost

H800 = lookup_gpu("H800")
PROF = builtin_profile(H800)
QWEN7 = lookup_model("qwen2.5-7b")


def _reference_tiled(g: GemmModel, m: int, n: int, k: int, passes: float, bw: float,
                     pack_row: float) -> float:
    """The closed form tile by tile: each tile's compute time blended with the memory
    time, (t_c**p + t_mem**p) ** (1/p), the best tile kept."""
    t_mem = (passes * k * n + pack_row * n + m * k + m * n) / bw
    p = PROF.gemm_overlap_exponent
    best = math.inf
    for tm, tn, s_per_k in g._tiles:
        tiles = -(-m // tm) * -(-n // tn)
        split = max(1, min(H800.sm_count // tiles, k // PROF.gemm_splitk_min_k))
        t_c = -(-(tiles * split) // H800.sm_count) * s_per_k * (k / split)
        best = min(best, (t_c**p + t_mem**p) ** (1.0 / p))
    return best


def test_gemm_best_tile_is_the_blended_minimum():
    g = GemmModel(H800, PROF)
    rnd = random.Random(0)
    for _ in range(3000):
        m, n, k = rnd.randint(1, 200_000), rnd.randint(1, 160_000), rnd.randint(1, 30_000)
        got = g._tiled(m, n, k, PROF.gemm_weight_passes, g._bw, PROF.gemm_pack_row_elems)
        assert got == _reference_tiled(g, m, n, k, PROF.gemm_weight_passes, g._bw,
                                       PROF.gemm_pack_row_elems)


@pytest.mark.parametrize("backend, tp, batching", [
    (MEGATRON, 2, {"max_tokens": 8192}),
    (FSDP, 1, {"micro_batch_size": 4}),
])
def test_training_memos_change_nothing(backend, tp, batching):
    rnd = random.Random(1)
    lengths = [rnd.randint(100, 6000) for _ in range(256)]

    def fresh() -> TrainCost:
        return TrainCost(QWEN7, H800, 16, tp, 1, 1, PROF, backend=backend,
                         batching=TrainBatching(**batching))

    warm = fresh()
    tokens = sum(lengths)
    first = warm.forward_s(tokens, None, lengths)
    again = warm.forward_s(tokens, None, lengths)  # a memoized pass (ref, then old log-probs)
    step = warm.train_step(tokens, None, lengths)  # reuses the ranks' balance
    assert first == again == fresh().forward_s(tokens, None, lengths)
    assert step == fresh().train_step(tokens, None, lengths)
