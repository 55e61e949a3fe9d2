"""How a chat channel's draft names a running tool call: its arguments as inline code on one short line."""

from __future__ import annotations

ARGUMENTS_CHARS = 60


def inline_arguments(arguments: str) -> str:
    """The arguments flattened to one line, shortened, backticks taken out so they cannot close the inline code."""
    flat = " ".join(arguments.replace("`", "'").split())
    if not flat:
        return ""
    return f"`{flat[:ARGUMENTS_CHARS]}{'…' if len(flat) > ARGUMENTS_CHARS else ''}`"
