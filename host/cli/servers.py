"""The server-name argument of the commands that act on one of our servers (`mcp-config`, `bundle`, `server-json`)."""

from __future__ import annotations

from typing import Annotated

import typer

from hermitcrab.install.own_servers import OWN_SERVERS


def own_server(name: str) -> str:
    """`name` when it is one of our servers; otherwise a usage error that lists them."""
    if name not in OWN_SERVERS:
        raise typer.BadParameter(f"unknown server {name!r}; choose one of: {', '.join(OWN_SERVERS)}")
    return name


ServerName = Annotated[str, typer.Argument(help=f"One of: {', '.join(OWN_SERVERS)}", callback=own_server)]
