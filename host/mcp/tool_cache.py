"""Each server's tool list as the last run saw it, so a short-lived command (`ask`, `chat`) can offer the tools to
the model before the servers have started, instead of waiting for the slowest of them.

An entry is kept under a digest of the server's config entry (command, args, cwd, the names of its env variables,
url): a changed entry is never served an old list. Only tool schemas are written (name, title, description, input
schema): no env values, headers or tokens reach the file. Two processes saving at once may lose one's entry; that
server is then waited for at the next start, as with no cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from mcp import types
from pydantic import ValidationError

from hermitcrab.util.store import JsonFile

from ..config import ServerConfig

logger = logging.getLogger(__name__)

KEPT_FIELDS = {"name", "title", "description", "input_schema"}
NO_CACHE = "servers are waited for at start, as on a first run"


def entry_digest(config: ServerConfig) -> str:
    """What identifies the server a config entry starts; env values are left out (they may be secrets)."""
    entry = {
        "command": config.command,
        "args": list(config.args),
        "cwd": config.cwd,
        "env": sorted(config.env),
        "url": config.url,
    }
    return hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()


class ToolCache:
    """`state/mcp_tools.json`: per server name, the digest of its entry and the tools it listed."""

    def __init__(self, path: Path) -> None:
        self._file = JsonFile(path)
        self._entries = self._file.load(NO_CACHE)

    def tools(self, config: ServerConfig) -> list[types.Tool] | None:
        """The tools the server listed last time with this same entry; None when there is no such list."""
        entry: object = self._entries.get(config.name)
        if not isinstance(entry, dict):
            return None
        kept = cast(dict[str, Any], entry)
        if kept.get("digest") != entry_digest(config):
            return None
        try:
            return [types.Tool.model_validate(tool) for tool in cast(list[Any], kept["tools"])]
        except (KeyError, TypeError, ValidationError) as exc:
            logger.warning("the cached tools of MCP server %r are unreadable (%s); waiting for it", config.name, exc)
            return None

    def keep(self, config: ServerConfig, tools: Sequence[types.Tool]) -> None:
        """Save what the server lists now, when it differs from what is kept; a failed save only costs the next start
        its head start."""
        listed = [tool.model_dump(mode="json", by_alias=True, exclude_none=True, include=KEPT_FIELDS) for tool in tools]
        entry = {"digest": entry_digest(config), "tools": listed}
        if self._entries.get(config.name) == entry:
            return
        self._entries = {**self._file.load(NO_CACHE), config.name: entry}  # other processes' entries stay
        try:
            self._file.save(self._entries)
        except OSError as exc:
            logger.warning("could not keep the tools of MCP server %r for the next start: %s", config.name, exc)
