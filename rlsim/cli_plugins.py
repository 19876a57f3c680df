"""Commands other packages add to the `rlsim` CLI through the `rlsim.plugins` entry points.

Owns finding and loading the plugins, and the stand-in for a command rlsim's docs promise
that no installed plugin provides. A plugin is an entry point in the group `rlsim.plugins`
whose object is `register(app: typer.Typer) -> None`; the calibration package is one
(pyproject.toml: `calibration = "calibration.cli:register"`, adding `calibrate` and
`validate`). rlsim imports no plugin by name: that keeps the import contract (nothing in
rlsim imports calibration) while `rlsim calibrate` works as before.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import typer

GROUP = "rlsim.plugins"
# The commands the docs and the Makefile use that a plugin provides, and what to install
# for them: without it each is still a command, one that says so (exit 2).
EXPECTED = {
    "calibrate": "Measure this machine (or import Vidur data) and write a cost profile.",
    "validate": "Run a small real RL job here and compare rlsim with it "
                "(--real-runs: public runs).",
}
INSTALL = ("the calibration plugin is not installed: from the rlsim checkout, "
           "pip install -e '.[calibrate]'")


def add_plugins(app: typer.Typer) -> None:
    """Let every installed plugin register its commands on `app`, in entry-point name
    order; then a stand-in for each EXPECTED command none of them added."""
    problem = INSTALL
    for ep in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name):
        try:
            register = ep.load()
        except ImportError as err:  # metadata left behind by an uninstalled package
            problem = f"{INSTALL} (plugin {ep.name!r} did not import: {err})"
            continue
        register(app)
    added = {command_name(info) for info in app.registered_commands}
    for name, summary in EXPECTED.items():
        if name not in added:
            _add_stand_in(app, name, summary, problem)


def command_name(info: Any) -> str:
    """A registered command's name as typer gives it (the function's name by default)."""
    if info.name:
        return str(info.name)
    return str(info.callback.__name__).lower().replace("_", "-")


def _add_stand_in(app: typer.Typer, name: str, summary: str, problem: str) -> None:
    """`rlsim NAME ...` with any arguments: one line naming what to install, exit 2."""

    def stand_in() -> None:
        typer.echo(f"rlsim: error: {name}: {problem}", err=True)
        raise typer.Exit(2)

    app.command(name, help=f"{summary} (Needs the calibration plugin.)",
                context_settings={"allow_extra_args": True,
                                  "ignore_unknown_options": True})(stand_in)
