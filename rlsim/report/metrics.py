"""summary.json as a pure function of the records (formulas in docs/metrics.md).

Owns every summary metric. It reads only `rlsim.trace` records plus two run facts that are
not simulated quantities (`wall_s`, `events`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import compress, repeat
from operator import eq, itemgetter
from typing import Any, NamedTuple

import numpy as np

from rlsim.config import policy_caps
from rlsim.report.intervals import Interval, covered, minus, union
from rlsim.trace import CONTROLLER, Recorder, Span
from rlsim.trace.columns import BusyColumns

PHASES = ("gen", "env", "reward", "controller", "ref", "train", "weight_sync", "switch",
          "recovery")


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0}
    arr = np.asarray(values, dtype=float)
    ordered = sorted(arr.tolist())
    return {"mean": float(arr.mean()), "p50": percentile(ordered, 50),
            "p99": percentile(ordered, 99)}


def percentile(ordered: list[float], q: float) -> float:
    """The q-th percentile of `ordered` (ascending): the float numpy's default method
    ("linear") gives. At index h = (n - 1) q / 100, between the values at i = floor(h) and
    i + 1, interpolated from the nearer one (tests/report/test_metrics.py checks it against
    `np.percentile`). numpy's own imports numpy.ma at its first call (`np.unique` asks
    whether the array is masked): ~4% of a small `rlsim run`'s instructions."""
    if any(x != x for x in ordered):
        return math.nan  # numpy's answer with a NaN among the values
    n = len(ordered)
    h = (n - 1) * (q / 100)
    i = math.floor(h)
    if i >= n - 1:  # at the last value, which numpy's index -1 weighs by h + 1
        i = -1
    t = h - i
    a, b = ordered[i], ordered[i + 1 if i >= 0 else -1]
    d = b - a  # NaN between two equal infinities, as numpy's
    return b - d * (1 - t) if t >= 0.5 else a + d * t


ASYNC_GEN = "async: trainer's wait for samples"
"""Under `async` the gen phase is the trainer's wait for samples, not generation (which runs
all the time on its own GPUs): what every table and chart of an async run says of it."""

OVERLAPPED_GEN = "in full, incl. time overlapping other phases"
"""What `phase_time_s.gen` is where generation overlaps other phases (one_off generates a
step's batch during the step before, alongside its training): every table and chart that
shows such a run says so, and shows `CRITICAL_GEN` beside it."""

CRITICAL_GEN = "gen on the step's critical path"
"""The label of `gen_critical_path_s`: the part of generation the step waits for."""

WORK_THRESHOLD = 0.05
"""Runs compared whose trained response tokens per sample differ from the first's by more
than this fraction trained different work: `compare_notes` says so."""

BIAS_THRESHOLD = 0.05
"""A run's end state is reported as a warning when it moves the steady-state figures by more
than this fraction (docs/metrics.md, "Warnings")."""


