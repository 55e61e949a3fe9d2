"""A reply shown in a chat app while the model writes it: a draft message, edited as the text grows, then finalised.

The draft is posted as soon as there is something to show (the first words in `partial` mode, the first tool call in
`progress` mode) and edited at most once every `EDIT_EVERY_S`, counted from the end of the previous request, which keeps
a conversation well inside Discord's edit bucket (5 per 5 s per channel) and Telegram's limits. A tool call shows as a
short line under the text while it runs. Text past the app's message limit continues in further messages, cut by
`split_message` exactly as a finished reply is, so fences stay whole. The reply itself (`finish`, from the channel's
`send`) turns the draft into the answer: every message edited to its final part, extra ones deleted, so one reply is
never two messages; a message that cannot be edited is sent anew and the stale one deleted. The message ids are recorded
(`drafts.py`) so a restart's answer replaces a draft that a crash left behind, and a reply sent again is sent once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import anyio

from hermitcrab.channels.delivery import DeliveryFailed
from hermitcrab.channels.drafts import DraftRecords, answering
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

logger = logging.getLogger(__name__)

StreamMode = Literal["off", "partial", "progress"]
"""What a draft shows while the turn runs: nothing (one message at the end), the text so far and tool lines, or tool
lines only."""
EDIT_EVERY_S = 1.0
PROGRESS_LINES = 4
"""Tool lines a draft shows at most: the latest ones."""
LIVE_DRAFTS = 100
"""Drafts kept for their reply at most; only those whose reply never came (a silent turn, a failed delivery) pile up."""


class DraftOutbox(Protocol):
    """What a draft needs of its channel's delivery: single messages posted, edited and deleted under the channel's
    retries (each raising `DeliveryFailed` when the app did not confirm it), and its notes of what was lost."""

    @property
    def limit(self) -> int:
        """Characters in one message."""
        ...

    @property
    def small_print(self) -> str:
        """The markup before a tool line that makes it small ("" where the app has none)."""
        ...

    async def post_one(self, target: Target, text: str, *, answering: bool) -> str:
        """Send one message (answering `target.reply_to` when `answering`); its id."""
        ...

    async def edit(self, conversation: str, message_id: str, text: str) -> None: ...

    async def delete(self, conversation: str, message_id: str) -> None: ...

    def noted(self, conversation: str, text: str) -> str: ...

    def lost(self, conversation: str, why: str) -> None: ...

    def told(self, conversation: str) -> None: ...


@dataclass
class _Shown:
    """One message of the draft: its id and the content Discord has (None after a restart: not known)."""

    id: str
    content: str | None


class Drafts:
    """A channel's drafts: the one being written for each reply, and the records (`drafts.py`) of earlier ones, so
    that every reply, streamed or not, recovered after a crash or not, ends as one set of messages."""

    def __init__(self, outbox: DraftOutbox, records: Path) -> None:
        self._outbox = outbox
        self._records = DraftRecords(records)
        self._live: dict[str, Draft] = {}

    def start(self, target: Target, mode: StreamMode, *, on_shown: Callable[[], None]) -> Draft:
        """A draft of the reply to `target.reply_to`; its `run` belongs in the channel's task group."""
        draft = Draft(self._outbox, target, mode, self._records, on_shown=on_shown)
        self._live[answering(target)] = draft
        while len(self._live) > LIVE_DRAFTS:
            del self._live[next(iter(self._live))]
        return draft

    async def send(self, target: Target, text: str, post: Callable[[], Awaitable[object]]) -> None:
        """Deliver the reply `text`: into its draft (this turn's, or one a crash left and recorded), not at all when
        that draft shows it already (a restart's recovery sending what went out just before the crash), else by
        `post`. DeliveryFailed when it could not be delivered."""
        key = answering(target)
        draft = self._live.pop(key, None)
        record = self._records.get(key)
        if draft is None and record is not None and record.delivered(text):
            logger.info("the reply to %s is on screen already; not sent again", key)
            return
        if draft is None and record is not None and record.finished is None:
            draft = Draft(self._outbox, target, "off", self._records)
        if draft is None:
            await post()
        else:
            await draft.finish(text)


