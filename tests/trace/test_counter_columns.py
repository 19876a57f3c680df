"""The Recorder's counters stored as columns read back exactly as recorded (issue 24): the
same records, of the same types, in the same order, and the same records.parquet bytes as a
row-by-row writer."""

from __future__ import annotations

import gc
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from rlsim.config.contracts import parquet_metadata
from rlsim.trace import Counter, Recorder, columns, records
from rlsim.trace.sinks import read_parquet, write_parquet

MIXED = [  # (track, name, t, value): every kind of time and value the columns tell apart
    ("rollout.engine0", "kv_tokens", 0, 0),  # int time at the start of a run
    ("rollout.engine0", "kv_tokens", 1.5, 7),
    ("fleet", "usd_per_hour", 2.0, 0.25),
    ("fleet", "usd_per_hour", 2.5, -0.0),
    ("fleet", "flag", 3.0, True),  # a bool stays a bool
    ("fleet", "np", 4.0, np.float64(1.5)),  # a numpy number stays one
    ("fleet", "big", 5.0, 2 ** 60),  # an int a double cannot hold exactly
    ("fleet", "nan", 6.0, float("nan")),
    ("rollout.engine0", "kv_tokens", 7, 2.0),
]


def _recorded(rows: list[tuple]) -> Recorder:
    rec = Recorder()
    for row in rows:
        rec.counter(*row)
    return rec


def _exact(records: list[Counter]) -> list[tuple]:
    return [(type(c).__name__, c.track, c.name, type(c.t), repr(c.t), type(c.value),
             repr(c.value)) for c in records]


def test_counters_read_back_as_recorded():
    rec = _recorded(MIXED)
    expected = [Counter(*row) for row in MIXED]
    assert _exact(list(rec.counters)) == _exact(expected)
    assert _exact([rec.counters[i] for i in range(len(MIXED))]) == _exact(expected)
    assert _exact([rec.counters[-1]]) == _exact(expected[-1:])
    assert _exact(rec.counters[1:8:3]) == _exact(expected[1:8:3])
    assert len(rec.counters) == len(MIXED) and rec.counters
    assert not Recorder().counters and list(Recorder().counters) == []
    with pytest.raises(IndexError):
        rec.counters[len(MIXED)]
    assert _exact(rec.records()) == _exact(expected)


def test_view_compares_like_a_list():
    rows = [r for r in MIXED if r[2] != 6.0]  # nan != nan, in a list too
    rec = _recorded(rows)
    assert rec.counters == [Counter(*r) for r in rows]
    assert rec.counters == _recorded(rows).counters
    assert rec.counters != [Counter(*r) for r in rows[:-1]]
    assert Recorder().counters == []


def test_iteration_across_batches(monkeypatch):
    """Batches of a few records: runs of int values, of floats, and mixed ones."""
    monkeypatch.setattr(records, "_CHUNK", 4)
    rows = [("e", "n", float(i), i) for i in range(9)] + [("e", "f", 9.5, 0.5)] * 5 + MIXED
    rec = _recorded(rows)
    assert _exact(list(rec.counters)) == _exact([Counter(*r) for r in rows])


def test_counters_assignable_and_picklable():
    rec = Recorder()
    rec.counters = [Counter(*row) for row in MIXED]
    assert _exact(list(rec.counters)) == _exact([Counter(*row) for row in MIXED])
    back = pickle.loads(pickle.dumps(rec))
    assert _exact(list(back.counters)) == _exact(list(rec.counters))


def test_records_waiting_to_move_into_the_arrays_read_back_in_place():
    """Records wait in lists and move into the arrays a batch at a time
    (`columns._BATCH`): with a record kept as recorded between two batches, a pickle and
    reads taken midway see every record in its place."""
    n = columns._BATCH + 5
    rows = [("e", "kv", float(i), i) for i in range(n)] + [MIXED[4]] + [
        ("e", "f", n + 0.5, 0.25 * i) for i in range(n)] + MIXED
    rec = Recorder()
    cols = rec.counter_columns
    for i, row in enumerate(rows):
        cols.append(cols.series_of(row[0], row[1]), row[2], row[3])
        if i in (3, n, n + 1, 2 * n):
            assert len(rec.counters) == i + 1
            assert _exact([rec.counters[i]]) == _exact([Counter(*row)])
    expected = _exact([Counter(*r) for r in rows])
    assert _exact(list(rec.counters)) == expected
    assert _exact(list(pickle.loads(pickle.dumps(rec)).counters)) == expected


