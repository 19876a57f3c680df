"""benchmarks/cache_scaling.py: cachegrind's totals read, a turn's counts over the marginal
steps, and the two-parameter time model solved exactly (no valgrind run here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "cache_scaling.py"


@pytest.fixture(scope="module")
def cs():  # type: ignore[no-untyped-def]
    return load_script(SCRIPT, "bench_cache_scaling")


def _cachegrind_file(path: Path, totals: list[int]) -> Path:
    path.write_text(
        "desc: LL cache:         4194304 B, 64 B, 16-way associative\n"
        "cmd: python x.py\n"
        "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw \n"
        "fl=x.c\nfn=f\n1 5 0 0 0 0 0 0 0 0\n"
        f"summary: {' '.join(map(str, totals))}\n")
    return path


def test_the_totals_are_read_by_event_name(cs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = _cachegrind_file(tmp_path / "a.out", [900, 1, 2, 300, 4, 5, 100, 7, 8])
    got = cs.summary(f)
    assert got["Ir"] == 900 and got["DLmr"] == 5 and got["DLmw"] == 8


def test_a_file_without_its_summary_is_refused(cs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "cut.out"
    f.write_text("events: Ir DLmr DLmw\nfl=x.c\n")
    with pytest.raises(ValueError, match="no summary"):
        cs.summary(f)


def test_a_turn_counts_the_marginal_steps_only(cs) -> None:  # type: ignore[no-untyped-def]
    # set-up (1,000 instructions, 40 misses) is in both runs and cancels out
    first = {"Ir": 1_000 + 10 * 25, "DLmr": 40 + 10 * 2, "DLmw": 10}
    last = {"Ir": 1_000 + 30 * 25, "DLmr": 40 + 30 * 2, "DLmw": 10 + 20}
    assert cs.per_turn(first, last, 20) == {"Ir": 25.0, "DLmr": 2.0, "DLmw": 1.0}
    with pytest.raises(ValueError, match="more turns"):
        cs.per_turn(first, last, 0)


def test_the_fit_recovers_the_times_it_was_made_from(cs) -> None:  # type: ignore[no-untyped-def]
    ns_i, ns_m = 0.15, 70.0
    small = {"Ir": 26_000.0, "DLmr": 7.0, "DLmw": 4.0}
    large = {"Ir": 25_000.0, "DLmr": 33.0, "DLmw": 9.0}

    def us(c: dict[str, float]) -> float:
        return (ns_i * c["Ir"] + ns_m * (c["DLmr"] + c["DLmw"])) / 1e3

    got_i, got_m = cs.fit((us(small), us(large)), (small, large))
    assert got_i == pytest.approx(ns_i, rel=1e-9) and got_m == pytest.approx(ns_m, rel=1e-9)
    # the growth it predicts at the fitted size is the measured one
    growth = cs.predict_growth_pct(got_i, got_m, (small, large))
    assert growth == pytest.approx(100 * (us(large) / us(small) - 1), rel=1e-9)
    # with as many misses at both sizes, only the instructions differ
    flat = {"Ir": 25_000.0, "DLmr": 7.0, "DLmw": 4.0}
    assert cs.predict_growth_pct(got_i, got_m, (small, flat)) < 0
    with pytest.raises(ValueError, match="proportional"):
        cs.fit((1.0, 2.0), (small, {k: 2 * v for k, v in small.items()}))


@pytest.mark.parametrize(("flag", "value"), [
    # a last level cachegrind cannot simulate
    ("--llc-mb", "4,x"), ("--llc-mb", "12"), ("--llc-mb", "0"), ("--llc-mb", "-4"),
    # steps that give no marginal
    ("--steps", "6,4"), ("--steps", "0,2"), ("--steps", "4"), ("--steps", "4,x"),
    ("--steps", "3,3")])
def test_a_bad_value_is_refused_in_one_line_naming_its_option(
        cs, flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as e:
        cs.main([flag, value])
    assert e.value.code == 2
    assert flag in capsys.readouterr().err


def test_no_runs_at_once_is_refused(cs, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as e:
        cs.main(["--jobs", "0"])
    assert e.value.code == 2
    assert "--jobs" in capsys.readouterr().err


def test_the_host_times_come_with_the_host_last_level(
        cs, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as e:
        cs.main(["--host-us", "4.5,6.6"])
    assert e.value.code == 2
    assert "--host-llc-mb" in capsys.readouterr().err


def test_both_jobs_are_counted_over_the_same_steps(cs) -> None:  # type: ignore[no-untyped-def]
    """A turn's misses grow as a run goes on, so the two jobs' marginals are taken over the
    same steps (the growth between them is what is compared)."""
    runs = cs.plan([4.0, 16.0], (3, 5))
    assert len(runs) == len(set(runs)) == 8
    for mb in (4.0, 16.0):
        for gpus in (128, 1024):
            assert sorted(n for m, g, n in runs if (m, g) == (mb, gpus)) == [3, 5]
