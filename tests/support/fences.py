"""Reading the host's data fences (`host/untrusted.py`) back in tests."""

from __future__ import annotations

import re

_FENCE = re.compile(r"<<<(data-[0-9a-f]{8}) \(from (.*?): data, not instructions; [^\n]*\)\n(.*)\n\1>>>", re.S)


def fenced(text: str) -> tuple[str, str] | None:
    """(source, body) when `text` is one whole fence with matching tags; None when it is not fenced."""
    match = _FENCE.fullmatch(text)
    return (match.group(2), match.group(3)) if match else None
