"""`hermitcrab mcp-config NAME`: print the Claude Desktop JSON snippet for one of our servers."""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer

from hermitcrab.install.own_servers import portable_entry, server_entry

from ..config import home_dir
from .servers import ServerName


def mcp_config(
    name: ServerName,
    portable: Annotated[
        bool,
        typer.Option(
            "--portable", help="An entry for any machine with uv (`uvx --from hermitcrab[NAME]`), not this install."
        ),
    ] = False,
) -> None:
    """Print the mcpServers entry to paste into claude_desktop_config.json (or any MCP host)."""
    entry = portable_entry(name) if portable else server_entry(name, home_dir(os.environ))
    typer.echo(json.dumps({"mcpServers": {name: entry}}, indent=2))


def register(app: typer.Typer) -> None:
    app.command("mcp-config")(mcp_config)
