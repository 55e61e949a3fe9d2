"""`hermitcrab chat` on a pseudo-terminal, as a user runs it: ^C is the terminal's SIGINT, and rich sees a terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from .cli import CLI, cli_env
from .fake_llm import FakeLLM

CTRL_C, CTRL_D = "\x03", "\x04"
TAKE_TERMINAL = (  # the new session's leader makes the pty its controlling terminal, then becomes the CLI
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.argv[1], sys.argv[1:])"
)
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


class Terminal:
    """`hermitcrab chat` on a pty: what it printed so far, and keys typed into it."""

    def __init__(self, home: Path, llm: FakeLLM, *args: str, term: str = "dumb") -> None:
        self._master, slave = os.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-c", TAKE_TERMINAL, *CLI, "chat", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            env=cli_env(home, llm, {"TERM": term}),
        )
        os.close(slave)
        self._seen = bytearray()
        threading.Thread(target=self._read, daemon=True).start()

    @property
    def output(self) -> str:
        return ESCAPES.sub("", self._seen.decode(errors="replace"))

    def prompts(self) -> int:
        return self.output.count("you> ")

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
            self._seen += chunk
