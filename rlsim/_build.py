"""Build the compiled hot path: mypyc-compile rlsim.compiled.HOT_MODULES in place.

`python -m rlsim._build` (run by `make setup`) writes each module's `.so` beside its `.py`
and mypyc's shared library as rlsim/_hot__mypyc.*.so, then the manifest rlsim/_compiled.json
that tells rlsim the build matches the sources. It never fails the setup: without a C
compiler or mypyc, or when the compile fails, it removes what it wrote, prints one line
saying the pure-Python modules are used, and exits 0. `--clean` only removes the artefacts;
`--status` says whether this process runs the compiled modules, and why, and whether runs
put pymalloc's arenas on huge pages (rlsim/heap.py).
The compiler's output goes to build/mypyc/build.log.

C is compiled with -ffp-contract=off: a compiler that fuses a*b+c into one FMA rounds once
where Python rounds twice, and the compiled results must equal the interpreted ones bit for
bit (x86-64's default target has no FMA; aarch64's has).
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from rlsim.compiled import GROUP, HOT_MODULES, MANIFEST, PACKAGE_DIR, source_hashes, source_path
from rlsim.config.loading import file_sha256

# Hand-written C extensions built beside the hot modules, by source file: rlsim._arenas
# puts pymalloc's arenas on huge pages (rlsim/heap.py).
C_SOURCES: tuple[str, ...] = ("_arenas.c",)

ROOT = PACKAGE_DIR.parent
BUILD_DIR = ROOT / "build" / "mypyc"
LOG = BUILD_DIR / "build.log"
FALLBACK = "the pure-Python modules are used (results are identical, only slower)"
# On ELF (Linux), the hot modules' calls to each other go direct, not through the PLT, and
# may be inlined: they are one translation unit in one shared library, and nothing
# interposes its symbols (issue 40: a PLT stub per call was a tenth of the async agentic
# benchmark's instruction-cache misses). Calls into libpython skip the PLT's stub too.
_LINKAGE_FLAGS = " -fno-semantic-interposition -fno-plt" if sys.platform.startswith("linux") \
    else ""


def extensions(suffix: str) -> list[Path]:
    """The extension modules a build writes into the package, with file suffix `suffix`."""
    return ([source_path(m).with_suffix(suffix) for m in HOT_MODULES]
            + [PACKAGE_DIR / f"{GROUP.split('.')[-1]}__mypyc{suffix}"]
            + [(PACKAGE_DIR / c).with_suffix(suffix) for c in C_SOURCES])


def clean() -> None:
    """Remove every extension module in the package (rlsim has no others; a module dropped
    from HOT_MODULES goes too) and the manifest."""
    MANIFEST.unlink(missing_ok=True)
    for p in PACKAGE_DIR.rglob("*"):
        if p.name.endswith((".so", ".pyd")):
            p.unlink()


def _compiler() -> str | None:
    """The C compiler the build would use, or None when it is missing."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    words = shlex.split(cc)
    return shutil.which(words[0]) if words else None


def _inner() -> None:
    """The compile itself (a child process, its output in the log)."""
    from mypyc.build import mypycify
    from setuptools import Extension, setup

    paths = [str(source_path(m).relative_to(ROOT)) for m in HOT_MODULES]
    # mypy's cache of its own (not .mypy_cache): `make test` runs mypy beside this build
    cache = str((BUILD_DIR / "mypy_cache").relative_to(ROOT))
    ext = mypycify(["--cache-dir", cache, *paths], group_name=GROUP, opt_level="3",
                   debug_level="0", target_dir=str(BUILD_DIR.relative_to(ROOT)))
    ext += [Extension(f"rlsim.{Path(c).stem}", [str((PACKAGE_DIR / c).relative_to(ROOT))],
                      extra_compile_args=["-O2"]) for c in C_SOURCES]
    setup(name="rlsim-compiled", ext_modules=ext,
          # --force: setuptools skips a compile whose C source is unchanged, which would
          # keep objects built with other flags (the Makefile runs this only when a hot
          # source, this file or rlsim/compiled.py changed).
          script_args=["build_ext", "--inplace", "--force",
                       "--build-temp", str((BUILD_DIR / "temp").relative_to(ROOT))])


def _status() -> int:
    import importlib

    from rlsim import compiled

    for name in HOT_MODULES:
        importlib.import_module(name)
    hot = [m for m in compiled.loaded() if m in HOT_MODULES]
    print(f"rlsim compiled hot path: {compiled.status()['reason']}; "
          f"{len(hot)} of {len(HOT_MODULES)} hot modules loaded compiled")
    from rlsim import heap

    heap.use_huge_pages()
    print(f"rlsim huge-page arenas (rlsim/heap.py): {heap.status()['reason']}")
    return 0


def build() -> int:
    if "--status" in sys.argv:
        return _status()
    if "--clean" in sys.argv:
        clean()
        return 0
    if "--inner" in sys.argv:
        _inner()
        return 0
    clean()
    if _compiler() is None:
        print(f"rlsim: no C compiler found; {FALLBACK}")
        return 0
    try:
        import mypyc  # noqa: F401  (installed with mypy, a dev dependency)
    except ImportError:
        print(f"rlsim: mypyc is not installed; {FALLBACK}")
        return 0
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["CFLAGS"] = (env.get("CFLAGS", "") + " -ffp-contract=off" + _LINKAGE_FLAGS).strip()
    env.pop("RLSIM_PURE_PYTHON", None)
    hashes = source_hashes()  # what is compiled: a source edited meanwhile reads as stale
    c_hashes = {c: file_sha256(PACKAGE_DIR / c) for c in C_SOURCES}
    t0 = time.perf_counter()
    with LOG.open("w") as log:
        proc = subprocess.run([sys.executable, "-m", "rlsim._build", "--inner"], cwd=ROOT,
                              env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    wall_s = time.perf_counter() - t0
    missing = [p for p in extensions(importlib.machinery.EXTENSION_SUFFIXES[0])
               if not p.exists()]
    if proc.returncode != 0 or missing:
        clean()
        print(f"rlsim: compiling the hot modules failed (see {LOG.relative_to(ROOT)}); "
              f"{FALLBACK}")
        return 0
    MANIFEST.write_text(json.dumps({"group": GROUP, "sources": hashes,
                                    "c_sources": c_hashes,
                                    "python": sys.version.split()[0]}, indent=1) + "\n")
    print(f"rlsim: compiled {len(HOT_MODULES)} hot modules with mypyc and "
          f"{', '.join(C_SOURCES)} in {wall_s:.0f} s "
          "(RLSIM_PURE_PYTHON=1 runs the pure-Python ones)")
    return 0


if __name__ == "__main__":
    raise SystemExit(build())
