"""hermitcrab-exec as a real subprocess over stdio: a command, a file read, and an approval round trip."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import ElicitRequestParams, ElicitResult

pytestmark = pytest.mark.anyio


async def test_exec_server_over_stdio(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("hello from the workspace\n")
    questions: list[str] = []

    async def approve(context: Any, params: ElicitRequestParams) -> ElicitResult:
        questions.append(params.message)
        return ElicitResult(action="accept", content={"decision": "allow-once"})

    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "hermitcrab.servers.exec",
            "--root",
            str(root),
            "--state",
            str(tmp_path / "state"),
            "--sandbox",
            "none",
        ],
    )
    async with Client(params, elicitation_callback=approve) as client:
        listed = await client.call_tool("exec", {"command": "ls | grep notes && cat notes.txt"})
        assert listed.structured_content is not None
        assert listed.structured_content["stdout"] == "notes.txt\nhello from the workspace\n"
        read = await client.call_tool("read_file", {"path": "notes.txt"})
        assert read.content[0].text == "     1\thello from the workspace"  # type: ignore[union-attr]
        moved = await client.call_tool("exec", {"command": "mv notes.txt kept.txt"})
        assert not moved.is_error, moved.content
    assert len(questions) == 1 and "Command: mv notes.txt kept.txt" in questions[0]
    assert (root / "kept.txt").exists()
