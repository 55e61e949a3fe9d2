"""Crash-safe writes: a whole file replaced atomically, or one line appended durably to a log."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` so a reader sees the old file or the new one, never a torn one; only its owner may
    read it (0600): state holds conversations, tokens and the people the owner let in."""
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:6]}.tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def append_line(path: Path, line: str) -> None:
    """Append `line` (no newline of its own) to a JSONL log with one write and fsync; a torn last line left by a
    crash is sealed with a newline first, so the new line stays readable (readers skip the torn one)."""
    data = (line + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        if size and os.pread(fd, 1, size - 1) != b"\n":
            os.write(fd, b"\n")
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
