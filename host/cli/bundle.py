"""`hermitcrab bundle NAME` and `hermitcrab server-json NAME`: one server packaged for installing on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from hermitcrab.install.bundle import build_bundle
from hermitcrab.install.registry_entry import DEFAULT_NAMESPACE, server_json

from .servers import ServerName


def bundle(
    name: ServerName,
    out: Annotated[Path, typer.Option("--out", help="Folder to write NAME.mcpb into.")] = Path("dist"),
) -> None:
    """Write a Claude Desktop bundle (NAME.mcpb): open it in Claude Desktop to install the server."""
    typer.echo(str(build_bundle(name, out)))


def registry_json(
    name: ServerName,
    namespace: Annotated[
        str, typer.Option(help="Registry namespace you own, e.g. io.github.YOUR_LOGIN.")
    ] = DEFAULT_NAMESPACE,
) -> None:
    """Print the server's server.json for the MCP registry (`mcp-publisher publish` reads it)."""
    typer.echo(json.dumps(server_json(name, namespace), indent=2))


def register(app: typer.Typer) -> None:
    app.command("bundle")(bundle)
    app.command("server-json")(registry_json)
