"""Fixtures for the cron server: a state dir, a factory for in-process servers, and small call helpers."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.cron import build_server
from tests.support.tools import call, error_of

__all__ = ["CronServer", "call", "error_of", "events", "job", "soon"]

CronServer = Callable[..., MCPServer]


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "cron-state"


@pytest.fixture
def cron_server(state: Path) -> CronServer:
    """Build a server on `state` (a short poll so a second server notices changes quickly, and no minimum interval:
    the tests fire jobs every second; test_cron_limits.py sets one)."""

    def make(**options: Any) -> MCPServer:
        options.setdefault("poll_s", 0.1)
        options.setdefault("min_interval_s", 0)
        return build_server(state, **options)

    return make


def job(name: str = "tick", every: int | None = 1, **fields: Any) -> dict[str, Any]:
    """A job spec: `every` seconds unless a `schedule` is given, with a system event payload."""
    fields.setdefault("schedule", {"kind": "every", "every_seconds": every})
    fields.setdefault("payload", {"kind": "system_event", "text": f"{name} says hi"})
    return {"name": name, **fields}


def soon(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


async def events(client: Client) -> dict[str, Any]:
    contents = (await client.read_resource("cron://events")).contents
    return json.loads(contents[0].text)  # type: ignore[union-attr]  # a text resource
