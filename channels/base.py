"""Shared channel machinery: splitting long replies to fit an IM's message size limit."""

from __future__ import annotations


def split_message(text: str, limit: int) -> list[str]:
    """Split at line breaks where possible so each piece fits an IM's message size limit."""
    pieces: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        while len(line) > limit:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:limit])
            line = line[limit:]
        if len(current) + len(line) > limit:
            pieces.append(current)
            current = ""
        current += line
    if current:
        pieces.append(current)
    return pieces
