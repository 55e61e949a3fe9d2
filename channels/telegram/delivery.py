"""Outbound Bot API calls, each counted only once Telegram confirmed it.

A reply is cut into 4,096-character parts on line boundaries (`channels/split.py`, code blocks closed and reopened) and
each part sent as HTML (`markup.py`); the first answers the user's message. A 5xx, a network error or a 429 is tried
again (after Telegram's `retry_after` for a 429) with util/retry.py; a part that still fails raises `DeliveryFailed`,
and the next reply that reaches the conversation says what was lost. A streamed reply's draft (`channels/draft.py`)
posts, edits and deletes single messages here, under the same retries. Should Telegram refuse the HTML itself, the part
goes as plain text rather than not at all.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from telegram import Bot, InlineKeyboardMarkup, Message, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, RetryAfter, TelegramError

from hermitcrab.channels.delivery import Deliveries, DeliveryFailed
from hermitcrab.host.events import Target
from hermitcrab.util.retry import Backoff, retrying

from .markup import to_html

LIMIT = 4096
"""Characters in one Telegram message (counted after its HTML is parsed)."""
SEND_BACKOFF = Backoff(attempts=4, first_s=0.5, max_s=30.0)
_CONVERSATION = re.compile(r"-?\d{1,20}(?::\d{1,12})?")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Chat:
    """A conversation: a chat id, and the forum topic inside it (`<chat>:<topic>`) for a thread."""

    chat_id: int
    topic: int | None = None

    @classmethod
    def of(cls, conversation: str) -> Chat:
        if (problem := conversation_problem(conversation)) is not None:
            raise DeliveryFailed(problem)
        chat, _, topic = conversation.partition(":")
        return cls(int(chat), int(topic) if topic else None)


def conversation_problem(to: str) -> str | None:
    """Why `to` cannot be a Telegram conversation, or None for a chat id (with a topic, `<chat>:<topic>`)."""
    return None if _CONVERSATION.fullmatch(to) else f"delivery.to: {to!r} is not a Telegram chat id"


def _retry_wait(error: Exception) -> bool | float:
    """Another try after a 429 (in Telegram's own time), a 5xx or a network error; never after a refusal."""
    if isinstance(error, RetryAfter):
        wait = error.retry_after
        return wait.total_seconds() if isinstance(wait, dt.timedelta) else float(wait)
    return isinstance(error, NetworkError | TimeoutError | OSError) and not isinstance(error, BadRequest)


async def confirmed(what: str, call: Callable[[], Awaitable[_T]]) -> _T:
    """`call`'s result once Telegram confirmed it; anything still failing is a `DeliveryFailed` saying why."""
    try:
        return await retrying(what, call, _retry_wait, SEND_BACKOFF)
    except (Forbidden, InvalidToken) as exc:
        raise DeliveryFailed(f"refused by Telegram: {exc.message}"[:200]) from exc
    except (TelegramError, OSError, TimeoutError) as exc:
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}"[:200]) from exc


class Outbox(Deliveries):
    """Sends, edits and deletes for one bot; a reply that could not be delivered is noted in the next one."""

    limit = LIMIT
    small_print = ""  # Telegram has no small text

    def __init__(self, bot: Bot) -> None:
        super().__init__("telegram")
        self.bot = bot

    async def post(self, target: Target, text: str, *, keyboard: InlineKeyboardMarkup | None = None) -> Message | None:
        """Send `text` in parts (the first answering `target.reply_to`, the keyboard under the last); the last."""

        async def send(part: str, first: bool, last: bool) -> Message:
            reply_to = target.reply_to if first else None
            return await self._send(target.conversation, part, reply_to, keyboard if last else None)

        return await self.in_parts(target.conversation, text, LIMIT, send)

    async def post_one(self, target: Target, text: str, *, answering: bool) -> str:
        """One message (answering `target.reply_to` when `answering`); its id once Telegram confirmed it."""
        sent = await self._send(target.conversation, text, target.reply_to if answering else None, None)
        return str(sent.message_id)

    async def edit(self, conversation: str, message_id: str, text: str) -> None:
        chat = Chat.of(conversation)

        async def edit(body: str, mode: str | None) -> object:
            return await self.bot.edit_message_text(body, chat.chat_id, int(message_id), parse_mode=mode)

        await self._as_html("a Telegram edit", text, edit)

    async def delete(self, conversation: str, message_id: str) -> None:
        chat = Chat.of(conversation)
        await confirmed("a Telegram delete", lambda: self.bot.delete_message(chat.chat_id, int(message_id)))

    async def _send(
        self, conversation: str, text: str, reply_to: str | None, keyboard: InlineKeyboardMarkup | None
    ) -> Message:
        chat = Chat.of(conversation)
        answering = None
        if reply_to is not None and reply_to.isdigit():  # the message this answers; a missing one is no failure
            answering = ReplyParameters(int(reply_to), allow_sending_without_reply=True)

        async def send(body: str, mode: str | None) -> Message:
            return await self.bot.send_message(
                chat.chat_id,
                body,
                parse_mode=mode,
                message_thread_id=chat.topic,
                reply_parameters=answering,
                reply_markup=keyboard,
            )

        return await self._as_html("a Telegram send", text, send)

    async def typing(self, conversation: str) -> None:
        chat = Chat.of(conversation)
        await self.bot.send_chat_action(chat.chat_id, ChatAction.TYPING, message_thread_id=chat.topic)

    async def _as_html(self, what: str, text: str, call: Callable[[str, str | None], Awaitable[_T]]) -> _T:
        try:
            return await confirmed(what, lambda: call(to_html(text), ParseMode.HTML))
        except DeliveryFailed as failure:
            if not _unparsable(failure):
                raise
        return await confirmed(what, lambda: call(text, None))


def _unparsable(failure: DeliveryFailed) -> bool:
    cause = failure.__cause__
    return isinstance(cause, BadRequest) and "parse entities" in cause.message.lower()
