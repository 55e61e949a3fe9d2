"""Atomic file writes: a hidden temporary file beside the target, flushed to disk, then renamed over it."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` so a reader sees the old file or the new one, never a torn one."""
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:6]}.tmp"
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
