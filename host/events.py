"""The contract between the host and channel adapters: an Event coming in, a Channel to answer on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

EventKind = Literal["message", "heartbeat", "cron", "webhook", "subagent", "server"]
ChatType = Literal["direct", "group", "thread"]
"""What kind of conversation a user's message came from; the host derives its session from it (`routing.py`)."""
OnDone = Callable[[bool], Awaitable[None]]


@dataclass(frozen=True)
class Target:
    """Where replies go: a channel name plus the conversation id inside that channel."""

    channel: str
    conversation: str
    user: str | None = None
    reply_to: str | None = field(default=None, compare=False)
    """The message this answers, for IMs that thread replies; not part of the conversation's identity."""


NOWHERE = Target("none", "none")
"""The target of an event whose reply is not delivered (`deliver=False`): no conversation was known for it."""


@dataclass(frozen=True)
class Event:
    """One trigger for the agent: a user message, a timer, a webhook call, a server event."""

    kind: EventKind
    text: str
    target: Target
    session_key: str = "main"
    chat: ChatType | None = None
    """Set by chat channels: the host then picks `session_key` by its routing rule, never the channel."""
    metadata: dict[str, Any] = field(default_factory=dict[str, Any])
    deliver: bool = True
    on_done: OnDone | None = field(default=None, compare=False, repr=False)
    """Called with True once the event's turn finished and its reply was delivered (or it had been handled before),
    the moment a server's queue item may be acknowledged; with False when the turn failed."""


class Channel(Protocol):
    """What a channel adapter offers the host; it knows nothing about models or tools."""

    name: str

    async def send(self, target: Target, text: str) -> None:
        """Deliver `text` to the conversation; raise if delivery failed."""
        ...

    async def typing(self, target: Target) -> None:
        """Show that the agent is working, where the IM supports it."""
        ...
