"""Rollout engine: closed forms on toy costs, skip vs iteration mode, invariants."""

from __future__ import annotations

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsim.entities.engine import Request, RolloutEngine
from rlsim.trace import Recorder
from tests.conftest import ToyCost


def _run(cost: ToyCost, reqs: list[tuple[int, int]], mode: str = "skip", kv: int = 10**7,
         cap: int = 256, budget: int = 8192, arrivals: list[float] | None = None,
         probe: bool = True, overhead_s: float = 0.0):
    env = simpy.Environment()
    rec = Recorder("request")
    eng = RolloutEngine(env, "e0", cost, kv, cap, budget, rec, mode,
                        request_overhead_s=overhead_s)
    out: list[Request] = []
    max_kv = [0]

    def watch(r: Request) -> None:
        out.append(r)

    def feeder():
        for i, (p, o) in enumerate(reqs):
            if arrivals is not None:
                yield env.timeout(max(arrivals[i] - env.now, 0.0))
            eng.submit(Request(i, p, o, on_done=watch))
        if False:
            yield

    def kv_probe():
        while True:
            max_kv[0] = max(max_kv[0], eng.kv_used)
            yield env.timeout(0.05)
            if len(out) == len(reqs):
                return

    env.process(feeder())
    if probe:
        env.process(kv_probe())
    env.run()
    return env, eng, out, max_kv[0]


def _real_cost():
    from rlsim.config.hardware import lookup_gpu, lookup_model
    from rlsim.cost.inference import InferenceCost
    from rlsim.cost.profile import builtin_profile

    gpu = lookup_gpu("H800")
    return InferenceCost(lookup_model("qwen2.5-7b"), gpu, 1, builtin_profile(gpu))


@pytest.mark.parametrize("which", ["toy", "qwen2.5-7b on H800"])
def test_fixed_lengths_match_closed_form(which, toy_cost):
    cost = toy_cost if which == "toy" else _real_cost()
    n, p, o = 64, 100, 500
    _env, _eng, out, _ = _run(cost, [(p, o)] * n, probe=False)
    # One prefill iteration of all prompts, then o-1 decode iterations of the whole batch,
    # each priced by the cost model's per-iteration step() (not the engine's closed form).
    expect = cost.step(0, 0, n * p, 0, [(p, 0)] * n).total_s
    for i in range(o - 1):
        expect += cost.step(n, n * (p + 1) + i * n).total_s
    assert len(out) == n
    assert abs(max(r.t_finish for r in out) - expect) / expect < 1e-3
    assert all(r.generated == o and r.status == "finished" for r in out)


class _Delegate:
    """An `InferenceCost` seen only through the engine's `EngineCost` protocol."""

    def __init__(self, cost) -> None:
        self.cost = cost

    def step(self, *args, **kwargs):
        return self.cost.step(*args, **kwargs)

    def decode_affine(self, batch: int) -> tuple[float, float]:
        return self.cost.decode_affine(batch)


@settings(max_examples=15, deadline=None)
@given(reqs=st.lists(st.tuples(st.integers(1, 3000), st.integers(2, 400)), min_size=1,
                     max_size=40),
       gaps=st.lists(st.floats(0.0, 0.2), min_size=40, max_size=40),
       budget=st.sampled_from([64, 512, 8192]))
def test_the_cost_model_called_natively_or_through_the_protocol_gives_the_same_run(
        reqs, gaps, budget):
    # The engine calls an InferenceCost natively (issue 40), any other cost through the
    # protocol: the same timings to the last bit, chunked prefills and all.
    arrivals = [sum(gaps[:i + 1]) for i in range(len(reqs))]
    cost = _real_cost()
    runs = [_run(c, reqs, budget=budget, arrivals=arrivals, probe=False)
            for c in (cost, _Delegate(cost))]
    assert runs[0][1]._native_cost is cost and runs[1][1]._native_cost is None
    native, protocol = ([(r.rid, r.t_first_token, r.t_finish) for r in out]
                        for _env, _eng, out, _kv in runs)
    assert native == protocol
    assert len(native) == len(reqs)


