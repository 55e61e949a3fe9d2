"""hermitcrab-memory as a subprocess over stdio, with its default embedder: append, search, get, status."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from tests.support.embeddings import embedded
from tests.support.processes import help_of


def test_help_lists_the_flags():
    shown = help_of("hermitcrab.servers.memory")
    for flag in ("--workspace", "--state", "--embedder", "--http"):
        assert flag in shown


async def test_memory_server_over_stdio(tmp_path: Path):
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "USER.md").write_text("- Name: Dana. Lives in Ghent. Allergic to peanuts.\n", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hermitcrab.servers.memory", "--workspace", str(workspace), "--state", str(tmp_path / "state")],
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert tools == {"memory_search", "memory_get", "memory_append", "memory_status"}
            appended = await client.call_tool("memory_append", {"text": "- Booked the ferry to Texel for Saturday."})
            assert not appended.is_error
            found = await client.call_tool("memory_search", {"query": "ferry booking"})
            assert found.structured_content is not None
            top = found.structured_content["results"][0]
            assert "Texel" in top["snippet"] and top["path"] == appended.structured_content["path"]  # type: ignore[index]  # checked above
            await embedded(client)  # "allergic" is not "allergies": this search needs the vectors, embedded behind it
            allergy = await client.call_tool("memory_search", {"query": "food allergies", "max_results": 1})
            assert allergy.structured_content["results"][0]["path"] == "USER.md"  # type: ignore[index]  # a search result
            read = await client.call_tool("memory_get", {"path": "USER.md"})
            assert "Ghent" in read.structured_content["text"]  # type: ignore[index]  # a file's text
            status = (await client.call_tool("memory_status", {})).structured_content
            assert status is not None and status["files"] == 2 and status["last_error"] is None
