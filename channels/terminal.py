"""The terminal channel: replies written out as the model streams them (rendered with rich when not streamed), tool
activity shown briefly as it starts and finishes, questions as prompts."""

from __future__ import annotations

import queue
import threading

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio import WouldBlock
from rich.cells import cell_len
from rich.console import Console
from rich.control import Control
from rich.markdown import Markdown
from rich.segment import ControlType
from rich.text import Text

from hermitcrab.host.events import (
    Compaction,
    Listener,
    MessageDone,
    Target,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnEvent,
)
from hermitcrab.util.text import escape_controls

TERMINAL = Target(channel="terminal", conversation="console", user="you")
ERASE_BELOW = "\x1b[J"


class TerminalChannel:
    """Writes a reply out as the model streams it, then shows it as Markdown; `hermitcrab chat` reads the user's
    lines and submits them as events.

    On a terminal the streamed words are erased and the whole reply rendered in their place once it is delivered,
    while they still fit on the screen (what scrolled away cannot be erased: a longer reply stays as written, Markdown
    source, which reads well too). A dumb terminal keeps what was written; output that is no terminal (a pipe) gets
    tool lines and the rendered reply only, as before streaming. Everything printed has its control characters
    escaped: a reply or a question (an approval naming a command) must not move the cursor, clear the screen or
    restyle what is printed around it.
    """

    name = "terminal"
    display = "a terminal: long output, Markdown, tables and code blocks all render fine"

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self.written = Written()
        self._open_line = False
        """Whether the cursor sits after streamed words, so the next line must start on a line of its own."""

    async def send(self, target: Target, text: str) -> None:
        """The reply (its streamed part already on screen), a question or a message."""
        shown = self.written.text
        rest = self.written.rest(text)
        if rest is not None and not self._erase(shown):
            self._write(rest)
            self._end_line()
            return
        self._end_line()
        self.console.print(Markdown(hard_breaks(escape_controls(text))))

    async def typing(self, target: Target) -> None:
        self._note("…thinking")

    def listener(self, target: Target) -> Listener:
        return self.show

    async def show(self, event: TurnEvent) -> None:
        """The turn as it happens: the answer's words as they come, a dim line as each tool call starts and ends."""
        if isinstance(event, TextDelta) and self.console.is_terminal:
            self._write(event.text)
            self.written.add(event.text)
        elif isinstance(event, MessageDone) and event.tool_calls:
            self.written.clear()  # words before a tool call are said, but not the reply
        elif isinstance(event, ToolStarted):
            self._note(f"  ↳ {event.name} {event.arguments}")
        elif isinstance(event, ToolFinished):
            self._note(f"  {'✓' if event.ok else '✗'} {event.name} ({event.duration_s:.1f} s)")
        elif isinstance(event, Compaction):
            self._note(f"  (compacted the conversation: {event.before_chars:,} → {event.after_chars:,} characters)")

    def note(self, text: str) -> None:
        """A dim line of the terminal's own (a cancelled turn), on a line of its own."""
        self.written.clear()
        self._note(text)

    def _note(self, text: str) -> None:
        """The model wrote a tool's name and arguments, so they are text, never markup or controls."""
        self._end_line()
        self.console.print(Text(escape_controls(text), style="dim"))

    def _write(self, text: str) -> None:
        if text:
            self.console.print(Text(escape_controls(text)), end="", soft_wrap=True)
            self._open_line = not text.endswith("\n")

    def _end_line(self) -> None:
        if self._open_line:
            self.console.print()
        self._open_line = False

    def _erase(self, shown: str) -> bool:
        """Take the streamed `shown` off the screen, if it still all fits there; whether it did."""
        console = self.console
        if not shown or not console.is_terminal or console.is_dumb_terminal:
            return False
        width = max(console.width, 1)
        rows = sum(max(1, -(-cell_len(escape_controls(line)) // width)) for line in shown.split("\n"))
        if rows >= console.size.height:
            return False
        up = rows - 1  # the cursor sits on the last row (after a closing newline, on the empty one it began)
        console.control(Control((ControlType.CURSOR_UP, up)) if up else Control(), Control.move_to_column(0))
        console.file.write(ERASE_BELOW)
        self._open_line = False
        return True


class Written:
    """The reply's text written out so far, while it streams: its delivery then only needs what is missing."""

    def __init__(self) -> None:
        self._text: list[str] = []

    def add(self, text: str) -> None:
        self._text.append(text)

    @property
    def text(self) -> str:
        return "".join(self._text)

    def clear(self) -> None:
        self._text.clear()

    def rest(self, reply: str) -> str | None:
        """What of `reply` is not written yet (its notices), or None when it is not the text being written."""
        written = self.text
        self._text.clear()
        return reply[len(written) :] if written and reply.startswith(written) else None


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