def summarize(recorder: Recorder, wall_s: float, events: int) -> dict[str, Any]:
    """The run summary; every simulated figure comes from the records.

    The headline figures cover the steady state: from the end of the last warm-up step
    (`output.warmup_steps`, recorded in the `cluster`/`run` instant) to the end of the last
    step; `whole_run` has the same figures from t = 0.
    """
    rollbacks = [(i.t, int(i.attrs["to_step"])) for i in recorder.instants
                 if i.track == CONTROLLER and i.name == "rollback"]

    def kept(span: Any) -> bool:
        """Whether a step's span counts: no job restart after it rolled its step back."""
        step = int(span.attrs.get("step", -1))
        return not any(t >= span.t1 and step >= to for t, to in rollbacks)

    # One pass over the spans: the controller's few, and the busy spans (most of a large
    # run's) as columns for every figure that sums them.
    listed, busy_cols = recorder.spans_apart()  # no `Span` built for an engine's busy period
    controller = [s for s in listed if s.track == CONTROLLER]
    all_steps = sorted((s for s in controller if s.name == "step"), key=lambda s: s.t1)
    sim_time = max((s.t1 for s in all_steps), default=0.0)
    steps = [s for s in all_steps if kept(s)] if rollbacks else all_steps
    run = next((i.attrs for i in recorder.instants if i.track == "cluster" and i.name == "run"),
               {})
    warmup = int(run.get("warmup_steps", 0))  # records without it: the whole run
    warnings: list[str] = []
    if warmup and len(all_steps) <= warmup:
        warnings.append(
            f"the run has {len(all_steps)} steps and output.warmup_steps is {warmup}: there is "
            "no steady state, so the headline figures cover the whole run, pipeline fill "
            "included; run more steps than the warm-up")
        warmup = 0
    start = all_steps[warmup - 1].t1 if warmup else 0.0
    pools = {i.attrs["pool"]: i.attrs for i in recorder.instants
             if i.track == "cluster" and i.name == "pool"}
    window = [s for s in steps if s.t0 >= start]
    alone = gen_alone(controller)
    # work after the window's end is not simulated (spans open at the end of the run end
    # there); clipping also drops the warm-up's share
    busy = busy_time(listed, [(start, sim_time), (0.0, sim_time)], columns=busy_cols)
    steady = _figures(controller, busy.within[0], window, start, sim_time, pools, kept,
                      bool(rollbacks), alone)
    whole = _figures(controller, busy.within[1], steps, 0.0, sim_time, pools, kept,
                     bool(rollbacks), alone)
    warnings += _end_warnings(recorder, all_steps, warmup, steady)
    fault_summary = _faults(recorder, busy.whole, busy.rollout_tokens)
    ends = [i.attrs for i in recorder.instants if i.track == CONTROLLER
            and i.name == "outcomes"]
    attempts = ({k: int(ends[-1][k]) for k in ("trained", "stale", "cancelled", "leftover")}
                if ends else None)
    return {
        "policy": run.get("policy"),
        "steps": len(steps),
        "sim_time_s": sim_time,
        "steady_state": {"warmup_steps": warmup, "steps": len(window), "start_s": start,
                         "end_s": sim_time},
        "step_time_s": steady["step_time_s"],
        "phase_time_s": steady["phase_time_s"],
        "gen_critical_path_s": steady["gen_critical_path_s"],
        "controller": steady["controller"],
        "throughput": steady["throughput"],
        "gpu_util": steady["gpu_util"],
        "cost": steady["cost"],
        "staleness": steady["staleness"],
        "faults": fault_summary,
        "goodput_samples_per_s": steady["goodput_samples_per_s"],
        "effective_training_time_ratio": steady["effective_training_time_ratio"],
        "whole_run": whole,
        "warnings": warnings,
        "slo_attainment": None,
        # async: how every sample attempt ended (None for policies that drop nothing)
        "attempts": attempts,
        "profiles": {name: {"source": p.get("profile"), "hash": p.get("profile_hash")}
                     for name, p in sorted(pools.items())},
        "wall_s": wall_s,
        "events": events,
    }


def gen_alone(spans: Iterable[Span]) -> list[Interval]:
    """When generation runs and no other phase does: the controller's `gen` spans less all
    its other phase spans, as sorted disjoint intervals. Inside a step span this is the part
    of generation on the step's critical path, the time the step waits for it alone (a
    step's phases are what it waits for; one_off's next batch overlaps its trainer phases,
    and only what outlasts them delays the step)."""
    gen: list[Interval] = []
    other: list[Interval] = []
    for s in spans:
        if s.track == CONTROLLER and s.name in PHASES:
            (gen if s.name == "gen" else other).append((s.t0, s.t1))
    return minus(union(gen), union(other))


