"""A stdio server's stderr, line by line into the one log every server shares, each line headed by when it came and
which server wrote it (`2026-12-03T19:40:01 memory: ...`): after two crashes the interleaved tracebacks of five
servers are otherwise impossible to tell apart."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TextIO

import anyio

_CHUNK = 65536


class _Lines:
    """Bytes in, whole prefixed lines out; a line still unfinished waits for its end (or for the pipe to close)."""

    def __init__(self, name: str, log: TextIO) -> None:
        self._name = name
        self._log = log
        self._pending = b""

    def feed(self, data: bytes) -> None:
        *lines, self._pending = (self._pending + data).split(b"\n")
        self._write(lines)

    def finish(self) -> None:
        if self._pending:
            self._write([self._pending])
            self._pending = b""

    def _write(self, lines: list[bytes]) -> None:
        if not lines:
            return
        stamp = dt.datetime.now().astimezone().strftime("%Y-%m-%dT%H:%M:%S")
        for line in lines:
            self._log.write(f"{stamp} {self._name}: {line.decode('utf-8', 'replace').rstrip()}\n")
        self._log.flush()


@asynccontextmanager
async def prefixed_stderr(name: str, log: TextIO) -> AsyncGenerator[TextIO]:
    """A file to give one process of server `name` as its stderr; what it writes reaches `log` prefixed. On exit,
    once the process is gone, what is left in the pipe is written too, an unfinished last line as a line."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    lines = _Lines(name, log)
    writer = os.fdopen(write_fd, "w", encoding="utf-8")

    async def pump() -> None:
        while True:
            await anyio.wait_readable(read_fd)
            if not _read_ready(read_fd, lines):
                return

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield writer
            finally:
                group.cancel_scope.cancel()
    finally:
        writer.close()
        _read_ready(read_fd, lines)
        lines.finish()
        os.close(read_fd)


def _read_ready(fd: int, lines: _Lines) -> bool:
    """Feed what the pipe holds now; False once every writer has closed it."""
    while True:
        try:
            data = os.read(fd, _CHUNK)
        except BlockingIOError:
            return True
        if not data:
            return False
        lines.feed(data)
