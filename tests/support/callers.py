"""Calling one of our servers as a given caller (the `_meta` hermitcrab sends: session, principal, origin)."""

from __future__ import annotations

from typing import Any

from mcp import Client


async def call_as(client: Client, who: dict[str, Any], tool: str, **arguments: Any) -> dict[str, Any]:
    """The structured result of a call that must succeed."""
    result = await client.call_tool(tool, arguments, meta=who)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def error_as(client: Client, who: dict[str, Any], tool: str, **arguments: Any) -> str:
    """The text of a call that must be refused."""
    result = await client.call_tool(tool, arguments, meta=who)
    assert result.is_error, result.structured_content
    return result.content[0].text  # type: ignore[union-attr]  # an error result carries one text block