def gen_overlaps(summary: dict[str, Any]) -> bool:
    """Whether a run's generation overlaps its other phases, from its policy's capabilities
    (`PolicyCaps.gen_overlaps`: one_off). Not from comparing `phase_time_s.gen` with
    `gen_critical_path_s`: the two cover different batches (gen counts by step attribute,
    the critical path by time), so over a few steps the second may be the larger. A policy
    this process does not know (a plug-in's records) counts as not overlapping."""
    policy = policy_caps.lookup(str(summary.get("policy")))
    return policy is not None and policy.caps.gen_overlaps


def gen_waits(summary: dict[str, Any]) -> bool:
    """Whether a run's gen phase is the trainer's wait for samples rather than generation,
    from its policy's capabilities (`PolicyCaps.gen_waits`: async). A policy this process
    does not know (a plug-in's records) counts as generating."""
    policy = policy_caps.lookup(str(summary.get("policy")))
    return policy is not None and policy.caps.gen_waits


def gen_qualifiers(summaries: list[dict[str, Any]]) -> list[str]:
    """What the gen phase time of these runs is, where it is not plain generation on the
    step's critical path: `ASYNC_GEN` if any run's gen is the trainer's wait for samples
    (async), `OVERLAPPED_GEN` if any run's generation overlaps other phases."""
    return ([ASYNC_GEN] if any(gen_waits(s) for s in summaries) else []) + \
        ([OVERLAPPED_GEN] if any(gen_overlaps(s) for s in summaries) else [])


def phase_label(phase: str, summaries: list[dict[str, Any]]) -> str:
    """A phase's name in a table or chart of these runs: `gen` with its `gen_qualifiers`."""
    what = gen_qualifiers(summaries) if phase == "gen" else []
    return f"{phase} ({'; '.join(what)})" if what else phase


def compare_notes(summaries: list[dict[str, Any]], names: list[str]) -> list[str]:
    """One-line notes for runs compared side by side: when they trained different work
    (response tokens per sample more than `WORK_THRESHOLD` away from the first run's), so
    that samples/s and tokens/s rank them differently."""
    def per_sample(s: dict[str, Any]) -> float:
        return float(s["throughput"].get("response_tokens_per_sample", 0.0))

    base = per_sample(summaries[0])
    if not base:
        return []
    off = [(n, per_sample(s)) for s, n in zip(summaries[1:], names[1:], strict=True)
           if abs(per_sample(s) / base - 1) > WORK_THRESHOLD]
    if not off:
        return []
    listed = ", ".join(f"{n} {v:.0f} ({v / base - 1:+.0%})" for n, v in off)
    return [f"the runs trained different work: response tokens per sample {names[0]} "
            f"{base:.0f}, {listed}; compare tokens/s as well as samples/s"]


_DRIVER_KEYS = ("call_s", "transfer_s", "advantage_s", "bytes")
"""The `controller` span's terms (`rlsim.cost.controller.ControllerCost.attrs`)."""


def _driver_per_step(driver: dict[str, float], n_steps: int) -> dict[str, float]:
    """The single controller's priced work per step, wherever the policy charged it (the
    calls' transfers sit in `ref` and `train`): its terms, their total, and the bytes."""
    out = {k: (driver[k] / n_steps if n_steps else 0.0) for k in _DRIVER_KEYS}
    out["total_s"] = out["call_s"] + out["transfer_s"] + out["advantage_s"]
    return out


class BusyTime(NamedTuple):
    """GPU-seconds busy per pool, whole and within windows, from the `busy` spans."""

    whole: dict[str, float]
    """Pool -> GPU-seconds busy over the whole run."""
    within: list[dict[str, float]]
    """Per window [t0, t1]: pool -> GPU-seconds busy in it, each span by its overlap (pools
    with no span overlapping are absent)."""
    rollout_tokens: int
    """Tokens the rollout engines' busy spans generated (`tokens` attribute)."""