def test_skip_and_iteration_modes_agree_with_fewer_events(toy_cost):
    import numpy as np

    rng = np.random.default_rng(1)
    lens = np.minimum(rng.lognormal(6.5, 1.0, 300).astype(int) + 1, 8000)
    reqs = [(int(rng.integers(50, 400)), int(x)) for x in lens]
    env_s, _eng_s, out_s, _ = _run(toy_cost, reqs, "skip", kv=400_000, cap=64, probe=False)
    env_i, _eng_i, out_i, _ = _run(toy_cost, reqs, "iteration", kv=400_000, cap=64, probe=False)
    t_s = max(r.t_finish for r in out_s)
    t_i = max(r.t_finish for r in out_i)
    assert abs(t_s - t_i) / t_i < 1e-3
    ev_s, ev_i = next(env_s._eid), next(env_i._eid)
    assert ev_i >= 20 * ev_s, (ev_s, ev_i)


def test_preemption_keeps_kv_within_capacity(toy_cost):
    # 32 sequences of 100 + 2000 tokens need 67k KV tokens; give the engine 20k.
    _env, eng, out, peak = _run(toy_cost, [(100, 2000)] * 32, kv=20_000)
    assert len(out) == 32 and all(r.generated == 2000 for r in out)
    assert eng.preemptions > 0
    assert peak <= 20_000
    assert eng.kv_used == 0


def test_abort_returns_partial_tokens(toy_cost):
    env = simpy.Environment()
    eng = RolloutEngine(env, "e0", toy_cost, 10**6, 256, 8192, Recorder())
    reqs = [Request(i, 100, 5000) for i in range(8)]
    for r in reqs:
        eng.submit(r)
    got: list[Request] = []

    def aborter():
        yield env.timeout(10.0)
        got.extend(eng.abort())

    env.process(aborter())
    env.run(until=20)
    assert len(got) == 8
    assert all(r.status == "aborted" and 0 < r.generated < 5000 for r in got)
    # ~ 10 s / (a0 + a1*8 + ...) iterations done, the same for every sequence
    assert len({r.generated for r in got}) == 1
    assert eng.kv_used == 0 and eng.running == 0


def test_add_with_prefix_reprefills_and_finishes(toy_cost):
    _env, _eng, out, _ = _run(toy_cost, [(100, 50)])
    env2 = simpy.Environment()
    eng2 = RolloutEngine(env2, "e1", toy_cost, 10**6, 256, 8192, Recorder())
    r = Request(0, 100, 50, prefix_tokens=40)
    eng2.submit(r)
    env2.run()
    assert r.status == "finished" and r.generated == 50
    # Prefix run: 140-token prefill then 9 decodes; full run: 100-token prefill, 49 decodes.
    assert r.t_finish < out[0].t_finish


@settings(max_examples=40, deadline=None)
@given(
    reqs=st.lists(st.tuples(st.integers(1, 300), st.integers(1, 600)), min_size=1, max_size=40),
    kv=st.integers(1000, 20000),
    cap=st.integers(1, 16),
    budget=st.integers(16, 2048),
    gaps=st.lists(st.floats(0, 0.5), min_size=40, max_size=40),
    overhead_s=st.sampled_from([0.0, 0.003]),
)
def test_invariants(reqs, kv, cap, budget, gaps, overhead_s):
    reqs = [(p, o) for p, o in reqs if p + o <= kv] or [(1, 1)]
    arrivals = list(__import__("itertools").accumulate(gaps[: len(reqs)]))
    for mode in ("skip", "iteration"):
        _env, eng, out, peak = _run(ToyCost(), reqs, mode, kv=kv, cap=cap, budget=budget,
                                   arrivals=arrivals, overhead_s=overhead_s)
        # every request finished exactly once, with all its tokens
        assert sorted(r.rid for r in out) == list(range(len(reqs)))
        assert all(r.generated == reqs[r.rid][1] for r in out)
        assert peak <= kv
        assert eng.kv_used == 0 and eng.running == 0 and not eng.waiting
        assert all(r.t_finish >= r.t_first_token >= r.t_submit for r in out)


