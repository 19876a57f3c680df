"""One record of a JSON-lines trace file: parsed, checked to be an object, errors located.

Shared by the PolyTrace and recorded-rollouts readers so both report bad lines the same way
(`FILE:LINE: ...`, a ValueError the scenario loader turns into a one-line error).
"""

from __future__ import annotations

import json
from typing import Any


def json_record(line: str, where: str) -> dict[str, Any]:
    """The JSON object on `line`; `where` (e.g. 'trace.jsonl:3') prefixes any error."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: malformed JSON ({err.msg})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object per line")
    return record
