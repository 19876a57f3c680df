"""Rollout engine: one vLLM/SGLang-like server with continuous batching.

Owns the batch of one engine: FCFS admission at iteration boundaries under a cap on running
sequences and a KV-cache capacity in tokens, chunked prefill under a per-iteration token
budget, preemption by recompute (most recently admitted first) when KV runs out, abort that
returns partial tokens, add-with-prefix (a retained prefix is re-prefilled), an optional
prefix cache (finished contexts kept in free KV, LRU-evicted, so a later request with the
same cache key prefills only its new tokens), and the serving loop's CPU work per request
(`request_overhead_s` per request admitted or finished, a stall before the next iteration).

Events only when something changes. All decoding sequences advance together, so the engine
keeps one decode clock: a decoding sequence's generated count is `clock - base`, the KV of all
decoding sequences is `kv_const + B * clock`, and finishes come off a heap keyed by the clock
value at which they finish (one int per sequence: that clock and, below it, the sequence's
admission number, which also keys the decoding sequences). A decode iteration costs
`a + b * kv_tokens` (the cost model's `decode_affine`, times `slowdown / speed`: a fault's
fail-slow factor over a fitted engine speed), so the time of n iterations with a fixed batch
is an arithmetic series, summed in closed form: one SimPy event covers every iteration up to
the next batch change (a finish, KV exhaustion, an arrival or abort). `mode="iteration"`
schedules one event per iteration and prices each with `InferenceCost.step`, as the
reference for tests.

The engine is not a SimPy process but a state machine on `Timers`: callbacks that run in
exactly the order SimPy events made at the same moment would, for a fraction of the cost
(no event object, no generator resumption, no `Interruption` when an arrival cuts a segment:
the cut re-arms the timer and the superseded one lapses). Environment steps (`EnvPool`) and
the async policy's reward waits use them too.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import simpy
from mypy_extensions import i64, mypyc_attr
from simpy.core import SimTime
from simpy.events import URGENT

from rlsim.cost.inference import InferenceCost
from rlsim.entities.timers import Timers, TimerTarget
from rlsim.trace import Recorder
from rlsim.trace.columns import BusyColumns, CounterColumns


class _StepCost(Protocol):
    @property
    def total_s(self) -> float: ...


class EngineCost(Protocol):
    """The slice of `rlsim.cost.InferenceCost` the engine uses."""

    def step(self, decode_seqs: int, kv_tokens: int, prefill_tokens: int = 0,
             prefill_context_tokens: int = 0,
             prefill_chunks: Sequence[tuple[int, int]] | None = None) -> _StepCost: ...

    def decode_affine(self, batch: int) -> tuple[float, float]: ...


# Compiled (rlsim/compiled.py), the class still takes Python subclasses.
@mypyc_attr(allow_interpreted_subclasses=True)
class DoneTarget:
    """A request's `on_done` that the engine calls natively (`request_done`), where a
    function is called through the generic protocol with its argument parsed (issue 40:
    one a turn, the rollouts' `_turn_done`). Callable like the function it stands for."""

    def request_done(self, req: Request) -> None:
        raise NotImplementedError

    def __call__(self, req: Request) -> None:
        self.request_done(req)


@dataclass(slots=True, eq=False)
class Request:
    """One generation request: a prompt and the response length it will reach.

    `output_tokens` is the full response length the workload drew; `prefix_tokens` of it
    already exist (retained from an aborted or migrated attempt) and are re-prefilled.
    """

    rid: int
    prompt_tokens: i64
    output_tokens: i64
    prefix_tokens: i64 = 0
    on_done: Callable[[Request], None] | None = None
    tag: Any = None
    cache_key: Any = None
    """With prefix caching: the context this request extends (e.g. its trajectory). A hit
    skips the prefill of the cached tokens; the finished context is cached under it."""
    # Filled in by the engine.
    status: str = "new"  # waiting | prefill | decode | finished | aborted
    generated: i64 = 0
    t_submit: float = math.nan
    t_first_token: float = math.nan
    t_finish: float = math.nan
    preemptions: i64 = 0
    engine: str = ""
    _prefill_left: i64 = 0
    _prefill_done: i64 = 0
    _cached: i64 = 0  # prompt tokens found in the prefix cache at submit
    _base: i64 = 0  # decode clock minus generated tokens, while decoding
    _order: i64 = 0
    _entry: Any = None  # its finish heap's entry and key in `decoding`, while decoding

    # Written out: under mypyc, dataclasses' generated __init__ runs interpreted (about a
    # third of a request's cost to build); this one compiles. The same fields and defaults.
    def __init__(self, rid: int, prompt_tokens: i64, output_tokens: i64,
                 prefix_tokens: i64 = 0, on_done: Callable[[Request], None] | None = None,
                 tag: Any = None, cache_key: Any = None, status: str = "new",
                 generated: i64 = 0, t_submit: float = math.nan,
                 t_first_token: float = math.nan, t_finish: float = math.nan,
                 preemptions: i64 = 0, engine: str = "") -> None:
        self.rid = rid
        self.prompt_tokens = prompt_tokens
        self.output_tokens = output_tokens
        self.prefix_tokens = prefix_tokens
        self.on_done = on_done
        self.tag = tag
        self.cache_key = cache_key
        self.status = status
        self.generated = generated
        self.t_submit = t_submit
        self.t_first_token = t_first_token
        self.t_finish = t_finish
        self.preemptions = preemptions
        self.engine = engine
        self._prefill_left = 0
        self._prefill_done = 0
        self._cached = 0
        self._base = 0
        self._order = 0
        self._entry = None

    @property
    def context_tokens(self) -> i64:
        return self.prompt_tokens + self.generated


_GAUGES = ("kv_tokens", "running", "waiting")
# Token and sequence counts are `i64` (mypy_extensions): compiled, native 64-bit integers,
# with none of a Python int's tag tests, reference counts and slow paths (issue 40: 5% of
# the async agentic benchmark's instructions and a fifth of its instruction-cache misses);
# interpreted, plain ints. Mixed with a float they are converted first (`float(n) * a`),
# which is what Python does for int * float, so the values are the same either way.
# A finish's heap entry: its clock above these bits, the admission number in them (an
# engine admits fewer than 2**32 requests in a run).
_ORDER_BITS: Final = 32
# Final: compiled, a static each, not a lookup in the module's globals per call.
_heappush: Final = heapq.heappush
_heappop: Final = heapq.heappop


_NO_DUE: Final = 1 << 62  # `RolloutEngine._due` with an empty finish heap
# The prefix cache's values (a context's tokens) as shared int objects, made once and in
# order, so contexts of near sizes share cache lines: an int boxed at each finish was freed
# at the next turn's hit, and read there, each time out of the CPU's caches at 1,024 GPUs
# (~17,000 contexts cached between two turns of one; issue 40). Larger contexts are boxed
# per finish, as before. The values are the same either way.
_TOKEN_INTS_MAX: Final = 1 << 15
_TOKEN_INTS: Final[list[Any]] = list(range(_TOKEN_INTS_MAX))


def _due_of(heap: list[Any]) -> i64:
    """The decode clock of the next finish on a finish heap (its top), or _NO_DUE. (An
    entry is read as an `int` here: typed Any in the heap, it keeps its identity there.)"""
    if not heap:
        return _NO_DUE
    top: int = heap[0]
    return top >> _ORDER_BITS


class RolloutEngine(TimerTarget):
    """A continuous-batching inference server on `tp` GPUs."""

    # Compiled, the fields lie in memory in the order declared here, then in the order
    # `__init__` first sets the rest. At 1,024 GPUs an engine's object is out of the CPU's
    # caches whenever one of its timers runs (768 engines between two of its events), so
    # the fields a batch change reads (segment end, finishes, admission, a submit) come
    # first and the flags lie together (a byte each): ~400 bytes, where they were spread
    # over ~600 among the ones read only at a record, a fault or the end (issue 40). A
    # submit's cache counts and name, and a gauge's columns, are among them: declared
    # late, they were two lines more a turn.
    _timers: Timers
    _seg_id: i64
    _end: float
    _seg_n: i64
    clock: i64
    iterations: i64
    _heap: list[Any]
    _due: i64
    decoding: dict[Any, Request]
    prefilling: list[Request]
    waiting: deque[Request]
    _cache: dict[Any, Any]  # cache key -> tokens (an int, `_TOKEN_INTS`'s when small)
    cache_lookups: i64
    cache_hits: i64
    cache_hit_tokens: i64
    name: str
    _kv_const: i64
    _kv_prefill: i64
    kv_capacity: i64
    max_running: i64
    max_batched: i64
    _busy_since: SimTime | None
    _last_kv: i64
    _last_run: i64
    _last_wait: i64
    _kv_step: i64
    _count_step: i64
    _cols: CounterColumns  # the gauges' columns and series (`_gauge`)
    _sid_kv: Any  # boxed once: an int field is boxed anew for each record
    _sid_running: Any
    _sid_waiting: Any
    request_overhead_s: float
    _seg_t0: float
    _seg_head_s: float
    _seg_a: float
    _seg_b: float
    _seg_k0: i64
    _seg_batch: i64
    _affine: dict[int, tuple[float, float]]
    _scale: float
    _native_cost: InferenceCost | None
    _in_segment: bool
    down: bool
    iteration_mode: bool
    prefix_caching: bool
    _per_request: bool
    _sleeping: bool
    _wake_pending: bool
    n_requests: i64
    finished: i64
    _events: i64
    _busy_requests: i64
    _busy_tokens: i64
    _cached_total: i64
    _watermark: i64
    _order: i64
    _wait_popleft: Callable[[], Request]
    _wait_append: Callable[[Request], None]
    _split_t: float
    _busy_cols: BusyColumns  # written when a busy period ends
    _busy_sid: Any  # boxed once (as the gauges' series ids)

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        cost: EngineCost,
        kv_capacity_tokens: int,
        max_running_seqs: int,
        max_batched_tokens: int,
        recorder: Recorder,
        mode: str = "skip",
        pool: str = "",
        gpus: int = 1,
        prefix_caching: bool = False,
        request_overhead_s: float = 0.0,
        speed: float = 1.0,
    ) -> None:
        if mode not in ("skip", "iteration"):
            raise ValueError(f"unknown engine mode {mode!r}")
        if not speed > 0:
            raise ValueError(f"engine {name}: speed must be > 0, got {speed}")
        if kv_capacity_tokens <= 0:
            raise ValueError(f"engine {name}: no KV capacity ({kv_capacity_tokens} tokens)")
        self.env = env
        self.name = name
        self.cost = cost
        # The cost model's own class is called natively (compiled: no Python-level call,
        # argument parsing or attribute lookup per mixed iteration); any other `EngineCost`
        # (streamed weights, a test's toy) through the protocol. The same method either way.
        self._native_cost = \
            cost if isinstance(cost, InferenceCost) else None
        self.kv_capacity = kv_capacity_tokens
        self.max_running = max_running_seqs
        self.max_batched = max_batched_tokens
        self.recorder = recorder
        self.iteration_mode = mode == "iteration"
        self.pool = pool
        self.gpus = gpus
        self.waiting = deque()
        # Its ends' methods bound once: compiled, a deque's method is otherwise looked up by
        # name through its type at every call (issue 40: a submit and an admission a turn).
        self._wait_append = self.waiting.append
        self._wait_popleft = self.waiting.popleft
        # In admission order (chunks are taken in it, preemption takes the last), a list:
        # a handful at most, and an iteration's completed prefills are its first ones, so
        # no dict insert and delete per turn (issue 40).
        self.prefilling = []
        # Keyed by their finish heap's entries (`Request._entry`), in the order they joined
        # (LIFO preemption takes the last).
        self.decoding = {}
        # Finishes: (clock at which the last token is in) << _ORDER_BITS | admission
        # number, one int per decoding sequence, so the heap compares ints, not tuples,
        # and holds no object per entry (issue 40). The same int object is the sequence's
        # key in `decoding`, so a finish finds it by identity, with no int made and none
        # compared (typed Any: compiled, an `int` read out of the heap would be unboxed,
        # and boxed again a new object). A sequence preempted or aborted since its entry
        # was pushed is no longer in `decoding`: the entry lapses.
        self._heap = []
        # The decode clock of the heap's top (`_due_of`), kept at every push and pop: read
        # at every segment's end and plan, where the heap's list, its items and the top's
        # int were three lines out of the CPU's caches at 1,024 GPUs (issue 40).
        self._due = _NO_DUE
        self.clock = 0
        self._kv_const = 0  # sum over decoding of (context at join - clock at join)
        self._kv_prefill = 0  # KV reserved by prefilling sequences (whole prefill + 1 token)
        self._order = 0
        self._watermark = max(kv_capacity_tokens // 100, max_running_seqs)
        # Segment in flight: decode iterations after the head, its start and coefficients.
        self._seg_t0 = 0.0
        self._seg_head_s = 0.0
        self._seg_n = 0
        self._seg_a = 0.0
        self._seg_b = 0.0
        self._seg_k0 = 0
        self._seg_batch = 0
        self._in_segment = False
        self._busy_since = None  # int 0 stays int (rlsim/compiled.py)
        self._busy_requests = 0  # finished during the current busy period
        self._busy_tokens = 0
        self._track = f"rollout.{name}"
        # Busy periods written straight into the recorder's columns, as the gauges are (one
        # per idle: ~420 bytes of objects each as a `Span`, issue 40).
        self._busy_cols = recorder.busy_columns
        self._busy_sid = self._busy_cols.series_of(self._track, pool, gpus)
        # Last recorded kv_tokens, running and waiting, and the change that is worth a
        # record. Fields, not a tuple: compiled, read at every batch change as native ints
        # (a tuple is unpacked and its ints converted; a new one boxes three).
        self._last_kv = 0
        self._last_run = 0
        self._last_wait = 0
        self._kv_step = max(1, kv_capacity_tokens // 100)
        self._count_step = max(1, max_running_seqs // 32)
        # The gauges' series, written straight into the recorder's columns (compiled: no
        # interpreted call per record).
        self._cols = cols = recorder.counter_columns
        sid_kv, sid_running, sid_waiting = sids = tuple(
            cols.series_of(self._track, gauge) for gauge in _GAUGES)
        # Held boxed, where an int field is boxed anew for each record (issue 40).
        self._sid_kv = sid_kv
        self._sid_running = sid_running
        self._sid_waiting = sid_waiting
        for sid in sids:  # every series starts at 0
            cols.append(sid, env.now, 0)
        self.iterations = 0
        self.preemptions: i64 = 0
        self.finished = 0
        # Prefix cache (vLLM automatic prefix caching): finished contexts by cache key, least
        # recently used first. It holds only KV the running sequences leave free, so entries
        # are evicted (LRU) whenever it outgrows that; the check runs at each submit, admit
        # and finish, not inside a stretch of decode iterations (documented approximation).
        self.prefix_caching = prefix_caching
        # A plain dict keeps insertion order, which is the LRU order here: a hit pops its
        # entry and a finish inserts it again at the end. Faster than an OrderedDict in the
        # compiled engine (issue 24); the oldest entry is the first key.
        self._cache = {}
        self._cached_total = 0
        self.cache_hit_tokens = 0
        self.cache_lookups = 0
        self.cache_hits = 0
        # decode_affine by batch size: the cost model's own memo when it has one, shared by
        # every engine on that cost (768 engines' dicts of the same values missed the CPU's
        # caches); the values are the same either way.
        shared = getattr(cost, "decode_affine_memo", None)
        self._affine = shared if shared is not None else {}
        # Requests on the engine, waiting or running: `load` kept as a count (a plain
        # attribute is cheap to compare over many engines).
        self.n_requests = 0
        self._per_request = recorder.per_request
        # No SimPy process: the engine is a state machine run by timers (`Timers`: a
        # segment's end, a wake-up from idle), so a batch change costs no event object and
        # no generator resumption. It starts like a process would (an urgent event now).
        self._timers = Timers.of(env)
        self._sleeping = False  # idle, waiting for work (the process's `yield idle`)
        self._wake_pending = False  # a wake-up from idle is scheduled
        self._seg_id = 0  # the segment in flight; its timer is stale once this moves on
        self._end = 0.0  # when the segment in flight ends
        self._split_t = -1.0  # when a batch change last cut the segment in flight
        self.down = False  # crashed: admits nothing until `restart`
        # Per-request engine-loop CPU work (`rollout.request_overhead`): request events
        # (admissions, finishes) since the last segment start, paid as a stall before the
        # next one; work left when the engine goes idle runs on until `_stall_until`.
        self.request_overhead_s = request_overhead_s
        self._events = 0
        self._stall_until = 0.0
        self.slowdown = 1.0  # fail-slow: every iteration takes this many times longer
        # A fitted engine speed (`framework.rollout_speed`) divides every iteration's time;
        # `_scale` is the factor an iteration's cost is multiplied by (slowdown / speed).
        self.speed = speed
        self._scale = 1.0 / speed
        boot = simpy.Event(env)
        boot._ok, boot._value = True, None
        boot.callbacks.append(self._on_boot)
        env.schedule(boot, URGENT)

    # ------------------------------------------------------------------ public API
    @property
    def running(self) -> i64:
        return len(self.prefilling) + len(self.decoding)

    @property
    def load(self) -> i64:
        """Requests on this engine (running + waiting), for least-loaded dispatch."""
        return self.running + len(self.waiting)

    @property
    def kv_used(self) -> i64:
        return self._kv_const + len(self.decoding) * self.clock + self._kv_prefill

    def submit(self, req: Request, front: bool = False) -> None:
        """Queue a request; it is admitted at the next iteration boundary. `front` puts it
        ahead of the requests already waiting (one recovered after a crash)."""
        if req.prefix_tokens >= req.output_tokens:
            raise ValueError(f"request {req.rid}: prefix {req.prefix_tokens} >= output "
                             f"{req.output_tokens}")
        if req.prompt_tokens + req.output_tokens > self.kv_capacity:
            raise ValueError(
                f"request {req.rid} needs {req.prompt_tokens + req.output_tokens} KV tokens, "
                f"more than engine {self.name} holds ({self.kv_capacity})")
        req.status = "waiting"
        req.generated = req.prefix_tokens
        req._cached = 0
        if self.prefix_caching and req.cache_key is not None:
            if self._cache:
                self._evict()
            self.cache_lookups += 1
            # `pop(key, 0)` as a get and a delete: compiled, both are direct dict calls,
            # where a `pop` with a default is a method looked up by name (issue 40).
            cache = self._cache
            hit: i64 = cache.get(req.cache_key, 0)
            if hit:
                del cache[req.cache_key]
                self._cached_total -= hit
                req._cached = cached = hit if hit < req.prompt_tokens else req.prompt_tokens
                self.cache_hits += 1
                self.cache_hit_tokens += cached
        req.t_submit = self._timers.now_s()
        req.engine = self.name
        if front:
            self.waiting.appendleft(req)
        else:
            self._wait_append(req)
        self.n_requests += 1
        self._poke()

    def abort(self, reqs: list[Request] | None = None) -> list[Request]:
        """Abort `reqs` (default: all) now; each keeps the tokens generated so far.

        Progress counts whole iterations completed by now; the iteration in flight still
        completes for the sequences that remain. A sequence whose last token lands at this
        very instant is not aborted: it finishes normally.
        """
        now = self.env.now
        in_head = self._in_segment and self._seg_head_s > 0 \
            and now < self._seg_t0 + self._seg_head_s
        # The head iteration's effects were applied when it started; while it is still in
        # flight its token does not count yet, so every decoding sequence is one behind.
        clock_now = self.clock + (self._completed_iterations() if self._in_segment else 0) \
            - (1 if in_head else 0)
        targets = list(reqs) if reqs is not None else [
            *self.waiting, *self.prefilling, *self.decoding.values()]
        aborted: list[Request] = []
        for r in targets:
            if r.status == "waiting":
                self.waiting.remove(r)
            elif r.status == "prefill":
                self.prefilling.remove(r)
                self._kv_prefill -= r._prefill_left + r._prefill_done + 1
            elif r.status == "decode":
                if clock_now - r._base >= r.output_tokens:
                    continue  # its last token lands at this instant: it finishes normally
                del self.decoding[r._entry]
                r.generated = clock_now - r._base
                self._kv_const -= r.prompt_tokens - r._base
                if r.t_first_token > now:  # its prefill was still in flight
                    r.t_first_token = math.nan
            else:
                continue
            r.status = "aborted"
            r.t_finish = self.env.now
            aborted.append(r)
        if aborted:
            self.n_requests -= len(aborted)
            self.recorder.instant(self._track, "abort", now, requests=len(aborted))
            self._poke(arrival=False)
        for r in aborted:
            self._emit_request(r)
        return aborted

    def crash(self) -> list[Request]:
        """Fail-stop now: every request on the engine, waiting or running, is taken off it
        with the tokens generated so far (counted as `abort` counts them) and without
        calling its on_done, since whoever recovers the engine decides its fate. The prefix
        cache is lost, and the engine admits nothing until `restart`."""
        reqs = [*self.waiting, *self.prefilling, *self.decoding.values()]
        hooks = [r.on_done for r in reqs]
        for r in reqs:
            r.on_done = None
        self.down = True
        lost = self.abort(reqs)
        for r, hook in zip(reqs, hooks, strict=True):
            r.on_done = hook
        self._cache.clear()
        self._cached_total = 0
        self.recorder.instant(self._track, "crash", self._timers.now(), requests=len(lost))
        return lost

    def restart(self) -> None:
        """Serve again after a crash (requests submitted meanwhile have waited)."""
        self.down = False
        self.recorder.instant(self._track, "restart", self._timers.now())
        self._poke(arrival=False)

    def set_slowdown(self, factor: float) -> None:
        """Run every iteration from the next one on `factor` times slower (1: healthy)."""
        self.slowdown = factor
        self._scale = factor / self.speed
        self.recorder.instant(self._track, "slowdown", self._timers.now(), factor=factor)
        self._poke(arrival=False)

    # ------------------------------------------------------------------ internals
    def _poke(self, arrival: bool = True) -> None:
        """Wake an idle engine, or stop a multi-iteration segment after the iteration in
        flight so the batch can change. An arrival that could not be admitted anyway (FCFS
        queue already blocked, or the running cap reached) does not split the segment."""
        if self._sleeping:
            if not self._wake_pending and not self.down:
                self._wake_pending = True
                # 0, not 0.0: as Event.succeed. The engine itself as the target, with no
                # segment: called natively (`on_timer`), not as a bound method.
                self._timers.call_in(0, self, None)
            return
        if not self._in_segment:
            return
        now = self._timers.now_s()
        if now == self._split_t:
            return  # already cut at the iteration in flight: the same end again
        if self._seg_n + (1 if self._seg_head_s > 0 else 0) <= 1:
            return  # the segment is a single iteration: its end is the next boundary anyway
        if arrival and (len(self.waiting) > 1
                        or len(self.prefilling) + len(self.decoding) >= self.max_running):
            return
        # Stop after the iteration in flight (the segment's timer is superseded).
        self._split_t = now
        done = self._completed_iterations()
        since = now - self._seg_t0
        if since >= self._seg_head_s and done < self._seg_n:
            self._seg_n = done + 1
            self._end = self._seg_t0 + self._seg_head_s + self._decode_time(done + 1)
        elif since < self._seg_head_s:
            self._seg_n = 0
            self._end = self._seg_t0 + self._seg_head_s
        # Every iteration already done (rounding): the segment ends now, by a timer of its
        # own rather than inside the caller.
        self._arm(self._end - now if now < self._end else 0.0)

    def _decode_time(self, n: i64) -> float:
        """Time of the first n decode iterations of the current segment (closed form)."""
        a, b, k0, bsz = self._seg_a, self._seg_b, self._seg_k0, self._seg_batch
        return float(n) * a + b * (float(n * k0) + float(bsz * n * (n - 1)) / 2)

    def _completed_iterations(self) -> i64:
        """Decode iterations of the current segment completed by now (head counts as done)."""
        elapsed = self._timers.now_s() - self._seg_t0 - self._seg_head_s
        if elapsed <= 0 or self._seg_n == 0:
            return 0
        a, b, k0, bsz = self._seg_a, self._seg_b, self._seg_k0, self._seg_batch
        # Solve (b*B/2) n^2 + (a + b*k0 - b*B/2) n - elapsed = 0 for n, then fix rounding.
        qa, qb = b * float(bsz) / 2, a + b * float(k0) - b * float(bsz) / 2
        seg_n = self._seg_n
        n: i64 = seg_n
        if qa > 0:
            n = int((-qb + math.sqrt(qb * qb + 4 * qa * elapsed)) / (2 * qa))
        elif qb > 0:
            n = int(elapsed / qb)
        if n > seg_n:
            n = seg_n
        if n < 0:
            n = 0
        limit = elapsed + 1e-12
        # `_decode_time(n)`, inlined
        while n > 0 and float(n) * a + b * (float(n * k0) + float(bsz * n * (n - 1)) / 2) > limit:
            n -= 1
        while n < seg_n and float(n + 1) * a + b * (float((n + 1) * k0)
                                                    + float(bsz * (n + 1) * n) / 2) <= limit:
            n += 1
        return n

    def _admit(self) -> None:
        waiting, prefilling, decoding = self.waiting, self.prefilling, self.decoding
        running = len(prefilling) + len(decoding)
        kv_used = self._kv_const + len(decoding) * self.clock + self._kv_prefill
        capacity = self.kv_capacity
        while waiting and running < self.max_running:
            r = waiting[0]
            need = r.prompt_tokens + r.generated
            # Like vLLM's watermark: keep room for the running batch to grow, so a new
            # admission is not preempted at once; an empty engine admits what fits at all.
            limit = capacity - self._watermark if running else capacity
            if kv_used + need + 1 > limit:
                break
            self._wait_popleft()
            r.status = "prefill"
            # Cached prompt tokens are attended to but not computed again; a hit is used
            # once (a preempted sequence recomputes everything).
            cached = r._cached
            if cached > need - 1:
                cached = need - 1
            r._cached = 0
            r._prefill_left = need - cached
            r._prefill_done = cached
            self._order += 1
            r._order = self._order
            self._kv_prefill += need + 1  # the prompt plus the token its prefill samples
            kv_used += need + 1
            running += 1
            prefilling.append(r)
            self._events += 1
        if self._cache:
            self._evict()

    def _join_decode(self, r: Request) -> None:
        r.status = "decode"
        r._base = base = self.clock - r.generated
        self._kv_const += r.prompt_tokens - base
        entry: Any = ((base + r.output_tokens) << _ORDER_BITS) | r._order
        r._entry = entry
        self.decoding[entry] = r
        _heappush(self._heap, entry)
        due = base + r.output_tokens
        if due < self._due:
            self._due = due

    def _preempt_one(self) -> None:
        """Free the KV of the most recently admitted running sequence (vLLM recompute)."""
        victim: Request | None = None
        if self.prefilling:
            victim = self.prefilling[-1]
        if self.decoding:
            last = self.decoding[next(reversed(self.decoding))]
            if victim is None or last._order > victim._order:
                victim = last
        if victim is None:
            raise RuntimeError(f"engine {self.name}: KV exhausted with nothing to preempt")
        if victim.status == "prefill":
            self.prefilling.pop()
            self._kv_prefill -= victim._prefill_left + victim._prefill_done + 1
        else:
            del self.decoding[victim._entry]
            victim.generated = self.clock - victim._base
            self._kv_const -= victim.prompt_tokens - victim._base
        victim.status = "waiting"
        victim.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(victim)
        if self._per_request:
            self.recorder.instant(self._track, "preempt", self._timers.now(),
                                  rid=victim.rid, generated=victim.generated)

    def _head(self, now: float) -> float:
        """Run one mixed iteration (prefill chunks + decodes) now; returns its cost.

        Its effects are applied at once; finishes it causes are signalled at segment end.
        """
        prefilling = self.prefilling
        bsz = len(self.decoding)
        kv_dec = self._kv_const + bsz * self.clock
        budget = self.max_batched - bsz
        chunk_total = 0
        chunks: list[tuple[int, int]] = []
        # The prefills this iteration completes are its first ones: each takes its whole
        # rest until the budget runs out, and the one it runs out in gets a part.
        completed = 0
        for r in prefilling:
            if budget <= 0:
                break
            left = r._prefill_left
            take = left if left < budget else budget
            budget -= take
            chunk_total += take
            chunks.append((take, r._prefill_done))
            r._prefill_left = left - take
            r._prefill_done += take
            if left == take:
                completed += 1
        native = self._native_cost
        if native is not None:
            cost = native.step_total_s(bsz, kv_dec, chunk_total, 0, chunks) * self._scale
        else:
            cost = self.cost.step(bsz, kv_dec, chunk_total, 0, chunks).total_s * self._scale
        self.clock += 1
        self.iterations += 1
        for i in range(completed):
            r = prefilling[i]
            self._kv_prefill -= r._prefill_done + 1
            r.generated += 1  # the last prefill chunk samples the first new token
            if r.t_first_token != r.t_first_token:  # nan: its first token
                r.t_first_token = now + cost
            self._join_decode(r)
        if completed:
            del prefilling[:completed]
        return cost

    def _plan(self, now: float) -> float:
        """Start a segment now; returns its duration. Sets the segment fields."""
        head_s = 0.0
        decoding = self.decoding
        self._seg_t0 = now
        if self.prefilling and len(decoding) < self.max_batched:
            head_s = self._head(now)
            if self._due <= self.clock or self.prefilling or self.iteration_mode:
                # A finish, or more prefill: the batch changes after this one iteration.
                self._set_segment(head_s, 0)
                return head_s
        bsz = len(decoding)
        if bsz == 0:
            self._set_segment(head_s, 0)
            return head_s
        clock = self.clock
        k0 = self._kv_const + bsz * clock
        n = self._due - clock  # iterations to the next finish
        n_kv = (self.kv_capacity - k0 - self._kv_prefill) // bsz
        if n_kv < n:
            n = n_kv
        if self.iteration_mode:
            n = min(n, 1)
        if n <= 0:
            self._set_segment(head_s, 0)
            return head_s
        if self.iteration_mode:
            self._set_segment(head_s, n)
            dt = self.cost.step(bsz, k0).total_s * self._scale
            self._seg_a, self._seg_b = dt, 0.0
            return head_s + dt
        ab = self._affine.get(bsz)
        if ab is None:
            ab = self._affine[bsz] = self.cost.decode_affine(bsz)
        a, b = ab
        if self._scale != 1.0:
            a, b = a * self._scale, b * self._scale
        self._seg_head_s = head_s
        self._seg_n = n
        self._seg_a, self._seg_b, self._seg_k0, self._seg_batch = a, b, k0, bsz
        return head_s + (float(n) * a + b * (float(n * k0) + float(bsz * n * (n - 1)) / 2))

    def _set_segment(self, head_s: float, n: i64, a: float = 0.0, b: float = 0.0,
                     k0: i64 = 0, bsz: i64 = 0) -> None:
        self._seg_head_s = head_s
        self._seg_n = n
        self._seg_a, self._seg_b, self._seg_k0, self._seg_batch = a, b, k0, bsz

    def _finish_segment(self) -> None:
        n = self._seg_n
        self.clock = clock = self.clock + n
        self.iterations += n
        if self._due <= clock:
            self._finishes(clock, self._timers.now_s())

    def _finishes(self, clock: i64, now: float) -> None:
        """Sequences whose last token is in by decode clock `clock` finish now."""
        heap = self._heap
        decoding = self.decoding
        caching = self.prefix_caching
        # The clock only ever reaches the next finish, never passes it (a segment ends at
        # it), so every entry popped here finishes at `clock` or has lapsed.
        below = (clock + 1) << _ORDER_BITS
        while heap:
            top: int = heap[0]
            if top >= below:
                break
            entry = _heappop(heap)
            self._due = _due_of(heap)
            r = decoding.get(entry)  # get and del: see `submit`
            if r is None:
                continue  # preempted or aborted since its entry was pushed
            del decoding[entry]
            self.n_requests -= 1
            self._kv_const -= r.prompt_tokens - r._base
            r.generated = out = r.output_tokens
            r.status = "finished"
            r.t_finish = now
            self.finished += 1
            self._events += 1
            self._busy_requests += 1
            self._busy_tokens += out - r.prefix_tokens
            if self._per_request:
                self._emit_request(r)
            key = r.cache_key
            if caching and key is not None:
                tokens = r.prompt_tokens + out
                cache = self._cache
                old: i64 = cache.get(key, 0)
                if old:
                    del cache[key]  # a finish enters the LRU order last
                self._cached_total += tokens - old
                cache[key] = _TOKEN_INTS[tokens] if 0 <= tokens < _TOKEN_INTS_MAX else tokens
                self._evict()
            done = r.on_done
            if done is not None:
                if isinstance(done, DoneTarget):
                    done.request_done(r)
                else:
                    done(r)

    def _evict(self) -> None:
        """Drop least recently used entries until the cache fits the free KV."""
        free = self.kv_capacity - (self._kv_const + len(self.decoding) * self.clock
                                   + self._kv_prefill)
        if self._cached_total <= free:
            return
        if free < 0:
            free = 0
        cache = self._cache
        while self._cached_total > free and cache:
            tokens: i64 = cache.pop(next(iter(cache)))
            self._cached_total -= tokens

    def _emit_request(self, r: Request) -> None:
        if self._per_request:
            self.recorder.span(f"rollout.{self.name}.requests", r.status, r.t_submit,
                               r.t_finish, rid=r.rid, prompt=r.prompt_tokens,
                               generated=r.generated, preemptions=r.preemptions)
        if r.status == "aborted" and r.on_done is not None:
            r.on_done(r)

    def _arm(self, delay: float) -> None:
        """The segment in flight ends `delay` from now (any earlier timer is stale)."""
        self._seg_id = seg_id = self._seg_id + 1
        self._timers.call_in_s(delay, self, seg_id)  # `on_timer`

    def on_timer(self, arg: Any) -> None:
        """The engine's timers: the end of segment `arg` (`_arm`, `_proceed`), or with
        None a wake-up from idle (`_poke`)."""
        if arg is None:
            self._on_wake_up(None)
        else:
            self._on_segment_end(arg)

    def _on_segment_end(self, seg_id: i64) -> None:
        if seg_id != self._seg_id:
            return  # superseded by a batch change
        now = self._timers.now_s()
        if now < self._end:  # rounding of now + (end - now): wait the rest
            self._arm(self._end - now)
            return
        self._in_segment = False
        n = self._seg_n
        self.clock = clock = self.clock + n
        self.iterations += n
        if self._due <= clock:
            self._finishes(clock, now)
        self._proceed()

    def _on_boot(self, _event: simpy.Event) -> None:
        self._on_wake_up(None)

    def _on_wake_up(self, _arg: Any) -> None:
        self._sleeping = self._wake_pending = False
        self._proceed()

    def _proceed(self) -> None:
        """From a batch boundary: admit, preempt, and start the next segment, or go idle."""
        waiting, prefilling, decoding = self.waiting, self.prefilling, self.decoding
        # A float for the arithmetic (compiled: no boxed numbers); the busy span's start
        # takes `now()`, the clock as it is (an int 0 at the start), as records do.
        now = self._timers.now_s()
        if self.down:  # crashed: nothing runs until restart
            self._go_idle()
            self._sleeping = True
            return
        while True:
            if waiting:
                self._admit()
            elif self._cache:
                self._evict()
            n_dec = len(decoding)
            if not prefilling and not n_dec:
                if waiting:
                    raise RuntimeError(f"engine {self.name}: cannot admit {waiting[0].rid}")
                self._go_idle()
                self._sleeping = True
                return
            if self._busy_since is None:
                self._busy_since = self._timers.now()
            clock = self.clock
            k0 = self._kv_const + n_dec * clock
            kv = k0 + self._kv_prefill
            if n_dec and kv + n_dec > self.kv_capacity:
                self._preempt_one()
                continue
            # The gauges, when one moved by its resolution (`_gauge`'s test, inlined).
            run = len(prefilling) + n_dec
            wait = len(waiting)
            lkv, lrun, lwait = self._last_kv, self._last_run, self._last_wait
            # |a - b| as a comparison: compiled, `abs` of an int is a generic call.
            if (kv != lkv and (kv == 0 or lkv == 0 or (kv - lkv if kv > lkv else lkv - kv)
                               >= self._kv_step)) or (
                    run != lrun and (run == 0 or lrun == 0
                                     or (run - lrun if run > lrun else lrun - run)
                                     >= self._count_step)) or (
                    wait != lwait and (wait == 0 or lwait == 0
                                       or (wait - lwait if wait > lwait else lwait - wait)
                                       >= self._count_step)):
                self._gauge(kv, run, wait)
            start = now
            if self.request_overhead_s:
                start = self._stall(now)
            if (prefilling and n_dec < self.max_batched) or self.iteration_mode:
                duration = self._plan(start)
            else:
                # Only decodes (the common case; `_plan` inlined): up to the next finish or
                # KV exhaustion, whichever comes first.
                n = self._due - clock
                n_kv = (self.kv_capacity - kv) // n_dec
                if n_kv < n:
                    n = n_kv
                self._seg_t0 = start
                self._seg_head_s = 0.0
                if n <= 0:
                    self._seg_n = 0
                    self._seg_a, self._seg_b, self._seg_k0, self._seg_batch = 0.0, 0.0, 0, 0
                    duration = 0.0
                else:
                    ab = self._affine.get(n_dec)
                    if ab is None:
                        ab = self._affine[n_dec] = self.cost.decode_affine(n_dec)
                    a, b = ab
                    if self._scale != 1.0:
                        a, b = a * self._scale, b * self._scale
                    self._seg_n = n
                    self._seg_a, self._seg_b, self._seg_k0, self._seg_batch = a, b, k0, n_dec
                    duration = 0.0 + (float(n) * a
                                      + b * (float(n * k0) + float(n_dec * n * (n - 1)) / 2))
            end = start + duration
            if now < end:
                self._in_segment = True
                self._end = end
                self._seg_id = seg_id = self._seg_id + 1
                self._timers.call_in_s(end - now, self, seg_id)  # `on_timer`
                return
            self._finish_segment()

    def _stall(self, now: float) -> float:
        """When the next segment starts: after the engine loop's per-request work for the
        request events since the last start (and any left from going idle)."""
        start = self._stall_until if self._stall_until > now else now
        start += float(self._events) * self.request_overhead_s
        self._events = 0
        return start

    def _record_gauges(self) -> None:
        n_dec = len(self.decoding)
        self._gauge(self._kv_const + n_dec * self.clock + self._kv_prefill,
                    len(self.prefilling) + n_dec, len(self.waiting))

    def _gauge(self, kv: i64, run: i64, wait: i64) -> None:
        """KV tokens in use and the running and waiting counts at a batch change.

        A gauge is recorded when it moved by at least its resolution since its last record,
        or reached or left 0: KV by 1% of the cache, the counts by 1/32 of the running cap
        (exact for caps up to 32). They change at nearly every batch change, and finer steps
        are invisible in a plot but, recorded exactly, cost a fifth of a large run's time
        and most of its memory (benchmarks/bench_large_sync.py).
        """
        lkv, lrun, lwait = self._last_kv, self._last_run, self._last_wait
        kv_step, count_step = self._kv_step, self._count_step
        now = self._timers.now()
        changed = False
        cols = self._cols
        if kv != lkv and (kv == 0 or lkv == 0
                          or (kv - lkv if kv > lkv else lkv - kv) >= kv_step):
            cols.append(self._sid_kv, now, kv)
            lkv, changed = kv, True
        if run != lrun and (run == 0 or lrun == 0
                            or (run - lrun if run > lrun else lrun - run) >= count_step):
            cols.append(self._sid_running, now, run)
            lrun, changed = run, True
        if wait != lwait and (wait == 0 or lwait == 0
                              or (wait - lwait if wait > lwait else lwait - wait) >= count_step):
            cols.append(self._sid_waiting, now, wait)
            lwait, changed = wait, True
        if changed:
            self._last_kv, self._last_run, self._last_wait = lkv, lrun, lwait

    def close(self) -> None:
        """The run ends now: record the gauges exactly as they are and write the busy span
        still open (an async engine rarely goes idle, so without this its busy time would
        be lost). What the engine would do after this moment is not simulated, so the span
        ends here, marked `open`."""
        n_dec = len(self.decoding)
        now = self._timers.now()
        for sid, value, last in zip(
                (self._sid_kv, self._sid_running, self._sid_waiting),
                (self._kv_const + n_dec * self.clock + self._kv_prefill,
                 len(self.prefilling) + n_dec, len(self.waiting)),
                (self._last_kv, self._last_run, self._last_wait), strict=True):
            if value != last:
                self._cols.append(sid, now, value)
        self._end_busy(cut=True)

    def _go_idle(self) -> None:
        self._record_gauges()
        if self._events:
            # The finishes' work still runs after the last iteration; a request arriving
            # meanwhile waits for it (`_stall`). Idle time absorbs it otherwise.
            self._stall_until = self._timers.now_s() \
                + float(self._events) * self.request_overhead_s
            self._events = 0
        self._end_busy()

    def _end_busy(self, cut: bool = False) -> None:
        """Write the busy period in progress (if any) as a `busy` span ending now (`cut`:
        by the run's end, marked `open`)."""
        if self._busy_since is None:
            return
        # A `Span` of attributes pool, gpus, requests, tokens (and open) once read.
        self._busy_cols.append(self._busy_sid, self._busy_since, self._timers.now(),
                               self._busy_requests, self._busy_tokens, cut)
        self._busy_since = None
        self._busy_requests = self._busy_tokens = 0
