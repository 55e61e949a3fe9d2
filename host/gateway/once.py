"""Exactly once, as the gateway keeps it: a message is recorded before its turn and ended once answered; a server
item's id is recorded in its session after its reply went out; a message whose turn keeps taking the host down is
set aside instead of run again.

The inbox (`inbox/log.py`) and the tries (`inbox/retries.py`) are optional: `chat` and `ask` answer at once and
keep neither.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..events import Event
from ..inbox.deadletters import Letter
from ..inbox.log import Inbox
from ..inbox.retries import Retries
from ..session.transcript import Session

logger = logging.getLogger(__name__)


class Once:
    """The gateway's bookkeeping so that what was accepted is answered, and answered only once."""

    def __init__(self, sessions: Callable[[str], Session], inbox: Inbox | None, retries: Retries | None) -> None:
        self.sessions = sessions
        self.inbox = inbox
        self.retries = retries

    def accept(self, event: Event) -> bool:
        """Record a channel's message before anything else; False for one seen before (then dropped)."""
        if self.inbox is not None and not self.inbox.accept(event):
            logger.info("dropped message %s: it was accepted before", event.inbound_id)
            return False
        return True

    def handled_before(self, event: Event) -> bool:
        """Whether a server item (`metadata["event_id"]`) already had its turn in this session."""
        event_id = event.metadata.get("event_id")
        if event_id is not None and self.sessions(event.session_key).handled(str(event_id)):
            logger.info("skipping event %s: already handled in session %s", event_id, event.session_key)
            return True
        return False

    def start(self, event: Event) -> bool:
        """Count a try of a message's turn as it starts; False when it used up its tries (set it aside instead)."""
        key = event.inbound_id
        if key is None or self.retries is None:
            return True
        if self.retries.used_up(key):
            return False
        self.retries.started(key)
        return True

    async def set_aside(self, event: Event) -> Letter:
        assert self.retries is not None and event.inbound_id is not None  # `start` said no: both exist
        return await self.retries.set_aside(event.inbound_id, "message", event.target.channel, event)

    def delivered(self, event: Event) -> None:
        """The reply went out: a server item's id is recorded, so a repeat delivery of it is skipped."""
        event_id = event.metadata.get("event_id")
        if event_id is not None:
            self.sessions(event.session_key).transcript.append("event", event_id=str(event_id))

    def end(self, event: Event) -> None:
        """The message is answered: it leaves the inbox, and its tries are forgotten."""
        if event.inbound_id is None:
            return
        if self.inbox is not None:
            self.inbox.end(event.inbound_id)
        if self.retries is not None:
            self.retries.succeeded(event.inbound_id)