class Draft:
    """The draft of one reply to one message. `on_event` is the turn's listener; `finish` is the reply's delivery."""

    def __init__(
        self,
        outbox: DraftOutbox,
        target: Target,
        mode: StreamMode,
        records: DraftRecords,
        *,
        on_shown: Callable[[], None] = lambda: None,
    ) -> None:
        assert target.reply_to is not None  # only a reply to a message is drafted: part of the key of its record
        self._outbox = outbox
        self._target = target
        self._answering = answering(target)
        self._mode: StreamMode = mode
        self._records = records
        self._on_shown = on_shown
        record = records.get(self._answering)
        drafted = record.messages if record is not None and record.finished is None else ()  # a crash's draft
        self._shown = [_Shown(ident, None) for ident in drafted]
        self._text = ""
        self._new_message = False
        self._tools: dict[str, str] = {}
        self._dirty = anyio.Event()
        self._lock = anyio.Lock()
        self._finished = False
        self._next_edit = 0.0

    @property
    def messages(self) -> list[str]:
        return [shown.id for shown in self._shown]

    async def run(self) -> None:
        """Keep the draft in step with the turn until `finish` or `discard`; run it in the channel's task group."""
        while not self._finished:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            await anyio.sleep_until(self._next_edit)
            async with self._lock:
                if self._finished:
                    return
                await self._show(self._render(), final=False)
                self._next_edit = anyio.current_time() + EDIT_EVERY_S

    async def on_event(self, event: TurnEvent) -> None:
        if isinstance(event, TextDelta):
            if self._new_message:
                self._text, self._new_message = "", False
            self._text += event.text
        elif isinstance(event, MessageDone):
            self._new_message = True  # its text stays on screen until the next message's first words
        elif isinstance(event, ToolStarted):
            line = f"⚙️ {event.name} {inline_arguments(event.arguments)}".rstrip()
            self._tools[event.call_id] = self._outbox.small_print + line
        elif isinstance(event, ToolFinished):
            sign = "✅" if event.ok else "❌"
            self._tools[event.call_id] = f"{self._outbox.small_print}{sign} {event.name} · {event.duration_s:.1f} s"
        elif isinstance(event, Question):
            await self._start_over()  # the answer belongs below the question, not in a message above it
            return
        elif isinstance(event, TurnDone):
            self._close()  # what is on screen stays until the reply replaces it
            if not event.reply:
                await self.discard()  # a silent turn: nothing to finish the draft with
            return
        else:
            return
        self._dirty.set()

    async def finish(self, text: str) -> None:
        """Make the draft the reply `text` (no sooner than a second after the last edit); DeliveryFailed when a part
        could be neither edited nor sent."""
        self._close()
        conversation = self._target.conversation
        async with self._lock:
            await anyio.sleep_until(self._next_edit)
            try:
                await self._show(self._outbox.noted(conversation, text), final=True)
            except DeliveryFailed as failure:
                self._outbox.lost(conversation, str(failure))
                raise
            self._outbox.told(conversation)
            self._records.finished(self._answering, self.messages, text)

    async def discard(self) -> None:
        """Take the draft down: the turn ended without a reply to put there."""
        self._close()
        async with self._lock:
            await self._delete(self._shown)
            self._shown = []
            self._records.drop(self._answering)

    def _close(self) -> None:
        self._finished = True
        self._dirty.set()

    async def _start_over(self) -> None:
        async with self._lock:
            await self._delete(self._shown)
            self._shown, self._text, self._tools = [], "", {}
            self._records.drop(self._answering)

    def _render(self) -> str:
        lines = list(self._tools.values())[-PROGRESS_LINES:]
        shown = [self._text.strip()] if self._mode == "partial" else []
        return "\n\n".join(part for part in [*shown, "\n".join(lines)] if part)

    async def _show(self, text: str, *, final: bool) -> None:
        """Bring the messages in line with `text`'s parts: edit those that differ, post what is new, and (final)
        delete what is left over. While drafting a failure is logged and tried again at the next edit."""
        parts = split_message(text, self._outbox.limit)
        try:
            for number, part in enumerate(parts):
                if number >= len(self._shown):
                    ident = await self._outbox.post_one(self._target, part, answering=number == 0)
                    self._shown.append(_Shown(ident, part))
                    self._records.drafted(self._answering, self.messages)
                    self._on_shown()
                elif self._shown[number].content != part:
                    await self._replace(number, part)
        except DeliveryFailed:
            if final:
                raise
            logger.warning("the draft in %s could not be updated", self._target.conversation, exc_info=True)
            return
        if final:
            await self._delete(self._shown[len(parts) :])
            del self._shown[len(parts) :]

    async def _replace(self, number: int, part: str) -> None:
        """Edit message `number` to `part`; one that cannot be edited (deleted by someone, refused) is sent anew."""
        shown = self._shown[number]
        try:
            await self._outbox.edit(self._target.conversation, shown.id, part)
            shown.content = part
            return
        except DeliveryFailed as failure:
            logger.info("could not edit message %s (%s); sending it anew", shown.id, failure)
        ident = await self._outbox.post_one(self._target, part, answering=number == 0)
        await self._delete([shown])
        self._shown[number] = _Shown(ident, part)
        self._records.drafted(self._answering, self.messages)

    async def _delete(self, messages: list[_Shown]) -> None:
        for shown in messages:
            try:
                await self._outbox.delete(self._target.conversation, shown.id)
            except DeliveryFailed as failure:
                logger.info("could not delete draft message %s: %s", shown.id, failure)