def test_abort_during_head_counts_only_completed_iterations():
    # r0 decodes alone; r1's long prompt arrives and is being prefilled (the head) when
    # both are aborted: the head's token must not count, and r1 has no first token.
    cost = ToyCost(p=1e-3)
    env = simpy.Environment()
    eng = RolloutEngine(env, "e0", cost, 10**6, 256, 8192, Recorder())
    r0, r1 = Request(0, 10, 1000), Request(1, 2000, 10)
    eng.submit(r0)
    got: list[Request] = []

    def script():
        yield env.timeout(0.5)
        eng.submit(r1)
        yield env.timeout(0.1)
        got.extend(eng.abort())

    env.process(script())
    env.run(until=5)
    assert r1.status == "aborted" and r1.generated == 0 and r1.t_first_token != r1.t_first_token
    # r0 generated one token per completed iteration: prefill (1) + decodes until 0.5 s
    step = cost.step(1, 0).total_s  # ~constant at this tiny KV
    assert abs(r0.generated - (1 + int((0.5 - cost.step(0, 0, 10).total_s) / step) + 1)) <= 1
    assert eng.kv_used == 0


def test_double_abort_at_segment_end_does_not_crash(toy_cost):
    env = simpy.Environment()
    e0 = RolloutEngine(env, "e0", toy_cost, 10**6, 256, 8192, Recorder())
    e1 = RolloutEngine(env, "e1", toy_cost, 10**6, 256, 8192, Recorder())
    a = Request(0, 10, 50)
    b, c = Request(1, 10, 50), Request(2, 10, 50)

    def on_a_done(_r):
        e1.abort([b])
        e1.abort([c])

    a.on_done = on_a_done
    e0.submit(a)
    e1.submit(b)
    e1.submit(c)
    env.run()
    assert {b.status, c.status} <= {"finished", "aborted"}
    assert e1.kv_used == 0 and e1.running == 0


def test_gauges_record_queue_depths_and_kv(toy_cost):
    """Running/waiting counts are exact for caps up to 32 (admission happens before the
    record), every series starts and ends at 0, and KV stays within the cache."""
    env = simpy.Environment()
    rec = Recorder()
    engine = RolloutEngine(env, "e", toy_cost, 50_000, 4, 2048, rec)
    for i in range(10):
        engine.submit(Request(i, 100, 50 + 10 * i))
    env.run()
    series: dict[str, list[float]] = {}
    for c in rec.counters:
        series.setdefault(c.name, []).append(c.value)
    assert set(series) == {"kv_tokens", "running", "waiting"}
    assert max(series["running"]) == 4 and max(series["waiting"]) == 6
    assert all(s[0] == 0 and s[-1] == 0 for s in series.values())
    assert 0 < max(series["kv_tokens"]) <= 50_000


def _two_turns(caching: bool, kv: int = 10**7, others: int = 0, env_s: float = 0.0):
    """One trajectory: turn 1 (prompt 4000, 10 tokens), an environment step of `env_s`,
    then turn 2 whose prompt is that context plus 100 new tokens; `others` single requests
    of 3500 + 500 tokens share the engine from the start (to fill the KV)."""
    env = simpy.Environment()
    cost = ToyCost(p=1e-4)
    eng = RolloutEngine(env, "e0", cost, kv, 256, 8192, Recorder("phase"),
                        prefix_caching=caching)
    key = object()
    times: dict[str, float] = {}

    def second(r: Request) -> None:
        times["turn1"] = env.now
        nxt = Request(2, r.prompt_tokens + r.generated + 100, 10, cache_key=key,
                      on_done=lambda _r: times.setdefault("turn2", env.now))
        env.timeout(env_s).callbacks.append(lambda _e: eng.submit(nxt))

    eng.submit(Request(1, 4000, 10, cache_key=key, on_done=second))
    for i in range(others):
        eng.submit(Request(10 + i, 3500, 500))
    env.run(until=1000)
    return eng, times


def test_prefix_cache_prefills_only_the_new_tokens_of_a_turn():
    plain, t_plain = _two_turns(False)
    cached, t_cached = _two_turns(True)
    # turn 1 looks up and misses, turn 2 hits its whole first context
    assert (cached.cache_lookups, cached.cache_hits, cached.cache_hit_tokens) == (2, 1, 4010)
    assert plain.cache_lookups == 0
    # turn 2 prefills 4110 tokens without the cache and 100 with it: 4010 x p less
    saved = (t_plain["turn2"] - t_plain["turn1"]) - (t_cached["turn2"] - t_cached["turn1"])
    assert saved == pytest.approx(4010 * 1e-4, rel=1e-6)


