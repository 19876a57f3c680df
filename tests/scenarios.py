"""Small scenarios for tests, as plain dicts (fast to simulate)."""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

TINY: dict[str, Any] = {
    "name": "tiny",
    "seed": 0,
    "steps": 2,
    "model": "qwen2.5-0.5b",
    "pools": [{"name": "cluster", "gpu": "H100", "nodes": 1}],
    "rollout": {"pool": "cluster", "tp": 1},
    "train": {"pool": "cluster", "tp": 1},
    "reward": {"kind": "rule", "latency": {"median": "10 ms", "sigma": 0.5}, "workers": 8},
    "workload": {
        "prompts_per_step": 8,
        "samples_per_prompt": 4,
        "response_len": {"dist": "lognormal", "median": 400, "sigma": 0.8},
        "max_response_len": 4000,
    },
    "policy": {"name": "sync", "placement": "colocated"},
}


def tiny(**changes: Any) -> dict[str, Any]:
    """A copy of TINY with dotted-path changes applied (None deletes a key)."""
    data = copy.deepcopy(TINY)
    for dotted, value in changes.items():
        node: Any = data
        parts = dotted.split("__")
        for p in parts[:-1]:
            node = node[int(p)] if isinstance(node, list) else node[p]
        last = parts[-1]
        if value is None:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return data


def write(tmp: Path, data: Any, name: str = "s.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def load_script(path: Path, name: str) -> ModuleType:
    """Import a script that is not in a package (a scenario folder's make_report.py) as
    module `name`, registered in sys.modules so its dataclasses can find it."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def unsourced_lines(text: str, fields: tuple[str, ...], tag: re.Pattern[str]) -> list[str]:
    """The lines of a scenario file that set one of `fields` (a list item's `- ` dropped)
    without a source comment matching `tag`: what the paper-reproduction scenarios' tests
    assert is empty."""
    return [line.strip() for line in text.splitlines()
            if line.strip().lstrip("- ").startswith(fields) and not tag.search(line)]
