"""Fuzz: mutated scenarios through the real command line, in-process (issue 18).

Every outcome of `rlsim run` on a mutation of a valid scenario (a field set to a value of
another type or out of range, a key deleted or misspelt, deep nesting, a file path to
something that is not the file it should be, the YAML text cut or duplicated) is exit 0, or
exit 2 with exactly one line on stderr: never a traceback, never exit 1. The run-size
limits are lowered so that a mutation that would make a long run is refused (exit 2) by
the same check that guards real runs, and the test stays fast.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlsim import cli
from rlsim.config import limits
from tests.scenarios import tiny

BASE = tiny(steps=1, workload__prompts_per_step=2, workload__samples_per_prompt=2)

# Leaves and sections of the scenario, and a few fields the base leaves at their defaults.
PATHS = [
    "name", "seed", "steps", "model", "pools", "pools.0", "pools.0.name", "pools.0.gpu",
    "pools.0.nodes", "pools.0.gpus_per_node", "pools.0.profile", "pools.0.host_memory",
    "rollout", "rollout.pool", "rollout.tp", "rollout.gpus", "rollout.max_running_seqs",
    "rollout.gpu_memory_utilization", "train.tp", "train.pp", "train.mfu", "train.gpus",
    "reward", "reward.kind", "reward.latency", "reward.latency.median", "reward.latency.sigma",
    "reward.workers", "reward.timeout", "workload", "workload.prompts_per_step",
    "workload.samples_per_prompt", "workload.response_len", "workload.response_len.dist",
    "workload.response_len.median", "workload.response_len.sigma", "workload.max_response_len",
    "workload.max_prompt_len", "workload.prompt_len", "workload.group_correlation",
    "workload.trace", "workload.tasks", "workload.agentic", "policy", "policy.name",
    "policy.placement", "policy.asynchronous.alpha", "policy.tail_batching.eta_p",
    "link.bandwidth", "link.latency", "engine_mode", "output.detail", "faults", "recovery",
    "env.workers", "new_key", "rollout.tpp",
]

SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-10, max_value=10),
    st.sampled_from([0, 2**31, 2**63, 10**30, 100_000_000]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "x", "250 ms", "80 GiB", "400 Gb/s", "-1 s", "1e8", "sync", "async",
                     "tail_batching", "one_off", "disaggregated", "H100", "qwen2.5-7b",
                     "nan", ".inf", "iteration", "request", "empirical", "fixed"]),
    st.text(max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["dist", "value", "median", "sigma", "path", "name",
                                         "gpu", "nodes", "mean", "std", "x"]),
                        children, max_size=3)),
    max_leaves=6,
)
PLAUSIBLE = {
    "seed": [0, 7, 2**40], "steps": [1, 2, 3], "rollout.tp": [1, 2, 4], "train.tp": [1, 2],
    "policy.name": ["sync", "one_off", "tail_batching", "async"],
    "policy.placement": ["colocated", "disaggregated"], "engine_mode": ["skip", "iteration"],
    "output.detail": ["phase", "request"], "workload.max_response_len": [1, 64, 4000, 20000],
    "workload.samples_per_prompt": [1, 3, 16], "workload.prompts_per_step": [1, 5, 64],
    "workload.group_correlation": [0.0, 0.9], "reward.kind": ["rule", "sandbox"],
    "reward.workers": [1, 3], "rollout.max_running_seqs": [1, 7],
    "rollout.gpu_memory_utilization": [0.05, 0.5, 1.0], "pools.0.nodes": [1, 2, 64],
    "workload.response_len": [{"dist": "fixed", "value": 1}, {"dist": "normal", "mean": -50,
                                                              "std": 10},
                              {"dist": "lognormal", "median": 1e6, "sigma": 3}],
    "policy.asynchronous.alpha": [0, 1, 5], "link.bandwidth": ["1 Mb/s", "1 TB/s"],
}
# Files a path field may be pointed at: missing, a folder, a device, garbage, bad numbers.
FILES = ["missing.txt", ".", "/dev/zero", "garbage.bin", "negative.txt", "empty.txt",
         "lengths.txt", "deep.yaml"]


def _setup_files(folder: Path) -> None:
    (folder / "garbage.bin").write_bytes(bytes(range(256)) * 4)
    (folder / "negative.txt").write_text("100\n-3\n")
    (folder / "empty.txt").write_text("")
    (folder / "lengths.txt").write_text("100\n200\n300\n")
    (folder / "deep.yaml").write_text("a: " + "[" * 200 + "]" * 200 + "\n")


def _set(data: Any, dotted: str, value: Any) -> None:
    node = data
    parts = dotted.split(".")
    for p in parts[:-1]:
        if isinstance(node, list):
            node = node[int(p)] if p.isdigit() and int(p) < len(node) else None
        elif isinstance(node, dict):
            node = node.setdefault(p, {}) if isinstance(node.get(p, {}), dict | list) else None
        if node is None:
            return
    last = parts[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
        node[int(last)] = value


def _delete(data: Any, dotted: str) -> None:
    node = data
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) and p.isdigit() and int(p) < len(node) \
            else node.get(p) if isinstance(node, dict) else None
        if node is None:
            return
    if isinstance(node, dict):
        node.pop(parts[-1], None)


@st.composite
def mutations(draw: st.DrawFn) -> str:
    """A mutated scenario's YAML text."""
    import copy

    data = copy.deepcopy(BASE)
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        kind = draw(st.sampled_from(["set", "set", "set", "delete", "file", "nest", "valid",
                                     "valid", "valid"]))
        path = draw(st.sampled_from(PATHS))
        if kind == "valid":  # a plausible value, so that many mutations simulate
            path, values = draw(st.sampled_from(sorted(PLAUSIBLE.items())))
            _set(data, path, draw(st.sampled_from(values)))
        elif kind == "set":
            _set(data, path, draw(VALUES))
        elif kind == "delete":
            _delete(data, path)
        elif kind == "file":
            target = draw(st.sampled_from(FILES))
            field = draw(st.sampled_from(["response_len", "prompt_len", "trace", "profile"]))
            # An earlier mutation may have deleted or replaced the section: set the path
            # through `_set`, which creates or skips what is missing.
            if field == "trace":
                _set(data, "workload.trace", {"path": target})
            elif field == "profile":
                _set(data, "pools.0.profile", target)
            else:
                _set(data, f"workload.{field}", {"dist": "empirical", "path": target})
        else:
            depth = draw(st.integers(1, 120))
            value: Any = 1
            for _ in range(depth):
                value = {"x": value} if draw(st.booleans()) else [value]
            _set(data, path, value)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    edit = draw(st.sampled_from(["none"] * 6 + ["truncate", "duplicate_line"]))
    lines = text.splitlines(keepends=True)
    if edit == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif edit == "duplicate_line" and lines:
        i = draw(st.integers(0, len(lines) - 1))
        text = "".join([*lines[: i + 1], lines[i], *lines[i + 1:]])
    return text


