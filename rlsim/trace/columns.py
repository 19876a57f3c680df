"""Counter records stored as columns: what `Recorder.counter` writes, one entry per record.

Owns the counters' storage: a series id per distinct (track, name), and per record its
series, time and value as doubles and a tag saying how to give them back exactly as
recorded (an int as an int; anything a double cannot hold, such as a bool or a numpy
number, kept in a side table). About 21 bytes a counter instead of ~115 for a tuple with
its two numbers (issue 24). Reading them back as `Counter` records is `records.CounterView`.

Compiled (rlsim/compiled.py): the engines record a gauge at about one batch change in
three (804,198 counters in 5 steps of the 1,024-GPU async agentic benchmark), and each
interpreted call cost about 0.5 us, 4% of that run (issue 40). A writer that records one
series often takes its id once (`series_of`) and appends by id (`append`). Records come in
through lists, moved into the arrays a few thousand at a time (`flush`): compiled, a list
append is a direct call, an array's a method lookup and an argument parse each. The arrays
hold every record after `flush`, which `Recorder.counter_columns` and the readers here call.
"""

from __future__ import annotations

from array import array
from struct import pack
from typing import Any, Final

# Final: compiled, each use is the constant itself, not a lookup in the module's globals.
VALUE_INT: Final = 1  # the value was an int
TIME_INT: Final = 2  # the time was an int
KEPT: Final = 4  # time and value kept as recorded in `kept`
EXACT: Final = 2 ** 53  # ints up to this size survive a round trip through a double
_BATCH: Final = 4096  # records waiting in the lists before they move into the arrays


