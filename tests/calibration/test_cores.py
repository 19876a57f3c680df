"""Core placement of the live job's roles (`calibration.live.cores`), torch-free."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from calibration.live.cores import can_pin, pinned, placement


def test_placement_gives_trainer_and_engine_a_core_each() -> None:
    two = placement({0, 1})
    assert two is not None
    assert two.trainer == {0} and two.rollout == {1}
    # No core to spare: the helpers take only the time the two leave idle.
    assert two.helpers == {0, 1} and two.helpers_idle
    many = placement({3, 5, 6, 7})
    assert many is not None
    assert many.trainer == {3} and many.rollout == {5} and many.helpers == {6, 7}
    assert not many.helpers_idle
    assert placement({2}) is None  # one core: every role shares it anyway
    assert "rollout engine on core 1" in two.describe()
    assert "SCHED_IDLE" in two.describe()


@pytest.mark.skipif(not can_pin() or len(os.sched_getaffinity(0)) < 2,
                    reason="needs sched_setaffinity and two cores")
def test_a_process_started_while_pinned_stays_there_and_the_caller_is_restored() -> None:
    before = os.sched_getaffinity(0)
    core = max(before)
    with pinned(frozenset({core})):
        assert os.sched_getaffinity(0) == {core}
        out = subprocess.run([sys.executable, "-c",
                              "import os; print(sorted(os.sched_getaffinity(0)))"],
                             capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"[{core}]"
    assert os.sched_getaffinity(0) == before
    with pytest.raises(RuntimeError), pinned(frozenset({core})):
        raise RuntimeError("restored on the way out too")
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(not can_pin() or len(os.sched_getaffinity(0)) < 2,
                    reason="needs sched_setaffinity and two cores")
def test_a_pinned_measurement_counts_only_its_own_core(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pinned calibration points are retried when another process shares their core; a
    # neighbour busy on another core does not slow them and must not cost retries.
    pytest.importorskip("torch")
    from calibration import timing

    b = sorted(os.sched_getaffinity(0))[1]
    whole = timing._busy_s()
    per_core = [timing._busy_s(frozenset({c})) for c in range(os.cpu_count() or 1)]
    if whole is None or None in per_core:
        pytest.skip("no /proc/stat here")
    assert sum(c for c in per_core if c is not None) == pytest.approx(whole, rel=0.01)
    asked: list[frozenset[int] | None] = []
    real = timing._busy_s

    def busy_s(cpus: frozenset[int] | None = None) -> float | None:
        asked.append(cpus)
        return real(cpus)

    monkeypatch.setattr(timing, "_busy_s", busy_s)
    with pinned(frozenset({b})), timing.OtherLoad():
        pass
    with timing.OtherLoad():
        pass
    assert asked == [frozenset({b})] * 2 + [None] * 2
