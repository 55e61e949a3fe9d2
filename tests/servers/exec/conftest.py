"""Fixtures for the exec server: a workspace root, a state dir, and a factory for in-process servers."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.policy import Checker

TEST_ALLOW = ("ls", "cat", "echo", "grep", "git")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("hello\nworld\n")
    return root


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def checker(workspace: Path, state: Path) -> Checker:
    return Checker(
        Policy(allow=TEST_ALLOW),
        [workspace],
        protected=[state],
        sandboxed=True,
        search_path=os.environ["PATH"],
        home=os.environ.get("HOME", "/root"),
    )


@pytest.fixture
def server_factory(workspace: Path, state: Path) -> Callable[..., MCPServer]:
    def make(sandbox: str = "none", **policy: Any) -> MCPServer:
        policy.setdefault("allow", TEST_ALLOW)
        return build_server(roots=[workspace], state=state, policy=Policy(**policy), sandbox=sandbox)  # type: ignore[arg-type]

    return make


def alive_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains `marker`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            status = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and status != b"Z":
            pids.append(int(entry))
    return pids


@pytest.fixture
def wait_gone() -> Callable[[str], Awaitable[None]]:
    """Wait (up to 5 s) until no live process has `marker` on its command line."""

    async def wait(marker: str) -> None:
        with anyio.fail_after(5):
            while alive_with(marker):
                await anyio.sleep(0.05)

    return wait
