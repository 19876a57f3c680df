"""The turn-scaling jobs' instructions and last-level cache misses a turn, on simulated
caches of several sizes (valgrind's cachegrind).

Why: the turn-scaling benchmark (`bench_turn_scaling.py`, issue 40) times one turn at 128
and at 1,024 GPUs on the host it runs on, and the growth between them is mostly memory
stalls: ~17,000 trajectories are in flight at 1,024 GPUs and ~2,100 at 128, so how much of
the larger job's per-turn state stays in the caches depends on how much last-level cache
one core gets, which differs between hosts (and, on a VM, is not what `lscpu` says). This
counts what a host does not change: instructions, and data read and write misses past a
last level of a stated size, per turn of the jobs' marginal steps (steps 4 -> 6 of each by
default, `--steps`: set-up, which is not per turn, cancels out). Both jobs are counted over
the same steps because a turn's misses grow as a run goes on (the engines' prefix caches
fill: at 1,024 GPUs, 4 MB, 33.5 read misses a turn over steps 2 -> 3 and 37.5 over 6 -> 8;
at 128 GPUs 7.0 over 4 -> 8 and 8.3 over 12 -> 16), and the benchmark times both over
8 steps.

With `--host-us US128,US1024 --host-llc-mb MB` (the host's times a turn, from
`bench_turn_scaling.py`, and the last level one of its cores gets), it also fits the host's
time a turn as `ns_per_instruction * instructions + ns_per_miss * misses` (two
equations, two unknowns, at MB) and predicts the growth at every size counted: what the
same code would show on a host whose core gets that much last level, all else equal. A
model with two parameters: benchmarks/RESULTS.md (issue 40, stops 73 and 74) gives its
fits on one host and their spread.

    python benchmarks/cache_scaling.py [--llc-mb 4,8,16,32] [--steps 4,6] [--jobs 2]
        [--host-us 4.51,6.60 --host-llc-mb 4] [--keep DIR]

Needs `valgrind` on PATH. A run takes 0.5-3 minutes under cachegrind (16 runs for four
sizes, ~20 minutes on 2 cores); `--jobs` run at once (default: the cores). Prints a table,
then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GPUS = (128, 1024)  # the two jobs of bench_turn_scaling.py
STEPS = (4, 6)  # the marginal steps counted (first, last), the same for both jobs
EVENTS = ("Ir", "DLmr", "DLmw")  # instructions, data read and write misses past the LL
LL_WAYS, LL_LINE = 16, 64  # cachegrind's last level: 16 ways of 64-byte lines


def summary(path: Path) -> dict[str, int]:
    """The totals of a cachegrind output file, by event name."""
    names: list[str] = []
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("summary:"):
            values = [int(v) for v in line.split()[1:]]
            if len(values) != len(names):
                raise ValueError(f"{path}: {len(names)} events but {len(values)} totals")
            return dict(zip(names, values, strict=True))
    raise ValueError(f"{path}: no summary line (did cachegrind finish?)")


def per_turn(first: dict[str, int], last: dict[str, int], turns: int) -> dict[str, float]:
    """Each event a turn over the marginal steps: (last - first) / turns."""
    if turns <= 0:
        raise ValueError(f"the last run has {turns} more turns than the first; need > 0")
    return {e: (last[e] - first[e]) / turns for e in EVENTS}


def fit(us: tuple[float, float], counts: tuple[dict[str, float], dict[str, float]]
        ) -> tuple[float, float]:
    """(ns an instruction, ns a miss) such that each size's time a turn `us` is
    `ns_i * Ir + ns_m * (DLmr + DLmw)` with that size's `counts`."""
    (i0, i1) = (counts[0]["Ir"], counts[1]["Ir"])
    (m0, m1) = (counts[0]["DLmr"] + counts[0]["DLmw"], counts[1]["DLmr"] + counts[1]["DLmw"])
    det = i0 * m1 - i1 * m0
    if det == 0:
        raise ValueError("the two sizes' counts are proportional: no fit")
    ns0, ns1 = us[0] * 1e3, us[1] * 1e3
    return (ns0 * m1 - ns1 * m0) / det, (i0 * ns1 - i1 * ns0) / det


def predict_growth_pct(ns_i: float, ns_m: float,
                       counts: tuple[dict[str, float], dict[str, float]]) -> float:
    """The growth a turn from the first size to the second under the fitted model."""
    small, large = (ns_i * c["Ir"] + ns_m * (c["DLmr"] + c["DLmw"]) for c in counts)
    return 100 * (large / small - 1)


def _one(gpus: int, steps: int) -> None:
    """In the cachegrind process: the turn-scaling job at `gpus`, `steps` steps."""
    sys.path.insert(0, str(HERE))
    import bench_turn_scaling

    bench_turn_scaling.STEPS = steps
    print(json.dumps(bench_turn_scaling.one(gpus)))


def _run(gpus: int, steps: int, llc_bytes: int, out: Path) -> int:
    """One job under cachegrind; returns its turns (the counts are in `out`)."""
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=yes",
           f"--LL={llc_bytes},{LL_WAYS},{LL_LINE}", f"--cachegrind-out-file={out}",
           sys.executable, str(Path(__file__).resolve()), "--one", str(gpus), str(steps)]
    # A fixed hash seed: string hashes place dict entries, and so which lines are read.
    env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return int(json.loads(proc.stdout.strip().splitlines()[-1])["turns"])


