"""What the chat-app channels (Discord, Telegram) say and run alike: the commands they register, a stranger's pairing
message, "typing…" kept up per conversation, and background tasks whose failures are logged, never the end of the
channel (and with it of `hermitcrab run`), which an exception escaping into the channel's task group would be."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

logger = logging.getLogger(__name__)

COMMANDS = {
    "new": "Start a fresh session",
    "reset": "Start a fresh session",
    "status": "Model, tokens used and context size",
    "compact": "Summarise the older part of this session now",
}
"""The host's commands a chat app lists in its own menu (they work typed as well)."""
PAIRING_TEXT = (
    "Hi! I only talk to people my owner has approved. Your pairing code is **{code}** (valid for one hour). "
    "Ask my owner to run `hermitcrab pairing approve {code}`."
)
RESTART_S = 5.0
TYPING_MAX_S = 600.0


async def logged(channel: str, what: str, work: Callable[..., Awaitable[None]], *args: Any) -> None:
    """Run one of the channel's background tasks; a failure there is logged."""
    try:
        await work(*args)
    except Exception:
        logger.exception("%s: %s failed", channel, what)


async def forever(channel: str, what: str, work: Callable[..., Awaitable[None]], *args: Any) -> None:
    """A background task meant to run as long as the channel: restarted, after a pause, whenever it fails."""
    while True:
        await logged(channel, what, work, *args)
        logger.warning("%s: %s stopped; starting it again in %g s", channel, what, RESTART_S)
        await anyio.sleep(RESTART_S)


class Typing:
    """ "typing…" in each conversation, shown again every `every_s` (the app takes it down after a few seconds) until
    stopped (the reply went out, the turn ended) or for `TYPING_MAX_S` at most; a failure to show it is only logged."""

    def __init__(
        self,
        channel: str,
        show: Callable[[str], Awaitable[object]],
        failures: tuple[type[Exception], ...],
        *,
        every_s: float,
    ) -> None:
        self._channel = channel
        self._show = show
        self._failures = failures
        self._every_s = every_s
        self._scopes: dict[str, anyio.CancelScope] = {}

    def start(self, group: TaskGroup, conversation: str) -> None:
        self.stop(conversation)
        scope = self._scopes[conversation] = anyio.CancelScope()
        group.start_soon(logged, self._channel, f"typing in {conversation}", self._keep, conversation, scope)

    def stop(self, conversation: str) -> None:
        scope = self._scopes.pop(conversation, None)
        if scope is not None:
            scope.cancel()

    async def _keep(self, conversation: str, scope: anyio.CancelScope) -> None:
        with scope, anyio.move_on_after(TYPING_MAX_S):
            while True:
                try:
                    await self._show(conversation)
                except self._failures as exc:
                    logger.info("%s: typing indicator failed in %s: %s", self._channel, conversation, exc)
                await anyio.sleep(self._every_s)
