"""End-to-end fixtures: Claude Desktop JSON for the test MCP server, a runner for the CLI (the scripted LLM and the
fake Discord are tests/conftest.py's)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import CLI, cli_env
from tests.support.fake_llm import FakeLLM

TEST_SERVER = Path(__file__).parents[1] / "support" / "mcp_test_server.py"


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
