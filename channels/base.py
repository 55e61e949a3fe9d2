"""Shared channel machinery: a name -> factory registry and splitting long replies for IM limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermitcrab.host.events import Channel

ChannelFactory = Callable[..., Channel]
_registry: dict[str, ChannelFactory] = {}


def register(name: str, factory: ChannelFactory) -> None:
    _registry[name] = factory


def create(name: str, **options: Any) -> Channel:
    try:
        return _registry[name](**options)
    except KeyError:
        raise LookupError(f"no channel named {name!r}; known: {', '.join(sorted(_registry))}") from None


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
