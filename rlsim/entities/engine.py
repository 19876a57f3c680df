"""Rollout engine: one vLLM/SGLang-like server with continuous batching.

Owns the batch of one engine: FCFS admission at iteration boundaries under a cap on running
sequences and a KV-cache capacity in tokens, chunked prefill under a per-iteration token
budget, preemption by recompute (most recently admitted first) when KV runs out, abort that
returns partial tokens, add-with-prefix (a retained prefix is re-prefilled), and an
optional prefix cache (finished contexts kept in free KV, LRU-evicted, so a later request
with the same cache key prefills only its new tokens).

Events only when something changes. All decoding sequences advance together, so the engine
keeps one decode clock: a decoding sequence's generated count is `clock - base`, the KV of all
decoding sequences is `kv_const + B * clock`, and finishes come off a heap keyed by the clock
value at which they finish. A decode iteration costs `a + b * kv_tokens` (the cost model's
`decode_affine`), so the time of n iterations with a fixed batch is an arithmetic series,
summed in closed form: one SimPy event covers every iteration up to the next batch change
(a finish, KV exhaustion, an arrival or abort). `mode="iteration"` schedules one event per
iteration and prices each with `InferenceCost.step`, as the reference for tests.
"""

from __future__ import annotations

import contextlib
import heapq
import math
from collections import OrderedDict, deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import simpy

from rlsim.trace import Recorder


class _StepCost(Protocol):
    @property
    def total_s(self) -> float: ...


class EngineCost(Protocol):
    """The slice of `rlsim.cost.InferenceCost` the engine uses."""

    def step(self, decode_seqs: int, kv_tokens: int, prefill_tokens: int = 0,
             prefill_context_tokens: int = 0,
             prefill_chunks: Sequence[tuple[int, int]] | None = None) -> _StepCost: ...

    def decode_affine(self, batch: int) -> tuple[float, float]: ...


@dataclass(slots=True, eq=False)
class Request:
    """One generation request: a prompt and the response length it will reach.

    `output_tokens` is the full response length the workload drew; `prefix_tokens` of it
    already exist (retained from an aborted or migrated attempt) and are re-prefilled.
    """

    rid: int
    prompt_tokens: int
    output_tokens: int
    prefix_tokens: int = 0
    on_done: Callable[[Request], None] | None = None
    tag: Any = None
    cache_key: Any = None
    """With prefix caching: the context this request extends (e.g. its trajectory). A hit
    skips the prefill of the cached tokens; the finished context is cached under it."""
    # Filled in by the engine.
    status: str = "new"  # waiting | prefill | decode | finished | aborted
    generated: int = 0
    t_submit: float = math.nan
    t_first_token: float = math.nan
    t_finish: float = math.nan
    preemptions: int = 0
    engine: str = ""
    _prefill_left: int = 0
    _prefill_done: int = 0
    _cached: int = 0  # prompt tokens found in the prefix cache at submit
    _base: int = 0  # decode clock minus generated tokens, while decoding
    _order: int = 0

    @property
    def context_tokens(self) -> int:
        return self.prompt_tokens + self.generated


_GAUGES = ("kv_tokens", "running", "waiting")


