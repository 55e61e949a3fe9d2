"""Calling a server's tool from a page, through the agent's MCP pool as the host itself calls it, as the owner.

A page names a tool its server is known by (`memory_search`, `cron_list`), not the server: the owner may have named
it anything, run a third-party server instead, or have it down. Each of those is a sentence for the page to show,
never an exception and never a wait for a server that is restarting."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from hermitcrab.host.mcp.pool import ServerHandle
from hermitcrab.host.trust.origin import PRINCIPAL_META

from .context import Context

OWNER = {PRINCIPAL_META: "owner"}
"""The dashboard is the owner's alone (`access.py`), so its calls carry the owner's rights."""


class Unavailable(Exception):
    """The tool could not be called, or answered with an error; the message is a sentence for the page."""


@dataclass(frozen=True)
class Server:
    """The server offering a page's tools, found by one of them."""

    handle: ServerHandle

    @property
    def name(self) -> str:
        return self.handle.config.name

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The JSON object `tool` answered; Unavailable with the server's own words when it failed."""
        if not self.handle.ready:
            raise Unavailable(f"The {self.name} server is not available now ({self.handle.state}).")
        outcome = await self.handle.call(tool, arguments, caller=OWNER)
        if outcome.is_error:
            raise Unavailable(f"The {self.name} server answered {tool} with an error: {outcome.text}")
        try:
            answer: object = json.loads(outcome.text)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise Unavailable(
                f"The {self.name} server's answer to {tool} is not the JSON object hermitcrab's own server gives "
                "(is it another server with a tool of that name?)."
            )
        return cast(dict[str, Any], answer)


def server_with(context: Context, tool: str, kind: str) -> Server:
    """The server that lists `tool`; Unavailable saying why there is none (`kind` names it: "memory")."""
    pool = context.agent.pool
    handles = pool.handles.values() if pool is not None else ()
    for handle in handles:
        if any(listed.name == tool for listed in handle.tools):
            return Server(handle)
    named = next((handle for handle in handles if handle.config.name == kind), None)
    if named is not None:
        raise Unavailable(f"The {kind} server is not available now ({named.state}).")
    raise Unavailable(
        f"No MCP server offers {tool}: this host runs no {kind} server (`hermitcrab doctor` lists the servers)."
    )
