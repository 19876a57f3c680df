"""read_parquet is the inverse of write_parquet."""

from __future__ import annotations

from rlsim.trace import Recorder
from rlsim.trace.sinks import read_parquet, write_parquet


def test_round_trip(tmp_path):
    rec = Recorder("request")
    rec.span("controller", "train", 0.0, 2.5, step=0, staleness_hist={"0": 3, "1": 1})
    rec.span("rollout.engine0.requests", "finished", 0.1, 0.2, rid=7)
    rec.span("link.x", "weights", 1.0, 1.0)
    rec.instant("controller", "responses", 0.2, step=0, response_tokens=[1, 2],
                latency_s=[0.5, 0.25])
    rec.instant("cluster", "entity", 0.0, track="reward", kind="reward", pool=None)
    rec.counter("rollout.engine0", "kv_tokens", 0.3, 1234.0)
    write_parquet(rec, tmp_path / "r.parquet")
    back = read_parquet(tmp_path / "r.parquet")
    assert back.spans == rec.spans
    assert back.instants == rec.instants
    assert back.counters == rec.counters
    assert back.detail == "request"
    empty = Recorder()
    write_parquet(empty, tmp_path / "e.parquet")
    assert read_parquet(tmp_path / "e.parquet").records() == []
