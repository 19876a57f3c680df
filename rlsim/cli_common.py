"""What the command modules share: the one-line failure, which kind of scenario a file
holds, and the folders and pages several commands write.

Owns `fail` (one line on stderr, `rlsim: error: ...`, and the exit code: 2 for bad input),
`is_fleet_file` (a single job or a fleet, `kind: fleet`: the commands take both and hand a
fleet to rlsim/cli_fleet.py), `compare_folder` and `shared_plotly` (a compare folder's run
folders and the one plotly.js its pages load) and `slug`. rlsim/cli.py, cli_fleet.py,
cli_byo.py and cli_advise.py use them, so each convention is written once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from rlsim.config.errors import ScenarioError

NoProfileUncertaintyOpt = Annotated[bool, typer.Option(
    "--no-profile-uncertainty", help="With --draws: leave the framework profile's calibrated "
    "knobs at their values and its discrepancy out (by default each knob is an unknown over "
    "its 95% interval, and the fit's discrepancy a model error).")]
"""The option run, compare, sweep and advise take with --draws (rlsim.draws)."""


def fail(message: str, code: int = 2) -> NoReturn:
    """Bad input (or `code`): one line on stderr, then exit."""
    typer.echo(f"rlsim: error: {message}", err=True)
    raise typer.Exit(code)


def is_fleet_file(path: Path) -> bool:
    """Whether `path` holds a multi-job (`kind: fleet`) scenario; False when unreadable
    (the single-job loader then reports what is wrong with it)."""
    from rlsim.config.fleet_loading import is_fleet
    from rlsim.config.loading import read_yaml_file

    try:
        return is_fleet(read_yaml_file(path))
    except ScenarioError:
        return False


def compare_folder(out: Path, names: list[str]) -> tuple[list[str], str]:
    """Start a compare folder: its run folders' names (<i>-<name>) and the one copy of
    plotly.js that all its reports load (instead of about 5 MB embedded in each)."""
    from rlsim.report.page import write_shared_plotly

    try:
        out.mkdir(parents=True, exist_ok=True)
        js = write_shared_plotly(out)
    except OSError as err:
        fail(f"--out: cannot write compare folder {str(out)!r}: {err.strerror or err}")
    return [f"{i}-{slug(n)}" for i, n in enumerate(names)], js


def shared_plotly(target: Path) -> str | None:
    """Where a page written at `target` loads plotly.js from: the shared copy of the compare
    folder it is written in (or in one of whose run folders), written there if missing;
    None, plotly.js inline, anywhere else."""
    from rlsim.report.page import write_shared_plotly
    from rlsim.report.rundata import COMPARE_MANIFEST, is_run_dir

    folder = target.resolve().parent
    if (folder / COMPARE_MANIFEST).is_file():
        return write_shared_plotly(folder)
    if is_run_dir(folder) and (folder.parent / COMPARE_MANIFEST).is_file():
        return "../" + write_shared_plotly(folder.parent)
    return None


def slug(text: str) -> str:
    """`text` as a file name: letters, digits and -_. kept, the rest -, at most 60."""
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text)[:60]
