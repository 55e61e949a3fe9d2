"""Interop both ways: the host drives a third-party npm server; third-party clients drive our servers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_llm import openai_text, openai_tool_calls

NPM_BIN = Path(__file__).parents[2] / ".cache" / "npm" / "node_modules"
FILESYSTEM_SERVER = NPM_BIN / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
INSPECTOR = NPM_BIN / ".bin" / "mcp-inspector"
needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not FILESYSTEM_SERVER.exists() or not INSPECTOR.exists(),
    reason="node and the npm test packages are installed by scripts/test",
)


@needs_node
def test_host_drives_the_official_filesystem_server_from_claude_desktop_json(hermitcrab, llm, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "note.txt").write_text("the launch code is 7421")
    desktop = tmp_path / "claude_desktop_config.json"
    desktop.write_text(
        json.dumps({"mcpServers": {"filesystem": {"command": "node", "args": [str(FILESYSTEM_SERVER), str(shared)]}}})
    )
    path = json.dumps({"path": str(shared / "note.txt")})
    llm.enqueue(openai_tool_calls(("call_fs", "read_text_file", path)), openai_text("The code is 7421."))

    result = hermitcrab("ask", "--mcp-config", str(desktop), "What is in note.txt?")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "The code is 7421."
    assert "list_allowed_directories" in {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert llm.requests[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_fs",
        "content": "the launch code is 7421",
    }


def our_server(name: str, *flags: str) -> list[str]:
    return [sys.executable, "-m", f"hermitcrab.servers.{name}", *flags]


@needs_node
@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ("memory", "memory_search"),
        ("exec", "exec"),
        ("browser", "browser_snapshot"),
        ("cron", "cron_add"),
        ("spawn", "sessions_spawn"),
    ],
)
def test_inspector_cli_lists_our_servers_tools(server: str, expected: str, tmp_path: Path):
    (tmp_path / "ws").mkdir()
    flags = {
        "memory": ["--workspace", str(tmp_path / "ws"), "--state", str(tmp_path / "state")],
        "exec": ["--root", str(tmp_path / "ws"), "--state", str(tmp_path / "state")],
        "browser": ["--isolated", "--state", str(tmp_path / "state")],
        "cron": ["--state", str(tmp_path / "state")],
        "spawn": ["--state", str(tmp_path / "state")],
    }[server]

    result = inspector(*our_server(server, *flags), "--method", "tools/list")

    assert expected in {tool["name"] for tool in json.loads(result.stdout)["tools"]}


@needs_node
def test_inspector_cli_calls_a_tool_on_the_memory_server(tmp_path: Path):
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("- The boat is moored at pier 39.\n")
    flags = ["--workspace", str(workspace), "--state", str(tmp_path / "state"), "--embedder", "none"]

    result = inspector(
        *our_server("memory", *flags),
        *("--method", "tools/call", "--tool-name", "memory_search", "--tool-arg", "query=where is the boat moored"),
    )

    assert "pier 39" in result.stdout


@needs_node
def test_inspector_cli_lists_the_test_servers_tools():
    result = inspector(
        sys.executable, str(Path(__file__).parents[1] / "support" / "mcp_test_server.py"), "--method", "tools/list"
    )

    assert "echo" in {tool["name"] for tool in json.loads(result.stdout)["tools"]}


def inspector(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the official MCP Inspector in CLI mode; it must exit 0."""
    result = subprocess.run([str(INSPECTOR), "--cli", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result
