"""Records stored as columns: the counters (what `Recorder.counter` writes) and the rollout
engines' busy spans, one entry per record.

Owns the counters' storage: a series id per distinct (track, name), and per record its
series, time and value as doubles and a tag saying how to give them back exactly as
recorded (an int as an int; anything a double cannot hold, such as a bool or a numpy
number, kept in a side table). About 21 bytes a counter instead of ~115 for a tuple with
its two numbers (issue 24). Reading them back as `Counter` records is `records.CounterView`.

Compiled (rlsim/compiled.py): the engines record a gauge at about one batch change in
three (804,198 counters in 5 steps of the 1,024-GPU async agentic benchmark), and each
interpreted call cost about 0.5 us, 4% of that run (issue 40). A writer that records one
series often takes its id once (`series_of`) and appends by id (`append`). Records come in
through lists, packed a few thousand at a time (compiled, a list append is a direct call,
an array's a method lookup and an argument parse each), and the packed batches move into the
arrays when a reader asks (`flush`): an array grown a batch at a time is copied whole each
time it outgrows its block, 3% of the misses past 4 MB of a 1,024-GPU turn. The arrays hold
every record after `flush`, which `Recorder.counter_columns` and the readers here call.

An engine's busy periods (`BusyColumns`: ~23,500 a step at 1,024 GPUs) were each a `Span`
tuple and its attribute dict, ~420 bytes in seven blocks: nearly all of a large run's
memory growth, walked by every full collection of the garbage collector (issue 40). As
columns they are ~45 bytes and no object; `Recorder.spans` builds their `Span`s when read.
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
# Records waiting in the lists before they are packed: few enough that their number objects
# are still in the caches when they are packed and freed. At 4,096, ~2,700 turns of a
# 1,024-GPU run came between a record and its packing; at 256 a turn there misses 6.1
# fewer reads and 4.2 fewer writes past a 4 MB last level (cachegrind; 512: 4.7 and 3.2;
# 128: 0.2 and 0.4 fewer than 256 for +167 instructions a turn). A batch's list and bytes
# headers add about 1-2 bytes a record until `flush`.
_BATCH: Final = 256


def _unpack(arrays: list[array[Any]], packed: list[list[bytes]]) -> None:
    """Append packed batches (each one's columns as bytes, in the order of `arrays`) to the
    arrays, each grown once, and drop them: a column's bytes as soon as they are in its
    array, so that moving them adds at most one column's size to the memory in use."""
    for k, arr in enumerate(arrays):
        arr.frombytes(b"".join([batch[k] for batch in packed]))
        for batch in packed:
            batch[k] = b""
    packed.clear()


class _Columns:
    """What both kinds of columns share: a record's fields wait in lists, one per column,
    are packed a batch at a time (`_pack`) and move into the columns' arrays when a reader
    asks (`flush`). A subclass names its columns (`_columns`) and what its pickle holds
    (`_state_fields`); `series` and `tag` are every subclass's first and last columns,
    `kept` the records kept as recorded (index -> their fields)."""

    # No __slots__: compiled, the attributes are a native class's fields anyway, and mypyc
    # left the ones __slots__ named unset.
    def __init__(self) -> None:
        self.series: array[int] = array("I")
        self.tag: array[int] = array("B")
        self.kept: dict[int, tuple[Any, ...]] = {}
        # Any: compiled, a caller's boxed id is kept, not boxed anew.
        self._series: list[Any] = []
        self._tag: list[int] = []
        # Batches packed and not yet in the arrays: each one's columns as bytes.
        self._packed: list[list[bytes]] = []
        self._n_packed = 0

    def _columns(self) -> tuple[str, list[array[Any]], list[list[Any]]]:
        """The columns' `struct` formats, arrays and waiting lists, in one order."""
        raise NotImplementedError

    def _state_fields(self) -> tuple[str, ...]:
        """The fields a pickle holds (every record is in the arrays then)."""
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.series) + self._n_packed + len(self._tag)

    def _pack(self) -> None:
        """Pack the records waiting in the lists into a batch of bytes."""
        n = len(self._tag)
        if n:
            formats, _, lists = self._columns()
            # Packed, then appended as bytes: an array's `extend` parses each item as
            # `append` does, three to four times slower. The same doubles (both convert
            # with PyFloat_AsDouble) in the machine's layout, as the arrays keep them.
            self._packed.append([pack(f"{n}{f}", *rows)
                                 for f, rows in zip(formats, lists, strict=True)])
            self._n_packed += n
            self._drop_pending()

    def flush(self) -> None:
        """Move every record waiting into the arrays."""
        self._pack()
        if self._packed:
            _unpack(self._columns()[1], self._packed)
            self._n_packed = 0

    def _drop_pending(self) -> None:
        for rows in self._columns()[2]:
            rows.clear()

    def _drop_records(self) -> None:
        """No records (in place: writers holding the columns keep them)."""
        for arr in self._columns()[1]:
            del arr[:]
        self.kept.clear()
        self._drop_pending()
        self._packed.clear()
        self._n_packed = 0

    # Pickled field by field: a Recorder travels to and from worker processes (draws,
    # sweeps). mypyc's `serializable` class option left __init__'s fields unset (mypy 2.4.1).
    def __getstate__(self) -> dict[str, Any]:
        self.flush()
        return {name: getattr(self, name) for name in self._state_fields()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Every field new (an interpreted class is unpickled without `__init__`), then the
        # pickled ones.
        type(self).__init__(self)
        for name, value in state.items():
            setattr(self, name, value)


class CounterColumns(_Columns):
    """The counters as columns, one entry per record in emission order.

    `series` indexes `tracks` and `names` (one entry per distinct (track, name)); `t` and
    `value` hold the numbers as doubles; `tag` says which were ints (`VALUE_INT`,
    `TIME_INT`) or are kept as recorded in `kept` (`KEPT`: index -> (t, value)).
    """

    def __init__(self) -> None:
        super().__init__()
        self.series_id: dict[tuple[str, str], int] = {}
        self.tracks: list[str] = []
        self.names: list[str] = []
        self.t: array[float] = array("d")
        self.value: array[float] = array("d")
        # Records not yet in the arrays (beside `_series` and `_tag`): time and value (int
        # or float). Any, not float: compiled, a float list's append unboxes the time and
        # boxes it again, a new float object per record; these keep the caller's.
        self._t: list[Any] = []
        self._value: list[Any] = []

    def _columns(self) -> tuple[str, list[array[Any]], list[list[Any]]]:
        return ("IddB", [self.series, self.t, self.value, self.tag],
                [self._series, self._t, self._value, self._tag])

    def _state_fields(self) -> tuple[str, ...]:
        return ("series_id", "tracks", "names", "series", "t", "value", "tag", "kept")

    def clear(self) -> None:
        """No records and no series (in place: writers holding the columns keep them)."""
        self.series_id.clear()
        del self.tracks[:], self.names[:]
        self._drop_records()

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
                self._pack()
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


T0_INT: Final = 1  # a busy span's start was an int
T1_INT: Final = 2  # its end was an int
OPEN: Final = 4  # cut by the run's end (its `open` attribute)
BUSY_KEPT: Final = 8  # times and counts kept as recorded in `kept`
_COUNT_MAX: Final = 2 ** 63  # counts an int64 holds


class BusyColumns(_Columns):
    """Busy spans (name `busy`) of writers with fixed attributes, as columns in emission
    order: what a rollout engine writes at the end of each busy period.

    `series` indexes `tracks`, `pools` and `gpus` (one entry per distinct writer: its track
    and its `pool` and `gpus` attributes); `t0` and `t1` hold the times as doubles,
    `requests` and `tokens` the counts; `tag` says which times were ints (`T0_INT`,
    `T1_INT`), which spans are `OPEN`, and which are kept as recorded in `kept`
    (`BUSY_KEPT`: index -> (t0, t1, requests, tokens)). `at` places each among the other
    spans: row k was recorded just before the span at index `at[k]` of `spans`, the
    recorder's list (its length then).
    """

    # `spans` optional: unpickled, a compiled class is made by calling it with no argument.
    def __init__(self, spans: list[Any] | None = None) -> None:
        super().__init__()
        self.spans: list[Any] = [] if spans is None else spans
        self.series_id: dict[tuple[str, Any, Any], int] = {}
        self.tracks: list[str] = []
        self.pools: list[Any] = []
        self.gpus: list[Any] = []
        self.at: array[int] = array("q")
        self.t0: array[float] = array("d")
        self.t1: array[float] = array("d")
        self.requests: array[int] = array("q")
        self.tokens: array[int] = array("q")
        # Rows not yet in the arrays, beside `_series` and `_tag` (Any: compiled, the
        # caller's objects are kept, not unboxed and boxed anew).
        self._at: list[int] = []
        self._t0: list[Any] = []
        self._t1: list[Any] = []
        self._requests: list[Any] = []
        self._tokens: list[Any] = []

    def _columns(self) -> tuple[str, list[array[Any]], list[list[Any]]]:
        return ("IqddqqB",
                [self.series, self.at, self.t0, self.t1, self.requests, self.tokens, self.tag],
                [self._series, self._at, self._t0, self._t1, self._requests, self._tokens,
                 self._tag])

    def _state_fields(self) -> tuple[str, ...]:
        return ("spans", "series_id", "tracks", "pools", "gpus", "series", "at", "t0", "t1",
                "requests", "tokens", "tag", "kept")

    def clear(self) -> None:
        """No rows (the series stay: writers hold their ids)."""
        self._drop_records()

    def series_of(self, track: str, pool: Any, gpus: Any) -> int:
        """The id of the writer on `track` with attributes `pool` and `gpus`."""
        key = (track, pool, gpus)
        sid = self.series_id.get(key)
        if sid is None:
            sid = len(self.tracks)
            self.series_id[key] = sid
            self.tracks.append(track)
            self.pools.append(pool)
            self.gpus.append(gpus)
        return sid

    def append(self, sid: Any, t0: Any, t1: Any, requests: Any, tokens: Any,
               cut: bool) -> None:
        """A busy span of writer `sid` over [t0, t1] in which `requests` requests finished,
        generating `tokens` tokens (`cut`: cut by the run's end, marked `open`)."""
        if t1 < t0:
            raise ValueError(f"span {self.tracks[sid]}/busy ends before it starts "
                             f"({t0} > {t1})")
        # The objects as given, kept apart from the tests below (as `CounterColumns.append`).
        t0_obj: object = t0
        t1_obj: object = t1
        requests_obj: object = requests
        tokens_obj: object = tokens
        if (type(t0) is float and type(t1) is float and type(requests) is int
                and type(tokens) is int and 0 <= requests < _COUNT_MAX
                and 0 <= tokens < _COUNT_MAX):
            self._series.append(sid)
            self._at.append(len(self.spans))
            self._t0.append(t0_obj)
            self._t1.append(t1_obj)
            self._requests.append(requests_obj)
            self._tokens.append(tokens_obj)
            self._tag.append(OPEN if cut else 0)
            if len(self._tag) >= _BATCH:
                self._pack()
            return
        self._append_other(sid, t0, t1, requests, tokens, cut)

    def _append_other(self, sid: int, t0: Any, t1: Any, requests: Any, tokens: Any,
                      cut: bool) -> None:
        """A busy span whose times are not floats, or whose counts are not int64s."""
        self.flush()  # its index is its place among all rows
        tag = OPEN if cut else 0
        if type(t0) is int and -EXACT <= t0 <= EXACT:
            tag |= T0_INT
        elif type(t0) is not float:
            tag |= BUSY_KEPT
        if type(t1) is int and -EXACT <= t1 <= EXACT:
            tag |= T1_INT
        elif type(t1) is not float:
            tag |= BUSY_KEPT
        if not (type(requests) is int and type(tokens) is int
                and -_COUNT_MAX <= requests < _COUNT_MAX
                and -_COUNT_MAX <= tokens < _COUNT_MAX):
            tag |= BUSY_KEPT
        self.series.append(sid)
        self.at.append(len(self.spans))
        if tag & BUSY_KEPT:
            self.kept[len(self.tag)] = (t0, t1, requests, tokens)
            self.t0.append(float("nan"))
            self.t1.append(float("nan"))
            self.requests.append(0)
            self.tokens.append(0)
        else:
            self.t0.append(t0)
            self.t1.append(t1)
            self.requests.append(requests)
            self.tokens.append(tokens)
        self.tag.append(tag)

    def requests_finished(self) -> int:
        """The requests finished in every row's span (its `requests`): a run's turns."""
        self.flush()
        kept = self.kept
        return sum(self.requests) + sum(int(kept[i][2]) for i in kept)

    def rows(self) -> list[tuple[str, str, Any, Any, dict[str, Any]]]:
        """Every row as a `Span`'s fields (track, "busy", t0, t1, attrs), as recorded."""
        self.flush()
        tracks, pools, gpus = self.tracks, self.pools, self.gpus
        t0s: list[Any] = self.t0.tolist()
        t1s: list[Any] = self.t1.tolist()
        requests: list[Any] = self.requests.tolist()
        tokens: list[Any] = self.tokens.tolist()
        tags = self.tag
        kept = self.kept
        out: list[tuple[str, str, Any, Any, dict[str, Any]]] = []
        for i, sid in enumerate(self.series):
            g = tags[i]
            t0, t1, n, k = t0s[i], t1s[i], requests[i], tokens[i]
            if g & BUSY_KEPT:
                t0, t1, n, k = kept[i]
            else:
                if g & T0_INT:
                    t0 = int(t0)
                if g & T1_INT:
                    t1 = int(t1)
            attrs: dict[str, Any] = {"pool": pools[sid], "gpus": gpus[sid], "requests": n,
                                     "tokens": k}
            if g & OPEN:
                attrs["open"] = True
            out.append((tracks[sid], "busy", t0, t1, attrs))
        return out