def test_attrs_may_be_called_track_or_name():
    rec = Recorder()
    rec.instant("cluster", "entity", 0.0, track="rollout.engine0", name="e0", kind="engine")
    rec.span("controller", "step", 0, 1.0, name="x", t0=3)
    assert rec.instants[0].track == "cluster"
    assert rec.instants[0].attrs == {"track": "rollout.engine0", "name": "e0", "kind": "engine"}
    assert rec.spans[0].name == "step" and rec.spans[0].attrs == {"name": "x", "t0": 3}
    assert type(rec.spans[0].t0) is int


def _write_rows(recorder: Recorder, path: Path) -> None:
    """records.parquet as written before issue 24: one Python row per record."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, list] = {k: [] for k in ("kind", "track", "name", "t0", "t1", "value",
                                               "attrs")}
    for s in recorder.spans:
        for k, v in zip(cols, ("span", s.track, s.name, s.t0, s.t1, None,
                               json.dumps(s.attrs, sort_keys=True)), strict=True):
            cols[k].append(v)
    for i in recorder.instants:
        for k, v in zip(cols, ("instant", i.track, i.name, i.t, None, None,
                               json.dumps(i.attrs, sort_keys=True)), strict=True):
            cols[k].append(v)
    for c in recorder.counters:
        for k, v in zip(cols, ("counter", c.track, c.name, c.t, None, c.value, "{}"),
                        strict=True):
            cols[k].append(v)
    types = {"kind": pa.string(), "track": pa.string(), "name": pa.string(),
             "t0": pa.float64(), "t1": pa.float64(), "value": pa.float64(),
             "attrs": pa.string()}
    table = pa.table({k: pa.array(v, types[k]) for k, v in cols.items()})
    pq.write_table(table.replace_schema_metadata(parquet_metadata("records")), path)


@pytest.mark.parametrize("with_kept", [False, True])
def test_parquet_same_bytes_as_row_by_row(tmp_path, with_kept):
    # an int past 2**53 is refused by pyarrow either way: left out
    rows = [r for r in MIXED if r[1] != "big" and (with_kept or type(r[3]) in (int, float))]
    rec = _recorded(rows)
    rec.span("controller", "step", 0.0, 2.5, step=0)
    rec.instant("cluster", "entity", 0.0, track="reward", kind="reward")
    for i in range(1000):
        rec.counter(f"rollout.engine{i % 7}", "running", 10.0 + i, i % 50)
    write_parquet(rec, tmp_path / "cols.parquet")
    _write_rows(rec, tmp_path / "rows.parquet")
    assert (tmp_path / "cols.parquet").read_bytes() == (tmp_path / "rows.parquet").read_bytes()
    back = read_parquet(tmp_path / "cols.parquet")
    assert len(back.counters) == len(rec.counters)
    assert [(c.track, c.name) for c in back.counters] == [(c.track, c.name)
                                                          for c in rec.counters]


def test_only_counters_and_no_counters(tmp_path):
    for rec in (_recorded(MIXED[:3]), Recorder()):
        if not rec.counters:
            rec.span("controller", "step", 0.0, 1.0, step=0)
        write_parquet(rec, tmp_path / "cols.parquet")
        _write_rows(rec, tmp_path / "rows.parquet")
        assert ((tmp_path / "cols.parquet").read_bytes()
                == (tmp_path / "rows.parquet").read_bytes())


def test_collector_settings_come_back():
    from rlsim.api import _collector_tuned

    before = gc.get_threshold()
    with _collector_tuned():
        assert gc.get_threshold()[0] == 200_000
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), _collector_tuned():
        raise RuntimeError("a run that fails")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    gc.freeze()  # a caller's own frozen objects stay frozen
    try:
        frozen = gc.get_freeze_count()
        with _collector_tuned():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_collector_young_generation_grows_with_the_job(monkeypatch):
    """The young generation holds 100 allocations per trajectory of a step, at least
    200,000: a collection's walk of the trajectories in flight is paid once per as many
    turns at any job size. Set for the run, and the previous settings back after it."""
    from rlsim import api
    from rlsim.config.loading import load_scenario

    seen: list[int] = []
    tuned = api._collector_tuned

    def spy(young: int = api.YOUNG_MIN):
        seen.append(young)
        return tuned(young)

    monkeypatch.setattr(api, "_collector_tuned", spy)
    before = gc.get_threshold()
    root = Path(__file__).resolve().parents[2]
    small, base = load_scenario(root / "scenarios" / "quickstart.yaml", ["steps=1"])
    large, _ = load_scenario(root / "scenarios" / "bench" / "async_agentic_1024.yaml")
    assert api._young_threshold(small) == 200_000  # 128 x 8 trajectories: the floor
    assert api._young_threshold(large) == 100 * 1024 * 8
    api.simulate(small, base)
    assert seen == [200_000]
    assert gc.get_threshold() == before
    with tuned(819_200):
        assert gc.get_threshold()[0] == 819_200
    assert gc.get_threshold() == before
