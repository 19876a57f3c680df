"""`calibrate` and `validate` reach rlsim's CLI through the `rlsim.plugins` entry points.

rlsim never imports calibration (pyproject.toml's import contracts); calibration/cli.py
registers both commands on rlsim's app. Without the plugin each is a stand-in that says
what to install: one line on stderr, exit 2.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from rlsim import cli
from rlsim.cli_plugins import GROUP, add_plugins

ROOT = Path(__file__).resolve().parents[2]
# `rlsim --help`'s order, unchanged since the two commands moved into the plugin (advise,
# added later, after sweep; check, after run).
ORDER = ["run", "check", "compare", "report", "sweep", "advise", "estimate", "calibrate",
         "validate", "list", "schema", "fit", "import"]


def _commands(app: typer.Typer) -> dict[str, object]:
    group = typer.main.get_command(app)
    ctx = group.make_context("rlsim", ["--help"], resilient_parsing=True)
    return {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}  # type: ignore[attr-defined]


def test_the_entry_point_is_installed() -> None:
    (ep,) = [e for e in importlib.metadata.entry_points(group=GROUP) if e.name == "calibration"]
    assert ep.value == "calibration.cli:register"


def test_the_app_lists_the_plugin_commands_in_their_old_place() -> None:
    commands = _commands(cli.whole_app())
    assert list(commands) == ORDER
    for name in ("calibrate", "validate"):
        callback = commands[name].callback  # type: ignore[attr-defined]
        assert callback.__module__ == "calibration.cli", name


def test_without_the_plugin_calibrate_says_what_to_install(tmp_path: Path) -> None:
    # A fresh interpreter whose entry points are empty: the CLI builds its app without it.
    code = ("import importlib.metadata as m, sys; m.entry_points = lambda **kw: (); "
            "sys.argv = ['rlsim', 'calibrate', '--quick', '--out', 'x']; "
            "from rlsim.cli import main; main()")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("rlsim: error: calibrate: the calibration plugin is not "
                               "installed"), lines[0]
    assert "pip install -e '.[calibrate]'" in lines[0]
    assert not (tmp_path / "x").exists()


def test_stand_ins_keep_the_listing_and_take_any_arguments(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: ())
    app = typer.Typer()
    add_plugins(app)
    assert list(_commands(app)) == ["calibrate", "validate"]
    res = CliRunner().invoke(app, ["validate", "--real-runs", "--json"])
    assert res.exit_code == 2
    assert "validate: the calibration plugin is not installed" in res.output


def test_a_plugin_that_does_not_import_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = importlib.metadata.EntryPoint(name="calibration", group=GROUP,
                                           value="no_such_module_here:register")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: (broken,))
    app = typer.Typer()
    add_plugins(app)
    res = CliRunner().invoke(app, ["calibrate", "--out", "x"])
    assert res.exit_code == 2
    assert "plugin 'calibration' did not import" in res.output