@pytest.mark.parametrize("prompt", [4000, 40_000])
def test_prefix_cache_values_are_shared_ints_below_the_table(prompt):
    """A finished context's tokens are `_TOKEN_INTS`' object when the table holds them (no
    int boxed per finish and freed at the next hit), an equal int beyond it; a hit reads
    the same count either way."""
    import gc

    from rlsim.entities import engine as engine_mod

    env = simpy.Environment()
    eng = RolloutEngine(env, "e0", ToyCost(p=1e-4), 10**6, 256, 8192, Recorder("phase"),
                        prefix_caching=True)
    key = object()
    eng.submit(Request(1, prompt, 10, cache_key=key))
    env.run()
    (value,) = eng._cache.values()
    assert value == prompt + 10 and type(value) is int
    small = prompt + 10 < engine_mod._TOKEN_INTS_MAX
    assert small == (prompt == 4000)
    assert (small and value is engine_mod._TOKEN_INTS[prompt + 10]) == small
    assert not gc.is_tracked(eng._cache)
    eng.submit(Request(2, prompt + 110, 10, cache_key=key))
    env.run()
    assert (eng.cache_hits, eng.cache_hit_tokens) == (1, prompt + 10)
    assert eng._cached_total == prompt + 120 == sum(eng._cache.values())


def test_prefix_cache_lives_in_free_kv_and_is_evicted_first():
    # While the environment steps, a queued sequence takes the KV the cached context used
    eng, _ = _two_turns(True, kv=20_000, others=6, env_s=1.0)
    assert eng.cache_lookups == 2 and eng.cache_hits == 0
    assert eng._cached_total <= max(0, eng.kv_capacity - eng.kv_used)


def _interleaving(use_timers: bool, seed: int, until: float | None = None,
                  delays: tuple[float, ...] = (0, 0.25, 1.0, 0.0), limit: int = 400):
    """A random cascade of callbacks, each scheduling children after one of `delays` (by
    default 0, 0.25 or 1 s: ties on purpose), some as SimPy timeouts, some as `Timers` (or
    all as timeouts), beside a process with urgent events of its own. Returns the (time,
    tag) log of what ran."""
    import random

    from rlsim.entities.timers import Timers, TimerTarget

    class Target(TimerTarget):  # a timer's callback as a method, as the engines file theirs
        def on_timer(self, arg: str) -> None:
            fire(arg)

    target = Target()
    rng = random.Random(seed)
    env = simpy.Environment()
    timers = Timers.of(env)
    log: list[tuple[float, str]] = []
    count = [0]

    def fire(tag: str) -> None:
        log.append((env.now, tag))
        # The clock the hot path reads (`Timers.now`, and `now_s` as a float).
        if timers.now() != env.now or type(timers.now()) is not type(env.now):
            log.append((timers.now(), f"{tag}: Timers.now() is not env.now"))
        if timers.now_s() != env.now or type(timers.now_s()) is not float:
            log.append((timers.now_s(), f"{tag}: Timers.now_s() is not env.now"))
        if count[0] > limit:
            return
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            count[0] += 1
            child = f"{tag}.{count[0]}"
            delay = rng.choice(delays)
            as_timer = rng.random() < 0.6
            if as_timer and use_timers:
                # Every other float delay through `call_in_s`, the compiled callers' way
                # (no draw of its own: both runs draw the same numbers).
                # Every third through a TimerTarget's `on_timer`.
                fn = target if count[0] % 3 == 0 else fire
                if isinstance(delay, float) and count[0] % 2:
                    timers.call_in_s(delay, fn, child)
                else:
                    timers.call_in(delay, fn, child)
            else:
                env.timeout(delay).callbacks.append(lambda _e, c=child: fire(c))
            if rng.random() < 0.1:  # an urgent event (a process start) now
                env.process(proc(child + "p"))

    def proc(tag: str):
        log.append((env.now, tag + "-start"))
        yield env.timeout(0.25)
        log.append((env.now, tag + "-end"))

    for i in range(5):
        env.timeout(i * 0.25).callbacks.append(lambda _e, t=f"r{i}": fire(t))
    env.process(proc("p0"))
    if until is None:
        env.run()
    else:
        env.run(until=until)
    return log, next(env._eid)


@pytest.mark.parametrize("seed", range(6))
def test_timers_run_exactly_where_timeouts_would(seed):
    """`Timers` take SimPy's event order: (time, priority, creation), ties included, and
    consume the same event numbers."""
    ref, ref_events = _interleaving(False, seed)
    got, got_events = _interleaving(True, seed)
    assert got == ref
    assert got_events == ref_events
    assert len(ref) > 20


