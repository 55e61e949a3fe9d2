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


@needs_node
@pytest.mark.parametrize(
    "command", [[sys.executable, str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")]]
)
def test_inspector_cli_lists_tools(command: list[str]):
    result = subprocess.run(
        [str(INSPECTOR), "--cli", *command, "--method", "tools/list"], capture_output=True, text=True, timeout=120
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["tools"]