_BUSY_CHUNK = 1 << 16
"""Busy spans summed a chunk at a time: the arrays and Python floats of a whole run's
(23,500 a step at 1,024 GPUs) would be the process's peak memory."""


def busy_time(spans: Iterable[Span], windows: list[tuple[float, float]],
              chunk: int = _BUSY_CHUNK, columns: BusyColumns | None = None) -> BusyTime:
    """The busy spans' GPU-seconds per pool, whole and within each window, in one pass.

    `columns`: more busy spans, kept as columns (`Recorder.spans_apart`), row k recorded just
    before `spans[at[k]]`. A large run's busy spans are nearly all there, and are read
    without a `Span` built (issue 40). Every sum adds the same terms in the same order as a
    loop over the spans in the order recorded (the running total carried from chunk to
    chunk), so it is the same float.
    """
    spans = spans if isinstance(spans, (list, tuple)) else list(spans)
    rollout_track = _Prefixed("rollout.")
    # The busy ones picked in C, not by a generator's test per span (a Python frame each).
    where = list(compress(range(len(spans)), map(eq, map(_NAME, spans), repeat("busy"))))
    rows = list(map(spans.__getitem__, where))
    attrs = list(map(_ATTRS, rows))
    n = len(rows)
    codes: defaultdict[str, int] = defaultdict()
    codes.default_factory = codes.__len__  # a new pool's code: the pools seen before it
    # map() over itemgetters keeps each pass in C (as report.columns does).
    listed = _BusyRows(
        np.fromiter(map(codes.__getitem__, map(str, map(itemgetter("pool"), attrs))),
                    dtype=np.int64, count=n),
        np.fromiter(map(float, map(itemgetter("gpus"), attrs)), dtype=np.float64, count=n),
        np.fromiter(map(_T0, rows), dtype=np.float64, count=n),
        np.fromiter(map(_T1, rows), dtype=np.float64, count=n))
    rollout = map(rollout_track.__getitem__, map(_TRACK, rows))
    tokens = sum(map(int, map(dict.get, compress(attrs, rollout), repeat("tokens"), repeat(0))))
    whole: dict[str, float] = {}
    within: list[dict[str, float]] = [{} for _ in windows]

    def add(part: _BusyRows) -> None:
        in_pool = [(name, part.pool == code) for name, code in codes.items()]
        _add_per_pool(whole, in_pool, (part.t1 - part.t0) * part.gpus, None)
        for (w0, w1), out in zip(windows, within, strict=True):
            overlap = np.minimum(part.t1, w1) - np.maximum(part.t0, w0)
            _add_per_pool(out, in_pool, overlap * part.gpus, overlap > 0)

    if columns is None or not len(columns):
        for a in range(0, n, chunk):
            add(listed.rows(slice(a, a + chunk)))
        return BusyTime(whole, within, tokens)
    cols = _BusyArrays(columns, codes, rollout_track)
    # Each listed span goes before the rows recorded after it: with the chunk of rows that
    # holds the first of them, or after the last chunk.
    before = np.searchsorted(cols.at, np.asarray(where, dtype=np.int64), side="right")
    taken = 0  # listed spans added so far
    total = len(cols.at)
    for a in range(0, total, chunk):
        b = min(a + chunk, total)
        upto = n if b == total else int(np.searchsorted(before, b, side="left"))
        part = cols.rows(slice(a, b))
        tokens += part.tokens
        add(part.merged(listed.rows(slice(taken, upto)), before[taken:upto] - a))
        taken = upto
    return BusyTime(whole, within, tokens)


