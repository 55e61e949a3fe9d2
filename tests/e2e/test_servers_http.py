"""Each of our servers, started with `--http`, serves streamable HTTP that the host's pool drives."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermitcrab.host.config import ServerConfig
from hermitcrab.host.pool import McpPool
from tests.support.fake_llm import free_port


def flags(server: str, tmp_path: Path) -> list[str]:
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    (workspace / "notes.txt").write_text("hello over http\n")
    state = str(tmp_path / "state")
    return {
        "memory": ["--workspace", str(workspace), "--state", state, "--embedder", "none"],
        "exec": ["--root", str(workspace), "--state", state],
        "browser": ["--isolated", "--state", state],
    }[server]


@pytest.fixture
def serving(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    server: str = request.param
    port = free_port()
    command = [
        sys.executable,
        "-m",
        f"hermitcrab.servers.{server}",
        *flags(server, tmp_path),
        "--http",
        f"127.0.0.1:{port}",
    ]
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, f"{server} exited with {process.returncode}"
            assert time.monotonic() < deadline, f"{server} did not start serving HTTP"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=15)


@pytest.mark.parametrize(
    ("serving", "tool", "arguments", "expected"),
    [
        ("memory", "memory_status", {}, "files"),
        ("exec", "read_file", {"path": "notes.txt"}, "hello over http"),
        ("browser", "browser_tabs", {"action": "new"}, "about:blank"),
    ],
    indirect=["serving"],
)
async def test_server_over_streamable_http(serving: str, tool: str, arguments: dict[str, object], expected: str):
    async with McpPool([ServerConfig("remote", url=serving, timeout_s=30)]) as pool:
        outcome = await pool.call(tool, arguments)

    assert not outcome.is_error, outcome.text
    assert expected in outcome.text
