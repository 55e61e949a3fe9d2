"""The terminal channel keeps line breaks, shows replies as Markdown (or as they stream) and control characters
escaped."""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from hermitcrab.channels.terminal import TERMINAL, TerminalChannel, hard_breaks
from hermitcrab.host.config import ServerConfig
from hermitcrab.host.events import MessageDone, TextDelta, ToolFinished, ToolStarted, TurnDone
from hermitcrab.host.mcp.elicitation import current_asker
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.host.providers.base import Usage
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


async def test_a_tool_line_shows_the_models_arguments_as_text_never_as_markup_or_escapes():
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=200)

    await TerminalChannel(console).show(
        ToolStarted("c1", "exec\x1b[2K", '{"command": "[bold red]ls[/bold red]\x1b[2K"}')
    )

    shown = console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO above
    assert "[bold red]ls[/bold red]" in shown and "exec\\x1b[2K" in shown and "\x1b" not in shown


async def test_a_streamed_reply_is_written_as_it_comes_and_its_delivery_adds_only_what_is_missing():
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=200)
    terminal = TerminalChannel(console)
    shown = console.file  # the StringIO above

    for event in (TextDelta("Let me"), TextDelta(" look."), MessageDone("Let me look.", 1)):
        await terminal.show(event)
    await terminal.show(ToolStarted("c1", "read", '{"path": "a.txt"}'))
    await terminal.show(ToolFinished("c1", "read", True, 1.5))
    await terminal.show(TextDelta("It says **hi**"))
    assert shown.getvalue().endswith("It says **hi**")  # type: ignore[attr-defined]  # written before the end
    await terminal.show(TextDelta(" twice."))
    await terminal.show(TurnDone("It says **hi** twice.\n\n(a notice)", Usage()))
    await terminal.send(TERMINAL, "It says **hi** twice.\n\n(a notice)")
    await terminal.send(TERMINAL, "Later, **bold**.")

    lines = [line.rstrip() for line in shown.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert lines == [
        "Let me look.",
        '  ↳ read {"path": "a.txt"}',
        "  ✓ read (1.5 s)",
        "It says **hi** twice.",
        "",
        "(a notice)",
        "Later, bold.",
    ]