class _BusyRows(NamedTuple):
    """Busy spans as arrays: pool code, GPUs, start and end; `tokens`, those generated on
    rollout tracks (0 where not counted)."""

    pool: np.ndarray
    gpus: np.ndarray
    t0: np.ndarray
    t1: np.ndarray
    tokens: int = 0

    def rows(self, part: slice) -> _BusyRows:
        return _BusyRows(self.pool[part], self.gpus[part], self.t0[part], self.t1[part])

    def merged(self, other: _BusyRows, before: np.ndarray) -> _BusyRows:
        """These rows with `other`'s, each inserted before the row at its `before`."""
        if not len(before):
            return self
        pool, gpus, t0, t1 = (np.insert(mine, before, theirs) for mine, theirs
                              in zip(self[:4], other[:4], strict=True))
        return _BusyRows(pool, gpus, t0, t1, self.tokens)


class _BusyArrays:
    """`BusyColumns` read as numpy arrays (views where they can be): per row its series,
    where it was recorded (`at`), start, end and tokens; per series its pool code (in
    `codes`), GPUs and whether its track is a rollout engine's."""

    def __init__(self, cols: BusyColumns, codes: dict[str, int],
                 rollout_track: _Prefixed) -> None:
        cols.flush()
        self.series = np.frombuffer(cols.series, dtype=np.uintc)
        self.at = np.frombuffer(cols.at, dtype=np.longlong)
        self.t0 = np.frombuffer(cols.t0, dtype=np.float64)
        self.t1 = np.frombuffer(cols.t1, dtype=np.float64)
        self.tokens = np.frombuffer(cols.tokens, dtype=np.longlong)
        self.pool = np.array([codes[str(p)] for p in cols.pools], dtype=np.int64)
        self.gpus = np.array([float(g) for g in cols.gpus], dtype=np.float64)
        self.rollout = np.array([rollout_track[t] for t in cols.tracks], dtype=bool)
        if cols.kept:  # rows as recorded, where the arrays hold placeholders
            self.t0, self.t1, self.tokens = (self.t0.copy(), self.t1.copy(),
                                             self.tokens.astype(object))
            for i, (k0, k1, _, k) in cols.kept.items():
                self.t0[i], self.t1[i], self.tokens[i] = float(k0), float(k1), int(k)

    def rows(self, part: slice) -> _BusyRows:
        series = self.series[part]
        return _BusyRows(self.pool[series], self.gpus[series], self.t0[part], self.t1[part],
                         int(sum(self.tokens[part][self.rollout[series]].tolist())))


_TRACK, _NAME, _T0, _T1, _ATTRS = map(itemgetter, range(5))  # a Span's fields


class _Prefixed(dict[str, bool]):
    """Whether a track starts with `prefix`, worked out once per track: a dict lookup in C
    per span, where there was a `startswith` call per span."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def __missing__(self, track: str) -> bool:
        hit = self[track] = str(track).startswith(self.prefix)
        return hit


def _add_per_pool(out: dict[str, float], in_pool: list[tuple[str, np.ndarray]],
                  values: np.ndarray, keep: np.ndarray | None) -> None:
    """Add `values` (where `keep`) to each pool's running total in `out`, in order."""
    for name, sel in in_pool:
        if keep is not None:
            sel = sel & keep
        if sel.any():
            out[name] = sum(values[sel].tolist(), out.get(name, 0.0))


