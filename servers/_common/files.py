"""Crash-safe file writes: atomic replace and append-only JSONL with torn-line tolerance."""

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
    _fsync_dir(path.parent)


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


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
