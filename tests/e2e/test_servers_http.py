"""Each of our servers, started with `--http`, serves streamable HTTP that the host's pool drives."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermitcrab.host.config import ServerConfig
from hermitcrab.host.mcp.pool import McpPool
from tests.support.browser import needs_chromium
from tests.support.fake_llm import free_port
from tests.support.processes import serving


def flags(server: str, tmp_path: Path) -> list[str]:
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    (workspace / "notes.txt").write_text("hello over http\n")
    state = str(tmp_path / "state")
    return {
        "memory": ["--workspace", str(workspace), "--state", state, "--embedder", "none"],
        "exec": ["--root", str(workspace), "--state", state],
        "browser": ["--isolated", "--state", state],
        "cron": ["--state", state],
        "spawn": ["--state", state],
    }[server]


@pytest.fixture
def server_url(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    server: str = request.param
    port = free_port()
    module = f"hermitcrab.servers.{server}"
    with serving([sys.executable, "-m", module, *flags(server, tmp_path), "--http", f"127.0.0.1:{port}"], port) as url:
        yield url


@pytest.mark.parametrize(
    ("server_url", "tool", "arguments", "expected"),
    [
        ("memory", "memory_status", {}, "files"),
        ("exec", "read_file", {"path": "notes.txt"}, "hello over http"),
        pytest.param("browser", "browser_tabs", {"action": "new"}, "about:blank", marks=needs_chromium),
        ("cron", "cron_wake", {"text": "over http"}, "event_id"),
        ("spawn", "sessions_list", {}, "runs"),
    ],
    indirect=["server_url"],
)
async def test_server_over_streamable_http(server_url: str, tool: str, arguments: dict[str, object], expected: str):
    async with McpPool([ServerConfig("remote", url=server_url, timeout_s=30)]) as pool:
        outcome = await pool.call(tool, arguments)

    assert not outcome.is_error, outcome.text
    assert expected in outcome.text
