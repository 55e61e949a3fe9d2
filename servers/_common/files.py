"""Crash-safe writes (atomic replace, append-only JSONL with torn-line tolerance); opening only regular files."""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)
_KINDS = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
    stat.S_IFLNK: "a symbolic link",
}


class NotRegularFile(OSError):
    """The path is a FIFO, device, socket, directory or symlink, which a server must neither read nor write."""


def open_regular(path: Path, flags: int, mode: int = 0o644) -> int:
    """A descriptor for the regular file `path`, opened with `flags`; NotRegularFile for anything else.

    O_NONBLOCK keeps a FIFO from blocking the open (forever, if nobody writes to it), and O_NOFOLLOW keeps a
    symlink swapped in after a path check from being followed.
    """
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind != stat.S_IFREG:
        os.close(fd)
        raise NotRegularFile(f"not a regular file but {_KINDS.get(kind, 'a special file')}")
    return fd


def describe_kind(path: Path) -> str | None:
    """What `path` is when it is not a regular file (e.g. "a named pipe (FIFO)"), else None; never follows links."""
    try:
        kind = stat.S_IFMT(path.lstat().st_mode)
    except OSError:
        return None
    return None if kind == stat.S_IFREG else _KINDS.get(kind, "a special file")


def atomic_write_text(path: Path, text: str) -> None:
    """Replace `path` with `text` so a crash leaves either the old or the new file, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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


def append_bytes(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Append `data` in a single write and fsync, so concurrent appenders never interleave within it."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def append_jsonl(path: Path, record: Any) -> None:
    """Append one JSON line in a single write, so concurrent appenders never interleave within a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    append_bytes(path, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))


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
