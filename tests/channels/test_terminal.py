"""The terminal channel keeps line breaks and shows replies as Markdown."""

from __future__ import annotations

from rich.console import Console

from hermitcrab.channels.terminal import TERMINAL, TerminalChannel, hard_breaks


def test_single_line_breaks_survive_markdown_but_code_is_untouched():
    text = "Model: x\nTokens: 3\n```\ncode\n```"

    assert hard_breaks(text) == "Model: x  \nTokens: 3  \n```\ncode\n```"


async def test_send_renders_markdown():
    console = Console(record=True, width=80)

    await TerminalChannel(console).send(TERMINAL, "It is **42**.\nSecond line")

    assert [line.rstrip() for line in console.export_text().splitlines()] == ["It is 42.", "Second line"]
