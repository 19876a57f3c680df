"""The veRL README must-show report (calibration/realruns/readmes.py): its arithmetic, and
one comparison run end to end at one length."""

from __future__ import annotations

import pytest

from calibration.realruns.readmes import (
    PAIRS,
    UPDATE_ACTOR,
    at_mean,
    measured_ratio,
    report_lines,
    run_records,
    simulated_ratio,
    verdict,
)
from calibration.realruns.records import CORPUS_DIR, load_records


@pytest.fixture(scope="module")
def records() -> dict:
    by_id = {r.id: r for r in load_records(CORPUS_DIR)}
    return {i: by_id[i] for p in PAIRS for i in (p.sync_id, p.other_id)} | {
        i: by_id[i] for i in UPDATE_ACTOR}


def test_measured_ratios_are_the_readmes_step_quotients(records: dict) -> None:
    # fully_async.md: 790.10 / 294.77, 365.28 / 189.26, 356.30 / 150.63; one-step-off
    # README: 749 / 520 and 699 / 566 (the 1.44x and 1.23x it states)
    got = [round(measured_ratio(records, p), 2) for p in PAIRS]
    assert got == [2.68, 1.93, 2.37, 1.44, 1.23]


def test_at_mean_sets_only_the_length(records: dict) -> None:
    rec = records[PAIRS[0].sync_id]
    moved = at_mean(rec, 1234)
    assert moved.response_len_mean == 1234.0 and rec.response_len_mean is None
    assert moved.timing_s == rec.timing_s and moved.config == rec.config


def test_verdict_uses_the_tolerance_both_ways() -> None:
    assert verdict(0.25, 0.25) == verdict(-0.25, 0.25) == "within"
    assert verdict(0.2501, 0.25) == verdict(-0.26, 0.25) == "MISSED"


def test_one_pair_runs_and_longer_responses_cost_more(records: dict) -> None:
    pair = PAIRS[3]  # one-step-off FSDP2: two small runs
    subset = {i: records[i] for i in (pair.sync_id, pair.other_id)}
    rows = run_records(subset, (1000, 3000), progress=False)
    for id_ in subset:
        assert rows[(id_, 3000)].sim_phase_s["train"] > rows[(id_, 1000)].sim_phase_s["train"]
    assert simulated_ratio(rows, pair, 1000) > 0
    with pytest.raises(KeyError):  # the report needs every record of every comparison
        report_lines(records, rows, (1000, 3000), 1000, "test")
