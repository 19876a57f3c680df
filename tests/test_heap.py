"""Huge-page arenas (rlsim/heap.py, rlsim/_arenas.c): a run's records are the same with
them on and off, the region serves pymalloc's arenas and gives freed pages back, and the
switch and a stale build are honoured.

Each run that installs the region does so in its own process (it is process-wide and stays
for the process's life). Skips, saying why, where the extension is not built.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlsim import compiled, heap

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("scenarios/quickstart.yaml",
             "scenarios/rollflash/agentic/fig9-sim.yaml")  # multi-turn, environment steps

_FINGERPRINTS = """
import json, sys
from rlsim import compiled, heap
from tests.golden.records import fingerprint, ROOT
out = {rel: fingerprint(ROOT / rel)["records"] for rel in sys.argv[1:]}
print(json.dumps({"status": heap.status(), "runs": out}))
"""

# Allocates ~1.5 M small objects on the region, frees them, allocates again: what the
# region did each time, and whether every value read back right.
_CHURN = """
import json
from rlsim import compiled, heap
assert heap.use_huge_pages(), heap.status()
before = heap.status()
rows = [(i, float(i), str(i)) for i in range(500_000)]
full = heap.status()
ok = sum(r[0] for r in rows) == sum(range(500_000)) and rows[-1][2] == "499999"
del rows
freed = heap.status()
rows = [(i, -i) for i in range(500_000)]
again = heap.status()
ok = ok and rows[12345] == (12345, -12345)
print(json.dumps({"before": before, "full": full, "freed": freed, "again": again,
                  "ok": ok}))
"""


def _python(code: str, *args: str, huge: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != heap.ENV}
    if huge is not None:
        env[heap.ENV] = huge
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _built() -> str | None:
    """Why the extension cannot be used here, or None when it can."""
    ext, why = heap._extension()
    if ext is None:
        return why
    return None if sys.platform.startswith("linux") else "not Linux"


def test_records_are_identical_with_huge_pages_on_and_off() -> None:
    on = _python(_FINGERPRINTS, *SCENARIOS)
    off = _python(_FINGERPRINTS, *SCENARIOS, huge="0")
    assert off["status"] == {"used": False, "reason": "off (RLSIM_HUGE_PAGES=0)"}
    assert on["runs"] == off["runs"]
    if _built() is None:
        assert on["status"]["used"] is True
        assert on["status"]["arenas_in_use"] > 0  # the runs' objects were on the region


@pytest.mark.skipif(_built() is not None, reason=f"huge-page arenas: {_built()}")
def test_region_serves_arenas_and_gives_freed_pages_back() -> None:
    out = _python(_CHURN)
    assert out["ok"]
    before, full, freed, again = out["before"], out["full"], out["freed"], out["again"]
    assert before["arenas_cut"] == 0  # installed, nothing taken from it yet
    assert full["arena_bytes"] == 1 << 20  # pymalloc's arena on 64-bit CPython 3.10+
    # ~1.5 M objects of 32-64 bytes: tens of arenas, all cut from the region.
    assert full["arenas_in_use"] - before["arenas_in_use"] >= 40
    assert full["fallbacks"] == 0
    # Freed, whole 2 MiB pages go back to the system ...
    assert freed["arenas_in_use"] < full["arenas_in_use"] - 20
    assert freed["pages_released"] > 0
    assert freed["arenas_released"] >= 2 * freed["pages_released"] - 2
    # ... and the next objects reuse freed arenas before cutting new ones.
    assert again["arenas_cut"] - freed["arenas_cut"] < 5
    assert again["arenas_in_use"] >= 20


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(heap.ENV, value)
    assert not heap.requested()


@pytest.mark.parametrize("value", ["", "1", "on"])
def test_switch_leaves_it_on(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(heap.ENV, value)
    assert heap.requested()


def test_a_stale_or_missing_build_is_not_loaded(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    source = tmp_path / "_arenas.c"
    source.write_text("/* edited after the build */\n")
    digest = hashlib.sha256(b"/* as built */\n").hexdigest()
    monkeypatch.delenv(compiled.PURE_ENV, raising=False)  # make test-notorch sets it
    monkeypatch.setattr(heap, "SOURCE", source)
    monkeypatch.setattr(heap, "manifest", lambda: {"c_sources": {"_arenas.c": digest}})
    ext, why = heap._extension()
    assert ext is None and why.startswith("stale: _arenas.c changed after the build")
    monkeypatch.setattr(heap, "manifest", lambda: None)
    ext, why = heap._extension()
    assert ext is None and why.startswith("not built")


def test_pure_python_loads_no_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compiled.PURE_ENV, "1")
    ext, why = heap._extension()
    assert ext is None and why.startswith("RLSIM_PURE_PYTHON is set")
