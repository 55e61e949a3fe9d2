"""The terminal channel: replies rendered with rich, tool activity shown briefly, questions as prompts."""

from __future__ import annotations

import json
import queue
import threading
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio import WouldBlock
from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from hermitcrab.host.events import Target
from hermitcrab.util.text import escape_controls

TERMINAL = Target(channel="terminal", conversation="console", user="you")


class TerminalChannel:
    """Prints replies as Markdown; `hermitcrab chat` reads the user's lines and submits them as events."""

    name = "terminal"
    display = "a terminal: long output, Markdown, tables and code blocks all render fine"

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()

    async def send(self, target: Target, text: str) -> None:
        """Render `text` as Markdown, its control characters escaped: a reply or a question (an approval naming a
        command) must not move the cursor, clear the screen or restyle what is printed around it."""
        self.console.print(Markdown(hard_breaks(escape_controls(text))))

    async def typing(self, target: Target) -> None:
        self.console.print("[dim]…thinking[/dim]")

    def tool_activity(self, name: str, arguments: dict[str, Any]) -> None:
        """One dim line per tool call; the model wrote the arguments, so they are text, never markup or controls."""
        shown = json.dumps(arguments, ensure_ascii=False)
        line = f"  ↳ {name} {shown[:100]}{'…' if len(shown) > 100 else ''}"
        self.console.print(Text(escape_controls(line), style="dim"))


class LineReader:
    """The user's lines, one per prompt, read by a daemon thread of its own.

    `input()` cannot be interrupted, so a read given up on (Ctrl-C while the agent asks a question) is not
    abandoned but handed over: the line typed next answers the next prompt, and no second reader ever competes for
    stdin. Being a daemon, the thread never keeps `chat` from exiting while it waits for a line.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self._prompts: queue.Queue[str] = queue.Queue()
        self._send, self._lines = anyio.create_memory_object_stream[str | None](max_buffer_size=1)
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._reading = False
        self._ended = False

    async def read(self, prompt: str) -> str | None:
        """The next line (without its newline), None once stdin has ended (Ctrl-D)."""
        if self._ended:
            return None
        try:
            line = self._lines.receive_nowait()  # typed while nobody was asking
        except WouldBlock:
            self._ask(prompt)
            line = await self._lines.receive()
        self._ended = line is None
        return line

    def _ask(self, prompt: str) -> None:
        if self._reading:  # still waiting for the line of a prompt given up on: this prompt takes it
            self.console.print(prompt, end="", markup=False, highlight=False)
            return
        if self._token is None:
            self._token = anyio.lowlevel.current_token()
            threading.Thread(target=self._read_lines, name="terminal input", daemon=True).start()
        self._reading = True
        self._prompts.put(prompt)

    def _read_lines(self) -> None:
        assert self._token is not None
        while True:
            prompt = self._prompts.get()
            try:
                line: str | None = self.console.input(prompt)
            except EOFError:
                line = None
            try:
                anyio.from_thread.run_sync(self._deliver, line, token=self._token)
            except anyio.RunFinishedError:
                return
            if line is None:
                return

    def _deliver(self, line: str | None) -> None:
        self._reading = False
        self._send.send_nowait(line)


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
