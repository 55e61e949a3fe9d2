"""Questions with choices as inline keyboards that only the person asked can press (an owner, when it was asked of
nobody in particular, as a cron job's or a webhook's approval is).

A button's callback data is `hc:<question token>:<choice number>`, far inside Telegram's 64 bytes whatever the
choice says; the choice itself stays here. Anyone else who presses is refused in an alert only they see and the
question stays open; the pressed choice replaces the keyboard, so the chat shows what was decided and by whom.
Choices past `MAX_BUTTONS` are listed in the text, numbered, and answered by typing.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace

import anyio
from telegram import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Message
from telegram.error import TelegramError

from hermitcrab.channels.delivery import DeliveryFailed
from hermitcrab.host.events import Target

from .delivery import Outbox

logger = logging.getLogger(__name__)

REFUSAL = "Only the person this was asked of can answer it."
OWNERS_ONLY = "Only my owner can answer this."
CLOSED = "This question is no longer open."
MAX_BUTTONS = 20
LABEL_CHARS = 60


@dataclass
class _Open:
    question: str
    choices: Sequence[str]
    asked: str | None
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: str | None = None


class Questions:
    """The questions on screen, by token, and who is being waited on where (their typed words need no mention)."""

    def __init__(self, outbox: Outbox, owners: Collection[str]) -> None:
        self._outbox = outbox
        self._owners = owners
        self._open: dict[str, _Open] = {}
        self._waiting: dict[tuple[str, str | None], int] = {}

    def waiting(self, conversation: str, user: str) -> bool:
        return self._waiting.get((conversation, user), 0) > 0

    async def ask(self, target: Target, question: str, choices: Sequence[str] | None) -> str | None:
        """The pressed choice of `target.user` (an owner's, when None); cancelled (the host's typed answer came
        first) or unanswered, None."""
        key = (target.conversation, target.user)
        target = replace(target, reply_to=None)  # the reply to the message comes later, once
        self._waiting[key] = self._waiting.get(key, 0) + 1
        try:
            if not choices:
                await self._outbox.post(target, question)
                await anyio.sleep_forever()
                return None
            return await self._choose(target, question, choices)
        finally:
            self._waiting[key] -= 1

    async def _choose(self, target: Target, question: str, choices: Sequence[str]) -> str | None:
        token = secrets.token_hex(6)
        rest = [f"{number}. {choice}" for number, choice in enumerate(choices, 1)][MAX_BUTTONS:]
        text = "\n".join([question, "Or type one of:", *rest]) if rest else question
        keyboard = InlineKeyboardMarkup(
            [
                [InlineKeyboardButton(choice[:LABEL_CHARS], callback_data=f"hc:{token}:{index}")]
                for index, choice in enumerate(choices[:MAX_BUTTONS])
            ]
        )
        asking = self._open[token] = _Open(question, choices, target.user)
        message: Message | None = None
        try:
            message = await self._outbox.post(target, text, keyboard=keyboard)
            await asking.answered.wait()
            return asking.answer
        finally:
            del self._open[token]
            if message is not None and asking.answer is None:
                await self._withdraw(message)

    async def pressed(self, query: CallbackQuery) -> None:
        """A button press: the asked user's (or an owner's) answers, anyone else's is refused."""
        _, token, index = (query.data or "").split(":", 2) if (query.data or "").count(":") == 2 else ("", "", "")
        asking = self._open.get(token)
        if asking is None or not index.isdigit() or int(index) >= len(asking.choices):
            await _answer(query, CLOSED)
            return
        presser = str(query.from_user.id)
        if not (presser == asking.asked or (asking.asked is None and presser in self._owners)):
            await _answer(query, REFUSAL if asking.asked else OWNERS_ONLY)
            return
        choice = asking.choices[int(index)]
        asking.answer = choice
        asking.answered.set()
        await _answer(query, None)
        message = query.message
        if isinstance(message, Message):
            who = query.from_user.username or query.from_user.full_name
            decided = f"{asking.question}\n\n→ **{choice}** ({who})"
            try:
                await self._outbox.edit(str(message.chat.id), str(message.message_id), decided)
            except DeliveryFailed as failure:
                logger.info("telegram: could not show the answer under the question: %s", failure)

    async def _withdraw(self, message: Message) -> None:
        """The question expired or was answered by typing: its keyboard goes (shielded: we may be cancelled)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            try:
                await message.get_bot().edit_message_reply_markup(message.chat.id, message.message_id)
            except TelegramError:
                logger.info("telegram: could not remove the keyboard of message %s", message.message_id)


async def _answer(query: CallbackQuery, refusal: str | None) -> None:
    try:
        await query.answer(refusal, show_alert=refusal is not None)
    except TelegramError as exc:
        logger.info("telegram: could not answer a button press: %s", exc)
