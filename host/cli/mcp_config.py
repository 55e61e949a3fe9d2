"""`hermitcrab mcp-config NAME`: print the Claude Desktop JSON snippet for one of our servers."""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer

from ..config import home_dir
from .servers import OWN_SERVERS, find_script, server_args


def mcp_config(name: Annotated[str, typer.Argument(help=f"One of: {', '.join(OWN_SERVERS)}")]) -> None:
    """Print the mcpServers entry to paste into claude_desktop_config.json (or any MCP host)."""
    script = OWN_SERVERS.get(name)
    if script is None:
        raise typer.BadParameter(f"unknown server {name!r}; choose one of: {', '.join(OWN_SERVERS)}")
    entry = {"command": find_script(script) or script, "args": server_args(name, home_dir(os.environ))}
    typer.echo(json.dumps({"mcpServers": {name: entry}}, indent=2))


def register(app: typer.Typer) -> None:
    app.command("mcp-config")(mcp_config)
