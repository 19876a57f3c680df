"""Record types every entity emits, and the in-memory Recorder that collects them.

Tracks are dotted scopes (`rollout.engine3`, `train.pool0`, `controller`). Entities only
emit; metrics, plots and the Perfetto trace are pure functions of the records.
"""

from __future__ import annotations

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


class Recorder:
    """Collects records in emission order. `detail` says whether per-request records are kept."""

    __slots__ = ("counters", "detail", "instants", "spans")

    def __init__(self, detail: str = "phase") -> None:
        self.detail = detail
        self.spans: list[Span] = []
        self.instants: list[Instant] = []
        self.counters: list[Counter] = []

    @property
    def per_request(self) -> bool:
        return self.detail == "request"

    def span(self, track: str, name: str, t0: float, t1: float, /, **attrs: Any) -> None:
        if t1 < t0:
            raise ValueError(f"span {track}/{name} ends before it starts ({t0} > {t1})")
        self.spans.append(Span(track, name, t0, t1, attrs))

    def instant(self, track: str, name: str, t: float, /, **attrs: Any) -> None:
        self.instants.append(Instant(track, name, t, attrs))

    def counter(self, track: str, name: str, t: float, value: float) -> None:
        self.counters.append(Counter(track, name, t, value))

    def records(self) -> list[Record]:
        return [*self.spans, *self.instants, *self.counters]