def _figures(controller: list[Span], busy: dict[str, float], steps: list[Any], t0: float,
             t1: float, pools: dict[str, dict[str, Any]], kept: Callable[[Any], bool],
             rolled: bool, alone: list[Interval]) -> dict[str, Any]:
    """The headline figures of the steps `steps` over the window [t0, t1]: phase and train
    spans (of `controller`, the controller's spans) count by their `step` attribute (one_off
    generates a step's batch during the step before), `busy` is the GPU-seconds busy per pool
    within the window (`busy_time`), `alone` (`gen_alone`) by its overlap with the step
    spans."""
    numbers = {int(s.attrs.get("step", -1)) for s in steps}
    n_steps = len(steps)
    span_s = t1 - t0
    per_phase: dict[str, float] = defaultdict(float)
    samples = tokens = response = good = 0  # trained; of them, in steps not rolled back
    stale_sum = 0.0
    stale_max = 0
    driver: dict[str, float] = defaultdict(float)  # the controller's priced work
    for s in controller:
        if int(s.attrs.get("step", -1)) not in numbers:
            continue
        # a rolled-back step's phases are lost work, not a step's cost; restarts count
        counts = not rolled or s.name == "recovery" or kept(s)
        if s.name in PHASES and counts:
            per_phase[s.name] += s.t1 - s.t0
        if s.name == "controller" and counts:
            for key in _DRIVER_KEYS:
                driver[key] += float(s.attrs.get(key, 0.0))
        if s.name == "train":
            n = int(s.attrs.get("samples", 0))
            samples += n
            tokens += int(s.attrs.get("tokens", 0))
            response += int(s.attrs.get("response_tokens", 0))
            stale_sum += float(s.attrs.get("staleness_mean", 0.0)) * n
            stale_max = max(stale_max, int(s.attrs.get("staleness_max", 0)))
            if counts:
                good += n
    util = {name: (busy.get(name, 0.0) / (p["gpus"] * span_s) if span_s > 0 else 0.0)
            for name, p in sorted(pools.items())}
    usd_per_hour = sum(p["gpus"] * p["usd_per_gpu_hour"] for p in pools.values())
    usd = usd_per_hour * span_s / 3600.0

    def rate(x: float) -> float:
        return x / span_s if span_s > 0 else 0.0

    return {
        "steps": n_steps,
        "start_s": t0,
        "end_s": t1,
        "step_time_s": _stats([s.t1 - s.t0 for s in steps]),
        "phase_time_s": {p: (per_phase[p] / n_steps if n_steps else 0.0) for p in PHASES},
        "controller": _driver_per_step(driver, n_steps),
        "gen_critical_path_s": (sum(covered(alone, [(s.t0, s.t1) for s in steps])) / n_steps
                                if n_steps else 0.0),
        "throughput": {
            "samples_per_s": rate(samples),
            "tokens_per_s": rate(tokens),
            "response_tokens_per_s": rate(response),
            "response_tokens_per_sample": response / samples if samples else 0.0,
        },
        "gpu_util": util,
        "cost": {
            "usd_per_hour": usd_per_hour,
            "usd_per_1k_samples": usd / good * 1000 if good else 0.0,
        },
        "goodput_samples_per_s": rate(good),
        "effective_training_time_ratio": rate(sum(s.t1 - s.t0 for s in steps)),
        # the samples these steps trained: the warm-up's (one_off's and async's pipeline
        # fill trains fresher samples) stays out of the steady state's
        "staleness": {"mean": stale_sum / samples if samples else 0.0, "max": stale_max},
    }


def _end_warnings(recorder: Recorder, steps: list[Any], warmup: int,
                  steady: dict[str, Any]) -> list[str]:
    """Warnings for work the run leaves undone that biases the steady-state figures by more
    than `BIAS_THRESHOLD` (docs/metrics.md, "Warnings"), from the policy's `left` instant and
    the step spans' `backlog`."""
    left = [i.attrs for i in recorder.instants if i.track == CONTROLLER and i.name == "left"]
    if not left or not steps:
        return []
    end = left[-1]
    out: list[str] = []
    trained = steady["throughput"]["samples_per_s"] * (steady["end_s"] - steady["start_s"])
    backlog_end = int(end.get("backlog", 0))
    backlog_start = int(steps[warmup - 1].attrs.get("backlog", 0)) if warmup else 0
    if trained > 0 and abs(backlog_end - backlog_start) > BIAS_THRESHOLD * trained:
        change = backlog_end - backlog_start
        out.append(
            f"the run ends with {backlog_end} samples queued or in flight against "
            f"{backlog_start} when the steady state began: the work it leaves undone "
            f"{'grew' if change > 0 else 'shrank'} by {abs(change) / trained:.0%} of the "
            f"{trained:.0f} samples it trained, so its figures are biased; run more steps")
    queued = int(end.get("queued_prompts", 0))
    size = int(end.get("long_round_prompts", 0))
    if queued and size:
        window = [s for s in steps if s.t0 >= steady["start_s"]]
        longs = [s.t1 - s.t0 for s in window if s.attrs.get("round") == "long"]
        span_s = steady["end_s"] - steady["start_s"]
        # the cycle's missing part: its long round's share for the prompts already queued
        deferred = queued / size * (sum(longs) / len(longs)) if longs else math.inf
        if span_s > 0 and deferred > BIAS_THRESHOLD * span_s:
            what = (f"about {deferred / span_s:.0%} of the window's time" if longs
                    else "no long round ran in the steady state")
            out.append(
                f"tail_batching ends mid-cycle: {queued} prompts wait for a long round of "
                f"{size} that never ran ({what}), so step time and throughput are "
                "optimistic; run to the end of a cycle (until the long round after the "
                "queue fills)")
    return out


