"""Columnar (numpy) views of a Recorder, built once per report and shared by every figure.

Owns the only full passes over the record stream that the HTML report makes: a million
spans cost a few list comprehensions here instead of one Python loop per figure. Small
subsets (controller spans, instants, counters of one track) are kept as records.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import Any

import numpy as np

from rlsim.trace import CONTROLLER, Counter, Instant, Recorder, Span

REQUESTS_SUFFIX = ".requests"
"""Tracks of per-request spans (request detail only): statistics only, never drawn."""


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that puts engine2 before engine10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


@dataclass
class SpanColumns:
    """All spans as parallel arrays: integer codes into `tracks` / `names`, and times (s)."""

    tracks: list[str]
    names: list[str]
    track: np.ndarray
    name: np.ndarray
    t0: np.ndarray
    t1: np.ndarray

    @classmethod
    def of(cls, spans: list[Span]) -> SpanColumns:
        n = len(spans)
        # map() over itemgetters keeps each pass in C: ~0.1 s per column per million spans.
        tracks = list(map(itemgetter(0), spans))
        names = list(map(itemgetter(1), spans))
        track_ids = {t: i for i, t in enumerate(dict.fromkeys(tracks))}
        name_ids = {t: i for i, t in enumerate(dict.fromkeys(names))}
        return cls(list(track_ids), list(name_ids),
                   np.fromiter(map(track_ids.__getitem__, tracks), dtype=np.int32, count=n),
                   np.fromiter(map(name_ids.__getitem__, names), dtype=np.int32, count=n),
                   np.fromiter(map(itemgetter(2), spans), dtype=np.float64, count=n),
                   np.fromiter(map(itemgetter(3), spans), dtype=np.float64, count=n))

    def name_code(self, name: str) -> int:
        return self.names.index(name) if name in self.names else -1

    def track_code(self, track: str) -> int:
        return self.tracks.index(track) if track in self.tracks else -1


@dataclass
class RunRecords:
    """What the report reads from one run's records, each computed on first use."""

    recorder: Recorder
    _spans: SpanColumns | None = field(default=None, repr=False)

    @property
    def spans(self) -> SpanColumns:
        if self._spans is None:
            self._spans = SpanColumns.of(self.recorder.spans)
        return self._spans

    @cached_property
    def controller(self) -> list[Span]:
        cols = self.spans
        code = cols.track_code(CONTROLLER)
        if code < 0:
            return []
        idx = np.flatnonzero(cols.track == code)
        spans = self.recorder.spans
        return [spans[i] for i in idx]

    @cached_property
    def steps(self) -> list[Span]:
        return sorted((s for s in self.controller if s.name == "step"), key=lambda s: s.t0)

    @cached_property
    def end_s(self) -> float:
        """End of the run: the last step's end, else the last record's time."""
        if self.steps:
            return max(s.t1 for s in self.steps)
        cols = self.spans
        last = float(cols.t1.max()) if len(cols.t1) else 0.0
        for c in self.recorder.counters:
            last = max(last, c.t)
        return last

    def instants(self, track: str, name: str) -> list[Instant]:
        return [i for i in self.recorder.instants if i.track == track and i.name == name]

    @cached_property
    def pools(self) -> dict[str, dict[str, Any]]:
        """GPU pool name -> attrs of its `cluster`/`pool` instant."""
        return {str(i.attrs["pool"]): i.attrs for i in self.instants("cluster", "pool")}

    @cached_property
    def entities(self) -> dict[str, dict[str, Any]]:
        """Track -> attrs of its `cluster`/`entity` instant (absent in older run folders)."""
        return {str(i.attrs["track"]): i.attrs for i in self.instants("cluster", "entity")}

    @cached_property
    def counters(self) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
        """Counter name -> track -> (times s, values), sorted by time."""
        raw: dict[str, dict[str, list[Counter]]] = defaultdict(lambda: defaultdict(list))
        for c in self.recorder.counters:
            raw[c.name][c.track].append(c)
        out: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
        for name, by_track in raw.items():
            out[name] = {}
            for track in sorted(by_track, key=natural_key):
                cs = by_track[track]
                t = np.fromiter((c.t for c in cs), dtype=np.float64, count=len(cs))
                v = np.fromiter((c.value for c in cs), dtype=np.float64, count=len(cs))
                order = np.argsort(t, kind="stable")
                out[name][track] = (t[order], v[order])
        return out

    def kind(self, track: str) -> str:
        """What holds a track: the `entity` instant's kind, else a guess from the name."""
        ent = self.entities.get(track)
        if ent and ent.get("kind"):
            return str(ent["kind"])
        head, _, rest = track.partition(".")
        if head == "rollout":
            return "judge" if rest.startswith("judge") else "engine"
        if head == "train":
            return "trainer"
        return head

    @cached_property
    def busy(self) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """Pool -> holder kind (engine, judge, trainer, ...) -> (t0, t1, gpus) of busy spans."""
        cols = self.spans
        code = cols.name_code("busy")
        if code < 0:
            return {}
        idx = np.flatnonzero(cols.name == code)
        spans = self.recorder.spans
        pools = np.asarray([str(spans[i].attrs.get("pool")) for i in idx], dtype=object)
        gpus = np.fromiter((float(spans[i].attrs.get("gpus", 0)) for i in idx),
                           dtype=np.float64, count=len(idx))
        kinds = np.asarray([self.kind(t) for t in cols.tracks], dtype=object)[cols.track[idx]]
        out: dict[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        for pool in sorted(set(pools.tolist())):
            in_pool = pools == pool
            out[pool] = {}
            for kind in sorted(set(kinds[in_pool].tolist())):
                sel = in_pool & (kinds == kind)
                out[pool][kind] = (cols.t0[idx][sel], cols.t1[idx][sel], gpus[sel])
        return out

    def phase_spans(self, name: str) -> list[Span]:
        return [s for s in self.controller if s.name == name]
