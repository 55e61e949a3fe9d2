"""Call an MCP server's tool and unwrap the answer: the structured result, or the text of its error."""

from __future__ import annotations

from typing import Any

from mcp import Client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """The tool's structured result; fails the test if the tool answered with an error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def error_of(client: Client, tool: str, **arguments: Any) -> str:
    """The text of the tool's error; fails the test if the tool succeeded."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text  # type: ignore[union-attr]  # an error result carries one text block


async def search(client: Client, query: str, **options: Any) -> list[dict[str, Any]]:
    """The memory server's `memory_search` results for `query`; fails the test if the search answered an error."""
    result = await client.call_tool("memory_search", {"query": query, **options})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content["results"]