@pytest.mark.parametrize("seed", range(4))
def test_timers_far_ahead_run_exactly_where_timeouts_would(seed):
    """Timers a minute or more ahead wait outside the calendar's ring of 64 s (`_far`), and
    a bucket can have timers in both: the same order as timeouts all the same."""
    delays = (0, 0.25, 1.0, 63.99, 64.0, 64.015625, 100.0, 128.0, 300.0)
    ref, ref_events = _interleaving(False, seed, delays=delays)
    got, got_events = _interleaving(True, seed, delays=delays)
    assert got == ref
    assert got_events == ref_events
    assert max(t for t, _ in ref) > 128


@pytest.mark.parametrize(("seed", "limit"), [(0, 3_000), (1, 3_000), (2, 30_000)])
def test_dense_timers_run_exactly_where_timeouts_would(seed, limit):
    """Thousands of timers milliseconds apart, tens a bucket of the calendar, some a minute
    ahead (far) while their bucket fills near: the same order as timeouts, ties included."""
    delays = (0, 0.001, 0.01, 0.015625, 0.03, 0.05, 0.1, 0.2, 0.25, 0.5, 70.0)
    ref, ref_events = _interleaving(False, seed, delays=delays, limit=limit)
    got, got_events = _interleaving(True, seed, delays=delays, limit=limit)
    assert got == ref
    assert got_events == ref_events
    assert len(ref) > limit
    assert max(t for t, _ in ref) > 70


def test_timers_stop_with_the_run():
    ref, _ = _interleaving(False, 3, until=2.0)
    got, _ = _interleaving(True, 3, until=2.0)
    assert got == ref
    assert all(t < 2.0 for t, _ in got)


def test_timers_number_events_on_from_where_simpy_stood():
    """`Timers` replace SimPy's event counter with their own, which goes on from the same
    number: an event made after the switch gets the number it would have got, and timers
    and SimPy's events share one sequence (the run's event count is the next number)."""
    from rlsim.entities.timers import Timers

    def run(with_timers: bool) -> tuple[int, list[float]]:
        env = simpy.Environment()
        seen: list[float] = []
        for d in (0.5, 0.25):
            env.timeout(d).callbacks.append(lambda _e: seen.append(env.now))
        if with_timers:
            timers = Timers.of(env)
            timers.call_in(0.3, lambda _a: seen.append(env.now))
            timers.call_in(0.25, lambda _a: seen.append(-env.now))  # after the timeout
        else:
            env.timeout(0.3).callbacks.append(lambda _e: seen.append(env.now))
            env.timeout(0.25).callbacks.append(lambda _e: seen.append(-env.now))
        env.run()
        return next(env._eid), seen

    assert run(True) == run(False) == (4, [0.25, -0.25, 0.3, 0.5])


def test_timers_that_ran_hold_nothing_and_are_reused():
    """A timer that has run is kept as a spare for the next one filed: it lets go of its
    callback and argument once its bucket is done (nothing stays alive through it), and
    later timers reuse it rather than adding objects."""
    import gc
    import weakref

    from rlsim.entities.timers import Timers, TimerTarget

    class Target(TimerTarget):
        def __init__(self) -> None:
            self.runs = 0

        def on_timer(self, arg: object) -> None:
            self.runs += 1

    class Payload:
        pass

    env = simpy.Environment()
    timers = Timers.of(env)
    target, payload = Target(), Payload()
    for i in range(50):
        timers.call_in(0.001 * i, target, payload)
    env.run()
    ref_target, ref_payload = weakref.ref(target), weakref.ref(payload)
    del target, payload
    # the last bucket stays the one in progress until a later one is filed
    timers.call_in(1.0, lambda _a: None)
    env.run()
    gc.collect()
    assert ref_target() is None and ref_payload() is None
    spares = len(timers._spare)
    assert spares >= 1
    seen: list[float] = []
    for i in range(spares):
        timers.call_in(0.5 + 0.001 * i, lambda a: seen.append(a), float(i))
    assert len(timers._spare) == 0  # every one filed took a spare
    env.run()
    assert seen == [float(i) for i in range(spares)]