def _sizes_mb(text: str) -> list[float]:
    try:
        sizes = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--llc-mb: {text!r}: give sizes in MB, e.g. 4,8,16") from None
    for s in sizes:
        sets = s * 2**20 / (LL_WAYS * LL_LINE)
        # cachegrind's own rule: a power of two of sets (of 16 ways of 64 bytes)
        if sets < 1 or sets != int(sets) or int(sets) & (int(sets) - 1):
            raise argparse.ArgumentTypeError(
                f"--llc-mb: {s:g} MB is not {LL_WAYS} ways of {LL_LINE} bytes times a power "
                "of two of sets: give a power of two of MB, e.g. 4,8,16")
    return sizes


def plan(sizes_mb: list[float], steps: tuple[int, int]) -> list[tuple[float, int, int]]:
    """The cachegrind runs, (last level MB, GPUs, steps): both jobs at both step counts,
    at every size."""
    return [(mb, gpus, n) for mb in sizes_mb for gpus in GPUS for n in steps]


def _steps(text: str) -> tuple[int, int]:
    try:
        first, last = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--steps: {text!r}: give the first and last step counts, e.g. 4,6") from None
    if not 1 <= first < last:
        raise argparse.ArgumentTypeError(
            f"--steps {text}: need 1 <= first < last, e.g. 4,6")
    return first, last


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--llc-mb", type=_sizes_mb, default=[4.0, 8.0, 16.0, 32.0],
                   help="last-level sizes to simulate, MB (default 4,8,16,32)")
    p.add_argument("--steps", type=_steps, default=STEPS,
                   help="the runs' step counts, FIRST,LAST: a turn is counted over the steps "
                        "between (default 4,6)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--host-us", help="the host's us a turn at 128 and 1,024 GPUs: A,B")
    p.add_argument("--host-llc-mb", type=float, help="last level one host core gets, MB")
    p.add_argument("--keep", type=Path, help="keep the cachegrind files in this folder")
    p.add_argument("--one", nargs=2, type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        _one(*args.one)
        return {}
    if args.jobs < 1:
        p.error(f"--jobs {args.jobs}: run at least 1 at once")
    if (args.host_us is None) != (args.host_llc_mb is None):
        p.error("--host-us and --host-llc-mb go together")
    host_us: tuple[float, float] | None = None
    if args.host_us is not None:
        try:
            a, b = (float(x) for x in args.host_us.split(","))
        except ValueError:
            p.error(f"--host-us: {args.host_us!r}: give two times, e.g. 4.51,6.60")
        host_us = (a, b)
        if args.host_llc_mb not in args.llc_mb:
            p.error(f"--host-llc-mb {args.host_llc_mb:g} must be one of --llc-mb")
    if shutil.which("valgrind") is None:
        p.error("valgrind not found: install it (e.g. apt-get install valgrind)")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="cache_scaling_"))
    folder.mkdir(parents=True, exist_ok=True)
    first, last = args.steps
    runs = plan(args.llc_mb, args.steps)

    def go(run: tuple[float, int, int]) -> int:
        mb, gpus, steps = run
        # one write a line: the runs' threads print at once
        sys.stderr.write(f"cachegrind: LL {mb:g} MB, {gpus} GPUs, {steps} steps\n")
        sys.stderr.flush()
        return _run(gpus, steps, int(mb * 2**20), folder / f"cg_{mb:g}_{gpus}_{steps}.out")

    try:
        with ThreadPoolExecutor(args.jobs) as pool:
            turns = dict(zip(runs, pool.map(go, runs), strict=True))
        table: dict[str, dict[str, dict[str, float]]] = {}
        for mb in args.llc_mb:
            row = table[f"{mb:g}"] = {}
            for gpus in GPUS:
                a = summary(folder / f"cg_{mb:g}_{gpus}_{first}.out")
                b = summary(folder / f"cg_{mb:g}_{gpus}_{last}.out")
                row[str(gpus)] = per_turn(a, b, turns[(mb, gpus, last)]
                                          - turns[(mb, gpus, first)])
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    out: dict[str, object] = {"benchmark": "cache_scaling", "steps": [first, last],
                              "per_turn": table}
    print("| last level | GPUs | instructions | read misses | write misses |", file=sys.stderr)
    print("|---|---:|---:|---:|---:|", file=sys.stderr)
    for mb, row in table.items():
        for gpus, c in row.items():
            print(f"| {mb} MB | {gpus} | {c['Ir']:,.0f} | {c['DLmr']:.2f} | {c['DLmw']:.2f} |",
                  file=sys.stderr)
    if host_us is not None:
        host = table[f"{args.host_llc_mb:g}"]
        ns_i, ns_m = fit(host_us, (host["128"], host["1024"]))
        out["fit"] = {"ns_per_instruction": round(ns_i, 4), "ns_per_miss": round(ns_m, 1)}
        out["predicted_growth_pct"] = {
            mb: round(predict_growth_pct(ns_i, ns_m, (row["128"], row["1024"])), 1)
            for mb, row in table.items()}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
