"""Poison items end: what keeps failing is tried a few times, with backoff, then set aside as a dead letter.

Each try is counted when it starts (`Attempts`, on disk), so a message or a server item whose turn takes the host
down is counted too, and after `MAX_ATTEMPTS` starts it is not run again: it becomes a dead letter
(`deadletters.py`) with the reason, the owner is told once, and `hermitcrab deadletters retry ID` brings it back.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from ..events import Event, Target
from ..text import shorten
from .deadletters import BACKOFF_FIRST_S, FOLDER, MAX_ATTEMPTS, Attempts, DeadLetters, Kind, Letter, backoff_s
from .log import from_record, to_record

logger = logging.getLogger(__name__)

INTERRUPTED = "the host stopped during its turn (a crash or a kill)"
POLL_S = 2.0
"""How often the running host looks for letters the owner asked to retry (one stat of the file each time)."""

Announce = Callable[[str], Awaitable[None]]


class Retries:
    """Counts the tries of each item and sets aside the ones that used them up."""

    def __init__(self, state: Path, max_attempts: int = MAX_ATTEMPTS, first_wait_s: float = BACKOFF_FIRST_S) -> None:
        self.attempts = Attempts(state / FOLDER)
        self.letters = DeadLetters(state / FOLDER)
        self.max_attempts = max_attempts
        self.first_wait_s = first_wait_s
        self.announce: Announce | None = None
        """Tells the owner (their last conversation); set by `hermitcrab run` once its channels exist."""

    def used_up(self, key: str) -> bool:
        return self.attempts.count(key) >= self.max_attempts

    def started(self, key: str) -> int:
        """Count a try as it starts; returns which try this is."""
        return self.attempts.bump(key, INTERRUPTED)

    def failed(self, key: str, error: str) -> float:
        """Say why a try failed; returns how long to wait before the next one."""
        self.attempts.note(key, error)
        return backoff_s(self.attempts.count(key), self.first_wait_s)

    def succeeded(self, key: str) -> None:
        self.attempts.clear(key)

    async def set_aside(self, key: str, kind: Kind, source: str, event: Event, reason: str | None = None) -> Letter:
        """Make `event` a dead letter with `reason` (by default the last reason it failed), and tell the owner."""
        reason = reason or self.attempts.last_error(key) or INTERRUPTED
        letter = self.letters.add(
            key=key,
            kind=kind,
            source=source,
            session=event.session_key,
            text=event.text,
            reason=reason,
            attempts=self.attempts.count(key),
            event=to_record(event),
        )
        self.attempts.clear(key)
        logger.warning("set aside %s after %d tries: %s", key, letter.attempts, reason)
        await self.tell_owner()
        return letter

    async def tell_owner(self) -> None:
        """Announce each letter not announced yet, once (also those a crashed run left)."""
        waiting = self.letters.unannounced()
        if not waiting or self.announce is None:
            return
        for letter in waiting:
            what = "A message" if letter.kind == "message" else f"Work from the {letter.source} server"
            try:
                await self.announce(
                    f"{what} failed {letter.attempts} times and was set aside: “{shorten(letter.summary, 120)}” "
                    f"({letter.reason}). `hermitcrab deadletters retry {letter.id}` runs it again."
                )
            except Exception:  # the owner's channel is down: the letter stays unannounced and is told next time
                logger.warning("could not tell the owner about dead letter %s", letter.id, exc_info=True)
                return
            self.letters.mark_announced([letter.id])

    async def serve(self, enqueue: Callable[[Event], Awaitable[None]]) -> None:
        """Until cancelled: run again the letters the owner asked to retry (`hermitcrab deadletters retry`)."""
        stamp = None
        while True:
            if self.letters.changed_since(stamp):
                stamp = self.letters.stamp()
                for letter in self.letters.take_retries():
                    await _resubmit(letter, enqueue)
                await self.tell_owner()
            await anyio.sleep(POLL_S)


async def _resubmit(letter: Letter, enqueue: Callable[[Event], Awaitable[None]]) -> None:
    try:
        event = from_record(letter.event)
    except (ValueError, KeyError, TypeError):
        logger.warning("dead letter %s cannot be run again: its event is unreadable", letter.id)
        return
    logger.info("running dead letter %s again, as its owner asked", letter.id)
    await enqueue(event)


def owner_announcer(deliver: Callable[[Target, str], Awaitable[None]], where: Callable[[], Target | None]) -> Announce:
    """Announce to the owner's last conversation, when one is known."""

    async def announce(text: str) -> None:
        target = where()
        if target is None:
            raise LookupError("no conversation of the owner is known yet")
        await deliver(target, text)

    return announce
