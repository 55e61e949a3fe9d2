"""hermitcrab's own MCP servers: how to launch each one, for `init`, `mcp-config` and the bundle builder."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from hermitcrab.util.server_options import SERVERS

OWN_SERVERS = tuple(SERVERS)  # memory, exec, browser, cron, spawn


def launch_command(name: str) -> str:
    """The server's console script: next to this Python first (a venv that is not activated), then on PATH."""
    return _script(f"hermitcrab-{name}")


def _script(script: str) -> str:
    beside = Path(sys.executable).parent / script
    if beside.exists():
        return str(beside)
    return shutil.which(script) or script


def server_entry(name: str, home: Path) -> dict[str, str | list[str]]:
    """The Claude Desktop `mcpServers` entry; the arguments pin the server to this home, since hosts do not pass
    HERMITCRAB_HOME on to servers."""
    server = SERVERS[name]
    workspace = home / "workspace"
    folders = {"workspace": workspace, "state": home / "state" / name, "uploads": workspace / "uploads"}
    args = [
        part
        for option in server.options
        if option.home_folder
        for part in (option.flag, str(folders[option.home_folder]))
    ]
    if name == "spawn":  # the agent runtime is this host's own `subagent` command, pinned to this home likewise
        args += ["--agent", shlex.join([_script("hermitcrab"), "subagent", "--home", str(home)])]
    return {"command": launch_command(name), "args": [*args, *server.switches]}


def portable_entry(name: str) -> dict[str, str | list[str]]:
    """An `mcpServers` entry that works on any machine with uv: `uvx` installs the server's extra on first use, and
    paths are left to that machine's default home (~/.hermitcrab)."""
    return {"command": "uvx", "args": ["--from", f"hermitcrab[{name}]", f"hermitcrab-{name}", *SERVERS[name].switches]}