class CounterColumns:
    """The counters as columns, one entry per record in emission order.

    `series` indexes `tracks` and `names` (one entry per distinct (track, name)); `t` and
    `value` hold the numbers as doubles; `tag` says which were ints (`VALUE_INT`,
    `TIME_INT`) or are kept as recorded in `kept` (`KEPT`: index -> (t, value)).
    """

    # No __slots__: compiled, the attributes are a native class's fields anyway, and mypyc
    # left the ones __slots__ named unset.
    def __init__(self) -> None:
        self.series_id: dict[tuple[str, str], int] = {}
        self.tracks: list[str] = []
        self.names: list[str] = []
        self.series: array[int] = array("I")
        self.t: array[float] = array("d")
        self.value: array[float] = array("d")
        self.tag: array[int] = array("B")
        self.kept: dict[int, tuple[Any, Any]] = {}
        # Records not yet in the arrays: series, time, value (int or float) and tag.
        self._series: list[int] = []
        # Any, not float: compiled, a float list's append unboxes the time and boxes it
        # again, a new float object per record; these keep the caller's.
        self._t: list[Any] = []
        self._value: list[Any] = []
        self._tag: list[int] = []

    def __len__(self) -> int:
        return len(self.series) + len(self._tag)

    def flush(self) -> None:
        """Move the records waiting in the lists into the arrays."""
        n = len(self._tag)
        if n:
            # Packed, then appended as bytes: an array's `extend` parses each item as
            # `append` does, three to four times slower. The same doubles (both convert
            # with PyFloat_AsDouble) in the machine's layout, as the arrays keep them.
            self.series.frombytes(pack(f"{n}I", *self._series))
            self.t.frombytes(pack(f"{n}d", *self._t))
            self.value.frombytes(pack(f"{n}d", *self._value))
            self.tag.frombytes(bytes(self._tag))
            self._drop_pending()

    def _drop_pending(self) -> None:
        self._series.clear()
        self._t.clear()
        self._value.clear()
        self._tag.clear()

    # Pickled field by field: a Recorder travels to and from worker processes (draws,
    # sweeps). mypyc's `serializable` class option left __init__'s fields unset (mypy 2.4.1).
    def __getstate__(self) -> dict[str, Any]:
        self.flush()
        return {"series_id": self.series_id, "tracks": self.tracks, "names": self.names,
                "series": self.series, "t": self.t, "value": self.value, "tag": self.tag,
                "kept": self.kept}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.series_id = state["series_id"]
        self.tracks = state["tracks"]
        self.names = state["names"]
        self.series = state["series"]
        self.t = state["t"]
        self.value = state["value"]
        self.tag = state["tag"]
        self.kept = state["kept"]
        self._series, self._t, self._value, self._tag = [], [], [], []

    def clear(self) -> None:
        """No records and no series (in place: writers holding the columns keep them)."""
        self.series_id.clear()
        del self.tracks[:], self.names[:]
        del self.series[:], self.t[:], self.value[:], self.tag[:]
        self.kept.clear()
        self._drop_pending()

    def series_of(self, track: str, name: str) -> int:
        """The id of series (track, name), a new one if it has no records yet."""
        sid = self.series_id.get((track, name))
        if sid is None:
            sid = len(self.tracks)
            self.series_id[(track, name)] = sid
            self.tracks.append(track)
            self.names.append(name)
        return sid

    def append(self, sid: Any, t: Any, value: Any) -> None:
        """One record of series `sid` (an int; Any: compiled, a caller's boxed id is kept,
        not boxed anew): value `value` at time `t`."""
        # The objects as given, kept apart from the tests below: compiled, a test of
        # `type(t) is float` makes `t` a native float, which a list would box again, a new
        # object per record (issue 40).
        t_obj: object = t
        value_obj: object = value
        if type(t) is float:
            if type(value) is int and -EXACT <= value <= EXACT:
                tag = VALUE_INT
            elif type(value) is float:
                tag = 0
            else:
                self._append_other(sid, t, value)
                return
            self._series.append(sid)
            self._t.append(t_obj)
            self._value.append(value_obj)
            self._tag.append(tag)
            if len(self._tag) >= _BATCH:
                self.flush()
            return
        self._append_other(sid, t, value)

    def _append_other(self, sid: int, t: Any, value: Any) -> None:
        """A counter whose time or value is not a float or an exactly stored int."""
        self.flush()  # its index is its place among all records
        tag = 0
        if type(t) is int and -EXACT <= t <= EXACT:
            tag |= TIME_INT
        elif type(t) is not float:
            tag = KEPT
        if tag != KEPT:
            if type(value) is int and -EXACT <= value <= EXACT:
                tag |= VALUE_INT
            elif type(value) is not float:
                tag = KEPT
        self.series.append(sid)
        if tag == KEPT:
            self.kept[len(self.tag)] = (t, value)
            self.t.append(float("nan"))
            self.value.append(float("nan"))
        else:
            self.t.append(t)
            self.value.append(value)
        self.tag.append(tag)

    def times_values(self, a: int, b: int) -> tuple[list[Any], list[Any]]:
        """Times and values of records [a, b) as recorded (ints as ints)."""
        self.flush()
        t: list[Any] = self.t[a:b].tolist()
        v: list[Any] = self.value[a:b].tolist()
        tag = self.tag[a:b]
        n = b - a
        if tag.count(VALUE_INT) == n:  # a run of integer gauges: the common case
            return t, [int(x) for x in v]
        if tag.count(0) == n:
            return t, v
        kept = self.kept
        for j, g in enumerate(tag):
            if g:
                if g & KEPT:
                    t[j], v[j] = kept[a + j]
                    continue
                if g & VALUE_INT:
                    v[j] = int(v[j])
                if g & TIME_INT:
                    t[j] = int(t[j])
        return t, v

    def row(self, i: int) -> tuple[str, str, Any, Any]:
        """Record i as (track, name, t, value), as recorded."""
        self.flush()
        g = self.tag[i]
        sid = self.series[i]
        if g & KEPT:
            t, v = self.kept[i]
            return self.tracks[sid], self.names[sid], t, v
        t = self.t[i]
        v = self.value[i]
        return (self.tracks[sid], self.names[sid], int(t) if g & TIME_INT else t,
                int(v) if g & VALUE_INT else v)
