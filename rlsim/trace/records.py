"""Record types every entity emits, and the in-memory Recorder that collects them.

Tracks are dotted scopes (`rollout.engine3`, `train.pool0`, `controller`). Entities only
emit; metrics, plots and the Perfetto trace are pure functions of the records.

Counters (gauges sampled at every batch change: millions in a large run) are stored as
columns, about 21 bytes each instead of ~115 for a tuple with its two numbers (issue 24:
3.47 M of them were half the 1,024-GPU async agentic benchmark's peak memory).
`Recorder.counters` still reads as a sequence of `Counter` records in emission order, with
every value of the type it was recorded with.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any, NamedTuple

CONTROLLER = "controller"
"""The track of the single controller: phase spans and one `step` span per training step."""


class Span(NamedTuple):
    """Something that took time on a track: [t0, t1] seconds."""

    track: str
    name: str
    t0: float
    t1: float
    attrs: dict[str, Any]


class Instant(NamedTuple):
    """A point event on a track."""

    track: str
    name: str
    t: float
    attrs: dict[str, Any]


class Counter(NamedTuple):
    """A sampled value on a track (e.g. KV tokens in use)."""

    track: str
    name: str
    t: float
    value: float


Record = Span | Instant | Counter

# A counter's tag says how to give back its time and value exactly as recorded: both are
# stored as doubles, an int one (exactly representable) is tagged and converted back, and
# anything else (a bool, a numpy number) is kept as recorded in a side table.
_VALUE_INT = 1
_TIME_INT = 2
_KEPT = 4
_EXACT = 2 ** 53  # ints up to this size survive a round trip through a double
_CHUNK = 65_536  # counters rebuilt per batch while iterating: bounds the memory it takes
_new_counter = partial(tuple.__new__, Counter)  # Counter from a 4-tuple without Python code


class CounterColumns:
    """The counters as columns, one entry per record in emission order.

    `series` indexes `tracks` and `names` (one entry per distinct (track, name)); `t` and
    `value` hold the numbers as doubles; `tag` says which were ints (`_VALUE_INT`,
    `_TIME_INT`) or are kept as recorded in `kept` (`_KEPT`: index -> (t, value)).
    """

    __slots__ = ("kept", "names", "series", "series_id", "t", "tag", "tracks", "value")

    def __init__(self) -> None:
        self.series_id: dict[tuple[str, str], int] = {}
        self.tracks: list[str] = []
        self.names: list[str] = []
        self.series = array("I")
        self.t = array("d")
        self.value = array("d")
        self.tag = array("B")
        self.kept: dict[int, tuple[Any, Any]] = {}

    def __len__(self) -> int:
        return len(self.series)

    def add_series(self, track: str, name: str) -> int:
        sid = len(self.tracks)
        self.series_id[(track, name)] = sid
        self.tracks.append(track)
        self.names.append(name)
        return sid

    def add_other(self, sid: int, t: Any, value: Any) -> None:
        """A counter whose time or value is not a float or an exactly stored int."""
        tag = 0
        if type(t) is int and -_EXACT <= t <= _EXACT:
            tag |= _TIME_INT
        elif type(t) is not float:
            tag = _KEPT
        if tag != _KEPT:
            if type(value) is int and -_EXACT <= value <= _EXACT:
                tag |= _VALUE_INT
            elif type(value) is not float:
                tag = _KEPT
        self.series.append(sid)
        if tag == _KEPT:
            self.kept[len(self.tag)] = (t, value)
            self.t.append(float("nan"))
            self.value.append(float("nan"))
        else:
            self.t.append(t)
            self.value.append(value)
        self.tag.append(tag)

    def times_values(self, a: int, b: int) -> tuple[list[Any], list[Any]]:
        """Times and values of records [a, b) as recorded (ints as ints)."""
        t = self.t[a:b].tolist()
        v = self.value[a:b].tolist()
        tag = self.tag[a:b]
        n = b - a
        if tag.count(_VALUE_INT) == n:  # a run of integer gauges: the common case
            return t, list(map(int, v))
        if tag.count(0) == n:
            return t, v
        kept = self.kept
        for j, g in enumerate(tag):
            if g:
                if g & _KEPT:
                    t[j], v[j] = kept[a + j]
                    continue
                if g & _VALUE_INT:
                    v[j] = int(v[j])
                if g & _TIME_INT:
                    t[j] = int(t[j])
        return t, v

    def record(self, i: int) -> Counter:
        g = self.tag[i]
        sid = self.series[i]
        if g & _KEPT:
            t, v = self.kept[i]
            return Counter(self.tracks[sid], self.names[sid], t, v)
        t = self.t[i]
        v = self.value[i]
        return Counter(self.tracks[sid], self.names[sid], int(t) if g & _TIME_INT else t,
                       int(v) if g & _VALUE_INT else v)

    def __iter__(self) -> Iterator[Counter]:
        n = len(self.series)
        tracks, names = self.tracks, self.names
        for a in range(0, n, _CHUNK):
            b = min(a + _CHUNK, n)
            t, v = self.times_values(a, b)
            sids = self.series[a:b]
            yield from map(_new_counter, zip(map(tracks.__getitem__, sids),
                                             map(names.__getitem__, sids), t, v, strict=True))


class CounterView:
    """`Recorder.counters`: a read-only sequence of `Counter` records over the columns."""

    __slots__ = ("_cols",)

    def __init__(self, cols: CounterColumns) -> None:
        self._cols = cols

    def __len__(self) -> int:
        return len(self._cols)

    def __bool__(self) -> bool:
        return len(self._cols) > 0

    def __iter__(self) -> Iterator[Counter]:
        return iter(self._cols)

    def __getitem__(self, i: Any) -> Any:
        cols = self._cols
        if isinstance(i, slice):
            return [cols.record(j) for j in range(*i.indices(len(cols)))]
        n = len(cols)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError("counter index out of range")
        return cols.record(j)

    def __eq__(self, other: object) -> bool:
        """Equal to a list, tuple or view of the same records (as a list would be)."""
        if not isinstance(other, (CounterView, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(
            a == b for a, b in zip(self, other, strict=True))

    def __repr__(self) -> str:
        return f"CounterView({len(self)} counters)"


class Recorder:
    """Collects records in emission order. `detail` says whether per-request records are kept.

    `spans` and `instants` are lists; `counters` is a sequence view over columns
    (`counter_columns`), assignable from any iterable of `Counter`s.
    """

    __slots__ = ("_counters", "detail", "instants", "spans")

    def __init__(self, detail: str = "phase") -> None:
        self.detail = detail
        self.spans: list[Span] = []
        self.instants: list[Instant] = []
        self._counters = CounterColumns()

    @property
    def per_request(self) -> bool:
        return self.detail == "request"

    @property
    def counters(self) -> CounterView:
        return CounterView(self._counters)

    @counters.setter
    def counters(self, records: Iterable[Counter]) -> None:
        self._counters = CounterColumns()
        for c in records:
            self.counter(c.track, c.name, c.t, c.value)

    @property
    def counter_columns(self) -> CounterColumns:
        """The counters' columns, for readers that take them whole (the Parquet sink)."""
        return self._counters

    # Positional-only by naming (`_track`...), not by `/`: an attribute may be called
    # `track` or `name` (the `cluster`/`entity` instants), and mypyc cannot compile
    # positional-only parameters beside `**attrs`. Times and values are `Any`, not `float`:
    # compiled, a `float` parameter turns an int into a float, and a record keeps the type
    # it was given (an int 0 at the start of a run), which its repr shows.
    def span(self, _track: str, _name: str, _t0: Any, _t1: Any, **attrs: Any) -> None:
        if _t1 < _t0:
            raise ValueError(f"span {_track}/{_name} ends before it starts ({_t0} > {_t1})")
        self.spans.append(Span(_track, _name, _t0, _t1, attrs))

    def instant(self, _track: str, _name: str, _t: Any, **attrs: Any) -> None:
        self.instants.append(Instant(_track, _name, _t, attrs))

    def counter(self, track: str, name: str, t: Any, value: Any) -> None:
        cols = self._counters
        sid = cols.series_id.get((track, name))
        if sid is None:
            sid = cols.add_series(track, name)
        if type(t) is float:
            if type(value) is int and -_EXACT <= value <= _EXACT:
                cols.series.append(sid)
                cols.t.append(t)
                cols.value.append(value)
                cols.tag.append(_VALUE_INT)
                return
            if type(value) is float:
                cols.series.append(sid)
                cols.t.append(t)
                cols.value.append(value)
                cols.tag.append(0)
                return
        cols.add_other(sid, t, value)

    def records(self) -> list[Record]:
        return [*self.spans, *self.instants, *self.counters]
