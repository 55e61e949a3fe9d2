"""The terminal channel keeps line breaks, shows replies as Markdown and control characters escaped."""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from hermitcrab.channels.terminal import TERMINAL, TerminalChannel, hard_breaks
from hermitcrab.host.config import ServerConfig
from hermitcrab.host.mcp.elicitation import current_asker
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.util.text import escape_controls

TEST_SERVER = str(Path(__file__).parents[1] / "support" / "mcp_test_server.py")


def test_single_line_breaks_survive_markdown_but_code_is_untouched():
    text = "Model: x\nTokens: 3\n```\ncode\n```"

    assert hard_breaks(text) == "Model: x  \nTokens: 3  \n```\ncode\n```"


async def test_send_renders_markdown():
    console = Console(record=True, width=80)

    await TerminalChannel(console).send(TERMINAL, "It is **42**.\nSecond line")

    assert [line.rstrip() for line in console.export_text().splitlines()] == ["It is 42.", "Second line"]


async def test_an_approval_question_shows_the_commands_escape_sequences_escaped_and_never_sends_them():
    """The test server asks to approve `action` over MCP; the pool's question is rendered by the terminal channel."""
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=200)
    terminal = TerminalChannel(console)
    redraw = "rm -rf ~\x1b[2K\x1b[1A\x1b[2K\rAllow ls?\u202e\x07"

    async def asker(question: str, choices: Sequence[str] | None = None) -> str | None:
        await terminal.send(TERMINAL, question)
        return "deny"

    config = ServerConfig("kit", command=sys.executable, args=(TEST_SERVER, "--name", "kit"))
    async with McpPool([config]) as pool:
        token = current_asker.set(asker)
        try:
            denied = await pool.call("guarded", {"action": redraw})
        finally:
            current_asker.reset(token)

    shown = console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above
    assert denied.text == f"{redraw}: deny"
    assert "\x1b" not in shown and "\r" not in shown and "\u202e" not in shown and "\x07" not in shown
    assert r"Allow rm -rf ~\x1b[2K\x1b[1A\x1b[2K\x0dAllow ls?\u202e\x07?" in shown


def test_control_characters_are_escaped_but_tabs_and_newlines_stay():
    assert escape_controls("a\tb\nc\x00\x1b[31m\x7f\x9b\u2066") == "a\tb\nc\\x00\\x1b[31m\\x7f\\x9b\\u2066"


def test_a_tool_line_shows_the_models_arguments_as_text_never_as_markup_or_escapes():
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=200)

    TerminalChannel(console).tool_activity("exec\x1b[2K", {"command": "[bold red]ls[/bold red]\x1b[2K"})

    shown = console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO above
    assert "[bold red]ls[/bold red]" in shown and "exec\\x1b[2K" in shown and "\x1b" not in shown
