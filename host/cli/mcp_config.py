"""`hermitcrab mcp-config NAME`: print the Claude Desktop JSON snippet for one of our servers."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import socket
from typing import Annotated, Any

import typer

from hermitcrab.install.own_servers import portable_entry, server_entry

from ..config import PROVIDER_VARIABLES, home_dir
from .servers import ServerName

TOKEN_VARIABLE = "HERMITCRAB_MCP_TOKEN"


def mcp_config(
    name: ServerName,
    portable: Annotated[
        bool,
        typer.Option(
            "--portable", help="An entry for any machine with uv (`uvx --from hermitcrab[NAME]`), not this install."
        ),
    ] = False,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="An entry for the server serving streamable HTTP there, with its bearer token header; prints how "
            "to start it on stderr.",
        ),
    ] = None,
) -> None:
    """Print the mcpServers entry to paste into claude_desktop_config.json (or any MCP host)."""
    entry = portable_entry(name) if portable else server_entry(name, home_dir(os.environ))
    if name == "spawn":
        entry = _with_provider_env(entry)
    if http is not None:
        entry = _http_entry(entry, http)
    typer.echo(json.dumps({"mcpServers": {name: entry}}, indent=2))


def _with_provider_env(entry: dict[str, Any]) -> dict[str, Any]:
    """Spawn's sub-agents find their model as the host does, but a server gets no variable of this shell but the
    ones its entry passes: the provider variables set here go in its `env`, as `${NAME}` references (MCP hosts that
    fill them, Claude Code and hermitcrab, take them from their environment; the snippet never holds a key)."""
    passed = {variable: f"${{{variable}}}" for variable in PROVIDER_VARIABLES if os.environ.get(variable, "").strip()}
    if not passed:
        typer.echo("# no provider variable is set in this shell: sub-agents use the home's config.toml", err=True)
        return entry
    typer.echo(
        f"# passes {', '.join(passed)} on to sub-agents; in Claude Desktop, which does not fill ${{NAME}}, replace "
        "each with its value",
        err=True,
    )
    return {**entry, "env": passed}


def _http_entry(launch: dict[str, Any], address: str) -> dict[str, Any]:
    """The client's entry for `address`, and (on stderr) the server's start command with a fresh token: the token
    goes through the environment on both sides, so neither `ps` nor the pasted JSON shows it."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise typer.BadParameter(f"expected HOST:PORT, got {address!r}", param_hint="--http")
    host = host or "127.0.0.1"
    # bound to every address, clients reach it by this machine's name, which the server must then accept
    reached = socket.gethostname() if host in ("0.0.0.0", "::") else host
    extra = ["--allow-host", reached] if reached != host else []
    shown = f"[{reached}]" if ":" in reached else reached
    start = shlex.join([launch["command"], *launch["args"], "--http", f"{host}:{port}", *extra])
    typer.echo(
        f"# start the server with a token of its own (keep it secret; give the client the same one):\n"
        f"{TOKEN_VARIABLE}={secrets.token_urlsafe(32)} {start}",
        err=True,
    )
    return {
        "type": "http",
        "url": f"http://{shown}:{port}/mcp",
        "headers": {"Authorization": f"Bearer ${{{TOKEN_VARIABLE}}}"},
    }


def register(app: typer.Typer) -> None:
    app.command("mcp-config")(mcp_config)
