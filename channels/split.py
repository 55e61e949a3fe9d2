"""Cut a reply into a chat app's messages (Discord's 2,000 characters, Telegram's 4,096) on line boundaries, keeping
code fences whole.

A part that ends inside a fenced block closes the fence, and the next part opens it again with the same info string
(```python), so every message renders as the code it holds. Only a single line longer than a message is cut inside.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


def split_message(text: str, limit: int) -> list[str]:
    """The parts of `text`, each at most `limit` characters; an empty text gives no parts."""
    parts: list[str] = []
    current: list[str] = []
    size = 0
    fence: str | None = None  # the line that opened the block we are in
    closer = ""
    for line in _lines(text, limit):
        reserve = len(closer) + 1 if fence else 0
        if current and size + len(line) + 1 + reserve > limit:
            parts.append("\n".join([*current, closer] if fence else current))
            current = [fence] if fence else []
            size = len(fence) + 1 if fence else 0
        current.append(line)
        size += len(line) + 1
        match = _FENCE.match(line)
        if match is None:
            continue
        if fence is None:
            fence, closer = line, match.group(1)
        elif match.group(1).startswith(closer) and not match.group(2).strip():
            fence, closer = None, ""
    if current:
        parts.append("\n".join(current))
    return [part for part in parts if part.strip()]


def _lines(text: str, limit: int) -> list[str]:
    """The lines of `text`, with any line too long to fit a part (with a fence around it) cut into pieces."""
    width = max(limit // 2, limit - 80)
    pieces: list[str] = []
    for line in text.strip("\n").split("\n"):
        pieces.extend(line[start : start + width] for start in range(0, max(len(line), 1), width))
    return pieces
