"""Crash-safe files, written once for every part: a whole file replaced atomically, one line appended durably.

Every file is created 0600: state holds conversations, tokens and the people the owner let in.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    """Replace `path` with `text` (UTF-8, newlines as given); see `atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def atomic_write_bytes(
    path: Path, data: bytes, *, mode: int | None = 0o600, dir_fd: int | None = None, durable: bool = True
) -> None:
    """Replace `path` with `data` so a reader sees the old file or the new one, never a torn one, and a crash leaves
    no temporary file behind; the folder is synced too, so the rename itself survives a power cut.

    With `dir_fd`, `path` is a name in that folder and nothing on the way is looked up again (the exec server's
    file tools reach the folder without following symlinks); without it, missing parents are created. `mode` None
    leaves what the umask makes of 0666, as for a file any program creates. `durable` False skips the two fsyncs
    (a crash of the process still leaves the old file or the new one; a power cut may leave neither), for many
    files whose loss the reader detects: the exec server's undo copies, checked against their hash.
    """
    if dir_fd is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            atomic_write_bytes(Path(path.name), data, mode=mode, dir_fd=folder, durable=durable)
        finally:
            os.close(folder)
        return
    name = str(path)
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o666 if mode is None else 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    if durable:
        os.fsync(dir_fd)


def atomic_write_json(path: Path, data: Any, indent: int | None = 2, *, durable: bool = True) -> None:
    """`data` as JSON, indented for a person to read (`indent` None: one line, several times faster to write)."""
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=indent) + "\n", durable=durable)


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
