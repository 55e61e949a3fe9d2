"""hermitcrab's own MCP servers: how to launch each one, for `init` and `mcp-config`."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

OWN_SERVERS: dict[str, str] = {
    "memory": "hermitcrab-memory",
    "exec": "hermitcrab-exec",
    "browser": "hermitcrab-browser",
    "cron": "hermitcrab-cron",
    "spawn": "hermitcrab-spawn",
}


def find_script(script: str) -> str | None:
    """The script next to this Python first (a venv that is not activated), then on PATH."""
    beside = Path(sys.executable).parent / script
    if beside.exists():
        return str(beside)
    return shutil.which(script)


def server_args(name: str, home: Path) -> list[str]:
    """Arguments that pin a server to this home, since hosts do not pass HERMITCRAB_HOME to servers."""
    workspace, state = home / "workspace", home / "state" / name
    args = {
        "memory": ["--workspace", str(workspace), "--state", str(state)],
        "exec": ["--root", str(workspace), "--state", str(state)],
        "browser": ["--state", str(state)],
        "cron": ["--state", str(state)],
        "spawn": ["--state", str(state)],
    }
    return args.get(name, [])
