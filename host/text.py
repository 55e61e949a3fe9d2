"""Cut over-long text in the middle, keeping its head and tail, so the cut is visible and bounded."""

from __future__ import annotations

HEAD_SHARE = 0.7
TAIL_SHARE = 0.2


def cut_middle(text: str, limit: int, hint: str = "") -> str:
    """Keep ~70% head and ~20% tail of `text` within `limit` characters, with a marker naming what was cut."""
    if len(text) <= limit:
        return text
    head = int(limit * HEAD_SHARE)
    tail = int(limit * TAIL_SHARE)
    suffix = f"; {hint}" if hint else ""
    marker = f"\n\n[... {len(text) - head - tail} characters cut{suffix} ...]\n\n"
    return text[:head] + marker + (text[-tail:] if tail else "")