def _faults(recorder: Recorder, busy: dict[str, float], generated: int) -> dict[str, Any]:
    """Faults injected and recovered, per kind, with what they cost (docs/metrics.md);
    `busy`: GPU-seconds busy per pool, `generated`: tokens the rollout engines generated."""
    faults = [i for i in recorder.instants if i.track == "faults" and i.name == "fault"]
    recovered = [i for i in recorder.instants if i.track == "faults" and i.name == "recovered"]
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in sorted({str(i.attrs["kind"]) for i in faults}):
        mine = [i for i in recovered if i.attrs["kind"] == kind]
        times = [float(i.attrs["recovery_s"]) for i in mine]
        by_kind[kind] = {
            "injected": sum(1 for i in faults if i.attrs["kind"] == kind),
            "recovered": len(mine),
            "recovery_s": {**_stats(times), "max": max(times, default=0.0)},
        }
    # work redone: tokens generated again (priced at the run's rollout GPU-seconds per
    # generated token), GPUs idle while a component was down, trainer work rolled back
    tokens = sum(int(i.attrs.get("lost_tokens", 0)) for i in faults + recovered)
    rollout_pools = {str(i.attrs["pool"]) for i in recorder.instants
                     if i.track == "cluster" and i.name == "entity"
                     and i.attrs.get("kind") == "engine"}
    rollout_busy = sum(busy.get(p, 0.0) for p in rollout_pools)
    per_token = rollout_busy / generated if generated else 0.0
    down = sum(float(i.attrs["recovery_s"]) * float(i.attrs.get("gpus", 0))
               for i in recovered if i.attrs["kind"] == "engine"
               and i.attrs.get("mitigation") is None and i.attrs.get("by") is None)
    rolled = sum(float(i.attrs.get("lost_work_s", 0.0)) * float(i.attrs.get("gpus", 0))
                 for i in recovered if i.attrs["kind"] == "trainer")
    waits = [float(i.attrs["wait_s"]) for i in recorder.instants
             if i.track == "faults" and i.name == "checkpoint_wait"]
    # a fault drawn once may take down several components (a GPU of a colocated job: its
    # engine and the trainer); each component's fault records the drawn fault as its cause
    causes = {i.attrs.get("cause", -int(i.attrs["id"])) for i in faults}
    return {
        "injected": len(causes),
        "hits": len(faults),
        "recovered": len(recovered),
        "open": len(faults) - len(recovered),
        "by_kind": by_kind,
        "lost_tokens": tokens,
        "lost_env_s": sum(float(i.attrs.get("lost_env_s", 0.0)) for i in faults),
        "lost_work_gpu_s": tokens * per_token + down + rolled,
        "env_checkpoints": sum(1 for i in recorder.instants
                               if i.track == "faults" and i.name == "checkpoint"),
        "env_checkpoint_wait_s": sum(waits),
    }
