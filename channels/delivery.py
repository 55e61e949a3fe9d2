"""What every chat channel's delivery shares: a reply sent in parts cut at the app's limit, a part that was not
confirmed a `DeliveryFailed` (never claimed as sent), and the next reply that does reach the conversation headed by
a note of what was lost."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .split import split_message

logger = logging.getLogger(__name__)
_T = TypeVar("_T")
SendPart = Callable[[str, bool, bool], Awaitable[_T]]
"""One part sent: `(text, first, last)`; the first answers the user's message, the last carries any buttons."""


class DeliveryFailed(Exception):
    """A send the chat app did not confirm, even after retries: the reply is not delivered (and never claimed)."""


class Deliveries:
    """One channel's replies: sent in parts, and the ones that could not be delivered, per conversation, noted until
    one that could says so."""

    def __init__(self, channel: str) -> None:
        self._channel = channel
        self._undelivered: dict[str, list[str]] = {}

    def noted(self, conversation: str, text: str) -> str:
        """`text` headed by a note of each reply that could not be delivered to the conversation since the last one
        that was."""
        notices = self._undelivered.get(conversation, [])
        return "\n".join(f"({notice})" for notice in notices) + "\n\n" + text if notices else text

    def lost(self, conversation: str, why: str) -> None:
        """A reply to the conversation was not delivered: the next one says so."""
        self._undelivered.setdefault(conversation, []).append(f"a reply could not be delivered here ({why})")
        logger.error("%s: reply to %s not delivered: %s", self._channel, conversation, why)

    def told(self, conversation: str) -> None:
        """A reply headed by the notes went out: they are said."""
        self._undelivered.pop(conversation, None)

    async def in_parts(self, conversation: str, text: str, limit: int, send: SendPart[_T]) -> _T | None:
        """`text`, headed by the notes, sent in parts cut at `limit`; the last part's result (None for no text). A
        part that fails is noted as lost, with how many are missing, and raised: nothing is claimed as sent."""
        parts = split_message(self.noted(conversation, text), limit)
        sent: _T | None = None
        for number, part in enumerate(parts, start=1):
            try:
                sent = await send(part, number == 1, number == len(parts))
            except DeliveryFailed as failure:
                self.lost(conversation, f"{failure}; part {number} of {len(parts)} is missing")
                raise
            if number == 1:
                self.told(conversation)
        return sent
