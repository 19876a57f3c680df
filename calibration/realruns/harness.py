"""Runs the corpus: every record translated, the ones rlsim can express simulated.

Owns the loop shared by `make real-runs` (the markdown report) and `rlsim validate
--real-runs` (the table or JSON on stdout): load every record of validation/real_runs/,
translate it, simulate it with rlsim's own constants (no fitting) and compare per phase.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from calibration.realruns.records import CORPUS_DIR, ROOT, RunRecord, load_records
from calibration.realruns.split import check_split, load_split
from calibration.realruns.table import Row, phase_pairs, with_remainder
from calibration.realruns.translate import Translation, translate


def simulate_row(t: Translation) -> Row:
    """Run one translated record (or carry its reason) into a table row."""
    from rlsim.api import simulate
    from rlsim.config.scenario import Scenario

    rec: RunRecord = t.record
    row = Row(id=rec.id, framework=rec.framework, model=rec.model or "?",
              gpus=f"{rec.gpus_total or '?'} x {rec.gpu or '?'}", mode=t.policy,
              measured_step_s=rec.timing_s.get("step"), reason=t.reason, lengths=t.lengths,
              source_url=rec.source_url)
    if t.scenario is None:
        return row
    try:
        scenario = Scenario.model_validate(t.scenario)
        row.moe = getattr(scenario.model_spec, "moe", None) is not None
        result = simulate(scenario, ROOT)
    except Exception as err:  # rlsim refusing a real run is a finding, reported per row
        row.reason = f"rlsim refuses it: {type(err).__name__}: {err}".replace("\n", " ")[:300]
        return row
    summary = result.summary
    row.simulated_step_s = summary["step_time_s"]["mean"]
    train = t.scenario["train"]
    critic = bool(train.get("critic", False))
    computed = {"old_log_prob": train["old_logprob"], "ref": train["ref_logprob"],
                "values": critic, "update_critic": critic}
    row.sim_phase_s = dict(summary["phase_time_s"])
    phase_time = dict(summary["phase_time_s"])
    if t.refit_one_way:
        # Only the switch to rollout counts with the record's update_weights: its share of
        # the switch spans' time (both directions run once a step).
        spans = [sp for sp in result.recorder.spans if sp.name == "switch"]
        total = sum(sp.t1 - sp.t0 for sp in spans)
        out = sum(sp.t1 - sp.t0 for sp in spans if sp.attrs.get("to") == "rollout")
        phase_time["switch"] = phase_time.get("switch", 0.0) * (out / total if total else 0.0)
    row.phases = with_remainder(
        phase_pairs(rec.timing_s, phase_time, computed,
                    t.scenario["policy"]["name"], t.gen_with_sync),
        rec.timing_s["step"], row.simulated_step_s)
    return row


def run_corpus(corpus: Path = CORPUS_DIR, progress: bool = True
               ) -> tuple[list[Translation], list[Row]]:
    """Every record of the corpus translated and, where it can be, simulated; rows in
    corpus order. `progress`: one line per simulated record on stderr."""
    records = load_records(corpus)
    split = load_split()
    if corpus == CORPUS_DIR:
        check_split(records, split)  # every record of the corpus has its side
    translations = [translate(r) for r in records]
    rows = []
    for t in translations:
        w0 = time.perf_counter()
        row = simulate_row(t)
        row.side = split.get(t.record.id, "")
        rows.append(row)
        if progress and t.scenario is not None:
            print(f"{t.record.id}: {time.perf_counter() - w0:.1f} s", file=sys.stderr)
    return translations, rows
