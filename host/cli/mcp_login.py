"""`hermitcrab mcp login|logout|status`: the OAuth logins of remote MCP servers (entries with `"auth": "oauth"`).

Logging in needs a person at a browser, so it is a command of its own: `run` and the other commands only use the
login stored here, and report a server that has none as waiting for one.
"""

from __future__ import annotations

import threading
import webbrowser
from typing import Annotated

import anyio
import typer

from hermitcrab.util.text import escape_controls

from ..config import ServerConfig, Settings, load_settings
from ..errors import ConfigError
from ..mcp.oauth import LoginFile, log_in, login_state
from .options import McpConfigOption
from .runtime import setup_logging

mcp_app = typer.Typer(help="Log in to remote MCP servers that use OAuth.", no_args_is_help=True)
ServerArgument = Annotated[str, typer.Argument(help='Its name in mcpServers (an entry with "auth": "oauth").')]


@mcp_app.command()
def login(
    name: ServerArgument,
    open_browser: Annotated[bool, typer.Option("--open", help="Also open the address in the default browser.")] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Seconds to wait for the browser to come back.")
    ] = 300,
    mcp_config: McpConfigOption = None,
) -> None:
    """Log in to a remote MCP server: print the address to authorise at, wait for the browser to come back to
    127.0.0.1 and store the tokens (state/oauth/NAME.json) for later runs."""
    settings = load_settings(mcp_config=mcp_config)
    setup_logging(False, settings)
    config = _oauth_server(settings, name)
    tools = anyio.run(_log_in, settings, config, open_browser, timeout)
    typer.echo(f"Logged in to {name}; it offers {tools} tools. {login_state(config, settings.oauth_logins)[1]}")


async def _log_in(settings: Settings, config: ServerConfig, open_browser: bool, timeout_s: float) -> int:
    async def show(url: str) -> None:
        # The address comes from the server's metadata: shown with any control characters escaped
        typer.echo(f"Open this address in a browser to log in to {config.name}:\n\n  {escape_controls(url)}\n")
        typer.echo(f"Waiting up to {timeout_s:g} s for the browser to come back ...")
        if open_browser:  # in a thread of its own: a browser started in the foreground returns only when closed
            threading.Thread(target=_open, args=(url,), daemon=True).start()

    return await log_in(config, settings.oauth_logins, show, timeout_s)


def _open(url: str) -> None:
    if not webbrowser.open(url):
        typer.echo("No browser could be opened here: open the address above by hand.", err=True)


@mcp_app.command()
def logout(name: ServerArgument, mcp_config: McpConfigOption = None) -> None:
    """Delete a server's stored login (its tokens and registered client); the next run needs `mcp login` again."""
    settings = load_settings(mcp_config=mcp_config)
    config = _oauth_server(settings, name)
    if LoginFile(settings.oauth_logins, config).forget():
        typer.echo(f"Logged out of {name}: its tokens are deleted here (the server forgets them when they expire).")
    else:
        typer.echo(f"{name} has no stored login.")


@mcp_app.command()
def status(mcp_config: McpConfigOption = None) -> None:
    """Each OAuth server's login: whether there is one and when its token expires (the servers are not asked)."""
    settings = load_settings(mcp_config=mcp_config)
    servers = [config for config in settings.servers if config.auth == "oauth"]
    if not servers:
        typer.echo('No configured MCP server uses OAuth ("auth": "oauth").')
    for config in servers:
        typer.echo(f"{config.name}: {login_state(config, settings.oauth_logins)[1]}")


def _oauth_server(settings: Settings, name: str) -> ServerConfig:
    config = next((config for config in settings.servers if config.name == name), None)
    if config is None:
        known = ", ".join(config.name for config in settings.servers if config.auth == "oauth") or "none"
        raise ConfigError(f'no MCP server named {name!r} is configured (servers with "auth": "oauth": {known})')
    if config.auth != "oauth":
        raise ConfigError(f'MCP server {name!r} does not log in: add "auth": "oauth" to its entry to use OAuth')
    return config


def register(app: typer.Typer) -> None:
    app.add_typer(mcp_app, name="mcp")
