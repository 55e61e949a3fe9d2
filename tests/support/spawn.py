"""The spawn server's fake CLI and the calls its tests make: spawn a run, wait for its events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

FAKE_CLI = str(Path(__file__).with_name("fake_cli.py"))
"""A stand-in for a coding CLI: prints its task, can sleep, fail, start a grandchild or read the task on stdin."""


async def call(client: Client, tool: str, session: str | None = None, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments, meta={"hermitcrab/session": session} if session else None)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def error_of(client: Client, tool: str, session: str | None = None, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments, meta={"hermitcrab/session": session} if session else None)
    assert result.is_error, result.structured_content
    return result.content[0].text  # type: ignore[union-attr]  # an error result carries one text block


async def events(client: Client) -> dict[str, Any]:
    contents = (await client.read_resource("spawn://events")).contents
    return json.loads(contents[0].text)  # type: ignore[union-attr]  # a text resource


async def wait_for_items(client: Client, count: int, timeout_s: float = 10) -> list[dict[str, Any]]:
    with anyio.fail_after(timeout_s):
        while len(items := (await events(client))["items"]) < count:
            await anyio.sleep(0.05)
    return items


async def spawn(client: Client, cli: str, task: str, session: str | None = None, **more: Any) -> str:
    accepted = await call(client, "sessions_spawn", session, task=task, runtime="cli", cli=cli, **more)
    assert accepted["status"] == "accepted"
    return accepted["run_id"]
