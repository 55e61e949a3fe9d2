"""After a crash or restart: every message accepted and never answered gets exactly one answer.

How far its turn got decides which (`loop.progress`): a turn that never started, or stopped before the model
answered and before any tool ran, runs again; one whose answer was recorded but maybe not sent has that answer sent,
with no model call; one that ran tools (which may have changed things) is not repeated: the sender is told plainly
that the host restarted and to ask again. A message that already took the host down `MAX_ATTEMPTS` times is not
tried again either: it is told so and set aside as a dead letter for the owner.
"""

from __future__ import annotations

import logging

import anyio

from ..events import Event, WaitsReady
from ..text import shorten
from ..turn.loop import progress
from ..turn.silence import is_silent
from .gateway import Gateway

logger = logging.getLogger(__name__)

RESTARTED = "I restarted while working on “{what}”; ask again if you still need it."
READY_TIMEOUT_S = 120.0
"""How long recovery waits for a channel to connect before answering its messages anyway (they may then fail)."""


async def recover(gateway: Gateway) -> None:
    """Answer each message the inbox held from before this start, once."""
    inbox = gateway.inbox
    if inbox is None:
        return
    for event in inbox.left_over:
        if not inbox.is_pending(event.inbound_id):
            continue
        channel = gateway.channels.get(event.target.channel)
        if isinstance(channel, WaitsReady):
            with anyio.move_on_after(READY_TIMEOUT_S):
                await channel.wait_ready()
        try:
            await _recover(gateway, event)
        except Exception:  # one message that cannot be recovered must not keep the host from serving the rest
            logger.exception("could not recover message %s", event.inbound_id)


async def _recover(gateway: Gateway, event: Event) -> None:
    done = progress(gateway.agent.session(event.session_key), event.inbound_id or "")
    if done is None or not done:
        logger.info("running message %s again: its turn was cut off before anything happened", event.inbound_id)
        await gateway.enqueue(event)
        return
    if any(entry.get("kind") == "tool_call" for entry in done):
        logger.info("message %s: its turn ran tools before the restart; telling the sender", event.inbound_id)
        await gateway.answer_once(event, RESTARTED.format(what=shorten(event.text, 80)))
        return
    answer = next((str(e.get("text", "")) for e in reversed(done) if e.get("kind") == "assistant"), None)
    if answer is None:  # nothing but entries no reply can be made of: the turn did not get far
        logger.info("running message %s again: its turn was cut off before the model answered", event.inbound_id)
        await gateway.enqueue(event)
        return
    logger.info("message %s: sending the answer recorded before the restart", event.inbound_id)
    await gateway.answer_once(event, "" if is_silent(answer) else answer)
