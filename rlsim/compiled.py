"""The compiled hot path: which of rlsim's modules run compiled (mypyc), and the switch
back to their pure-Python sources.

`make setup` compiles the modules in HOT_MODULES with mypyc (`python -m rlsim._build`): each
`.so` lands beside its `.py`, and Python's import system prefers an extension module to a
source file, so `import rlsim.entities.engine` loads the compiled one. The `.py` files stay
the source of truth and the fallback: without a C compiler the build writes nothing and the
same sources run interpreted. Results are identical either way (tests/test_compiled.py).

`install()`, called by `rlsim/__init__.py` before any other rlsim module loads, puts a finder
in front of the import system that loads rlsim's modules from their `.py` files only, never
an extension module, when

- RLSIM_PURE_PYTHON=1 is set (so one checkout runs both ways), or
- the compiled modules are stale: a source changed after the build (the manifest the build
  writes holds each source's hash). Compiled modules call each other directly, so one stale
  module would leave old code running inside the others: all of them are set aside.

`python -m rlsim._build --status` prints which modules run compiled.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

PURE_ENV = "RLSIM_PURE_PYTHON"
"""Set to 1 (or any value but empty/0): rlsim loads no compiled module."""

# The modules that carry the per-event work (cProfile of benchmarks/bench_large_sync.py and
# bench_async_agentic.py, benchmarks/RESULTS.md "Issue 24: compiled hot path"), and the
# fleet's placement, whose candidate-group replays (`cycle`) are most of a decision's time
# (bench_placement.py: 0.20 s instead of 0.37-0.40 s of CPU for 2,000 decisions). One mypyc
# group: calls between them are direct C calls.
HOT_MODULES: tuple[str, ...] = (
    "rlsim.entities.engine",
    "rlsim.entities.rollout",
    "rlsim.entities.calendar",
    "rlsim.entities.timers",
    "rlsim.entities.barrier",
    "rlsim.entities.env",
    "rlsim.entities.ends",
    "rlsim.entities.reward",
    "rlsim.cost.inference",
    "rlsim.cost.training",
    "rlsim.cost.backends",
    "rlsim.cost.kernels",
    "rlsim.cost.network",
    "rlsim.policies.phases",
    "rlsim.policies.asynchronous",
    "rlsim.policies.scoring",
    "rlsim.fleet.cycle",
    "rlsim.fleet.placement",
    "rlsim.trace.columns",
)
# The async policy runs at every sample's finish and reward (issue 40: compiled, ~9% fewer
# instructions per step of the async benchmark); tests spy on its `_AsyncRun` through a
# Python subclass (`asynchronous._RUN`), and its `_Slot` is a native subclass of `Rollout`.
# Its `Scorer` (rlsim.policies.scoring) sends every finished sample to the reward pool.
GROUP = "rlsim._hot"
"""mypyc's shared library (rlsim/_hot__mypyc.*.so) holds the code of every hot module."""

PACKAGE_DIR = Path(__file__).resolve().parent
MANIFEST = PACKAGE_DIR / "_compiled.json"
"""Written by the build after a successful compile: the modules and their sources' hashes."""

_reason = "not installed"  # why the compiled modules are (not) used; see status()


def source_path(module: str) -> Path:
    """The `.py` file of an rlsim module."""
    return PACKAGE_DIR.joinpath(*module.split(".")[1:]).with_suffix(".py")


def source_hashes(modules: Sequence[str] = HOT_MODULES) -> dict[str, str]:
    """sha256 of each module's source, as the manifest records them."""
    return {m: hashlib.sha256(source_path(m).read_bytes()).hexdigest() for m in modules}


def manifest() -> dict[str, object] | None:
    """The build's manifest, or None when nothing is compiled."""
    try:
        data = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def pure_requested() -> bool:
    """True when RLSIM_PURE_PYTHON asks for the pure-Python modules."""
    return os.environ.get(PURE_ENV, "").strip() not in ("", "0")


class _SourceOnlyFinder(importlib.abc.MetaPathFinder):
    """Finds rlsim's submodules among source and bytecode files only, so an extension
    module beside a `.py` is never loaded."""

    _loaders = (
        (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),
        (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
    )

    def __init__(self) -> None:
        self._finders: dict[str, importlib.machinery.FileFinder] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if path is None or not fullname.startswith("rlsim."):
            return None
        for entry in path:
            finder = self._finders.get(entry)
            if finder is None:
                finder = self._finders[entry] = importlib.machinery.FileFinder(
                    entry, *self._loaders)
            spec = finder.find_spec(fullname, target)
            if spec is not None and spec.loader is not None:
                return spec
        return None  # a namespace directory or not found: the usual finders decide

    def invalidate_caches(self) -> None:
        for finder in self._finders.values():
            finder.invalidate_caches()


def install() -> None:
    """Decide, once per process, whether rlsim's compiled modules may load; when not,
    install the finder that loads the `.py` files instead."""
    global _reason
    if any(isinstance(f, _SourceOnlyFinder) for f in sys.meta_path):
        return
    data = manifest()
    if pure_requested():
        _reason = f"{PURE_ENV} is set"
    elif data is None:
        _reason = "not built (make setup compiles them when a C compiler is present)"
        return  # nothing compiled: the import system finds only .py files anyway
    else:
        built = data.get("sources")
        try:
            current = source_hashes(tuple(built)) if isinstance(built, dict) else None
        except OSError:
            current = None
        if current is not None and current == built:
            _reason = "built and up to date"
            return
        _reason = "stale: a source changed after the build (make setup rebuilds them)"
    sys.meta_path.insert(0, _SourceOnlyFinder())


def loaded() -> list[str]:
    """The rlsim modules loaded in this process from an extension module (compiled)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return sorted(name for name, mod in list(sys.modules.items())
                  if name.startswith("rlsim.")
                  and str(getattr(mod, "__file__", None) or "").endswith(suffixes))


def status() -> dict[str, object]:
    """Whether compiled modules are built and used here, and why."""
    return {"built": manifest() is not None, "used": _reason == "built and up to date",
            "reason": _reason, "modules": list(HOT_MODULES)}
