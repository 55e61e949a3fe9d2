"""`hermitcrab bundle NAME` and `hermitcrab server-json NAME`: one server packaged for installing on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..bundle import build_bundle
from ..registry_entry import DEFAULT_NAMESPACE, server_json
from .servers import OWN_SERVERS

_NAME_HELP = f"One of: {', '.join(OWN_SERVERS)}"


def bundle(
    name: Annotated[str, typer.Argument(help=_NAME_HELP)],
    out: Annotated[Path, typer.Option("--out", help="Folder to write NAME.mcpb into.")] = Path("dist"),
) -> None:
    """Write a Claude Desktop bundle (NAME.mcpb): open it in Claude Desktop to install the server."""
    typer.echo(str(build_bundle(_known(name), out)))


def registry_json(
    name: Annotated[str, typer.Argument(help=_NAME_HELP)],
    namespace: Annotated[
        str, typer.Option(help="Registry namespace you own, e.g. io.github.YOUR_LOGIN.")
    ] = DEFAULT_NAMESPACE,
) -> None:
    """Print the server's server.json for the MCP registry (`mcp-publisher publish` reads it)."""
    typer.echo(json.dumps(server_json(_known(name), namespace), indent=2))


def _known(name: str) -> str:
    if name not in OWN_SERVERS:
        raise typer.BadParameter(f"unknown server {name!r}; choose one of: {', '.join(OWN_SERVERS)}")
    return name


def register(app: typer.Typer) -> None:
    app.command("bundle")(bundle)
    app.command("server-json")(registry_json)
