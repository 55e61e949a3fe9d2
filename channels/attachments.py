"""What every chat channel does with a file sent to it: text small enough becomes part of the message, fenced so
its own backticks cannot close the fence; a saved file gets a name that is safe on any disk."""

from __future__ import annotations

import re
from pathlib import PurePath

MAX_IMAGE_BYTES = 20 * 1024 * 1024
TEXT_SUFFIXES = frozenset(
    {".txt", ".md", ".py", ".js", ".ts", ".json", ".yaml", ".yml", ".toml", ".csv", ".log", ".sh", ".html", ".css"}
    | {".xml", ".ini", ".cfg", ".sql", ".rs", ".go", ".java", ".c", ".h"}
)


def is_text(media_type: str | None, filename: str) -> bool:
    """Whether a file reads as text, by its media type or else its suffix."""
    kind = media_type or ""
    return (
        kind.startswith("text/")
        or kind in ("application/json", "application/xml")
        or PurePath(filename).suffix.lower() in TEXT_SUFFIXES
    )


def text_block(name: str, body: bytes) -> str:
    """A text file as message content: its name, then its text in a fence longer than any backtick run inside."""
    text = body.decode("utf-8", errors="replace")
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`+", text))])
    return f"[attached file {name}]\n{fence}\n{text}\n{fence}"


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[-80:] or "file"
