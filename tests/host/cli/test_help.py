"""Every command's `--help`, as a person reads it: flags take no value, so none may show one (typer's rich layout
printed `--verbose <bool>` for each flag)."""

from __future__ import annotations

import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app


def _commands(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    if isinstance(command, TyperGroup):
        for name, sub in command.commands.items():
            found.extend(_commands(sub, (*path, name)))
    return found


def test_no_help_shows_a_value_for_a_flag() -> None:
    root = typer.main.get_command(app)
    paths = _commands(root)
    assert ("doctor",) in paths and ("service", "install") in paths  # the walk reaches groups' commands
    for path in paths:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
        assert result.exit_code == 0, (path, result.output)
        assert "--help" in result.output
        assert "<bool>" not in result.output, (path, result.output)
