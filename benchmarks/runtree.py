"""Run a benchmark script against another checkout's `rlsim`, for before/after comparisons.

    git worktree add /tmp/old <rev>
    taskset -c 1 python benchmarks/runtree.py /tmp/old /tmp/old/benchmarks/bench_large_sync.py

The project's editable install would otherwise import this checkout's `rlsim` whatever
PYTHONPATH says: its finder is taken off `sys.meta_path` and TREE (and TREE/benchmarks, for
the scripts' shared `timed_run`) put first on `sys.path`. Arguments after the script are
passed to it. Run the two trees interleaved on separate cores and keep each one's minimum
CPU time (`/usr/bin/time -f "%U %S"`): benchmarks/RESULTS.md, 'Issue 21 before and after'.
"""

from __future__ import annotations

import runpy
import sys


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit("usage: python benchmarks/runtree.py TREE SCRIPT [ARGS...]")
    tree, script = sys.argv[1], sys.argv[2]
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    for name in [m for m in sys.modules if m == "rlsim" or m.startswith("rlsim.")]:
        del sys.modules[name]
    sys.path[:0] = [tree, f"{tree}/benchmarks"]
    sys.argv = [script, *sys.argv[3:]]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
