"""The terminal channel: replies written out as the model streams them (rendered with rich when not streamed), tool
activity shown briefly as it starts and finishes, questions as prompts."""

from __future__ import annotations

import fcntl
import json
import queue
import struct
import sys
import termios
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio import WouldBlock
from prompt_toolkit import PromptSession
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import History
from prompt_toolkit.input.typeahead import get_typeahead
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
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
from hermitcrab.util.files import append_line, atomic_write_text, read_jsonl
from hermitcrab.util.text import escape_controls

TERMINAL = Target(channel="terminal", conversation="console", user="you")
ERASE_BELOW = "\x1b[J"
HISTORY_KEPT = 1000
"""Lines `chat` remembers across runs (Up recalls them); the file is cut back to these once it holds twice as many."""


class TerminalChannel:
    """Writes a reply out as the model streams it, then shows it as Markdown; asks its questions at a prompt of its
    own; `hermitcrab chat` reads the user's lines from the same `lines` and submits them as events.

    On a terminal the streamed words are erased and the whole reply rendered in their place once it is delivered,
    while they still fit on the screen (what scrolled away cannot be erased: a longer reply stays as written, Markdown
    source, which reads well too). A dumb terminal keeps what was written; output that is no terminal (a pipe) gets
    tool lines and the rendered reply only, as before streaming. Everything printed has its control characters
    escaped: a reply or a question (an approval naming a command) must not move the cursor, clear the screen or
    restyle what is printed around it. What arrives while the user's prompt is on screen (a reminder's turn, a
    sub-agent's result) is printed above it and the prompt drawn again below; its words are not streamed meanwhile,
    since they would be written into the line being typed.
    """

    name = "terminal"
    display = "a terminal: long output, Markdown, tables and code blocks all render fine"

    def __init__(self, console: Console | None = None, lines: Lines | None = None) -> None:
        self.console = console or Console()
        self.lines = lines or LineReader(self.console)
        self.written = Written()
        self._open_line = False
        """Whether the cursor sits after streamed words, so the next line must start on a line of its own."""
        self._held = False
        """Whether this reply's words were held back (the prompt was on screen): the rest of them are too."""

    async def send(self, target: Target, text: str) -> None:
        """The reply (its streamed part already on screen), a question or a message."""
        self._held = False
        await run_in_terminal(lambda: self._deliver(text))

    def _deliver(self, text: str) -> None:
        shown = self.written.text
        rest = self.written.rest(text)
        if rest is not None and not self._erase(shown):
            self._write(rest)
            self._end_line()
            return
        self._end_line()
        self._markdown(text)

    async def typing(self, target: Target) -> None:
        await run_in_terminal(lambda: self._note("…thinking"))

    async def ask(self, target: Target, question: str, choices: Sequence[str] | None = None) -> str | None:
        """The question with its choices numbered, and the user's answer at a prompt of its own: a choice's number
        is taken as that choice, anything else is passed on as typed (a form says itself what it accepts, and asks
        again when an answer is none of its choices). What was typed before the question showed is not an answer."""
        options = list(choices or ())

        def show() -> None:
            self._end_line()
            self._markdown(question)
            for line in numbered(options):
                self.console.print(Text(line))

        await run_in_terminal(show)
        return chosen(options, await self.lines.answer("answer> "))

    def listener(self, target: Target) -> Listener:
        return self.show

    async def show(self, event: TurnEvent) -> None:
        """The turn as it happens: the answer's words as they come, a dim line as each tool call starts and ends."""
        if isinstance(event, TextDelta) and self.console.is_terminal:
            self._held = self._held or self.lines.showing
            if not self._held:
                self._write(event.text)
                self.written.add(event.text)
        elif isinstance(event, MessageDone) and event.tool_calls:
            self.written.clear()  # words before a tool call are said, but not the reply
        else:
            line = _activity(event)
            if line is not None:
                await run_in_terminal(lambda: self._note(line))

    def note(self, text: str) -> None:
        """A dim line of the terminal's own (a cancelled turn), on a line of its own."""
        self.written.clear()
        self._held = False
        self._note(text)

    def _note(self, text: str) -> None:
        """The model wrote a tool's name and arguments, so they are text, never markup or controls."""
        self._end_line()
        self.console.print(Text(escape_controls(text), style="dim"))

    def _markdown(self, text: str) -> None:
        self.console.print(Markdown(hard_breaks(escape_controls(text))))

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


class Lines(Protocol):
    """Where the user's lines come from: the keyboard (`Keyboard`) or a pipe (`LineReader`)."""

    @property
    def showing(self) -> bool:
        """Whether a prompt is on screen waiting for the user's line (what is printed then goes above it)."""
        ...

    async def read(self, prompt: str) -> str | None:
        """The user's next message, None once they left (Ctrl-D, the end of stdin)."""
        ...

    async def answer(self, prompt: str) -> str | None:
        """The answer to a question just shown: nothing typed before it was shown; None when none comes."""
        ...


