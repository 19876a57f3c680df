"""The `rlsim advise` command: which policy and settings to deploy, in one command.

Owns its arguments, what it prints and its exit codes (the conventions of rlsim/cli.py: 0
ok, 2 bad input in one line naming the flag or field, 130 interrupted: `--resume` goes on;
`--json` prints only JSON). The work is in `rlsim.advise` (docs/advise.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from rlsim.cli_common import NoProfileUncertaintyOpt

ADVISE_HELP = """Search the policies and their settings for the best way to run a job.

Varies the policy, its placement and rollout/train GPU split, the rollout TP and max
running sequences (vLLM's max_num_seqs) and each policy's own knobs (async's alpha, ROLL's
async_generation_ratio; tail batching's eta), on the job's GPUs; runs optuna's seeded TPE;
runs the best configurations again on replicate seeds; writes DIR/recommended.yaml (run it
with `rlsim run`), DIR/report.html and DIR/advice.json. docs/advise.md explains each
output."""


def advise(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML: the job to advise on.",
                                             metavar="SCENARIO")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the results (new, or "
                                      "with --resume the folder of a run to continue).")],
    objective: Annotated[str, typer.Option(
        "--objective", help="tokens_per_s (trained tokens/s), usd_per_1k_tokens, step_time "
        "or goodput (good samples/s); several, comma-separated, search them together "
        "(multi-objective TPE) and the first decides.")] = "tokens_per_s",
    constraint: Annotated[list[str] | None, typer.Option(
        "--constraint", help="A bound every recommendation meets: max_staleness=1, "
        "usd_per_hour<=400, step_time<=300, tokens_per_s>=20000 (repeatable).")] = None,
    gpus: Annotated[int | None, typer.Option(
        "--gpus", help="GPUs of the job (default: the scenario's pools together).")] = None,
    policies: Annotated[str | None, typer.Option(
        "--policies", help="Policies to consider, comma-separated (default: all: "
        "sync,one_off,tail_batching,async).")] = None,
    trials: Annotated[int, typer.Option(
        "--trials", help="Distinct configurations to simulate in the search.")] = 40,
    reps: Annotated[int, typer.Option(
        "--reps", help="Replicate seeds for the finalists (common random numbers).")] = 3,
    steps: Annotated[int | None, typer.Option(
        "--steps", help="Steps per run (default: the scenario's, raised to cover the "
        "longest policy cycle twice after the warm-up).")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a field of the scenario first: dotted.path=value.")] = None,
    executor: Annotated[str, typer.Option(
        "--executor", help="local (processes on this machine) or ray.")] = "local",
    jobs: Annotated[int | None, typer.Option(
        "--jobs", help="Runs at a time (default: one per CPU).")] = None,
    address: Annotated[str | None, typer.Option(
        "--address", help="Ray cluster address (with --executor ray).")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the run in --out (after Ctrl-C or a kill): trials done "
        "are kept, none is run twice.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print only JSON: the recommendation, its value and spread, the "
        "runner-up.")] = False,
    draws: Annotated[int | None, typer.Option(
        "--draws", help="Run the finalists at N draws over the scenario's unknowns and rank "
        "them by --robust; say which unknown the best depends on, with its threshold "
        "(docs/uncertainty.md).")] = None,
    robust: Annotated[str, typer.Option(
        "--robust", help="With --draws: p10 (the objective in the worst 10% of draws) or "
        "p_best (the share of draws a finalist is best in).")] = "p10",
    no_profile_uncertainty: NoProfileUncertaintyOpt = False,
) -> None:
    from rlsim.advise.run import AdviseOptions
    from rlsim.advise.run import advise as run_advise
    from rlsim.config.loading import split_overrides

    names = tuple(p.strip() for p in (policies or "").split(",") if p.strip())
    if policies is not None and not names:
        from rlsim.config.errors import ScenarioError

        raise ScenarioError("--policies", "name at least one policy, e.g. sync,async")
    overrides = tuple(o for v in set_ or [] for o in split_overrides(v))
    opts = AdviseOptions(
        scenario=str(scenario), out=str(out), objective=objective,
        constraints=tuple(constraint or ()), overrides=overrides, gpus=gpus,
        policies=names, trials=trials, reps=reps, steps=steps, executor=executor, jobs=jobs,
        address=address, draws=draws, robust=robust, profile=not no_profile_uncertainty)
    if draws is None and (robust != "p10" or no_profile_uncertainty):
        from rlsim.cli_common import fail

        fail(f"{'--robust' if robust != 'p10' else '--no-profile-uncertainty'}: give "
             "--draws N as well")
    try:
        advice = run_advise(opts, resume=resume)
    except KeyboardInterrupt:
        typer.echo(f"rlsim: interrupted; the runs done are kept in {out}: continue with the "
                   "same command and --resume", err=True)
        raise typer.Exit(130) from None
    if as_json:
        typer.echo(json.dumps(advice.brief(), indent=2, default=float))
        return
    from rlsim.report.advise_report import amount, margin_text

    rec, unit = advice.recommended, advice.unit
    lines = [f"Recommended: {rec['description']}",
             f"  {advice.objective}: {amount(rec['value'])} {unit} (replicate spread "
             f"±{amount(rec['spread'])})"]
    for label, who, m in (("the runner-up", advice.runner_up, advice.margin_over_runner_up),
                          ("today", advice.today, advice.margin_over_today)):
        if who and m:
            lines.append(f"  over {label} ({who['description']}): {margin_text(m, unit)}")
    if advice.robust is not None:
        lines += robust_lines(advice.robust, advice.objective, unit)
    lines += ["  changes from the scenario as given:",
              *(f"    {c}" for c in advice.changes),
              *(f"  caveat: {c}" for c in advice.caveats),
              f"{advice.evaluations} simulations; run it: rlsim run {out / 'recommended.yaml'}",
              f"report: {out / 'report.html'}"]
    typer.echo("\n".join(lines))


def robust_lines(robust: dict[str, Any], objective: str, unit: str) -> list[str]:
    """The finalists under the unknowns, in the robust order, and what the best depends on."""
    from rlsim.report.advise_report import amount

    rule = ("the objective in the worst 10% of draws" if robust["rule"] == "p10"
            else "the share of draws it is best in")
    out = [f"  under {robust['n']} draws over {', '.join(robust['unknowns'])} "
           f"(ranked by {rule}):"]
    by = {r["key"]: r for r in robust["configs"]}
    for key in [*robust["order"], robust["configs"][-1]["key"]]:
        r = by[key]
        q = r["quantiles"]
        spread = ("no run gave metrics" if q is None else
                  f"{amount(q['median'])} [{amount(q['p10'])}, {amount(q['p90'])}] {unit}")
        best = "" if r["p_best"] is None else f", best in {r['p_best']:.0%}"
        out.append(f"    {key}: {objective} {spread}{best}")
    out.append(f"  {robust['depends'].get('text') or 'the best is the same in every draw'}")
    return out
