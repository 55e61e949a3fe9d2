"""A reply shown on Telegram while the model writes it: a message edited as the text grows, then made the reply.

The draft is sent as soon as there is something to show (the first words in `partial` mode, the first tool call in
`progress` mode) and edited at most once every `EDIT_EVERY_S`, counted from the end of the previous request, well
inside Telegram's limits for one chat. A running tool shows as a short line under the text. Text past 4,096
characters continues in further messages, cut exactly as a finished reply is. The reply itself (`finish`, from the
channel's `send`) edits each message to its final part, sends what is missing and deletes what is left over, so one
reply is never two messages. A draft is not recorded: after a crash, the restart's answer arrives as a new message
under the half-written one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

import anyio

from hermitcrab.channels.progress import inline_arguments
from hermitcrab.channels.split import split_message
from hermitcrab.host.events import (
    MessageDone,
    Question,
    Target,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnDone,
    TurnEvent,
)

from .delivery import LIMIT, DeliveryFailed, Outbox

logger = logging.getLogger(__name__)

StreamMode = Literal["off", "partial", "progress"]
EDIT_EVERY_S = 1.0
PROGRESS_LINES = 4


class Draft:
    """The draft of one reply to one message. `on_event` is the turn's listener; `finish` is the reply's delivery."""

    def __init__(
        self, outbox: Outbox, target: Target, mode: StreamMode, *, on_shown: Callable[[], None] = lambda: None
    ) -> None:
        self._outbox = outbox
        self._target = target
        self._mode: StreamMode = mode
        self._on_shown = on_shown
        self._shown: list[tuple[int, str]] = []  # (message id, the text it shows)
        self._text = ""
        self._new_message = False
        self._tools: dict[str, str] = {}
        self._dirty = anyio.Event()
        self._lock = anyio.Lock()
        self._finished = False
        self._next_edit = 0.0

    async def run(self) -> None:
        """Keep the draft in step with the turn until `finish` or `discard`; run it in the channel's task group."""
        while not self._finished:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            await anyio.sleep_until(self._next_edit)
            async with self._lock:
                if self._finished:
                    return
                try:
                    await self._show(self._render())
                except DeliveryFailed:
                    logger.warning("telegram: the draft in %s could not be updated", self._target.conversation)
                self._next_edit = anyio.current_time() + EDIT_EVERY_S

    async def on_event(self, event: TurnEvent) -> None:
        if isinstance(event, TextDelta):
            if self._new_message:
                self._text, self._new_message = "", False
            self._text += event.text
        elif isinstance(event, MessageDone):
            self._new_message = True  # its text stays on screen until the next message's first words
        elif isinstance(event, ToolStarted):
            self._tools[event.call_id] = f"⚙️ {event.name} {inline_arguments(event.arguments)}".rstrip()
        elif isinstance(event, ToolFinished):
            self._tools[event.call_id] = f"{'✅' if event.ok else '❌'} {event.name} · {event.duration_s:.1f} s"
        elif isinstance(event, Question):
            await self.discard(finished=False)  # the answer belongs below the question, not in a message above it
            return
        elif isinstance(event, TurnDone):
            if not event.reply:
                await self.discard()  # a silent turn: nothing to finish the draft with
            return
        else:
            return
        self._dirty.set()

    async def finish(self, text: str) -> None:
        """Make the draft the reply `text`; DeliveryFailed when a part could be neither edited nor sent."""
        self._close()
        async with self._lock:
            await anyio.sleep_until(self._next_edit)
            await self._show(text)
            for message_id, _ in self._shown[len(split_message(text, LIMIT)) :]:
                await self._delete(message_id)

    async def discard(self, *, finished: bool = True) -> None:
        """Take the draft down: the turn ended without a reply, or asked a question (then drafting goes on below)."""
        if finished:
            self._close()
        async with self._lock:
            for message_id, _ in self._shown:
                await self._delete(message_id)
            self._shown, self._text, self._tools = [], "", {}

    def _close(self) -> None:
        self._finished = True
        self._dirty.set()

    def _render(self) -> str:
        lines = list(self._tools.values())[-PROGRESS_LINES:]
        shown = [self._text.strip()] if self._mode == "partial" else []
        return "\n\n".join(part for part in [*shown, "\n".join(lines)] if part)

    async def _show(self, text: str) -> None:
        """Bring the messages in line with `text`'s parts: edit those that differ, send what is new."""
        for number, part in enumerate(split_message(text, LIMIT)):
            if number >= len(self._shown):
                reply_to = self._target.reply_to if number == 0 else None
                sent = await self._outbox.post_one(self._target.conversation, part, reply_to=reply_to)
                self._shown.append((sent.message_id, part))
                self._on_shown()
            elif self._shown[number][1] != part:
                await self._outbox.edit(self._target.conversation, self._shown[number][0], part)
                self._shown[number] = (self._shown[number][0], part)

    async def _delete(self, message_id: int) -> None:
        try:
            await self._outbox.delete(self._target.conversation, message_id)
        except DeliveryFailed as failure:
            logger.info("telegram: could not delete draft message %s: %s", message_id, failure)
