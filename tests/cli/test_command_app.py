"""A command line naming a command is parsed by an app holding that command alone
(`rlsim.cli.command_app`, issue 40's start time): it must parse, help and refuse exactly as
the whole app does."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from rlsim import cli
from rlsim.cli_plugins import command_name

NAMES = [command_name(info) for info in cli.whole_app().registered_commands] + [
    info.name for info in cli.app.registered_groups]


def _both(args: list[str]) -> tuple[tuple[int, str], tuple[int, str]]:
    runner = CliRunner()
    whole = runner.invoke(cli.whole_app(), args)
    one = runner.invoke(cli.command_app(args), args)
    return (whole.exit_code, whole.output), (one.exit_code, one.output)


def test_every_command_and_group_is_found() -> None:
    assert {"run", "check", "compare", "calibrate", "validate", "list", "fit",
            "import"} <= set(NAMES)
    for name in NAMES:
        one = cli.command_app([name])
        assert one is not cli.app
        assert len(one.registered_commands) + len(one.registered_groups) == 1


@pytest.mark.parametrize("name", NAMES)
def test_help_and_usage_errors_are_the_whole_apps(name: str) -> None:
    for args in ([name, "--help"], [name, "--no-such-option"], [name, "--set"]):
        whole, one = _both(args)
        assert one == whole, args


def test_lines_without_a_command_get_the_whole_app() -> None:
    for args in ([], ["--help"], ["--version"], ["no-such-command"], ["--version", "run"]):
        assert cli.command_app(args) is cli.whole_app()
    whole, one = _both(["runn"])
    assert one == whole and whole[0] == 2


def test_the_subcommands_of_a_group_parse_as_before() -> None:
    whole, one = _both(["import", "verl", "--help"])
    assert one == whole and whole[0] == 0


def test_a_command_of_rlsim_reads_no_plugin() -> None:
    """`rlsim list` does not look for plugins (reading every installed package's entry
    points: ~0.01 s)."""
    code = ("import importlib.metadata as m, sys\n"
            "read = m.entry_points\n"
            "def refuse(**kw):\n"
            "    if kw.get('group') == 'rlsim.plugins': raise SystemExit('plugins read')\n"
            "    return read(**kw)\n"
            "m.entry_points = refuse\n"
            "sys.argv = ['rlsim', 'list', 'gpus']\n"
            "from rlsim.cli import main; main()")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "H100" in res.stdout


def _start_up_state(args: list[str]) -> list[str]:
    """After `cli._start_up(args)` in a fresh interpreter: whether the collector runs,
    whether anything is frozen, whether rlsim.api is imported, and the output of a
    command that prints at exit (the exit hooks still run)."""
    code = ("import atexit, gc, sys\n"
            "import rlsim.cli as c\n"
            f"c._start_up({args!r})\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 0, 'rlsim.api' in sys.modules)\n"
            "atexit.register(print, 'exit hook ran')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def test_a_scenario_commands_imports_leave_the_collector_on_and_nothing_frozen() -> None:
    """Frozen objects would stop the run from freezing its own state (api._collector_tuned
    freezes only when nothing is frozen)."""
    assert _start_up_state(["run", "x.yaml"]) == ["True False True", "exit hook ran"]


def test_other_commands_import_nothing_more_at_start_up() -> None:
    for args in (["list", "gpus"], ["--version"], []):
        assert _start_up_state(args) == ["True False False", "exit hook ran"], args