class RolloutEngine:
    """A continuous-batching inference server on `tp` GPUs."""

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
    ) -> None:
        if mode not in ("skip", "iteration"):
            raise ValueError(f"unknown engine mode {mode!r}")
        if kv_capacity_tokens <= 0:
            raise ValueError(f"engine {name}: no KV capacity ({kv_capacity_tokens} tokens)")
        self.env = env
        self.name = name
        self.cost = cost
        self.kv_capacity = kv_capacity_tokens
        self.max_running = max_running_seqs
        self.max_batched = max_batched_tokens
        self.recorder = recorder
        self.iteration_mode = mode == "iteration"
        self._interrupt_pending = False
        self.pool = pool
        self.gpus = gpus
        self.waiting: deque[Request] = deque()
        self.prefilling: dict[int, Request] = {}
        self.decoding: dict[int, Request] = {}  # admission order, for LIFO preemption
        self._heap: list[tuple[int, int, Request]] = []
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
        self._idle: simpy.Event | None = None
        self._busy_since: float | None = None
        self._busy_requests = 0  # finished during the current busy period
        self._busy_tokens = 0
        self._track = f"rollout.{name}"
        # Last recorded (kv_tokens, running, waiting) and the change that is worth a record.
        self._gauges = (0, 0, 0)
        count_step = max(1, max_running_seqs // 32)
        self._gauge_steps = (max(1, kv_capacity_tokens // 100), count_step)
        for gauge in _GAUGES:  # every series starts at 0
            recorder.counter(self._track, gauge, env.now, 0)
        self.iterations = 0
        self.preemptions = 0
        self.finished = 0
        # Prefix cache (vLLM automatic prefix caching): finished contexts by cache key, least
        # recently used first. It holds only KV the running sequences leave free, so entries
        # are evicted (LRU) whenever it outgrows that; the check runs at each submit, admit
        # and finish, not inside a stretch of decode iterations (documented approximation).
        self.prefix_caching = prefix_caching
        self._cache: OrderedDict[Any, int] = OrderedDict()
        self._cached_total = 0
        self.cache_hit_tokens = 0
        self.cache_lookups = 0
        self.cache_hits = 0
        self.process = env.process(self._run())

    # ------------------------------------------------------------------ public API
    @property
    def running(self) -> int:
        return len(self.prefilling) + len(self.decoding)

    @property
    def load(self) -> int:
        """Requests on this engine (running + waiting), for least-loaded dispatch."""
        return self.running + len(self.waiting)

    @property
    def kv_used(self) -> int:
        return self._kv_const + len(self.decoding) * self.clock + self._kv_prefill

    def submit(self, req: Request) -> None:
        """Queue a request; it is admitted at the next iteration boundary."""
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
            self._evict()
            self.cache_lookups += 1
            hit = self._cache.pop(req.cache_key, 0)
            if hit:
                self._cached_total -= hit
                req._cached = min(hit, req.prompt_tokens)
                self.cache_hits += 1
                self.cache_hit_tokens += req._cached
        req.t_submit = self.env.now
        req.engine = self.name
        self.waiting.append(req)
        self._poke()

    def abort(self, reqs: list[Request] | None = None) -> list[Request]:
        """Abort `reqs` (default: all) now; each keeps the tokens generated so far.

        Progress counts whole iterations completed by now; the iteration in flight still
        completes for the sequences that remain. A sequence whose last token lands at this
        very instant is not aborted: it finishes normally.
        """
        now = self.env.now
        in_head = self._in_segment and now < self._seg_t0 + self._seg_head_s
        # The head iteration's effects were applied when it started; while it is still in
        # flight its token does not count yet, so every decoding sequence is one behind.
        clock_now = self.clock + (self._completed_iterations() if self._in_segment else 0) \
            - (1 if in_head else 0)
        targets = list(reqs) if reqs is not None else [
            *self.waiting, *self.prefilling.values(), *self.decoding.values()]
        aborted: list[Request] = []
        for r in targets:
            if r.status == "waiting":
                self.waiting.remove(r)
            elif r.status == "prefill":
                del self.prefilling[r.rid]
                self._kv_prefill -= r._prefill_left + r._prefill_done + 1
            elif r.status == "decode":
                if clock_now - r._base >= r.output_tokens:
                    continue  # its last token lands at this instant: it finishes normally
                del self.decoding[r.rid]
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
            self.recorder.instant(self._track, "abort", now, requests=len(aborted))
            self._poke(arrival=False)
        for r in aborted:
            self._emit_request(r)
        return aborted

    # ------------------------------------------------------------------ internals
    def _poke(self, arrival: bool = True) -> None:
        """Wake an idle engine, or stop a multi-iteration segment after the iteration in
        flight so the batch can change. An arrival that could not be admitted anyway (FCFS
        queue already blocked, or the running cap reached) does not split the segment."""
        if self._idle is not None and not self._idle.triggered:
            self._idle.succeed()
            return
        if not self._in_segment or self._interrupt_pending:
            return
        if self._seg_n + (1 if self._seg_head_s > 0 else 0) <= 1:
            return  # the segment is a single iteration: its end is the next boundary anyway
        if arrival and (len(self.waiting) > 1 or self.running >= self.max_running):
            return
        self._interrupt_pending = True
        self.process.interrupt("batch change")

    def _decode_time(self, n: int) -> float:
        """Time of the first n decode iterations of the current segment (closed form)."""
        a, b, k0, bsz = self._seg_a, self._seg_b, self._seg_k0, self._seg_batch
        return n * a + b * (n * k0 + bsz * n * (n - 1) / 2)

    def _completed_iterations(self) -> int:
        """Decode iterations of the current segment completed by now (head counts as done)."""
        elapsed = self.env.now - self._seg_t0 - self._seg_head_s
        if elapsed <= 0 or self._seg_n == 0:
            return 0
        a, b, k0, bsz = self._seg_a, self._seg_b, self._seg_k0, self._seg_batch
        # Solve (b*B/2) n^2 + (a + b*k0 - b*B/2) n - elapsed = 0 for n, then fix rounding.
        qa, qb = b * bsz / 2, a + b * k0 - b * bsz / 2
        if qa > 0:
            n = int((-qb + math.sqrt(qb * qb + 4 * qa * elapsed)) / (2 * qa))
        else:
            n = int(elapsed / qb) if qb > 0 else self._seg_n
        n = max(0, min(n, self._seg_n))
        while n > 0 and self._decode_time(n) > elapsed + 1e-12:
            n -= 1
        while n < self._seg_n and self._decode_time(n + 1) <= elapsed + 1e-12:
            n += 1
        return n

    def _admit(self) -> None:
        while self.waiting and self.running < self.max_running:
            r = self.waiting[0]
            need = r.prompt_tokens + r.generated
            # Like vLLM's watermark: keep room for the running batch to grow, so a new
            # admission is not preempted at once; an empty engine admits what fits at all.
            limit = self.kv_capacity - self._watermark if self.running else self.kv_capacity
            if self.kv_used + need + 1 > limit:
                break
            self.waiting.popleft()
            r.status = "prefill"
            # Cached prompt tokens are attended to but not computed again; a hit is used
            # once (a preempted sequence recomputes everything).
            cached = min(r._cached, need - 1)
            r._cached = 0
            r._prefill_left = need - cached
            r._prefill_done = cached
            self._order += 1
            r._order = self._order
            self._kv_prefill += need + 1  # the prompt plus the token its prefill samples
            self.prefilling[r.rid] = r
        if self._cache:
            self._evict()

    def _join_decode(self, r: Request) -> None:
        r.status = "decode"
        r._base = self.clock - r.generated
        self._kv_const += r.prompt_tokens - r._base
        self.decoding[r.rid] = r
        heapq.heappush(self._heap, (r._base + r.output_tokens, r._order, r))

    def _preempt_one(self) -> None:
        """Free the KV of the most recently admitted running sequence (vLLM recompute)."""
        victim: Request | None = None
        if self.prefilling:
            victim = self.prefilling[next(reversed(self.prefilling))]
        if self.decoding:
            last = self.decoding[next(reversed(self.decoding))]
            if victim is None or last._order > victim._order:
                victim = last
        if victim is None:
            raise RuntimeError(f"engine {self.name}: KV exhausted with nothing to preempt")
        if victim.status == "prefill":
            del self.prefilling[victim.rid]
            self._kv_prefill -= victim._prefill_left + victim._prefill_done + 1
        else:
            del self.decoding[victim.rid]
            victim.generated = self.clock - victim._base
            self._kv_const -= victim.prompt_tokens - victim._base
        victim.status = "waiting"
        victim.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(victim)
        if self.recorder.per_request:
            self.recorder.instant(self._track, "preempt", self.env.now,
                                  rid=victim.rid, generated=victim.generated)

    def _head(self) -> float:
        """Run one mixed iteration (prefill chunks + decodes) now; returns its cost.

        Its effects are applied at once; finishes it causes are signalled at segment end.
        """
        bsz = len(self.decoding)
        kv_dec = self._kv_const + bsz * self.clock
        budget = self.max_batched - bsz
        chunk_total = 0
        chunks: list[tuple[int, int]] = []
        completed: list[Request] = []
        for r in self.prefilling.values():
            if budget <= 0:
                break
            take = min(r._prefill_left, budget)
            budget -= take
            chunk_total += take
            chunks.append((take, r._prefill_done))
            r._prefill_left -= take
            r._prefill_done += take
            if r._prefill_left == 0:
                completed.append(r)
        cost = self.cost.step(bsz, kv_dec, chunk_total, 0, chunks).total_s
        self.clock += 1
        self.iterations += 1
        for r in completed:
            del self.prefilling[r.rid]
            self._kv_prefill -= r._prefill_done + 1
            r.generated += 1  # the last prefill chunk samples the first new token
            if math.isnan(r.t_first_token):
                r.t_first_token = self.env.now + cost
            self._join_decode(r)
        return cost

    def _plan(self) -> float:
        """Start a segment now; returns its duration. Sets the segment fields."""
        head_s = 0.0
        progress_prefill = bool(self.prefilling) and len(self.decoding) < self.max_batched
        if progress_prefill:
            head_s = self._head()
            if (self._heap and self._heap[0][0] <= self.clock) or self.prefilling:
                # A finish, or more prefill: the batch changes after this one iteration.
                self._set_segment(head_s, 0)
                return head_s
            if self.iteration_mode:
                self._set_segment(head_s, 0)
                return head_s
        bsz = len(self.decoding)
        if bsz == 0:
            self._set_segment(head_s, 0)
            return head_s
        n_fin = self._heap[0][0] - self.clock
        free = self.kv_capacity - self.kv_used
        n_kv = free // bsz
        n = min(n_fin, n_kv)
        if self.iteration_mode:
            n = min(n, 1)
        if n <= 0:
            self._set_segment(head_s, 0)
            return head_s
        k0 = self._kv_const + bsz * self.clock
        if self.iteration_mode:
            self._set_segment(head_s, n)
            dt = self.cost.step(bsz, k0).total_s
            self._seg_a, self._seg_b = dt, 0.0
            return head_s + dt
        a, b = self.cost.decode_affine(bsz)  # the cost model caches by batch size
        self._set_segment(head_s, n, a, b, k0, bsz)
        return head_s + self._decode_time(n)

    def _set_segment(self, head_s: float, n: int, a: float = 0.0, b: float = 0.0,
                     k0: int = 0, bsz: int = 0) -> None:
        self._seg_t0 = self.env.now
        self._seg_head_s = head_s
        self._seg_n = n
        self._seg_a, self._seg_b, self._seg_k0, self._seg_batch = a, b, k0, bsz

    def _finish_segment(self) -> None:
        self.clock += self._seg_n
        self.iterations += self._seg_n
        now = self.env.now
        heap = self._heap
        while heap and heap[0][0] <= self.clock:
            _, _, r = heapq.heappop(heap)
            if r.status != "decode" or r._base + r.output_tokens > self.clock:
                continue  # stale entry of a preempted/aborted sequence
            del self.decoding[r.rid]
            self._kv_const -= r.prompt_tokens - r._base
            r.generated = r.output_tokens
            r.status = "finished"
            r.t_finish = now
            self.finished += 1
            self._busy_requests += 1
            self._busy_tokens += r.output_tokens - r.prefix_tokens
            self._emit_request(r)
            if self.prefix_caching and r.cache_key is not None:
                self._cache_put(r.cache_key, r.prompt_tokens + r.generated)
            if r.on_done is not None:
                r.on_done(r)

    def _cache_put(self, key: Any, tokens: int) -> None:
        old = self._cache.pop(key, 0)
        self._cache[key] = tokens
        self._cached_total += tokens - old
        self._evict()

    def _evict(self) -> None:
        """Drop least recently used entries until the cache fits the free KV."""
        free = max(0, self.kv_capacity - self.kv_used)
        while self._cached_total > free and self._cache:
            _, tokens = self._cache.popitem(last=False)
            self._cached_total -= tokens

    def _emit_request(self, r: Request) -> None:
        if self.recorder.per_request:
            self.recorder.span(f"rollout.{self.name}.requests", r.status, r.t_submit,
                               r.t_finish, rid=r.rid, prompt=r.prompt_tokens,
                               generated=r.generated, preemptions=r.preemptions)
        if r.status == "aborted" and r.on_done is not None:
            r.on_done(r)

    def _run(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        while True:
            self._admit()
            if not self.prefilling and not self.decoding:
                if self.waiting:
                    raise RuntimeError(f"engine {self.name}: cannot admit {self.waiting[0].rid}")
                self._go_idle()
                self._idle = env.event()
                # A poke that raced the end of the last segment may interrupt this wait;
                # either way the loop re-checks the queue.
                with contextlib.suppress(simpy.Interrupt):
                    yield self._idle
                self._idle = None
                self._interrupt_pending = False
                continue
            if self._busy_since is None:
                self._busy_since = env.now
            if self.decoding and self.kv_used + len(self.decoding) > self.kv_capacity:
                self._preempt_one()
                continue
            self._record_gauges()
            duration = self._plan()
            self._in_segment = True
            end = env.now + duration
            while env.now < end:
                try:
                    yield env.timeout(end - env.now)
                except simpy.Interrupt:
                    # An arrival or abort: stop after the iteration in flight.
                    self._interrupt_pending = False
                    done = self._completed_iterations()
                    if env.now - self._seg_t0 >= self._seg_head_s and done < self._seg_n:
                        self._seg_n = done + 1
                        end = self._seg_t0 + self._seg_head_s + self._decode_time(done + 1)
                    elif env.now - self._seg_t0 < self._seg_head_s:
                        self._seg_n = 0
                        end = self._seg_t0 + self._seg_head_s
            self._in_segment = False
            self._finish_segment()

    def _record_gauges(self) -> None:
        """KV tokens in use and the running and waiting counts at a batch change.

        A gauge is recorded when it moved by at least its resolution since its last record,
        or reached or left 0: KV by 1% of the cache, the counts by 1/32 of the running cap
        (exact for caps up to 32). They change at nearly every batch change, and finer steps
        are invisible in a plot but, recorded exactly, cost a fifth of a large run's time
        and most of its memory (benchmarks/bench_large_sync.py).
        """
        # Called at every batch change: plain locals, no loop (it showed in profiles).
        n_dec = len(self.decoding)
        kv = self._kv_const + n_dec * self.clock + self._kv_prefill
        run = len(self.prefilling) + n_dec
        wait = len(self.waiting)
        lkv, lrun, lwait = self._gauges
        kv_step, count_step = self._gauge_steps
        changed = False
        if kv != lkv and (kv == 0 or lkv == 0 or abs(kv - lkv) >= kv_step):
            self.recorder.counter(self._track, "kv_tokens", self.env.now, kv)
            lkv, changed = kv, True
        if run != lrun and (run == 0 or lrun == 0 or abs(run - lrun) >= count_step):
            self.recorder.counter(self._track, "running", self.env.now, run)
            lrun, changed = run, True
        if wait != lwait and (wait == 0 or lwait == 0 or abs(wait - lwait) >= count_step):
            self.recorder.counter(self._track, "waiting", self.env.now, wait)
            lwait, changed = wait, True
        if changed:
            self._gauges = (lkv, lrun, lwait)

    def _go_idle(self) -> None:
        self._record_gauges()
        if self._busy_since is not None:
            self.recorder.span(self._track, "busy", self._busy_since, self.env.now,
                               pool=self.pool, gpus=self.gpus, requests=self._busy_requests,
                               tokens=self._busy_tokens)
            self._busy_since = None
            self._busy_requests = self._busy_tokens = 0
