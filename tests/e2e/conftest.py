"""End-to-end fixtures: the scripted LLM server, the fake Discord, Claude Desktop JSON for the test MCP server, a
runner for the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.cli import CLI, cli_env
from tests.support.fake_discord import FakeDiscord, running_fake_discord
from tests.support.fake_llm import FakeLLM, running_fake_llm

TEST_SERVER = Path(__file__).parents[1] / "support" / "mcp_test_server.py"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with running_fake_llm() as fake:
        yield fake


@pytest.fixture
def discord_api() -> Iterator[FakeDiscord]:
    """A fake Discord (REST and gateway) on 127.0.0.1, for `hermitcrab run` to log in to."""
    with running_fake_discord() as fake:
        yield fake


@pytest.fixture
def desktop_config(tmp_path: Path) -> Callable[..., Path]:
    """Write a claude_desktop_config.json with the test MCP server under the given name."""

    def write(name: str = "testkit", **extra: object) -> Path:
        path = tmp_path / "claude_desktop_config.json"
        server = {"command": sys.executable, "args": [str(TEST_SERVER), "--name", name], **extra}
        path.write_text(json.dumps({"mcpServers": {name: server}}))
        return path

    return write


@pytest.fixture
def hermitcrab(hermitcrab_home: Path, llm: FakeLLM) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the real `hermitcrab` CLI in a subprocess, pointed at the scripted LLM."""

    def run(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=cli_env(hermitcrab_home, llm, env),
            timeout=60,
        )

    return run
