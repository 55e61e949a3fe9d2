"""Pairing's direct messages, for every chat channel: the owners hear of every new request, and an approved user
hears that they are in.

`hermitcrab pairing approve` runs in another process, so `announce_approvals` watches the pairing file (one stat()
every few seconds, a read only when it changed), DMs each newly approved user once, then marks them announced.
A DM that fails is logged (by the channel's `SendDm`) and given up: a notice is never worth stopping the channel for.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection

import anyio

from hermitcrab.channels.pairing import Issued, PairingStore
from hermitcrab.util.files import Stamp

logger = logging.getLogger(__name__)

SendDm = Callable[[str, str], Awaitable[bool]]
"""A channel's direct message to a user id: True once delivered, False (logged) when it was not."""
CHECK_EVERY_S = 2.0  # an approval is announced within seconds, for one stat() per interval
REQUEST_TEXT = (
    "{name} ({channel} user {user}) asked to talk to me. "
    "Approve with `hermitcrab pairing approve {code}`, or `hermitcrab pairing deny {code}`."
)
DROPPED_TEXT = "To make room, I dropped the oldest waiting request: {name} ({channel} user {user})."
APPROVED_TEXT = "You're approved — you can talk to me now."


def request_notice(issued: Issued, channel: str) -> str:
    """What the owners read about a new code: who asked, the commands to decide, and who was dropped for it."""
    request = issued.request
    text = REQUEST_TEXT.format(name=request.name, channel=channel, user=request.user, code=request.code)
    if issued.dropped is not None:
        text += "\n" + DROPPED_TEXT.format(name=issued.dropped.name, channel=channel, user=issued.dropped.user)
    return text


async def tell_owners(send_dm: SendDm, owners: Collection[str], issued: Issued, channel: str) -> None:
    """Each owner gets a DM about the new request, so a code never waits unnoticed for its hour."""
    if not owners:
        logger.info("pairing: no [%s] owners to tell about %s's code", channel, issued.request.user)
    for owner in owners:
        await send_dm(owner, request_notice(issued, channel))


async def announce_approvals(send_dm: SendDm, store: PairingStore, channel: str) -> None:
    """Forever: tell each user approved on `channel` that they are in, once."""
    seen: Stamp | None = None
    while True:
        stamp = store.stamp()
        if stamp != seen:
            seen = stamp
            try:
                await _announce(send_dm, store, channel)
            except (OSError, ValueError, TypeError, KeyError) as exc:  # a damaged file: tried again once it changes
                logger.warning("pairing: cannot read %s to announce approvals: %s", store.path, exc)
        await anyio.sleep(CHECK_EVERY_S)


async def _announce(send_dm: SendDm, store: PairingStore, channel: str) -> None:
    for allowed in store.unannounced(channel):
        if await send_dm(allowed.user, APPROVED_TEXT):
            logger.info("pairing: told user %s (%s) they are approved", allowed.user, allowed.name)
        store.announced(allowed)
