"""`hermitcrab bundle NAME` and `hermitcrab server-json NAME`: one server packaged for installing on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from hermitcrab.install.bundle import build_bundle, published_note
from hermitcrab.install.registry_entry import DEFAULT_NAMESPACE, server_json

from .servers import ServerName


def bundle(
    name: ServerName,
    out: Annotated[Path, typer.Option("--out", help="Folder to write NAME.mcpb into.")] = Path("dist"),
    local: Annotated[
        Path | None,
        typer.Option(
            "--local",
            help="A hermitcrab wheel of this version (uv build --wheel in a checkout) for the bundle to carry and "
            "install from, instead of the release on PyPI.",
        ),
    ] = None,
) -> None:
    """Write a Claude Desktop bundle (NAME.mcpb): open it in Claude Desktop to install the server."""
    typer.echo(str(build_bundle(name, out, local)))
    if local is None:
        typer.echo(f"note: {published_note(name)}", err=True)


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
