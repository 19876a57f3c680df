"""Where a run's Python objects live: pymalloc's arenas on transparent huge pages.

Owns the switch (`use_huge_pages`, called by `rlsim.api.simulate` before a run) and its
report (`status`). A large run is bound by memory latency, not instructions: at 1,024 GPUs
~17,000 trajectories are in flight and a turn reads each of its few objects once, cold, so
most reads miss the caches, and with 4 KiB pages the TLB as well, whose page walk is more
misses (issue 40, benchmarks/RESULTS.md). The compiled extension `rlsim._arenas` (built by
`make setup` beside the hot modules) makes pymalloc cut its arenas from one region the
kernel backs with 2 MiB pages (MADV_HUGEPAGE). It changes where objects are, never what a
run computes: results are identical with it on or off (tests/test_heap.py).

Off with RLSIM_HUGE_PAGES=0, and with RLSIM_PURE_PYTHON=1 (no compiled module loads).
Without the extension (no C compiler, not Linux, a build older than its source) or without
transparent huge pages in the kernel, runs are as before.
"""

from __future__ import annotations

import os
from typing import Any

from rlsim.compiled import MANIFEST, PACKAGE_DIR, PURE_ENV, manifest, pure_requested
from rlsim.config.loading import file_sha256

ENV = "RLSIM_HUGE_PAGES"
"""Set to 0 (or off, false, no): pymalloc's arenas stay where CPython puts them."""
SOURCE = PACKAGE_DIR / "_arenas.c"
_OFF = ("0", "off", "false", "no")

_reason: str | None = None  # why huge pages are (not) used; None before the first call


def requested() -> bool:
    """Whether RLSIM_HUGE_PAGES leaves huge pages on (the default)."""
    return os.environ.get(ENV, "").strip().lower() not in _OFF


def _extension() -> tuple[Any, str]:
    """The compiled extension, or None and why not."""
    if pure_requested():
        return None, f"{PURE_ENV} is set (no compiled module loads)"
    data = manifest()
    built = data.get("c_sources", {}) if data is not None else {}
    want = built.get(SOURCE.name) if isinstance(built, dict) else None
    if want is None:
        return None, "not built (make setup compiles it when a C compiler is present)"
    try:
        have = file_sha256(SOURCE)
    except OSError:
        have = None
    if have != want:
        return None, f"stale: {SOURCE.name} changed after the build ({MANIFEST.name})"
    try:
        from rlsim import _arenas
    except ImportError as exc:
        return None, f"not loadable ({exc})"
    return _arenas, ""


def use_huge_pages() -> bool:
    """From now on, pymalloc's arenas come from the huge-page region, unless RLSIM_HUGE_PAGES
    turns it off or it cannot be had (then nothing changes). Decided once per process;
    True when the region is in use."""
    global _reason
    if _reason is None:
        if not requested():
            _reason = f"off ({ENV}=0)"
        else:
            ext, why = _extension()
            if ext is None:
                _reason = why
            elif not ext.install():
                _reason = "unavailable here (not Linux, or no address space to reserve)"
            else:
                _reason = "in use"
    return _reason == "in use"


def status() -> dict[str, Any]:
    """Whether the arenas are on the huge-page region and why, with its counts when it is
    (`huge_pages_advised`: the kernel took the advice, so it has transparent huge pages)."""
    out: dict[str, Any] = {"used": _reason == "in use",
                           "reason": _reason or "not decided (no run yet in this process)"}
    if out["used"]:
        ext, _ = _extension()
        if ext is not None:
            out.update(ext.stats())
    return out
