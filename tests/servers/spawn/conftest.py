"""Fixtures for the spawn server: a state dir, in-process servers with the fake CLI, and small call helpers."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.spawn import Commands, Limits, build_server
from tests.support.spawn import FAKE_CLI, call, error_of, events, spawn, wait_for_items

__all__ = ["FAKE_CLI", "SpawnServer", "call", "error_of", "events", "spawn", "wait_for_items"]

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
