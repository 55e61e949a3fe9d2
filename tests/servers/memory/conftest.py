"""Fixtures for the memory server: a workspace with a few notes, and a factory for in-process servers."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.memory.embed import Embedder, make_embedder
from hermitcrab.servers.memory.server import build_server

MemoryServer = Callable[..., MCPServer]


@pytest.fixture(autouse=True)
def private_umask() -> Iterator[None]:
    """Files the tests write are private, as a real workspace's are, whatever the umask of the shell that runs
    them (else the server makes them private and says so on stderr, which several tests expect to be empty)."""
    before = os.umask(0o077)
    yield
    os.umask(before)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text(
        "# Long-term\n\n- Alice prefers green tea over coffee.\n- The garage door code is 4711.\n\n"
        "## Work\n\nDeploys happen on Fridays after the standup.\n",
        encoding="utf-8",
    )
    (root / "memory" / "2025-03-14.md").write_text(
        "- Met Bob at the climbing gym; he is training for a marathon in Porto.\n"
        "- Dentist appointment moved to next Tuesday.\n",
        encoding="utf-8",
    )
    return root


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def memory_server(workspace: Path, state: Path) -> MemoryServer:
    """Build a server over the shared workspace and state; BM25 only unless `embedder=` is given."""

    def make(**options: Any) -> MCPServer:
        options.setdefault("embedder", None)
        return build_server(workspace=workspace, state=state, **options)

    return make


@pytest.fixture(scope="session")
def use_embedder() -> Embedder:
    """The default embedder, loaded once (it reads 30 MB of weights)."""
    embedder = make_embedder("use")
    assert embedder is not None
    return embedder
