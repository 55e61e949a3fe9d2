"""Crash-safe files, written once for every part: a whole file replaced atomically, one line appended durably.

Every file is created 0600: state holds conversations, tokens and the people the owner let in.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def atomic_write_text(path: Path, text: str) -> None:
    """Replace `path` with `text` so a reader sees the old file or the new one, never a torn one, and a crash leaves
    no temporary file behind; the folder is synced too, so the rename itself survives a power cut."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mkstemp: 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


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


def read_jsonl(path: Path) -> Iterator[Any]:
    """Yield each record; a torn or garbled line (a crash mid-write) is skipped with a warning."""
    if not path.exists():
        return
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                yield json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                logger.warning("%s:%d: skipping a torn or unreadable line", path, number)


def fsync_dir(directory: Path) -> None:
    """Make a file created or renamed in `directory` survive a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


Stamp = tuple[int, int, int]


def stamp(path: Path) -> Stamp | None:
    """What changes whenever `path` is rewritten (each atomic write is a new file), None while there is none: one
    stat() tells a poller whether to read the file again."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return (status.st_ino, status.st_mtime_ns, status.st_size)
