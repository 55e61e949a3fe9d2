"""The `hermitcrab` command: a thin typer layer over the host library, one command group per module."""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Annotated

import typer

from ..errors import HermitcrabError
from . import ask, chat, doctor, init, mcp_config

app = typer.Typer(
    help="hermitcrab: a self-hosted personal AI assistant living in swappable MCP servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for module in (chat, ask, init, doctor, mcp_config):
    module.register(app)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"hermitcrab {version('hermitcrab')} (mcp {version('mcp')})")
        raise typer.Exit


@app.callback()
def _root(
    show_version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """hermitcrab: a self-hosted personal AI assistant living in swappable MCP servers."""


def main() -> None:
    """Console-script entry: domain errors become one clear message on stderr and exit code 1."""
    try:
        app()
    except HermitcrabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
