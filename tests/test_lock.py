"""The lock files (requirements/README.md) cover what pyproject.toml asks for, pin every
package with hashes, agree with each other, and are what `make` installs from; torch's
locked dependencies are the ones its metadata states."""

from __future__ import annotations

import re
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from tests.golden.versions import normalize

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
LOCK_NOTORCH = ROOT / "requirements-notorch.lock"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?:\s*;\s*([^\\]*?))?\s*\\?$")


def entries(lock: Path) -> list[tuple[str, str, str, int]]:
    """(name, version, marker, hashes) of each pinned requirement of a lock file."""
    out: list[tuple[str, str, str, int]] = []
    for line in lock.read_text().splitlines():
        m = _PIN.match(line)
        if m:
            out.append((normalize(m.group(1)), m.group(2), (m.group(3) or "").strip(), 0))
        elif line.strip().startswith("--hash=sha256:") and out:
            name, version, marker, hashes = out[-1]
            out[-1] = (name, version, marker, hashes + 1)
    return out


def _names(requirements: list[str]) -> set[str]:
    return {normalize(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0]) for r in requirements}


def test_every_pin_has_hashes_and_is_exact():
    for lock in (LOCK, LOCK_NOTORCH):
        pins = entries(lock)
        assert len(pins) > 40, lock
        assert all(hashes >= 1 for *_, hashes in pins), lock
        text = lock.read_text()
        assert "uv pip compile" in text.splitlines()[1], f"{lock} not written by uv"
        assert " @ " not in text and "-e " not in text, f"{lock} names a file, not a version"


def test_the_locks_cover_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = _names(project["dependencies"]) | _names(project["optional-dependencies"]["dev"])
    notorch = {name for name, *_ in entries(LOCK_NOTORCH)}
    assert wanted <= notorch, f"not locked (run make lock): {sorted(wanted - notorch)}"
    full = {name for name, *_ in entries(LOCK)}
    ray = _names(project["optional-dependencies"]["ray"])
    assert wanted | ray <= full, f"not locked (run make lock): {sorted(wanted | ray - full)}"
    assert "torch" not in full, "torch is installed apart from the lock (requirements/README.md)"


def test_the_two_locks_pin_the_same_versions():
    full = {(name, marker): version for name, version, marker, _ in entries(LOCK)}
    for name, version, marker, _ in entries(LOCK_NOTORCH):
        assert full.get((name, marker)) == version, (name, marker)


def test_torch_deps_are_torchs_own():
    try:
        dist = metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        pytest.skip("torch is not installed here")
    stated = {normalize(re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0])
              for r in dist.requires or [] if "extra ==" not in r}
    listed = _names([line for line in (ROOT / "requirements" / "torch-deps.in").read_text()
                     .splitlines() if line.strip() and not line.startswith("#")])
    assert stated == listed


def test_make_installs_from_the_locks_with_hashes():
    makefile = (ROOT / "Makefile").read_text()
    assert "PIP_LOCKED := pip install --quiet --disable-pip-version-check --require-hashes " \
        "--no-deps -r" in makefile
    assert "--require-hashes \\\n  --no-deps -r" in makefile  # UV_LOCKED
    for venv, lock in (("$(VENV)", "$(LOCK)"), ("$(NOTORCH)", "$(LOCK_NOTORCH)")):
        bin_ = "$(BIN)" if venv == "$(VENV)" else "$(NOTORCH)/bin"
        assert f"$(call UV_ENTRY,{lock},{venv})" in makefile
        assert f"{bin_}/$(PIP_LOCKED) {venv}/uv.txt" in makefile
        assert f"{bin_}/$(UV_LOCKED) {lock} --python {bin_}/python" in makefile
    assert "--no-deps $(TORCH)" in makefile and "TORCH := torch==2.13.0" in makefile


@pytest.mark.parametrize("lock", [LOCK, LOCK_NOTORCH], ids=lambda p: p.name)
def test_uv_is_bootstrapped_from_its_own_hashed_entry(lock: Path, tmp_path: Path):
    """`make` installs uv first with pip, from the lines UV_ENTRY cuts out of the lock:
    exactly uv's pin and all of its hashes, nothing of the next package."""
    out = subprocess.run(["make", "-s", "-f", "-", "entry"], cwd=ROOT, check=True,
                         capture_output=True, text=True,
                         input=f"include Makefile\nentry:\n\t$(call UV_ENTRY,{lock},{tmp_path})\n")
    assert out.returncode == 0
    cut = entries(tmp_path / "uv.txt")
    assert [(n, v) for n, v, _, _ in cut] == \
        [(n, v) for n, v, _, _ in entries(lock) if n == "uv"]
    assert cut[0][3] == next(h for n, _, _, h in entries(lock) if n == "uv") >= 1
    text = (tmp_path / "uv.txt").read_text()
    assert not text.rstrip().endswith("\\") and "# via" not in text


def test_the_root_entry_points_are_the_lock():
    """requirements.txt installs the lock; constraints.txt pins the lock's versions without
    hashes, for installing rlsim into an environment of one's own (`pip install -c`)."""
    lines = [x for x in (ROOT / "requirements.txt").read_text().splitlines()
             if x.strip() and not x.startswith("#")]
    assert lines == ["-r requirements.lock"]
    constraints = entries(ROOT / "constraints.txt")
    assert {(n, v, m) for n, v, m, _ in constraints} == \
        {(n, v, m) for n, v, m, _ in entries(LOCK)}
    assert all(h == 0 for *_, h in constraints)
