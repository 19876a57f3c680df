"""Timers: callbacks at future simulated times, ordered exactly as SimPy events would be.

Owns the calendar that the rollout engines, the environment pool and the async policy
schedule their hot-path wake-ups on (a segment's end, an environment step, a reward wait)
without creating a SimPy event for each. It reads and writes SimPy's internal queue and
clock (`Environment._queue`, `_now`) and replaces its event counter (`_eid`) with a compiled
one that goes on from the same number, which is why pyproject.toml pins SimPy to 4.1.x;
tests/entities/test_engine.py checks the interleaving and the numbering against real
timeouts, and every shipped scenario's records are identical with and without it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from heapq import heappush
from operator import attrgetter
from typing import Any, ClassVar, Final, final

import simpy
from mypy_extensions import i64, mypyc_attr
from simpy.core import SimTime
from simpy.events import NORMAL

from rlsim.entities.calendar import PER_S, Calendar

_TIME = attrgetter("tf")  # a timer's time: the sort key of a bucket


class EventIds:
    """SimPy's event counter (`Environment._eid`, an `itertools.count` there), compiled:
    the timers take a number from it natively at each timer, where calling the count's
    `__next__` went through the generic call protocol (issue 40: ~240 instructions a
    timer). SimPy's `schedule` still calls `next()` on it; the numbers run on from where
    the count stood, so every event is numbered as before."""

    def __init__(self, start: int) -> None:
        self.n = start

    def take(self) -> i64:
        """The next number, unboxed: a timer keeps it as a field."""
        n: i64 = self.n
        self.n = n + 1
        return n

    def __iter__(self) -> EventIds:
        return self

    def __next__(self) -> Any:  # Any: compiled, a slot that returns an object
        n: Any = self.n
        self.n = n + 1
        return n


# Compiled (rlsim/compiled.py), the class still takes Python subclasses (the engine's do).
@mypyc_attr(allow_interpreted_subclasses=True)
class TimerTarget:
    """An object a timer calls back by its method `on_timer(arg)`. Compiled, the drain
    calls it directly; a bound method is called through the generic protocol, its
    arguments parsed at each call (issue 40: ~200 instructions per engine segment end)."""

    __slots__ = ()  # none: a subclass (Rollout) names its own, a __dict__ among them

    def on_timer(self, arg: Any) -> None:
        raise NotImplementedError


# What a timer runs: `fn(arg)`, or `fn.on_timer(arg)` for a TimerTarget.
Callback = Callable[[Any], None] | TimerTarget


class _Spent(TimerTarget):
    """What a spare timer (`Timers._spare`) holds instead of its callback: it keeps nothing
    alive, and is never run."""

    def on_timer(self, arg: Any) -> None:
        raise AssertionError("a spare timer ran")


_SPENT: Final = _Spent()
# Spare timers kept for reuse at most (a bucket holds ~50-100; a burst beyond this many
# is freed, not kept).
_SPARE_MAX: Final = 4096


# A bucket of at most this many timers is sorted by insertion (`_sort_by_time`), a larger
# one by `list.sort` (Timsort: insertion moves ~n/4 timers per timer on average).
_INSERTION_MAX: Final = 256


@final
class _Timer:
    """A timer: `fn(arg)` at time `tf`, sequence number `eid`. One object with its numbers
    unboxed (compiled), where a (time, number, fn, arg) tuple held a float and an int object
    besides: at 1,024 GPUs a timer waits while ~17,000 trajectories go on, so all three were
    out of the caches when its bucket was sorted, when it ran and when it was freed (issue
    40). `t` is the time as given when it is not a float (SimPy's clock keeps an int as an
    int: records keep the type they were given), else None."""

    __slots__ = ("arg", "eid", "fn", "t", "tf")

    def __init__(self, tf: float, t: SimTime | None, eid: i64, fn: Callback, arg: Any) -> None:
        self.tf = tf
        self.eid = eid
        self.t = t
        self.fn = fn
        self.arg = arg

    def time(self) -> SimTime:
        """The time as given (a float unless an int was)."""
        t = self.t
        return self.tf if t is None else t


def _sort_by_time(cur: list[_Timer]) -> None:
    """Sort a bucket's timers by time, stably (timers of equal time keep their order), as
    `cur.sort(key=_TIME)` does: by insertion, reading each timer's time natively
    (compiled), where the sort with a key called it through Python's attribute protocol
    and boxed a float per timer, then compared the floats as objects: at 1,024 GPUs a
    bucket holds ~60 timers, so that cost grew with the job (issue 40)."""
    for i in range(1, len(cur)):
        timer = cur[i]
        tf = timer.tf
        j: i64 = i
        while j > 0:
            before = cur[j - 1]
            if not tf < before.tf:
                break  # after every one of equal time
            cur[j] = before
            j -= 1
        if j != i:
            cur[j] = timer


class Timers(Calendar):
    """Callbacks at future times, ordered exactly as SimPy events but far cheaper.

    `call_in(delay, fn, arg)` runs `fn(arg)` at `now + delay` as a callback on a
    `Timeout(env, delay)` made at that moment would: the timer takes its sequence number
    from the environment's event counter, so among SimPy's own events it runs in the very
    same order (time, then normal priority, then creation). A SimPy event (the driver),
    queued under the key of the earliest timer, runs the timers one after another, setting
    the clock, as long as none of SimPy's own events comes first. A timer thus costs a
    small object in a calendar instead of an event object, a scheduling call and a trip
    through `Environment.step`; a timer no longer wanted stays put and its callback
    ignores it.
    Uses SimPy's internal queue, event counter and clock (tests/entities/test_engine.py
    checks the interleaving against real timeouts).

    The timers wait in a calendar: buckets of 1/64 s of simulated time, each a plain list
    until its turn comes, when it is sorted once and its timers are taken in order (one
    added to the bucket in progress is put in its place among those not yet run). Thousands
    of environment steps wait seconds ahead while the engines' timers come and go within
    the next few buckets, so a bucket stays small. Sorted, not a heap: a stable sort by
    time alone is far faster than heap pushes and pops (issue 40: the heap's sifting was 5%
    of the async agentic benchmark), and it keeps timers of equal time in sequence-number
    order (`_next_bucket`), so the order is the heap's (time, sequence number).
    """

    _by_env: ClassVar[weakref.WeakKeyDictionary[simpy.Environment, Timers]] = \
        weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, env: simpy.Environment) -> Timers:
        """The environment's timers (one calendar per environment)."""
        timers = cls._by_env.get(env)
        if timers is None:
            timers = cls._by_env[env] = cls(env)
        return timers

    def __init__(self, env: simpy.Environment) -> None:
        super().__init__()
        self.env = env
        # SimPy's event counter, replaced by a compiled one that goes on from the same
        # number (the number `next` takes here is the first the new one gives) and held
        # here, so a timer numbers itself with a native call.
        eids: Any = env._eid
        if not isinstance(eids, EventIds):
            eids = EventIds(next(env._eid))
            env._eid = eids  # SimPy only calls next() on it
        self._eids: EventIds = eids
        # The Environment's attributes: the drain sets the clock (`_now`) at every timer,
        # a store into this dict, where a store of the attribute on the interpreted
        # Environment looks it up through the type first (issue 40: ~230 instructions).
        self._env_attrs: dict[str, Any] = env.__dict__
        # A timer is (time, sequence number, fn, arg). `_cur` holds those of buckets up
        # to `_bucket`, sorted, the next to run at `_pos`; later buckets wait in the
        # calendar (`calendar.Calendar`).
        # Times are SimTime (int or float), not float: compiled (rlsim/compiled.py), a float
        # would turn the clock's int 0 into 0.0, and records keep the type they were given.
        self._cur: list[_Timer] = []
        self._pos: i64 = 0
        # Timers that have run, reused by the next ones filed, the last one first: at
        # 1,024 GPUs a timer freed after its bucket's turn was out of the caches where the
        # collector unlinks it and its pool takes it back (issue 40: ~2.6 misses a turn),
        # and one made anew is too by the time its bucket comes. A spare one was touched
        # when its bucket ran, just before.
        self._spare: list[_Timer] = []
        self._driven: set[Any] = set()  # timers with a driver queued under their own key
        self._first: tuple[SimTime, Any] | None = None  # the earliest driver queued
        self._draining = False
        # The time of the timer running, while one runs (`_draining`): what `now()` gives
        # without an attribute lookup on the interpreted Environment.
        self._t: SimTime = 0
        self._tf = 0.0  # the same as a float

    def now(self) -> SimTime:
        """The simulated time: the environment's clock (`env._now`). While a timer runs it
        is that timer's time, held here: compiled, reading it costs a field load, where
        `env._now` is a dictionary lookup on the interpreted Environment (issue 40: about
        twenty reads per turn)."""
        if self._draining:
            return self._t
        return self.env._now

    def now_s(self) -> float:
        """`now()` as a float, for arithmetic (compiled: a field, no boxed number; the int 0
        a run starts at is 0.0). Records take `now()`, which keeps the clock's type."""
        if self._draining:
            return self._tf
        now: float = self.env._now
        return now

    def call_in(self, delay: SimTime, fn: Callback, arg: Any = None) -> None:
        """Run `fn(arg)` (`fn.on_timer(arg)` for a TimerTarget) `delay` seconds from now
        (delay >= 0)."""
        # A float delay gives a float time whatever the clock's type, added as Python adds
        # (the clock as a float); an int delay is added as SimPy adds (at the int 0 it
        # stays an int).
        if isinstance(delay, float):
            self.call_in_s(delay, fn, arg)
            return
        t = (self._t if self._draining else self.env._now) + delay
        self._put(None if isinstance(t, float) else t, float(t), fn, arg)

    def call_in_s(self, delay_s: float, fn: Callback, arg: Any = None) -> None:
        """`call_in` with a float delay: a compiled caller passes it unboxed (issue 40: the
        engines' and the environment pool's timers)."""
        tf = (self._tf if self._draining else self.now_s()) + delay_s
        self._put(None, tf, fn, arg)

    def _put(self, t: SimTime | None, tf: float, fn: Callback, arg: Any) -> None:
        """File the timer `fn(arg)` at time `tf` (`t`: the time as given if not a float,
        else None)."""
        eid = self._eids.take()
        spare = self._spare
        if spare:
            timer = spare.pop()
            timer.tf = tf
            timer.eid = eid
            timer.t = t
            timer.fn = fn
            timer.arg = arg
        else:
            timer = _Timer(tf, t, eid, fn, arg)
        bucket: i64 = int(tf * PER_S)
        if bucket <= self._bucket:  # the bucket in progress: in its place after `_pos`
            # After those of equal time (`insort(cur, timer, pos, key=_TIME)`, written out:
            # compiled, no call of the key per probe).
            cur = self._cur
            lo: i64 = self._pos
            hi: i64 = len(cur)
            while lo < hi:
                mid = (lo + hi) >> 1
                if tf < cur[mid].tf:
                    hi = mid
                else:
                    lo = mid + 1
            cur.insert(lo, timer)
        else:
            self._file(bucket, timer)
        if self._draining:
            return  # the drain in progress runs it, or queues a driver for it
        first = self._first
        if first is None:
            self._drive(timer.time(), eid)
            return
        first_t: float = first[0]
        if tf < first_t:
            self._drive(timer.time(), eid)

    def _next_bucket(self) -> bool:
        """Make the next bucket the one in progress (when it is done); False if none. The
        timers of the one done (all run) become spares, holding nothing."""
        cur = self._next_items()
        if cur is None:
            return False
        spare = self._spare
        if len(spare) < _SPARE_MAX:
            for timer in self._cur:
                timer.fn = _SPENT
                timer.arg = None
                spare.append(timer)
        # By time alone, a stable sort: timers of equal time stay in the order they were
        # added, which is their sequence numbers' (a bucket's list only ever grows at its
        # end, and one far when its first timer came took no near timer before it), so
        # the order is (time, sequence number) without comparing numbers (issue 40). A timer
        # added to the bucket in progress has the newest number: `call_in` puts it after
        # those of equal time.
        n = len(cur)
        if n > _INSERTION_MAX:
            cur.sort(key=_TIME)
        elif n > 1:
            _sort_by_time(cur)
        self._cur = cur
        self._pos = 0
        return True

    def _drive(self, t: SimTime, eid: Any) -> None:
        """Queue a driver with the key a timeout made with `eid` at `t` would have."""
        self._first = (t, eid)
        if eid in self._driven:
            return
        self._driven.add(eid)
        driver = simpy.Event(self.env)
        driver._ok, driver._value = True, eid
        driver.callbacks.append(self._drain)
        heappush(self.env._queue, (t, NORMAL, eid, driver))

    def _drain(self, driver: simpy.Event) -> None:
        key = driver._value
        self._driven.discard(key)
        first = self._first
        if first is not None and first[1] == key:
            self._first = None
        queue = self.env._queue
        env_attrs = self._env_attrs
        # SimPy's queue only grows while timers run: its head is re-read when it grew.
        queued: i64 = -1
        qt, qp, qe = 0.0, 0, 0
        self._draining = True
        try:
            while True:
                cur = self._cur
                pos = self._pos
                if pos == len(cur):
                    if not self._next_bucket():
                        break
                    cur = self._cur
                    pos = 0
                timer = cur[pos]
                tf = timer.tf
                eid = timer.eid
                if queue:
                    if len(queue) != queued:
                        queued = len(queue)
                        qt, qp, qe, _ = queue[0]
                    # SimPy's next event first? (timers have normal priority)
                    if qt < tf or (qt == tf and (qp < NORMAL or qe < eid)):
                        break
                self._pos = pos + 1  # before the callback: a timer it adds goes after
                t = timer.time()
                self._t = t
                env_attrs["_now"] = t  # `env._now = t`
                self._tf = tf
                fn = timer.fn
                if isinstance(fn, TimerTarget):
                    fn.on_timer(timer.arg)
                else:
                    fn(timer.arg)
        finally:
            self._draining = False
        if self._pos < len(self._cur) or self._next_bucket():
            timer = self._cur[self._pos]
            t, n = timer.time(), timer.eid
            first = self._first
            if first is None or (t, n) < first:
                self._drive(t, n)
