"""The bring-your-own-job commands: `rlsim import verl|roll` and `rlsim fit`.

Owns their arguments, output files and exit codes (the conventions of rlsim/cli.py: 0 ok,
2 bad input with one line naming the key, flag, `--set` or log line, `--json` prints only
JSON), and what the scenario file's header says: the config, the `--set` overrides, and
the framework version whose defaults the importer applied.
The work is in `rlsim.importers` (framework configs to scenarios) and `rlsim.fit` (logs,
the fitter and its report).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rlsim.cli_common import fail
from rlsim.config.errors import ScenarioError

if TYPE_CHECKING:
    from rlsim.importers.base import Facts, Imported
    from rlsim.importers.overrides import SetOverride

    # An importer: the config's path, the flags' facts and the --set overrides in order.
    Reader = Callable[[Path, Facts, list[SetOverride]], Imported]

import_app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    help="Turn a framework's config (veRL, ROLL) into an rlsim scenario whose every field "
    "names the config key it came from.")



GpuOpt = Annotated[str | None, typer.Option(
    "--gpu", help="GPU type (catalogue name, e.g. H800): configs do not hold it.")]
NodesOpt = Annotated[int | None, typer.Option(
    "--nodes", min=1, help="Nodes of the job (when the config does not say).")]
GpusPerNodeOpt = Annotated[int | None, typer.Option(
    "--gpus-per-node", min=1, help="GPUs per node (when the config does not say).")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="Catalogue model to use instead of the config's model path.")]
RespMedianOpt = Annotated[int | None, typer.Option(
    "--response-len-median", min=1,
    help="Median response length in tokens (configs hold only the cap).")]
RespSigmaOpt = Annotated[float | None, typer.Option(
    "--response-len-sigma", min=0.0, help="Log-space sigma of the response lengths.")]
PromptMedianOpt = Annotated[int | None, typer.Option(
    "--prompt-len-median", min=1, help="Median prompt length in tokens.")]
StepsOpt = Annotated[int | None, typer.Option("--steps", min=1, help="Steps to simulate.")]
NameOpt = Annotated[str | None, typer.Option(
    "--name", help="Scenario name (default: the config file's stem).")]
ImportOutOpt = Annotated[Path, typer.Option(
    "--out", help="Scenario YAML to write (each field with its source key as a comment).")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")]
ImportSetOpt = Annotated[list[str] | None, typer.Option(
    "--set", help="Override the config as if appended to its command line, Hydra-style "
    "(repeatable, applied in order): key=value overrides, +key=value adds, ++key=value adds "
    "or overrides, ~key removes.")]


def _facts(gpu: str | None, nodes: int | None, gpus_per_node: int | None, model: str | None,
           response_len_median: int | None, response_len_sigma: float | None,
           prompt_len_median: int | None, steps: int | None, name: str | None) -> Facts:
    from rlsim.importers.base import Facts

    return Facts(gpu=gpu, nodes=nodes, gpus_per_node=gpus_per_node, model=model,
                 response_len_median=response_len_median,
                 response_len_sigma=response_len_sigma, prompt_len_median=prompt_len_median,
                 steps=steps, name=name)


def _import(framework: str, reader: Reader, config: Path, facts: Facts,
            set_words: list[str] | None, out: Path, force: bool) -> None:
    from rlsim.importers.base import check_runs, to_yaml, write_atomic
    from rlsim.importers.overrides import parse_sets

    if not config.is_file():
        fail(f"{config}: no such file")
    if out.exists() and not force:
        fail(f"--out: {out} exists; pass --force to overwrite it")
    try:
        sets = parse_sets(set_words or [])
        imported = reader(config, facts, sets)
    except ScenarioError as err:
        fail(err.line())
    try:
        check_runs(imported)  # the door every run goes through, errors by config key
    except ScenarioError as err:
        fail(err.line())
    header = f"Imported by `rlsim import {framework}` from {config}."
    if sets:
        header += ("\nOverridden after the config's own keys: "
                   + " ".join(s.where for s in sets))
    header += (f"\nDefaults of {imported.defaults_of} fill every key the config does not "
               "set.\nEach field names the config key (or flag, or default) it came from.")
    if imported.ignored:
        header += f"\nConfig keys not used ({len(imported.ignored)}): listed at the end."
    text = to_yaml(imported, header)
    if imported.ignored:
        text += "\n# Not used:\n" + "".join(
            f"#   {key}: {why}\n" for key, why in imported.ignored)
    write_atomic(out, text)
    typer.echo(f"wrote {out} ({len(imported.sources)} fields from the config and flags, "
               f"{len(imported.ignored)} keys not used: listed at the end of the file; "
               f"defaults of {imported.defaults_of})")


@import_app.command("verl")
def import_verl_cmd(
    config: Annotated[Path, typer.Argument(
        help="veRL config: a Hydra YAML (ppo_trainer style) or a launch script "
        "(python3 -m verl.trainer.main_ppo key=value ...).")],
    out: ImportOutOpt,
    gpu: GpuOpt = None, nodes: NodesOpt = None, gpus_per_node: GpusPerNodeOpt = None,
    model: ModelOpt = None, response_len_median: RespMedianOpt = None,
    response_len_sigma: RespSigmaOpt = None, prompt_len_median: PromptMedianOpt = None,
    steps: StepsOpt = None, name: NameOpt = None, force: ForceOpt = False,
    set_: ImportSetOpt = None,
) -> None:
    """Import a veRL job (rollout.n, ppo_mini_batch_size, ... keep their veRL names)."""
    from rlsim.importers.verl import import_verl

    _import("verl", import_verl, config,
            _facts(gpu, nodes, gpus_per_node, model, response_len_median,
                   response_len_sigma, prompt_len_median, steps, name), set_, out, force)


@import_app.command("roll")
def import_roll_cmd(
    config: Annotated[Path, typer.Argument(
        help="ROLL pipeline YAML (RLVR or agentic).")],
    out: ImportOutOpt,
    gpu: GpuOpt = None, nodes: NodesOpt = None, gpus_per_node: GpusPerNodeOpt = None,
    model: ModelOpt = None, response_len_median: RespMedianOpt = None,
    response_len_sigma: RespSigmaOpt = None, prompt_len_median: PromptMedianOpt = None,
    steps: StepsOpt = None, name: NameOpt = None, force: ForceOpt = False,
    set_: ImportSetOpt = None,
) -> None:
    """Import a ROLL job (rollout_batch_size, async_generation_ratio, ... keep their names)."""
    from rlsim.importers.roll import import_roll

    _import("roll", import_roll, config,
            _facts(gpu, nodes, gpus_per_node, model, response_len_median,
                   response_len_sigma, prompt_len_median, steps, name), set_, out, force)


def fit(
    scenario: Annotated[Path, typer.Argument(help="The job's scenario (e.g. from rlsim import).")],
    log: Annotated[Path, typer.Option(
        "--log", help="The measured run: a veRL console log, a W&B CSV/JSON export, or "
        "ROLL's logged metrics (docs/fit.md: each format and what is read).")],
    out: Annotated[Path, typer.Option(
        "--out", help="Folder for fitted.yaml and the fit report (fit.md, fit.html).")],
    steps: Annotated[int | None, typer.Option(
        "--steps", min=2, help="Steps of each fitting simulation (one is warm-up).")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print per-phase measured and simulated seconds as JSON.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Write into a non-empty --out, and fit a log that does not match "
        "the scenario (framework, lengths, GPUs, batch), with a warning in fit.md.")] = False,
) -> None:
    """Fit the framework knobs a measured run identifies; write fitted.yaml and a report."""
    from rlsim.config.loading import load_scenario
    from rlsim.fit.checks import implausible, mismatches
    from rlsim.fit.fitter import fit as run_fit
    from rlsim.fit.logs import read_log, summary
    from rlsim.fit.report import fit_json, write_fit
    from rlsim.prepare import prepare

    if out.exists() and any(out.iterdir()) and not force:
        fail(f"--out: {out} is not empty; pass --force to write into it")
    try:
        sc, base = load_scenario(scenario)
        try:  # the job must run as given before anything is fitted to it
            prepare(sc, base)
        except ScenarioError as err:
            raise ScenarioError(err.field, err.message, str(scenario)) from None
        run = read_log(log)
        different = mismatches(sc, summary(run))
        if different and not force:
            raise ScenarioError(str(log), f"not the scenario's job: {'; '.join(different)} "
                                "(fit the log to its own job's scenario, or pass --force)")
        result = run_fit(sc, run, steps, base_dir=base,
                         progress=lambda line: typer.echo(f"rlsim fit: {line}", err=True))
        result.mismatches = different
        result.implausible = implausible(result.params, result.step.measured_s,
                                         sc.framework.name)
        for line in [*(f"warning: fitted anyway (--force): {m}" for m in different),
                     *(f"warning: implausible {m}" for m in result.implausible)]:
            typer.echo(f"rlsim fit: {line}", err=True)
        write_fit(result, out)
    except ScenarioError as err:
        fail(err.line())
    if as_json:
        typer.echo(json.dumps(fit_json(result)))
        return
    typer.echo(f"wrote {out}/fitted.yaml, {out}/fit.md, {out}/fit.html")
