"""The terminal channel: replies rendered with rich, tool activity shown briefly, questions as prompts."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markdown import Markdown

from hermitcrab.host.events import Target

TERMINAL = Target(channel="terminal", conversation="console", user="you")


class TerminalChannel:
    """Prints replies as Markdown; `hermitcrab chat` reads the user's lines and submits them as events."""

    name = "terminal"
    display = "a terminal: long output, Markdown, tables and code blocks all render fine"

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()

    async def send(self, target: Target, text: str) -> None:
        self.console.print(Markdown(hard_breaks(text)))

    async def typing(self, target: Target) -> None:
        self.console.print("[dim]…thinking[/dim]")

    def tool_activity(self, name: str, arguments: dict[str, Any]) -> None:
        shown = json.dumps(arguments, ensure_ascii=False)
        self.console.print(f"[dim]  ↳ {name} {shown[:100]}{'…' if len(shown) > 100 else ''}[/dim]")


def hard_breaks(text: str) -> str:
    """Keep the line breaks chat replies rely on, which Markdown would fold into one paragraph (not in code)."""
    lines = text.split("\n")
    in_code = False
    for index, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code and line.strip():
            lines[index] = line + "  "
    return "\n".join(lines)