@settings(max_examples=25, deadline=None)
@given(
    reqs=st.lists(st.tuples(st.integers(1, 300), st.integers(2, 400)), min_size=2, max_size=30),
    kv=st.integers(2000, 12000),
    cap=st.integers(1, 8),
    cuts=st.lists(st.tuples(st.floats(0, 2), st.integers(0, 29)), max_size=8),
)
def test_request_count_follows_load(reqs, kv, cap, cuts):
    """`n_requests` (a count kept at submit, finish and abort) equals `load` throughout,
    preemptions and aborts included; so does `_due` (kept at every push and pop) the
    clock of the finish heap's top."""
    from rlsim.entities.engine import _NO_DUE, _ORDER_BITS

    reqs = [(p, o) for p, o in reqs if p + o <= kv] or [(1, 2)]
    env = simpy.Environment()
    eng = RolloutEngine(env, "e0", ToyCost(), kv, cap, 256, Recorder())
    made = [Request(i, p, o) for i, (p, o) in enumerate(reqs)]
    seen: list[tuple[int, int]] = []
    dues: list[tuple[int, int]] = []

    def check(_r: Request | None = None) -> None:
        seen.append((eng.n_requests, eng.load))
        heap = eng._heap
        dues.append((eng._due, heap[0] >> _ORDER_BITS if heap else _NO_DUE))

    for r in made:
        r.on_done = check
        eng.submit(r)
    for at, i in cuts:
        def cut(_e, i=i):
            check()
            target = made[i % len(made)]
            if target.status in ("waiting", "prefill", "decode"):
                eng.abort([target])
            check()
        env.timeout(at).callbacks.append(cut)
    env.run()
    check()
    assert all(n == load for n, load in seen)
    assert eng.n_requests == 0
    assert dues and all(kept == top for kept, top in dues)


def test_a_crash_takes_every_request_off_with_its_tokens_and_nothing_runs_until_restart(
        toy_cost):
    env = simpy.Environment()
    eng = RolloutEngine(env, "e0", toy_cost, 10**6, 256, 8192, Recorder("request"))
    done: list[Request] = []
    reqs = [Request(i, 100, 1000, on_done=done.append) for i in range(3)]
    late = Request(9, 50, 10, on_done=done.append)
    taken: list[Request] = []

    def script():
        for r in reqs:
            eng.submit(r)
        yield env.timeout(3.0)
        taken.extend(eng.crash())
        assert eng.kv_used == 0 and eng.running == 0 and eng.n_requests == 0
        eng.submit(late)  # queued, but a dead engine runs nothing
        yield env.timeout(50.0)
        assert late.status == "waiting" and not done
        for r in taken:
            r.prefix_tokens = r.generated  # re-prefill what was generated
        eng.restart()
        for r in taken:
            eng.submit(r)

    env.process(script())
    env.run()
    assert sorted(r.rid for r in taken) == [0, 1, 2]
    assert all(0 < r.prefix_tokens < 1000 for r in taken)
    assert sorted(r.rid for r in done) == [0, 1, 2, 9]  # each finished exactly once
    assert all(r.generated == r.output_tokens for r in done)
    assert min(r.t_finish for r in done) > 53.0
    assert eng.kv_used == 0


def test_a_slowdown_stretches_every_iteration_from_the_next_one(toy_cost):
    _, _, (base,), _ = _run(toy_cost, [(200, 2000)], probe=False)
    env = simpy.Environment()
    eng = RolloutEngine(env, "e0", toy_cost, 10**7, 256, 8192, Recorder("phase"))
    out: list[Request] = []

    def slow_from(t: float):
        yield env.timeout(t)
        eng.set_slowdown(3.0)

    eng.submit(Request(0, 200, 2000, on_done=out.append))
    half = base.t_finish / 2
    env.process(slow_from(half))
    env.run()
    # the second half runs 3x slower (up to the iteration in flight at the change)
    assert out[0].t_finish == pytest.approx(half + 3 * (base.t_finish - half),
                                            abs=3 * (toy_cost.a0 + 1e-4))


