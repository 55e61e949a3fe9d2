"""Fixtures for the spawn server: a state dir, in-process servers with the fake CLI, and small call helpers."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.spawn import Commands, Limits, build_server

FAKE_CLI = str(Path(__file__).with_name("fake_cli.py"))
CLIS = {
    "echo": (sys.executable, FAKE_CLI, "{task}"),
    "slow": (sys.executable, FAKE_CLI, "--grandchild", "--sleep", "60", "{task}"),
    "fails": (sys.executable, FAKE_CLI, "--exit", "3", "{task}"),
    "piped": (sys.executable, FAKE_CLI, "--sleep", "0", "--stdin"),
}
SpawnServer = Callable[..., MCPServer]


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "spawn-state"


@pytest.fixture
def spawn_server(state: Path) -> SpawnServer:
    """Build a server on `state` with the fake CLIs and no agent runtime; `limits` as keyword arguments."""

    def make(agent: tuple[str, ...] | None = None, **limits: Any) -> MCPServer:
        return build_server(state, Commands(agent, CLIS), Limits(**limits))

    return make


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
