"""The persona and memory files of a workspace, named once: the host injects them into every turn, and the exec
server keeps commands and the file tools from changing them (what the model writes there, it reads back as its
own instructions next turn, or the host runs)."""

from __future__ import annotations

BOOTSTRAP_ORDER = (
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "USER.md",
    "HEARTBEAT.md",
    "BOOTSTRAP.md",
    "MEMORY.md",
)
MEMORY_FOLDER = "memory"  # the daily logs, memory/YYYY-MM-DD.md
BOOT_FILE = "BOOT.md"
"""Not injected: the bundled `boot` hook runs it as the owner's instructions each time the gateway starts."""
HOOKS_FOLDER = "hooks"
"""The workspace's own hooks: once the owner enables one, its command runs on the host, outside any sandbox."""
