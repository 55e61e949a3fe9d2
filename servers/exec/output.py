"""Bounded capture of a command's output and its safe rendering as text for the model.

A command may print gigabytes; we keep the first and the last `keep // 2` bytes and count what was cut, so
memory stays bounded and the model still sees how the output started and how it ended. Rendering decodes
invalid UTF-8 with replacement characters, strips ANSI escape codes, keeps only the last state of `\\r`
progress lines, and shortens very long lines.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
MAX_LINE = 2_000


class OutputBuffer:
    """Thread-safe byte sink that keeps a head and a tail of at most `keep` bytes in total."""

    def __init__(self, keep: int = 200_000) -> None:
        self._lock = threading.Lock()
        self._head_limit = keep // 2
        self._tail_limit = keep - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def write(self, data: bytes) -> None:
        with self._lock:
            self.total += len(data)
            room = self._head_limit - len(self._head)
            if room > 0:
                self._head += data[:room]
                data = data[room:]
            if data:
                self._tail += data
                if len(self._tail) > self._tail_limit:
                    del self._tail[: len(self._tail) - self._tail_limit]

    def snapshot(self) -> tuple[bytes, int, bytes]:
        """(head, bytes cut, tail)."""
        with self._lock:
            return bytes(self._head), self.total - len(self._head) - len(self._tail), bytes(self._tail)

    def since(self, offset: int) -> tuple[bytes, int]:
        """Bytes written after byte `offset` that are still kept, and how many of them were cut."""
        head, cut, tail = self.snapshot()
        tail_start = len(head) + cut
        if offset < len(head):
            return head[offset:] + tail, cut
        if offset < tail_start:
            return tail, tail_start - offset
        return tail[offset - tail_start :], 0


def clean(data: bytes) -> str:
    """Decode bytes for the model: replacement chars, no ANSI codes, `\\r` progress collapsed, long lines cut."""
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    text = _ANSI.sub("", text)
    lines: list[str] = []
    for line in text.split("\n"):
        if "\r" in line:
            line = line.rstrip("\r").rsplit("\r", 1)[-1]
        line = _CONTROL.sub("", line)
        lines.append(cut_line(line))
    return "\n".join(lines)


def cut_line(line: str) -> str:
    """`line`, or its head and tail when it is longer than MAX_LINE (also used by read_file)."""
    if len(line) <= MAX_LINE:
        return line
    return f"{line[: MAX_LINE // 2]} [... {len(line) - MAX_LINE} chars cut ...] {line[-MAX_LINE // 2 :]}"


@dataclass(frozen=True)
class Rendered:
    text: str
    cut_bytes: int


def render(buffer: OutputBuffer, max_chars: int) -> Rendered:
    """The buffer as text of at most about `max_chars`: a third from the head, the rest from the tail."""
    head, cut, tail = buffer.snapshot()
    if cut == 0 and len(head) + len(tail) <= max_chars:
        return Rendered(clean(head + tail), 0)
    data = head + tail
    head_part = data[: max_chars // 3]
    tail_part = data[len(data) - (max_chars - len(head_part)) :]
    dropped = cut + len(data) - len(head_part) - len(tail_part)
    text = f"{clean(head_part)}\n[... {dropped} bytes cut ...]\n{clean(tail_part)}"
    return Rendered(text, dropped)
