"""Chrome/Perfetto trace export (trace.json): one track per engine, trainer, pool, link.

Spans become complete events ("X") on a thread named after their track, grouped into
processes by the track's first scope (rollout, train, controller, ...); counters become "C"
events. Each pool also gets a derived `busy_gpus` counter track (GPUs busy over time, from
the busy spans). Times are microseconds, as the format wants.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from rlsim.trace import Recorder


def chrome_trace(recorder: Recorder) -> dict[str, Any]:
    tracks = sorted({s.track for s in recorder.spans} | {i.track for i in recorder.instants}
                    | {c.track for c in recorder.counters})
    groups = sorted({t.split(".")[0] for t in tracks})
    pid = {g: i + 1 for i, g in enumerate(groups)}
    tid = {t: i + 1 for i, t in enumerate(tracks)}
    events: list[dict[str, Any]] = []
    for g in groups:
        events.append({"ph": "M", "name": "process_name", "pid": pid[g], "tid": 0,
                       "args": {"name": g}})
    for t in tracks:
        events.append({"ph": "M", "name": "thread_name", "pid": pid[t.split(".")[0]],
                       "tid": tid[t], "args": {"name": t}})
    for s in recorder.spans:
        events.append({"ph": "X", "name": s.name, "pid": pid[s.track.split(".")[0]],
                       "tid": tid[s.track], "ts": s.t0 * 1e6, "dur": (s.t1 - s.t0) * 1e6,
                       "args": s.attrs})
    for i in recorder.instants:
        events.append({"ph": "i", "s": "t", "name": i.name, "pid": pid[i.track.split(".")[0]],
                       "tid": tid[i.track], "ts": i.t * 1e6, "args": i.attrs})
    for c in recorder.counters:
        events.append({"ph": "C", "name": c.name, "pid": pid[c.track.split(".")[0]],
                       "tid": tid[c.track], "ts": c.t * 1e6, "args": {c.name: c.value}})
    events.extend(_pool_counters(recorder, len(groups) + 1))
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _pool_counters(recorder: Recorder, first_pid: int) -> list[dict[str, Any]]:
    """Busy GPUs of each pool over time: +gpus at each busy span's start, -gpus at its end."""
    deltas: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for s in recorder.spans:
        if s.name == "busy":
            pool = str(s.attrs["pool"])
            deltas[pool][s.t0] += float(s.attrs["gpus"])
            deltas[pool][s.t1] -= float(s.attrs["gpus"])
    events: list[dict[str, Any]] = []
    for i, pool in enumerate(sorted(deltas)):
        pid = first_pid + i
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": f"pool.{pool}"}})
        level = 0.0
        for t in sorted(deltas[pool]):
            level += deltas[pool][t]
            events.append({"ph": "C", "name": "busy_gpus", "pid": pid, "tid": 0,
                           "ts": t * 1e6, "args": {"busy_gpus": round(level, 9)}})
    return events


def write_chrome_trace(recorder: Recorder, path: Path) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(json.dumps(chrome_trace(recorder)), encoding="utf-8")
    os.replace(tmp, path)
