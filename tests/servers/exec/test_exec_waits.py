"""Every wait a call can ask exec for ends inside the host's default 60 s call timeout (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Callable

from mcp import Client
from mcp.server.mcpserver import MCPServer

HOST_CALL_TIMEOUT_MS = 60_000


async def test_waits_an_argument_can_ask_for_fit_inside_the_hosts_call_timeout(
    server_factory: Callable[..., MCPServer],
):
    async with Client(server_factory()) as client:
        schemas = {tool.name: tool.input_schema["properties"] for tool in (await client.list_tools()).tools}
        too_long = await client.call_tool("process", {"action": "poll", "session_id": "x", "wait_ms": 60_000})

    assert schemas["exec"]["yield_ms"]["maximum"] < HOST_CALL_TIMEOUT_MS
    assert schemas["process"]["wait_ms"]["maximum"] < HOST_CALL_TIMEOUT_MS
    assert too_long.is_error
