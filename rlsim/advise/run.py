"""`rlsim advise` end to end: check the options, search, decide, write the folder.

Owns the order of the work and the output folder:
- `options.json`: what was asked (written first; `--resume` must ask the same);
- `study.log`, `evaluations.jsonl`: the search's storage (search.py);
- `recommended.yaml`: the recommendation as a scenario file that `rlsim run` runs;
- `report.html`: the report (report/advise_report.py);
- `advice.json`: the conclusion, written last, so a folder with it is complete.

Every bad input is a ScenarioError (one line, exit 2) raised before anything is written:
the objective, each constraint, the policies, the GPUs, the scenario, and a space in which
no point can run.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlsim.advise.decide import (
    Finalist,
    finalist,
    importance,
    margin,
    pareto_front,
    rank,
)
from rlsim.advise.objectives import Objective, objectives, parse_constraint
from rlsim.advise.robust import check_drawable, check_rule, robust_advice
from rlsim.advise.search import TODAY, Evaluation, Journal, Runner, search
from rlsim.advise.space import Space, build_space, config_from_key, config_key, describe
from rlsim.config.contracts import stamped
from rlsim.config.errors import ScenarioError
from rlsim.config.fleet_loading import is_fleet
from rlsim.config.loading import (
    FILE_KEYS,
    apply_override,
    file_sha256,
    load_scenario,
    named_file_digests,
    read_yaml_file,
    rebase_paths,
)
from rlsim.config.scenario import Scenario
from rlsim.prepare import prepare
from rlsim.report.page import write_atomic
from rlsim.sweep.executors import check_executor, make_executor
from rlsim.sweep.spec import PointContext

FINALISTS = 3  # the search's best configs run on every replicate seed (and, with several
# objectives, the best on each other objective)


@dataclass(frozen=True)
class AdviseOptions:
    scenario: str
    out: str
    objective: str = "tokens_per_s"
    constraints: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    gpus: int | None = None
    policies: tuple[str, ...] = ()
    trials: int = 40
    reps: int = 3
    steps: int | None = None
    executor: str = "local"
    jobs: int | None = None
    address: str | None = None
    draws: int | None = None  # rank the finalists at N draws over the unknowns (robust.py)
    robust: str = "p10"
    profile: bool = True  # the framework profile's intervals are drawn too

    def asked(self) -> dict[str, Any]:
        """What must match on --resume (how the trials run may change)."""
        d = asdict(self)
        for k in ("out", "executor", "jobs", "address"):
            d.pop(k)
        return d


@dataclass
class Advice:
    """The conclusion (advice.json)."""

    objective: str  # the first asked: it decides
    direction: str
    unit: str
    also_searched: list[str]  # the other objectives asked (multi-objective search)
    recommended: dict[str, Any]
    runner_up: dict[str, Any] | None
    today: dict[str, Any] | None
    margin_over_runner_up: dict[str, Any] | None
    margin_over_today: dict[str, Any] | None
    finalists: list[dict[str, Any]]
    pareto_front: list[dict[str, Any]]
    importance: dict[str, float]
    trials: list[dict[str, Any]]
    space: dict[str, Any]
    evaluations: int
    failures: dict[str, int]
    caveats: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)  # the scenario's fields to change
    robust: dict[str, Any] | None = None  # with --draws: the finalists under the unknowns

    def brief(self) -> dict[str, Any]:
        """What `--json` prints: the recommendation, its value and spread, the runner-up."""
        return stamped("advise", {
            "objective": self.objective, "recommended": self.recommended,
            "runner_up": self.runner_up, "margin_over_runner_up": self.margin_over_runner_up,
            "today": self.today, "margin_over_today": self.margin_over_today,
            "changes": self.changes, "evaluations": self.evaluations,
            "robust": self.robust})


_INPUTS = ("scenario_sha256", "files")
"""options.json's record of the inputs (the scenario file's sha256, and the files it names
when it names some: `named_file_digests`), compared on --resume but not options a user
gives. A run folder written before they were recorded resumes without the check."""


def _inputs(path: Path, data: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    files = named_file_digests(data, base_dir)
    return {"scenario_sha256": file_sha256(path),
            **({"files": files} if files else {})}


def _check_out(out: Path, resume: bool, asked: dict[str, Any]) -> None:
    opts = out / "options.json"
    if resume:
        if not opts.is_file():
            raise ScenarioError("--resume", f"{out} holds no advise run to resume (no "
                                "options.json); drop --resume to start one")
        before = json.loads(opts.read_text(encoding="utf-8"))
        before.pop("schema_version", None)  # the file's, not an option
        asked = json.loads(json.dumps(asked))  # as stored: tuples are lists
        if _INPUTS[0] not in before:  # written before the inputs were recorded
            asked = {k: v for k, v in asked.items() if k not in _INPUTS}
        changed = [k for k in _INPUTS if before.get(k) != asked.get(k)]
        if changed:
            raise ScenarioError("--resume", f"the scenario file or a file it names (a trace, "
                                f"a profile) changed since the run in {out} began "
                                f"({' and '.join(changed)} differ); resume with the same "
                                "inputs, or give another --out")
        for key in sorted(set(before) | set(asked)):
            if before.get(key) != asked.get(key):
                raise ScenarioError(f"--{key.replace('_', '-')}", f"the run in {out} was "
                                    f"started with {before.get(key)!r}, not "
                                    f"{asked.get(key)!r}; resume it with the same options")
    elif out.exists() and any(out.iterdir()):
        raise ScenarioError("--out", f"{out} is not empty; choose another folder, or add "
                            "--resume to continue the advise run in it")


def recommended_data(space: Space, key: str) -> dict[str, Any]:
    """The scenario mapping that runs config `key`."""
    data = copy.deepcopy(space.data)
    for assignment in space.overrides(config_from_key(key)):
        apply_override(data, assignment)
    return data


def _leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(_leaves(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: node}


def changes(before: Scenario, after: Scenario) -> list[str]:
    """What a user changes to go from `before` to `after`, as validated (defaults filled
    in, so a knob left at its default is not listed): one line per field
    (`policy.name: "sync" -> "async"`), the pools as one line; `steps` (advise's
    measurement length) is not a change to deploy."""
    out = []
    if before.pools != after.pools:
        def pools(sc: Scenario) -> str:
            return " + ".join(f"{p.name}: {p.gpus} GPUs" for p in sc.pools)
        out.append(f"pools: {pools(before)} -> {pools(after)}")
    a, b = (_leaves(sc.model_dump(mode="json", exclude={"pools", "steps"}))
            for sc in (before, after))
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            out.append(f"{k}: {json.dumps(a.get(k))} -> {json.dumps(b.get(k))}")
    return out


def recommended_yaml(space: Space, key: str, header: str, out: Path) -> str:
    """The scenario file that runs the recommendation (checked to load from `out`)."""
    data = rebase_paths(recommended_data(space, key), space.base_dir, out,
                        keys=FILE_KEYS)
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comment + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _config_dict(key: str) -> dict[str, Any]:
    return {} if key == TODAY else dict(config_from_key(key))


def _finalist_dict(f: Finalist, obj: Objective) -> dict[str, Any]:
    return {"key": f.key, "description": "the scenario as given" if f.key == TODAY
            else describe(config_from_key(f.key)), "config": _config_dict(f.key),
            "value": f.mean, "spread": f.spread, "replicates": list(f.values),
            "feasible": f.feasible, "figures": f.figures}


def advise(opts: AdviseOptions, resume: bool = False,
           log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> Advice:
    """Run `rlsim advise` (see the module docstring); returns the conclusion."""
    objs = objectives(opts.objective)
    obj = objs[0]  # decides the recommendation; all of them shape the search
    constraints = [parse_constraint(c) for c in opts.constraints]
    if opts.trials < 1:
        raise ScenarioError("--trials", f"must be >= 1, got {opts.trials}")
    if opts.reps < 1:
        raise ScenarioError("--reps", f"must be >= 1, got {opts.reps}")
    if opts.draws is not None and opts.draws < 1:
        raise ScenarioError("--draws", f"must be >= 1, got {opts.draws}")
    check_rule(opts.robust)
    check_executor(opts.executor, opts.jobs, opts.address)
    path = Path(opts.scenario)
    try:
        raw = read_yaml_file(path)
    except ScenarioError:
        raw = None  # unreadable: load_scenario says why
    if is_fleet(raw):
        raise ScenarioError("", "advise takes a single-job scenario, not a fleet (kind: "
                            "fleet): advise each job of the fleet on its own", str(path))
    scenario, base_dir = load_scenario(path, list(opts.overrides))
    if scenario.horizon is not None:
        # advise ranks the steady state of each configuration; a horizon's answers come from
        # `rlsim run` or `rlsim sweep` (checkpoint intervals, recovery schemes)
        raise ScenarioError("horizon", "advise ranks configurations on their steady state "
                            "and does not run a horizon; drop horizon, or compare checkpoint "
                            "intervals and recovery schemes with rlsim sweep", str(path))
    try:  # the job as given must run: it is the baseline every margin is measured against
        prepare(scenario, base_dir)
    except ScenarioError as err:
        raise ScenarioError(err.field, err.message, err.source or str(path)) from None
    data = copy.deepcopy(raw)  # the file's mapping, --set applied, for every point
    for assignment in opts.overrides:
        apply_override(data, assignment)
    seed = scenario.seed
    space = build_space(data, scenario, base_dir, str(path), opts.policies or None, opts.gpus,
                        constraints, opts.steps)
    valid = space.valid_grid()
    if not valid:
        reasons = "; ".join(f"{why} ({n} points)" for why, n in space.invalid.most_common(3))
        raise ScenarioError("--policies" if opts.policies else "policy",
                            f"no point of the space can run this job: {reasons}")
    if opts.draws is not None:
        check_drawable(scenario, opts.profile,
                       {a.split("=", 1)[0] for c in valid for a in space.overrides(c)},
                       opts.draws, FINALISTS + len(objs))
    out = Path(opts.out)
    asked = {**opts.asked(), **_inputs(path, data, base_dir)}
    _check_out(out, resume, asked)
    out.mkdir(parents=True, exist_ok=True)
    if not resume:
        write_atomic(json.dumps(stamped("advise", asked), indent=2) + "\n",
                     out / "options.json")
    trials = min(opts.trials, len(valid))
    log(f"advise: {len(valid)} valid points of {len(valid) + sum(space.invalid.values())} "
        f"({sum(space.invalid.values())} invalid, never run); {trials} trials, "
        f"{opts.reps} replicates of the best {FINALISTS}, {space.steps} steps each")

    ctx = PointContext(data, base_dir, str(path), ())
    executor = make_executor(opts.executor, ctx, opts.jobs, opts.address)
    journal = Journal.open(out / "evaluations.jsonl")
    runner = Runner(space, executor, journal, seed)
    try:
        found = search(space, objs, runner, trials, seed, out, resume, grid=valid,
                       progress=lambda d, t: log(f"advise: {d}/{t} trials"))
        ran = [(config_key(c), ev.figures) for _, c, ev, _ in found.trials
               if ev is not None and ev.figures is not None]
        feasible = sorted(((k, f) for k, f in ran if all(c.holds(f) for c in constraints)),
                          key=lambda kf: (-obj.signed(kf[1][obj.name]), kf[0]))
        best_keys = list(dict.fromkeys(k for k, _ in feasible))[:FINALISTS]
        for other in objs[1:]:  # with several objectives, the best on each is a finalist too
            top = min(feasible, key=lambda kf: (-other.signed(kf[1][other.name]), kf[0]),
                      default=None)
            if top is not None and top[0] not in best_keys:
                best_keys.append(top[0])
        if not best_keys:
            why = "; ".join(sorted({t[3] or "violates the constraints" for t in found.trials
                                    if t[3] or t[2] is not None})[:3])
            raise ScenarioError("--constraint" if constraints else "policy",
                                f"no trial ran and met the constraints: {why}")
        keys = [*best_keys, TODAY]
        log(f"advise: replicates of {len(best_keys)} finalists and the scenario as given")
        runs = runner.run([(k, r) for k in keys for r in range(opts.reps)])
    finally:
        executor.close()
    by_key: dict[str, list[Evaluation]] = {}
    for ev in runs:
        by_key.setdefault(ev.key, []).append(ev)
    finals = [f for k in keys if (f := finalist(k, by_key[k], obj, constraints)) is not None]
    ordered = rank([f for f in finals if f.key != TODAY], obj)
    if not ordered or not ordered[0].feasible:
        raise ScenarioError("--constraint", "no finalist meets the constraints on the mean of "
                            "its replicates")
    today = next((f for f in finals if f.key == TODAY), None)
    robust = None
    if opts.draws is not None:
        label = {f.key: describe(config_from_key(f.key)) for f in ordered}
        label[TODAY] = "the scenario as given"
        plans = [(path, [*opts.overrides, *(space.overrides(config_from_key(f.key)))],
                  label[f.key]) for f in ordered]
        plans.append((path, [*opts.overrides, f"steps={space.steps}"], label[TODAY]))
        robust = robust_advice(plans, opts.draws, obj, opts.robust, out,
                               executor=opts.executor, jobs=opts.jobs, address=opts.address,
                               resume=resume, profile=opts.profile, log=log)
        key_of = {v: k for k, v in label.items()}
        position = {key_of[d]: i for i, d in enumerate(robust["order"])}
        # the robust objective decides the order (feasible first); margins stay paired
        ordered = sorted(ordered, key=lambda f: (not f.feasible, position[f.key]))
    best = ordered[0]
    second = ordered[1] if len(ordered) > 1 else None

    evaluated = {k: ev.figures for (k, r), ev in journal.runs.items()
                 if r == 0 and k != TODAY and ev.figures is not None}
    front = pareto_front(evaluated)
    rows = [(dict(config_from_key(k)), figs[obj.name]) for k, figs in evaluated.items()]
    failures: dict[str, int] = dict(space.invalid)
    for (_k, _r), ev in journal.runs.items():
        if ev.error:
            failures[f"run failed: {ev.error}"] = failures.get(f"run failed: {ev.error}", 0) + 1
    advice = Advice(
        objective=obj.name, direction=obj.direction, unit=obj.unit,
        also_searched=[o.name for o in objs[1:]],
        recommended=_finalist_dict(best, obj),
        runner_up=_finalist_dict(second, obj) if second else None,
        today=_finalist_dict(today, obj) if today else None,
        margin_over_runner_up=asdict(margin(best, second, obj)) if second else None,
        margin_over_today=asdict(margin(best, today, obj)) if today else None,
        finalists=[_finalist_dict(f, obj) for f in ordered],
        pareto_front=[{"key": k, "description": describe(config_from_key(k)),
                       **{n: evaluated[k][n] for n in ("tokens_per_s", "usd_per_1k_tokens",
                                                      "staleness")}} for k in front],
        importance=importance(rows),
        trials=[{"number": n, "key": config_key(c), "description": describe(c),
                 "figures": ev.figures if ev else None, "error": why}
                for n, c, ev, why in found.trials],
        space={"gpus": space.gpus, "gpu": space.gpu_type, "steps": space.steps,
               "policies": list(space.policies), "rollout_gpus": list(space.splits),
               "rollout_tp": list(space.tps), "max_running_seqs": list(space.seqs),
               "valid_points": len(valid), "invalid_points": sum(space.invalid.values()),
               "constraints": [c.text() for c in constraints], "seed": seed,
               "reps": opts.reps, "trials": trials},
        evaluations=len(journal.runs),
        failures=failures,
        caveats=_caveats(best, today, scenario.framework != type(scenario.framework)(),
                         sum(p.gpus for p in scenario.pools), space.gpus)
        + _budget_caveat(found.trials, obj, len(valid)),
        changes=changes(scenario, space.scenario(config_from_key(best.key))),
        robust=robust,
    )
    _write(out, space, advice, obj)
    return advice


LATE_GAIN = 0.75
"""A search whose best so far still improved after this share of its trials may not have
converged: its answer can change with the budget."""


def _budget_caveat(trials: list[tuple[int, Any, Evaluation | None, str | None]],
                   obj: Objective, valid: int) -> list[str]:
    """A caveat when the best trial so far improved late in the search (and points are
    left unrun): more --trials may change the answer."""
    best, last = -float("inf"), 0
    for i, (_, _, ev, why) in enumerate(trials):
        if ev is None or ev.figures is None or why:
            continue
        value = obj.signed(ev.figures[obj.name])
        if value > best:
            best, last = value, i + 1
    n = len(trials)
    if n >= valid or n == 0 or last <= LATE_GAIN * n:
        return []
    return [f"The search's best so far last improved at trial {last} of {n} (of {valid} "
            f"valid points): it may not have converged, and more trials may change the "
            f"answer. Check with --trials {2 * n} into another --out."]


def _caveats(best: Finalist, today: Finalist | None, fitted: bool, today_gpus: int,
             gpus: int) -> list[str]:
    out = []
    if today_gpus != gpus:
        out.append(f"The scenario as given runs {today_gpus} GPUs and the search ran "
                   f"{gpus} (--gpus): the margin over it includes the difference in GPUs.")
    stale = best.figures.get("staleness", 0.0)
    if stale > 0:
        steps = "step" if stale == 1 else "steps"
        out.append(f"The recommendation trains on samples up to {stale:g} {steps} stale "
                   "(off-policy): check that the algorithm tolerates it (importance "
                   "sampling, a staleness bound) before deploying it.")
    if today is not None:
        a, b = best.figures.get("tokens_per_sample", 0), today.figures.get("tokens_per_sample", 0)
        if a and b and abs(a / b - 1) > 0.05:
            out.append(f"It trains {a:.0f} response tokens per sample against {b:.0f} for the "
                       "scenario as given: a policy that drops or delays long responses changes "
                       "what is trained, not only how fast.")
    if fitted:
        out.append("The scenario sets framework costs (framework: from rlsim fit, or by "
                   "hand): the recommendation holds for those values, which were fitted in "
                   "one regime; check its report's stated uncertainty before trusting a "
                   "far-off configuration.")
    else:
        out.append("Framework costs are rlsim's defaults, not fitted to a measured run of "
                   "this job: `rlsim fit` against one of your logs sharpens the answer.")
    return out


def _write(out: Path, space: Space, advice: Advice, obj: Objective) -> None:
    from rlsim.report.advise_report import amount, margin_text, render_advice

    rec = advice.recommended
    m = advice.margin_over_runner_up
    header = "\n".join([
        f"Recommended by rlsim advise: {rec['description']}.",
        f"{obj.label}: {amount(rec['value'])} {obj.unit} (replicate spread "
        f"±{amount(rec['spread'])}).",
        f"Over the runner-up: {margin_text(m, obj.unit)}." if m else "No runner-up.",
        f"Over the scenario as given: {margin_text(advice.margin_over_today, obj.unit)}.",
        "Changes from the scenario as given:",
        *(f"  {c}" for c in advice.changes),
        f"Run it: rlsim run {out / 'recommended.yaml'}",
        "",
    ])
    text = recommended_yaml(space, rec["key"], header, out)
    write_atomic(text, out / "recommended.yaml")
    load_scenario(out / "recommended.yaml")  # runnable from where it lies
    write_atomic(render_advice(advice), out / "report.html")
    body = json.dumps(stamped("advise", asdict(advice)), indent=2, default=float) + "\n"
    write_atomic(body, out / "advice.json")