def _main(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(sys, "argv", ["rlsim", *args]), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main()
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _check(code: int, out: str, err: str) -> None:
    assert "Traceback" not in err and "internal error" not in err, err
    assert code in (0, 2), (code, err)
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("rlsim: error: "), err
        assert out == ""


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=mutations())
def test_mutated_scenarios_exit_0_or_2_with_one_line(text: str) -> None:
    with tempfile.TemporaryDirectory(prefix="rlsim-fuzz-") as tmp, \
            mock.patch.object(limits, "MAX_WALL_S", 2.0), \
            mock.patch.object(limits, "MAX_MEMORY_BYTES", 2 * 2**30):
        folder = Path(tmp)
        _setup_files(folder)
        path = folder / "s.yaml"
        path.write_text(text, encoding="utf-8")
        _check(*_main(["run", str(path), "--json"]))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), value=VALUES)
def test_mutated_set_overrides_exit_0_or_2_with_one_line(path: str, value: Any) -> None:
    """The same through --set, the other way values reach a scenario."""
    with tempfile.TemporaryDirectory(prefix="rlsim-fuzz-") as tmp, \
            mock.patch.object(limits, "MAX_WALL_S", 2.0):
        scenario = Path(tmp) / "s.yaml"
        scenario.write_text(yaml.safe_dump(BASE))
        literal = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
        literal = literal.removesuffix("...").strip()
        _check(*_main(["run", str(scenario), "--json", "--set", f"{path}={literal}"]))


def test_a_line_break_quoted_from_the_file_stays_on_one_line(tmp_path: Path) -> None:
    # Found by the fuzz above: a carriage return as a distribution's name, which the
    # error quotes back (pydantic's "Input tag '\r' found ...").
    data = tiny(steps=1)
    data["workload"]["response_len"] = {"dist": "\r"}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    code, out, err = _main(["run", str(path), "--json"])
    assert code == 2
    _check(code, out, err)
    assert "'\\r'" in err
