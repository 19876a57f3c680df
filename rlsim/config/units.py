"""Physical quantities written with units in scenarios ("250 ms", "400 Gb/s", "80 GiB").

Owns parsing of unit strings into SI base values (seconds, bytes, bytes per second) and the
pydantic annotated types that scenario fields use. A bare number is taken in the base unit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_PATTERN = re.compile(rf"^\s*{_NUMBER}\s*([A-Za-z/]*)\s*$")

_DURATION = {
    "": 1.0, "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
    "ms": 1e-3, "us": 1e-6, "ns": 1e-9,
    "min": 60.0, "m": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
}
_SIZE = {
    "": 1.0, "B": 1.0,
    "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40,
}
# Bandwidths in bits (b) or bytes (B) per second; the result is bytes per second.
_BANDWIDTH = {
    "": 1.0, "B/s": 1.0,
    "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12,
    "Kb/s": 1e3 / 8, "Mb/s": 1e6 / 8, "Gb/s": 1e9 / 8, "Tb/s": 1e12 / 8,
    "GiB/s": 2.0**30, "MiB/s": 2.0**20,
    "Gbps": 1e9 / 8, "Mbps": 1e6 / 8,
}


def _parser(table: dict[str, float], kind: str, example: str) -> Callable[[object], float]:
    def parse(value: object) -> float:
        if isinstance(value, bool):
            raise ValueError(f"expected a {kind} like '{example}', got {value!r}")
        if isinstance(value, int | float):
            return _finite(float(value))
        if not isinstance(value, str):
            raise ValueError(f"expected a {kind} like '{example}', got {value!r}")
        match = _PATTERN.match(value)
        if match is None or match.group(2) not in table:
            units = ", ".join(sorted(u for u in table if u))
            raise ValueError(f"expected a {kind} like '{example}' (units: {units}), got {value!r}")
        return _finite(float(match.group(1)) * table[match.group(2)])

    def _finite(x: float) -> float:
        if not math.isfinite(x):
            raise ValueError(f"expected a finite {kind} like '{example}', got {x}")
        return x

    return parse


parse_duration = _parser(_DURATION, "duration", "250 ms")
parse_size = _parser(_SIZE, "size", "80 GiB")
parse_bandwidth = _parser(_BANDWIDTH, "bandwidth", "400 Gb/s")



def _as_float(value: float) -> float:
    """A quantity as written out: a float. A Python function rather than the builtin
    `float`: pydantic reads a serializer's signature once per field, and the builtin's comes
    from parsing its text signature (~0.3 ms each, 46 fields at every start)."""
    return float(value)


Seconds = Annotated[float, BeforeValidator(parse_duration), PlainSerializer(_as_float)]
"""A duration; accepts '250 ms', '1.5 s', '2 min' or a number of seconds."""
Bytes = Annotated[float, BeforeValidator(parse_size), PlainSerializer(_as_float)]
"""A size; accepts '80 GiB', '512 MB' or a number of bytes."""
BytesPerSecond = Annotated[float, BeforeValidator(parse_bandwidth), PlainSerializer(_as_float)]
"""A bandwidth; accepts '400 Gb/s', '900 GB/s' or a number of bytes per second."""
