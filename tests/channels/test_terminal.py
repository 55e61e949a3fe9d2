"""The terminal channel keeps line breaks, shows replies as Markdown (or as they stream) and control characters
escaped."""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from hermitcrab.channels.terminal import TERMINAL, TerminalChannel, chosen, hard_breaks
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


async def stream_a_turn(terminal: TerminalChannel, reply: str) -> None:
    """A turn that says a few words, calls a tool, then streams `reply` (without its last line, a notice)."""
    for event in (TextDelta("Let me"), TextDelta(" look."), MessageDone("Let me look.", 1)):
        await terminal.show(event)
    await terminal.show(ToolStarted("c1", "read", '{"path": "a.txt"}'))
    await terminal.show(ToolFinished("c1", "read", True, 1.5))
    answer = reply.rsplit("\n\n", 1)[0]
    for word in answer.split(" "):
        await terminal.show(TextDelta(word if answer.startswith(word) else f" {word}"))
    await terminal.show(TurnDone(reply, Usage()))


def recording(*, terminal: bool, height: int = 25, term: str = "xterm") -> Console:
    return Console(
        file=io.StringIO(), force_terminal=terminal, color_system=None, width=60, height=height, _environ={"TERM": term}
    )


async def test_on_a_terminal_the_reply_streams_then_is_erased_and_rendered_as_markdown_once():
    console = recording(terminal=True)
    terminal = TerminalChannel(console)
    reply = "It says **hi**\ntwice.\n\n(a notice)"

    await stream_a_turn(terminal, reply)
    streamed = console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO above
    assert streamed.endswith("It says **hi**\ntwice.")  # on screen before the reply is delivered
    await terminal.send(TERMINAL, reply)

    rendered = console.file.getvalue()[len(streamed) :]  # type: ignore[attr-defined]
    erase = "\x1b[1A\x1b[1G\x1b[J"  # up to the reply's first row, to its first column, erased to the end
    assert rendered.startswith(erase)
    assert [line.rstrip() for line in rendered.removeprefix(erase).splitlines()] == [
        "It says hi",
        "twice.",
        "",
        "(a notice)",
    ]
    assert streamed.splitlines()[:3] == ["Let me look.", '  ↳ read {"path": "a.txt"}', "  ✓ read (1.5 s)"]


async def test_a_reply_taller_than_the_screen_or_on_a_dumb_terminal_stays_as_written_and_gets_its_notice():
    for console in (recording(terminal=True, height=3), recording(terminal=True, term="dumb")):
        terminal = TerminalChannel(console)
        reply = "One **x**\ntwo\nthree\n\n(a notice)"
        await stream_a_turn(terminal, reply)
        await terminal.send(TERMINAL, reply)
        await terminal.send(TERMINAL, "Later, **bold**.")

        lines = [line.rstrip() for line in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]
        assert lines[3:] == ["One **x**", "two", "three", "", "(a notice)", "Later, bold."]
        assert "\x1b[" not in console.file.getvalue()  # type: ignore[attr-defined]


async def test_output_that_is_no_terminal_gets_tool_lines_and_the_rendered_reply_only():
    console = recording(terminal=False)
    terminal = TerminalChannel(console)
    reply = "It says **hi**.\n\n(a notice)"

    await stream_a_turn(terminal, reply)
    await terminal.send(TERMINAL, reply)

    lines = [line.rstrip() for line in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert lines == ['  ↳ read {"path": "a.txt"}', "  ✓ read (1.5 s)", "It says hi.", "", "(a notice)"]


def test_an_answer_that_is_a_choice_is_that_choice_before_it_is_a_number():
    choices = ["5", "3", "1"]

    assert [chosen(choices, typed) for typed in ("1", " 3 ", "2")] == ["1", "3", "3"]


def test_only_decimal_digits_make_a_number_and_other_answers_stay_as_typed():
    choices = ["red", "blue"]
    expected = {"²": "²", "2": "blue", "3": "3", "0": "0", "green": "green"}

    assert {typed: chosen(choices, typed) for typed in expected} == expected
    assert chosen(choices, None) is None
