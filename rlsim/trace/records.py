"""Record types every entity emits, and the in-memory Recorder that collects them.

Tracks are dotted scopes (`rollout.engine3`, `train.pool0`, `controller`). Entities only
emit; metrics, plots and the Perfetto trace are pure functions of the records.

Counters (gauges sampled at every batch change: millions in a large run) are stored as
columns (`columns.CounterColumns`), about 21 bytes each instead of ~115 for a tuple with
its two numbers (issue 24: 3.47 M of them were half the 1,024-GPU async agentic benchmark's
peak memory).
`Recorder.counters` still reads as a sequence of `Counter` records in emission order, with
every value of the type it was recorded with. The rollout engines' busy spans are columns too
(`columns.BusyColumns`) until `Recorder.spans` is read, which builds their `Span`s in place,
in emission order.
"""

from __future__ import annotations

import gc
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any, NamedTuple

from rlsim.trace.columns import BusyColumns, CounterColumns

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

_CHUNK = 65_536  # counters rebuilt per batch while iterating: bounds the memory it takes
# Records from a tuple without Python code (a NamedTuple's own __new__ is a Python function:
# an interpreted frame per span, one per engine busy period in a large run).
_new_counter = partial(tuple.__new__, Counter)
_new_span = partial(tuple.__new__, Span)
_new_instant = partial(tuple.__new__, Instant)


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
        cols = self._cols
        cols.flush()
        n = len(cols)
        tracks, names = cols.tracks, cols.names
        for a in range(0, n, _CHUNK):
            b = min(a + _CHUNK, n)
            t, v = cols.times_values(a, b)
            sids = cols.series[a:b]
            yield from map(_new_counter, zip(map(tracks.__getitem__, sids),
                                             map(names.__getitem__, sids), t, v, strict=True))

    def __getitem__(self, i: Any) -> Any:
        cols = self._cols
        if isinstance(i, slice):
            return [_new_counter(cols.row(j)) for j in range(*i.indices(len(cols)))]
        n = len(cols)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError("counter index out of range")
        return _new_counter(cols.row(j))

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

    `spans` and `instants` are lists (`spans` assignable from any iterable of `Span`s);
    `counters` is a sequence view over columns (`counter_columns`), assignable from any
    iterable of `Counter`s. The rollout engines write their busy spans into columns
    (`busy_columns`), which `spans` turns into `Span`s when read.
    """

    __slots__ = ("_busy", "_counters", "_spans", "detail", "instants")

    def __init__(self, detail: str = "phase") -> None:
        self.detail = detail
        self._spans: list[Span] = []
        self.instants: list[Instant] = []
        self._counters = CounterColumns()
        self._busy = BusyColumns(self._spans)

    @property
    def per_request(self) -> bool:
        return self.detail == "request"

    @property
    def spans(self) -> list[Span]:
        """Every span in emission order, the busy spans written as columns included (built
        here, once). The same list for the recorder's life; a writer that keeps it while the
        engines run finds in it only the spans built when it was read."""
        self._build_busy()
        return self._spans

    @spans.setter
    def spans(self, records: Iterable[Span]) -> None:
        rows = list(records)  # before clearing: they may be these very spans
        self._busy.clear()
        self._spans[:] = rows  # in place: the busy columns place their rows in this list

    @property
    def busy_columns(self) -> BusyColumns:
        """The busy spans written as columns and not yet built into `spans`, for writers
        that append them (the rollout engines) and readers that take them whole (the
        summary). The same object for the recorder's life; every row is in its arrays when
        this returns."""
        self._busy.flush()
        return self._busy

    def spans_apart(self) -> tuple[list[Span], BusyColumns]:
        """The spans without building any: the list of those built (`spans` less the busy
        spans still in columns) and those columns (`busy_columns`), whose row k was
        recorded just before the list's item `at[k]`."""
        return self._spans, self.busy_columns

    def _build_busy(self) -> None:
        """Move the busy spans out of their columns into `spans`, each where it was
        recorded."""
        busy = self._busy
        if not len(busy):
            return
        # Without the collector: these are hundreds of thousands of new objects in no
        # cycle, and at its default settings (a run's tuning ends with the run) they set
        # off full collections of everything the run left (0.18 s of a 3-step 1,024-GPU run
        # built after it, issue 40).
        collecting = gc.isenabled()
        gc.disable()
        try:
            rows = list(map(_new_span, busy.rows()))
        finally:
            if collecting:
                gc.enable()
        at = busy.at
        spans = self._spans
        merged: list[Span] = []
        taken = 0  # of `spans`
        a, n = 0, len(rows)
        while a < n:  # a run of rows recorded between the same two spans at a time
            p = at[a]
            b = bisect_right(at, p, a)
            merged += spans[taken:p]
            merged += rows[a:b]
            taken, a = p, b
        merged += spans[taken:]
        busy.clear()
        spans[:] = merged

    @property
    def counters(self) -> CounterView:
        return CounterView(self._counters)

    @counters.setter
    def counters(self, records: Iterable[Counter]) -> None:
        rows = list(records)  # before clearing: they may be these very counters
        self._counters.clear()  # in place: an engine holds the columns it writes to
        for c in rows:
            self.counter(c.track, c.name, c.t, c.value)

    @property
    def counter_columns(self) -> CounterColumns:
        """The counters' columns, for readers that take them whole (the Parquet sink) and
        writers that append by series id (the engines' gauges). The same object for the
        recorder's life; every record is in its arrays when this returns."""
        self._counters.flush()
        return self._counters

    # Positional-only by naming (`_track`...), not by `/`: an attribute may be called
    # `track` or `name` (the `cluster`/`entity` instants), and mypyc cannot compile
    # positional-only parameters beside `**attrs`. Times and values are `Any`, not `float`:
    # compiled, a `float` parameter turns an int into a float, and a record keeps the type
    # it was given (an int 0 at the start of a run), which its repr shows.
    def span(self, _track: str, _name: str, _t0: Any, _t1: Any, **attrs: Any) -> None:
        self.span_of(_track, _name, _t0, _t1, attrs)

    def span_of(self, track: str, name: str, t0: Any, t1: Any, attrs: dict[str, Any]) -> None:
        """`span`, its attributes a dict the caller built and hands over (the span keeps
        it)."""
        if t1 < t0:
            raise ValueError(f"span {track}/{name} ends before it starts ({t0} > {t1})")
        # Not through `spans`: that would build the busy spans in columns at every span.
        self._spans.append(_new_span((track, name, t0, t1, attrs)))

    def instant(self, _track: str, _name: str, _t: Any, **attrs: Any) -> None:
        self.instants.append(_new_instant((_track, _name, _t, attrs)))

    def counter(self, track: str, name: str, t: Any, value: Any) -> None:
        cols = self._counters
        cols.append(cols.series_of(track, name), t, value)

    def records(self) -> list[Record]:
        return [*self.spans, *self.instants, *self.counters]
