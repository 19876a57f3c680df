"""The compiled hot path (rlsim/compiled.py): the mypyc-compiled modules give the same
records as their pure-Python sources, and RLSIM_PURE_PYTHON=1 loads none of them.

Each side runs in its own process (a process loads one or the other): a multi-turn, an
async agentic and a trainer-backend scenario beside the quickstart, compared by the golden
records' hashes (tests/golden/records.py: the summary, and every span, instant and counter
with its times as repr), and a fleet's placement decisions. Skips, saying why, where nothing
is compiled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlsim import compiled

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = (
    "scenarios/quickstart.yaml",
    "scenarios/rollflash/agentic/fig9-sim.yaml",  # multi-turn, environment steps
    "scenarios/rollflash/alfworld-async-redundant.yaml",  # async, redundant environments
    # a Megatron backend: the trainer priced per kernel (cost.training, cost.backends)
    "scenarios/real-runs/verl-onestepoff-readme-7b-dapo-async-4gen12train-H20-megatron.yaml",
)

# The fleet's placement (rlsim.fleet.placement and cycle) is compared by the digests of its
# decisions: a toy fleet end to end and the scheduler alone on 300 synthetic jobs.
_PROBE = """
import json, sys
from rlsim import compiled
from tests.golden.records import fingerprint, ROOT
out = {}
for rel in sys.argv[1:]:
    fp = fingerprint(ROOT / rel)
    out[rel] = {k: fp[k] for k in ("summary", "records", "count")}
if len(sys.argv) > 1:
    from tests.fleet import test_placement_speed_equivalence as fleet
    out["fleet"] = {"toy": fleet.digest(fleet.fleet_decisions("rollmux-worst")),
                    "scheduler": fleet.digest(fleet.scheduler_decisions("rollmux-worst"))}
print(json.dumps({"loaded": compiled.loaded(), "status": compiled.status(), "runs": out}))
"""


def _run(pure: bool, scenarios: tuple[str, ...] = ()) -> dict:
    env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    if pure:
        env[compiled.PURE_ENV] = "1"
    proc = subprocess.run([sys.executable, "-c", _PROBE, *scenarios], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _built() -> str | None:
    """Why the compiled modules cannot be compared here, or None when they can."""
    data = compiled.manifest()
    if data is None:
        return ("no compiled modules are built (make setup compiles them where a C compiler "
                "and mypyc are present)")
    if data.get("sources") != compiled.source_hashes():
        return "the compiled modules are stale (a source changed after the build)"
    return None


def test_pure_python_switch_loads_no_extension_module():
    got = _run(pure=True)
    assert got["loaded"] == []
    assert got["status"]["used"] is False
    assert compiled.PURE_ENV in got["status"]["reason"]


def test_compiled_and_pure_python_give_identical_records():
    reason = _built()
    if reason:
        pytest.skip(reason)
    fast = _run(pure=False, scenarios=SCENARIOS)
    assert set(compiled.HOT_MODULES) <= set(fast["loaded"]), fast["status"]
    pure = _run(pure=True, scenarios=SCENARIOS)
    assert pure["loaded"] == []
    for rel in (*SCENARIOS, "fleet"):
        assert fast["runs"][rel] == pure["runs"][rel], rel


def test_a_stale_build_is_set_aside(tmp_path):
    """A build whose recorded source hashes no longer match the sources is never loaded."""
    reason = _built()
    if reason:
        pytest.skip(reason)
    fake = tmp_path / "_compiled.json"
    fake.write_text(json.dumps({"sources": {compiled.HOT_MODULES[0]: "0" * 64}}))
    # the package's import decided on the real manifest (up to date: no finder); decide
    # again on one that records another source, before any hot module loads
    code = ("import pathlib, rlsim.compiled as c\n"
            f"c.MANIFEST = pathlib.Path({str(fake)!r})\n"
            "c.install()\n"
            "import rlsim.entities.engine\n"
            "print(c.loaded(), c.status()['reason'])\n")
    env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("[] stale"), proc.stdout