@pytest.mark.parametrize("mode", ["skip", "iteration"])
def test_request_overhead_stalls_the_next_iteration_per_admission_and_finish(mode, toy_cost):
    # n requests of distinct lengths submitted at once: their n admissions stall the first
    # iteration, and each finish but the last (which leaves the engine idle) stalls the
    # iteration after it, so the last finish comes (2n - 1) h later than without overhead;
    # every token still comes from the same iterations.
    n, h = 12, 0.004
    reqs = [(50 + 7 * i, 20 + 30 * i) for i in range(n)]
    _, _, base, _ = _run(toy_cost, reqs, mode, probe=False)
    _, _, out, _ = _run(toy_cost, reqs, mode, probe=False, overhead_s=h)
    assert sorted(r.generated for r in out) == sorted(r.generated for r in base)
    t0, t1 = max(r.t_finish for r in base), max(r.t_finish for r in out)
    assert t1 - t0 == pytest.approx((2 * n - 1) * h, rel=1e-9)
    # the k-th finish (by length) waited for the n admissions and the k - 1 finishes before
    by_rid = {r.rid: r for r in base}
    for r in out:
        assert r.t_finish - by_rid[r.rid].t_finish == pytest.approx((n + r.rid) * h, rel=1e-9)


@pytest.mark.parametrize("mode", ["skip", "iteration"])
def test_request_overhead_of_a_finish_delays_a_request_submitted_after_it(mode, toy_cost):
    # Batch 2 (n requests, submitted when batch 1's last finishes) pays batch 1's n finishes
    # and its own n admissions before its first iteration: 3 n h in all over no overhead.
    n, h = 8, 0.002
    finish_times = []
    for overhead_s in (0.0, h):
        env = simpy.Environment()
        eng = RolloutEngine(env, "e0", toy_cost, 10**7, 256, 8192, Recorder(), mode,
                            request_overhead_s=overhead_s)
        done: list[Request] = []

        def on_done(r: Request, eng: RolloutEngine = eng, done: list[Request] = done) -> None:
            done.append(r)
            if len(done) == n:  # batch 1 complete: batch 2 at once
                for i in range(n):
                    eng.submit(Request(n + i, 100, 200, on_done=done.append))

        for i in range(n):
            eng.submit(Request(i, 100, 200, on_done=on_done))
        env.run()
        assert len(done) == 2 * n
        finish_times.append(max(r.t_finish for r in done))
    assert finish_times[1] - finish_times[0] == pytest.approx(3 * n * h, rel=1e-9)


def test_abort_during_a_stall_counts_every_completed_iteration(toy_cost):
    # r0 (10 tokens) finishes; the iteration after it waits out its finish's stall, and an
    # abort inside that stall (no head iteration in flight) keeps every token r1 has.
    h = 0.5
    env = simpy.Environment()
    eng = RolloutEngine(env, "e0", toy_cost, 10**6, 256, 8192, Recorder(),
                        request_overhead_s=h)
    r0, r1 = Request(0, 10, 10), Request(1, 10, 1000)
    eng.submit(r0)
    eng.submit(r1)
    got: list[Request] = []

    def script():
        while r0.status != "finished":
            yield env.timeout(0.001)
        yield env.timeout(h / 2)
        got.extend(eng.abort())

    env.process(script())
    env.run(until=10)
    assert got == [r1] and r1.generated == 10
    assert eng.kv_used == 0


def test_a_done_target_is_called_like_the_function_it_stands_for(toy_cost):
    # A `DoneTarget` (called natively when compiled) and a plain function get each request
    # once, finished or aborted, in the same order; a target is also callable as a function.
    from rlsim.entities.engine import DoneTarget

    class Seen(DoneTarget):  # an interpreted subclass, as tests and plugins would write
        def __init__(self) -> None:
            self.got: list[tuple[int, str]] = []

        def request_done(self, req: Request) -> None:
            self.got.append((req.rid, req.status))

    runs = []
    for as_target in (True, False):
        env = simpy.Environment()
        eng = RolloutEngine(env, "e0", toy_cost, 10**6, 256, 8192, Recorder())
        seen = Seen()
        done = seen if as_target else seen.request_done
        for i in range(6):
            eng.submit(Request(i, 100, 50 if i % 2 else 5000, on_done=done))

        def aborter(env=env, eng=eng):
            yield env.timeout(5.0)
            eng.abort()

        env.process(aborter())
        env.run()
        runs.append(seen.got)
    assert runs[0] == runs[1]
    assert sorted(runs[0]) == [(i, "aborted" if i % 2 == 0 else "finished") for i in range(6)]
    seen = Seen()
    seen(Request(9, 1, 1))
    assert seen.got == [(9, "new")]