class LineReader:
    """The user's lines from a pipe (or a terminal prompt_toolkit cannot drive), one per prompt, read by a daemon
    thread of its own. What was written ahead is all there is, so an answer is the next line like any other.

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

    showing = False

    async def answer(self, prompt: str) -> str | None:
        return await self.read(prompt)

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


def numbered(choices: Sequence[str]) -> list[str]:
    """A line per choice, numbered from 1, its control characters escaped: how a terminal offers choices (`chat`'s
    prompt and `ask`'s stderr alike)."""
    return [f"  {index}. {escape_controls(choice)}" for index, choice in enumerate(choices, 1)]


def chosen(choices: Sequence[str], answer: str | None) -> str | None:
    """The choice a typed number names (as `numbered` showed them); any other answer as typed. An answer that is
    a choice itself is that choice, even when it is also another's number (choices "5", "3", "1" and `1`), and only
    decimal digits make a number (`"²".isdigit()` holds, but `int("²")` fails)."""
    typed = (answer or "").strip()
    if typed in choices:
        return typed
    return choices[int(typed) - 1] if typed.isdecimal() and 1 <= int(typed) <= len(choices) else answer


class Keyboard:
    """The user's lines on a terminal, read with prompt_toolkit: line editing, history kept across runs, slash
    commands completed with Tab, a paste taken whole (bracketed paste) and Alt-Enter or a trailing `\\` for a new
    line, so one message may have several.

    Ctrl-C with a line typed clears it; on an empty prompt or an answer's, it is `interrupt` (what the terminal's
    SIGINT does while a turn runs: the chat stops the turn, or leaves at its prompt). A question asked while the
    message prompt is on screen (a reminder's turn wants an approval) takes the screen: the line being written is
    set aside and given back once the question is answered.
    """

    def __init__(self, history: Path, commands: Callable[[], Mapping[str, str]], interrupt: Callable[[], None]) -> None:
        self._interrupt = interrupt
        keys = _keys()
        self._messages: PromptSession[str] = PromptSession(
            history=ChatHistory(history),
            completer=SlashCompleter(commands),
            key_bindings=keys,
            multiline=True,
            prompt_continuation=lambda width, line, wrap: "." * (width - 1) + " ",
        )
        self._answers: PromptSession[str] = PromptSession(key_bindings=keys)
        self._question = anyio.Lock()
        self._asked = anyio.Event()
        self._asked.set()
        """Set while no question has the screen."""
        self._prompting: anyio.Event | None = None
        """Set once the message prompt on screen is gone."""

    @property
    def showing(self) -> bool:
        return self._messages.app.is_running or self._answers.app.is_running

    @property
    def asking(self) -> bool:
        """Whether a question has the screen (its answer prompt, the message prompt set aside for it)."""
        return not self._asked.is_set()

    async def read(self, prompt: str) -> str | None:
        draft = ""
        while True:
            await self._asked.wait()
            self._prompting = prompting = anyio.Event()
            try:
                line = await self._prompt(self._messages, prompt, draft)
            finally:
                prompting.set()
            if self._asked.is_set():
                return line
            draft = line or ""  # set aside for a question

    async def answer(self, prompt: str) -> str | None:
        async with self._question:
            self._asked = anyio.Event()
            try:
                app = self._messages.app
                if app.is_running and self._prompting is not None:
                    app.exit(result=app.current_buffer.text)
                    await self._prompting.wait()
                self._discard_typeahead()
                return await self._prompt(self._answers, prompt, "")
            finally:
                self._asked.set()

    async def _prompt(self, session: PromptSession[str], prompt: str, draft: str) -> str | None:
        try:
            return await session.prompt_async(prompt, default=draft, handle_sigint=False, set_exception_handler=False)
        except EOFError:
            return None
        except KeyboardInterrupt:
            self._interrupt()
            await anyio.lowlevel.checkpoint()  # the interrupted scope ends here
            return None

    def _discard_typeahead(self) -> None:
        """Throw away keys typed before the question showed (the kernel's queue and prompt_toolkit's own), so a
        line meant for the chat never answers an approval; say so when there were some."""
        queued = struct.unpack("i", fcntl.ioctl(sys.stdin.fileno(), termios.FIONREAD, struct.pack("i", 0)))[0]
        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
        if queued or get_typeahead(self._answers.input):  # read with the last line: prompt_toolkit kept them
            print("(what you typed before this question was not taken as its answer)", flush=True)


def _keys() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("enter")
    def _send(event: KeyPressEvent) -> None:
        """Enter sends the message, unless the line ends in a backslash: that one becomes a new line."""
        buffer = event.current_buffer
        if buffer.document.text_before_cursor.endswith("\\") and buffer.document.is_cursor_at_the_end:
            buffer.delete_before_cursor()
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    @keys.add("escape", "enter")
    def _new_line(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    return keys


class ChatHistory(History):
    """The messages typed into `chat`, oldest first, one JSON string a line (a message of several lines stays one
    entry), appended with the durable append every state file gets (0600); read back newest first."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def load_history_strings(self) -> Iterable[str]:
        lines = [line for line in read_jsonl(self.path) if isinstance(line, str)]
        if len(lines) > 2 * HISTORY_KEPT:
            lines = lines[-HISTORY_KEPT:]
            atomic_write_text(self.path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
        return reversed(lines)

    def store_string(self, string: str) -> None:
        append_line(self.path, json.dumps(string, ensure_ascii=False))


class SlashCompleter(Completer):
    """Completes the slash command being typed at the start of a message: `commands` maps each `/word` (commands,
    skills, server prompts, asked again each time, since skills come and go) to what it does."""

    def __init__(self, commands: Callable[[], Mapping[str, str]]) -> None:
        self.commands = commands

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        typed = document.text_before_cursor
        if not typed.startswith("/") or any(char.isspace() for char in typed):
            return
        for word, about in sorted(self.commands().items()):
            if word.startswith(typed):
                yield Completion(word, start_position=-len(typed), display_meta=about)


def _activity(event: TurnEvent) -> str | None:
    """The dim line shown for a tool call starting or ending, or a compaction."""
    if isinstance(event, ToolStarted):
        return f"  ↳ {event.name} {event.arguments}"
    if isinstance(event, ToolFinished):
        return f"  {'✓' if event.ok else '✗'} {event.name} ({event.duration_s:.1f} s)"
    if isinstance(event, Compaction):
        return f"  (compacted the conversation: {event.before_chars:,} → {event.after_chars:,} characters)"
    return None


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
