"""Cut over-long text, visibly: in the middle, keeping its head and tail, or at the end for quoting it back."""

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


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis where it was cut (for quoting it back)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[: limit - 1]}…"
