"""`hermitcrab service install | uninstall | status`: keep `hermitcrab run` running as a user service."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from hermitcrab.install.service import (
    Command,
    has_tool,
    manager_for,
    preflight,
    program_for,
    require_tool,
    run_commands,
    write,
)

from ..config import home_dir

service = typer.Typer(
    help="Keep `hermitcrab run` running for months: a systemd user unit (Linux) or a launchd agent (macOS), "
    "restarted when it fails, started at login (or at boot, with lingering).",
    no_args_is_help=True,
)

DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print what would be written and run, and change nothing.")
]


def _warn(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr)


def _would_run(commands: list[Command]) -> None:
    for command in commands:
        typer.echo(f"would run: {command}")


@service.command()
def install(
    dry_run: DryRunOption = False,
    start: Annotated[
        bool, typer.Option("--start/--no-start", help="Enable and (re)start it now; --no-start only writes the file.")
    ] = True,
) -> None:
    """Write the service file for `hermitcrab run` with this installation's script and HERMITCRAB_HOME, then start it.

    Linux: ~/.config/systemd/user/hermitcrab.service (or under $XDG_CONFIG_HOME), logs in the journal.

    macOS: ~/Library/LaunchAgents/local.hermitcrab.plist, logs in ~/Library/Logs/hermitcrab.log.

    Running it again rewrites the file if anything changed (a moved venv, another home, a new PATH), then restarts.

    The service sees only HERMITCRAB_HOME and PATH from this shell: keep API keys in config.toml.
    """
    manager, program = manager_for(os.environ), program_for(os.environ)
    commands = manager.start() if start else []
    if commands and not dry_run:
        require_tool(manager)
    for line in preflight(program, os.environ):
        _warn(line)
    if dry_run:
        typer.echo(f"would write {manager.path}:\n{manager.render(program)}")
        _would_run(commands)
        return
    typer.echo(f"{'wrote' if write(manager, program) else 'unchanged'} {manager.path}")
    run_commands(commands, typer.echo)
    typer.echo(f"logs: {manager.logs}")
    for note in manager.notes():
        typer.echo(f"note: {note}")


@service.command()
def uninstall(dry_run: DryRunOption = False) -> None:
    """Stop the service and remove the file `install` wrote; its logs and HERMITCRAB_HOME stay."""
    manager = manager_for(os.environ)
    if not manager.path.exists():
        typer.echo(f"not installed: no {manager.path}; nothing to do")
        return
    if dry_run:
        _would_run(manager.stop())
        typer.echo(f"would remove {manager.path}")
        _would_run(manager.forget())
        return
    managed = has_tool(manager)  # without it (a file written with --no-start) there is nothing to stop
    if managed:
        run_commands(manager.stop(), typer.echo)
    manager.path.unlink(missing_ok=True)
    typer.echo(f"removed {manager.path}")
    if managed:
        run_commands(manager.forget(), typer.echo)


@service.command()
def status() -> None:
    """Say whether the service is installed and running, how it last exited, and where its logs are.

    Exit code 0 when it runs, 3 when it is not installed or not running (as `systemctl status` does).
    """
    manager = manager_for(os.environ)
    if not manager.path.exists():
        typer.echo(f"installed: no ({manager.path} does not exist); `hermitcrab service install` installs it")
        raise typer.Exit(3)
    typer.echo(f"installed: {manager.path}")
    state = manager.state()
    for line in state.lines:
        typer.echo(line)
    typer.echo(f"logs: {manager.logs}")
    typer.echo(f"host log: {home_dir(os.environ) / 'state' / 'logs' / 'host.log'}")
    if not state.running:
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    app.add_typer(service, name="service")
