"""The exec server against absurd or broken arguments: refused at once, briefly, naming the argument and rule."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer

HUGE = 10_000_000
LONG_NAME = "a" * 300  # longer than the 255 bytes a file name may have


async def error(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error, result.content
    return result.content[0].text  # type: ignore[union-attr]  # an error result carries one text block


async def test_huge_arguments_are_refused_at_once_without_echoing_them(server_factory: Callable[..., MCPServer]):
    calls: list[tuple[str, dict[str, Any], str, str]] = [
        ("exec", {"command": "echo " + "a" * HUGE}, "command", "100,000"),
        ("exec", {"command": "ls", "workdir": "d/" * HUGE}, "workdir", "4,096"),
        ("exec", {"command": "ls", "env": {"A": "b" * HUGE}}, "env.A", "32,768"),
        ("read_file", {"path": "p" * HUGE}, "path", "4,096"),
        ("write_file", {"path": "x.txt", "content": "c" * (40 * 1024 * 1024)}, "content", "33,554,432"),
        (
            "edit_file",
            {"path": "a.txt", "old_text": "o" * (40 * 1024 * 1024), "new_text": ""},
            "old_text",
            "33,554,432",
        ),
        ("list_dir", {"path": "l" * HUGE}, "path", "4,096"),
        ("process", {"action": "poll", "session_id": "s" * HUGE}, "session_id", "64"),
        ("process", {"action": "write", "session_id": "x", "data": "d" * HUGE}, "data", "1,000,000"),
    ]
    async with Client(server_factory()) as client:
        for tool, args, name, limit in calls:
            started = time.perf_counter()
            text = await error(client, tool, **args)
            assert time.perf_counter() - started < 2, tool
            assert f"`{name}` is too long" in text and limit in text, text
            assert len(text) < 300 and text.count("\n") <= 1


async def test_unusable_paths_are_refused_in_words(server_factory: Callable[..., MCPServer], workspace: Path):
    os.symlink("loop", workspace / "loop")
    async with Client(server_factory()) as client:
        refusals = [
            await error(client, "read_file", path=LONG_NAME),
            await error(client, "write_file", path=f"sub/{LONG_NAME}", content="x"),
            await error(client, "edit_file", path=LONG_NAME, old_text="a", new_text="b"),
            await error(client, "list_dir", path=LONG_NAME),
            await error(client, "exec", command="ls", workdir=LONG_NAME),
        ]
        loop = await error(client, "read_file", path="loop/x")
    for text in refusals:
        assert "too long" in text and "255 bytes" in text and len(text) < 500, text
    assert "loop of symbolic links" in loop


async def test_invalid_arguments_read_as_a_line_or_two(server_factory: Callable[..., MCPServer]):
    async with Client(server_factory()) as client:
        action = await error(client, "process", action="bogus")
        depth = await error(client, "list_dir", path=".", depth="deep")
    assert action.startswith("Invalid arguments for process: `action`: input should be 'list', 'poll'")
    assert "'bogus'" in action and action.count("\n") == 1
    assert depth.startswith("Invalid arguments for list_dir: `depth`") and "'deep'" in depth


async def test_a_refusal_quotes_a_long_command_name_only_in_part(server_factory: Callable[..., MCPServer]):
    async with Client(server_factory(ask="off")) as client:
        unknown = await error(client, "exec", command="x" * 3000)
        foreign = await error(client, "exec", command="é" * 3000)

    for text in (unknown, foreign):
        assert len(text) < 600 and ",0" in text and " characters)" in text  # e.g. "... (3,002 characters)"
