"""`hermitcrab init`: create the home, copy persona templates and an example skill (never overwriting), write
config.toml."""

from __future__ import annotations

import json
import os
import secrets
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from hermitcrab.install.own_servers import OWN_SERVERS, server_entry

from ..config import PROVIDER_VARIABLES, home_dir

console = Console()
EXAMPLE_SKILL = "skills/daily-brief/SKILL.md"


def init(
    discord_owner: Annotated[
        list[str] | None,
        typer.Option(
            "--discord-owner",
            help="Your Discord user id (repeatable): only owners give instructions, approve and read MEMORY.md.",
        ),
    ] = None,
) -> None:
    """Create ~/.hermitcrab (or $HERMITCRAB_HOME) with a workspace of persona files and a commented config.toml."""
    home = home_dir(os.environ)
    workspace = home / "workspace"
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    # The browser's upload root: a page's file input gets only what is put here, never the persona or memory.
    (workspace / "uploads").mkdir(mode=0o700, exist_ok=True)
    (home / "state").mkdir(parents=True, exist_ok=True)
    templates = files("hermitcrab.workspace")
    for template in sorted(templates.iterdir(), key=lambda t: t.name):
        if template.name.endswith(".md"):
            _copy(template, workspace / template.name)
    _copy(files("hermitcrab.host.skills").joinpath("skill_example.md"), workspace / EXAMPLE_SKILL)
    config = home / "config.toml"
    if config.exists():
        console.print(f"[dim]kept[/dim]    {config}")
    else:
        config.touch(mode=0o600)  # it holds the webhook token
        config.write_text(render_config(home, discord_owner or []), encoding="utf-8")
        console.print(f"[green]created[/green] {config}")
    console.print(
        "\nNext: set a provider (e.g. [bold]export OPENAI_API_KEY=...[/bold]), run [bold]hermitcrab doctor[/bold], "
        "then [bold]hermitcrab chat[/bold]."
    )
    if not discord_owner:
        console.print(
            'For Discord, name yourself the owner: [bold]owners = ["<your user id>"][/bold] under [discord] in '
            "config.toml (or init with --discord-owner ID); until then everyone there is a peer."
        )


def _copy(template: Traversable, target: Path) -> None:
    if target.exists():
        console.print(f"[dim]kept[/dim]    {target}")
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(template.read_text(encoding="utf-8"), encoding="utf-8")
    console.print(f"[green]created[/green] {target}")


def render_config(home: Path, owners: list[str] | None = None) -> str:
    template = files("hermitcrab.host").joinpath("config_template.toml").read_text(encoding="utf-8")
    blocks: list[str] = []
    for name in OWN_SERVERS:
        entry = server_entry(name, home)
        block = f"[mcpServers.{name}]\ncommand = {json.dumps(entry['command'])}\nargs = {json.dumps(entry['args'])}\n"
        if name == "spawn":  # its sub-agents need the provider settings this shell may hold; servers get no others
            passed = ", ".join(f"{variable} = {json.dumps(f'${{{variable}:-}}')}" for variable in PROVIDER_VARIABLES)
            block += f"env = {{ {passed} }}\n"
        blocks.append(block)
    owned = f"owners = {json.dumps(owners)}\n" if owners else ""
    filled = template.replace("{servers}", "\n".join(blocks)).replace("{owners}", owned)
    return filled.replace("{webhook_token}", secrets.token_urlsafe(24))


def register(app: typer.Typer) -> None:
    app.command()(init)
