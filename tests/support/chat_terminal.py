"""`hermitcrab chat` on a pseudo-terminal, as a user runs it: ^C is the terminal's SIGINT, and rich and prompt_toolkit
see a terminal. Its screen is kept by a terminal emulator (pyte), which also answers the cursor position requests
prompt_toolkit makes, as a real terminal does."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pyte

from .cli import CLI, cli_env
from .fake_llm import FakeLLM

CTRL_C, CTRL_D, UP, ALT_ENTER = "\x03", "\x04", "\x1b[A", "\x1b\r"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
COLUMNS, ROWS = 200, 50
TAKE_TERMINAL = (  # the new session's leader makes the pty its controlling terminal, then becomes the CLI
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.argv[1], sys.argv[1:])"
)
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


class Terminal:
    """`hermitcrab chat` on a pty: what it printed so far, its screen now, and keys typed into it."""

    def __init__(self, home: Path, llm: FakeLLM, *args: str, term: str = "dumb") -> None:
        self._master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self._screen = _Screen(COLUMNS, ROWS, self._master)
        self._stream = pyte.ByteStream(self._screen)
        self._lock = threading.Lock()
        self.process = subprocess.Popen(
            [sys.executable, "-c", TAKE_TERMINAL, *CLI, "chat", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            env=cli_env(home, llm, {"TERM": term, "LINES": str(ROWS)}),
        )
        os.close(slave)
        self._seen = bytearray()
        threading.Thread(target=self._read, daemon=True).start()

    @property
    def output(self) -> str:
        """Everything written so far, escapes taken out (a full terminal's redrawn prompt shows more than once)."""
        with self._lock:
            return ESCAPES.sub("", self._seen.decode(errors="replace"))

    def prompts(self) -> int:
        """How many prompts a dumb terminal was shown (each is written once, as plain text)."""
        return self.output.count("you> ")

    @property
    def screen(self) -> str:
        """The screen as it is now, its lines without trailing blanks."""
        with self._lock:
            return "\n".join(line.rstrip() for line in self._screen.display).rstrip()

    @property
    def cursor_line(self) -> str:
        """The line the cursor is on: at a prompt, the prompt and what is typed after it."""
        with self._lock:
            return self._screen.display[self._screen.cursor.y].rstrip()

    def type(self, keys: str) -> None:
        os.write(self._master, keys.encode())

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)
        os.close(self._master)

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 4096)
            except OSError:  # EIO: the chat process and its children closed the terminal
                return
            if not chunk:
                return
            with self._lock:
                self._seen += chunk
                self._stream.feed(chunk)


class _Screen(pyte.Screen):
    """A screen that sends its answers (the cursor position prompt_toolkit asks for) back to the program."""

    def __init__(self, columns: int, lines: int, master: int) -> None:
        super().__init__(columns, lines)
        self._master = master

    def write_process_input(self, data: str) -> None:
        os.write(self._master, data.encode())
