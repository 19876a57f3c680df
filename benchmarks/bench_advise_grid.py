"""Benchmark: `rlsim advise` against an exhaustive grid over the same space (issue 25).

For each job (the quickstart, 16 H800; and scenarios/examples/llama3-70b-grpo-64xh100.yaml,
64 H100), on both cores:
1. the grid: every valid point of advise's space simulated on the first replicate seed,
   the best by the objective (trained tokens/s) kept;
2. advise with TRIALS trials and REPS replicates of its finalists, in a fresh folder;
3. the grid's best and advise's recommendation run on the same REPS replicate seeds and
   compared pairwise (advise/decide.py: mean difference, spread half its range).
Target: advise's recommendation at least as good as the grid's best within the replicate
spread (difference >= -spread), using at most a fifth of the grid's evaluations (every
simulation advise ran counts: trials, finalists' replicates and the scenario as given).
Prints one JSON line.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOBS = {
    "quickstart": (ROOT / "scenarios" / "quickstart.yaml", 60),
    "llama70b_64xh100": (ROOT / "scenarios" / "examples" / "llama3-70b-grpo-64xh100.yaml", 80),
}
REPS = 3
CORES = 2
ALL_CORES = True  # run_all.py: not pinned to one core
REPEATS_ITSELF = True  # deterministic figures; the times are one run's


def one_job(name: str, path: Path, trials: int) -> dict[str, float | str | bool]:
    from rlsim.advise.decide import finalist, margin
    from rlsim.advise.objectives import objective
    from rlsim.advise.run import AdviseOptions, advise
    from rlsim.advise.search import Journal, Runner
    from rlsim.advise.space import build_space, config_from_key, config_key, describe
    from rlsim.config.loading import load_scenario
    from rlsim.sweep.executors import make_executor
    from rlsim.sweep.spec import PointContext, read_base

    obj = objective("tokens_per_s")
    scenario, _ = load_scenario(path)
    data, base, seed = read_base(path, ())
    space = build_space(data, scenario, base, str(path), None, None, [], None)
    grid = space.valid_grid()
    tmp = Path(tempfile.mkdtemp(prefix="rlsim-advise-bench-"))
    try:
        executor = make_executor("local", PointContext(data, base, str(path), ()), CORES, None)
        runner = Runner(space, executor, Journal.open(tmp / "grid.jsonl"), seed)
        t0 = time.perf_counter()
        evs = runner.run([(config_key(c), 0) for c in grid])
        grid_s = time.perf_counter() - t0
        ok = [ev for ev in evs if ev.figures is not None]
        best = max(ok, key=lambda ev: (ev.figures[obj.name], ev.key))  # type: ignore[index]

        t0 = time.perf_counter()
        advice = advise(AdviseOptions(scenario=str(path), out=str(tmp / "advise"),
                                      trials=trials, reps=REPS, jobs=CORES),
                        log=lambda s: print(s, file=sys.stderr))
        advise_s = time.perf_counter() - t0
        pick = advice.recommended["key"]
        reps = runner.run([(k, r) for k in (pick, best.key) for r in range(REPS)])
        executor.close()
        a = finalist(pick, reps[:REPS], obj, [])
        b = finalist(best.key, reps[REPS:], obj, [])
        assert a is not None and b is not None
        m = margin(a, b, obj)
        return {
            f"{name}_grid_points": len(grid),
            f"{name}_grid_failed": len(evs) - len(ok),
            f"{name}_grid_s": round(grid_s, 1),
            f"{name}_grid_best": describe(config_from_key(best.key)),
            f"{name}_grid_best_tokens_per_s": round(b.mean, 1),
            f"{name}_advise_pick": advice.recommended["description"],
            f"{name}_advise_tokens_per_s": round(a.mean, 1),
            f"{name}_advise_evaluations": advice.evaluations,
            f"{name}_advise_s": round(advise_s, 1),
            f"{name}_evaluations_ratio": round(advice.evaluations / len(grid), 3),
            f"{name}_difference_tokens_per_s": round(m.value, 1),
            f"{name}_spread_tokens_per_s": round(m.spread, 1),
            f"{name}_at_least_as_good": bool(m.value >= -m.spread),
            f"{name}_within_a_fifth": bool(advice.evaluations <= len(grid) / 5),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> dict[str, float | str | bool]:
    out: dict[str, float | str | bool] = {"benchmark": "advise_grid", "reps": REPS,
                                          "cores": CORES}
    for name, (path, trials) in JOBS.items():
        out[f"{name}_trials"] = trials
        out.update(one_job(name, path, trials))
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
