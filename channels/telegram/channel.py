"""The Telegram channel: the Bot API's updates turned into host events in, replies and questions out.

In: `getUpdates` long polling (no public URL needed). Each update is handled, and a message that passes `TelegramAccess`
recorded by the host's inbox (`Gateway.submit`, `inbound_id` `telegram:<chat>:<message id>`), before the offset moves
past it; the offset is saved (`state/telegram/offset.json`), so after a crash Telegram hands back only what was not
recorded, and the inbox drops what was. `chat` tells the host how to route: a private chat is `direct`, a group `group`,
a forum topic `thread` (conversation `<chat>:<topic>`). In groups only a message that mentions the bot, replies to it or
is a command addressed to it is taken, unless the group says otherwise. Out: replies through `delivery.Outbox`;
questions with choices as inline keyboards (`prompt.py`); "typing…" is renewed every few seconds from the start of a
turn to its reply; a reply to a message is streamed into a draft (`channels/draft.py`, recorded in
`state/telegram/drafts.json`) in the chat's stream mode.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
from anyio.abc import TaskGroup, TaskStatus
from telegram import Bot, BotCommand, Message, Update, User
from telegram.error import Conflict, InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from hermitcrab.channels.access import People
from hermitcrab.channels.chat import COMMANDS, PAIRING_TEXT, Typing, forever, logged
from hermitcrab.channels.delivery import DeliveryFailed
from hermitcrab.channels.draft import Drafts, StreamMode
from hermitcrab.channels.pairing import Issued, Refused
from hermitcrab.channels.welcome import announce_approvals, tell_owners
from hermitcrab.host.events import AttachmentKind, ChatType, Event, Listener, Target
from hermitcrab.util.retry import Backoff, retrying
from hermitcrab.util.store import JsonFile

from .access import TelegramAccess
from .delivery import LIMIT, Outbox, conversation_problem
from .media import describe
from .prompt import Questions

logger = logging.getLogger(__name__)

Submit = Callable[[Event], Awaitable[None]]

POLL_S = 25
"""How long one getUpdates waits for news: one request open at a time, answered as soon as something arrives."""
POLL_BACKOFF = Backoff(attempts=None, first_s=1.0, max_s=60.0)
TYPING_EVERY_S = 4.0  # Telegram shows "typing…" for 5 s per action
TOKEN_HELP = "check [telegram] token or TELEGRAM_BOT_TOKEN (from @BotFather)"
UPDATES = ["message", "callback_query"]


API_BASE = "https://api.telegram.org"
CONNECTIONS = 16
"""Concurrent Bot API requests besides the long poll: typing, drafts and replies in several chats at once (the
library's default is one, which would queue a reply behind a typing action)."""


def make_bot(token: str, api_base: str | None) -> Bot:
    """A Bot API client for `token` at `api_base` (a self-hosted Bot API server's root, a test's; else Telegram's)."""
    base = (api_base or API_BASE).rstrip("/")
    return Bot(
        token,
        base_url=f"{base}/bot",
        base_file_url=f"{base}/file/bot",
        request=HTTPXRequest(connection_pool_size=CONNECTIONS),
    )


class LoginRefused(Exception):
    """Telegram refused the bot token."""


class TelegramChannel:
    """A Telegram bot as a hermitcrab channel; `serve` runs it inside `hermitcrab run`."""

    name = "telegram"
    display = (
        "Telegram messages: at most 4,096 characters each (longer replies are split), bold, italics, inline code, "
        "code blocks and links, no tables or headings; often read on a phone: keep replies short and lists narrow"
    )
    message_limit = LIMIT
    attachments_in: tuple[AttachmentKind, ...] = ("image", "text", "voice")

    def __init__(
        self,
        bot: Bot,
        access: TelegramAccess,
        submit: Submit,
        *,
        state: Path,
        inbox: Path,
        max_text_bytes: int,
        stream: StreamMode = "partial",
        stream_in_groups: StreamMode = "progress",
    ) -> None:
        self.bot = bot
        self.access = access
        self._submit = submit
        self._offset = JsonFile(state / "offset.json")
        self._inbox = inbox
        self._max_text_bytes = max_text_bytes
        self._stream: StreamMode = stream
        self._stream_in_groups: StreamMode = stream_in_groups
        self.outbox = Outbox(bot)
        self.questions = Questions(self.outbox, access.people.owners)
        self._group: TaskGroup | None = None
        self._ready = anyio.Event()
        self._typing = Typing(self.name, self.outbox.typing, (TelegramError,), every_s=TYPING_EVERY_S)
        self._drafts = Drafts(self.outbox, state / "drafts.json")

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Log in (getMe; an unreachable Telegram is retried, never holding up the host), register the commands,
        then poll for updates until cancelled. A refused token raises LoginRefused."""
        task_status.started()
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                await self._login()
                try:
                    await self.bot.set_my_commands([BotCommand(name, text) for name, text in COMMANDS.items()])
                except TelegramError as exc:  # typed commands still work
                    logger.warning("telegram: could not register the bot commands: %s", exc)
                logger.info("telegram: connected as @%s", self.bot.username)
                self._ready.set()
                announcing = (announce_approvals, self.send_dm, self.people.pairing, self.name)
                group.start_soon(forever, self.name, "announcing approvals", *announcing)
                await self._poll()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self.bot.shutdown()  # its HTTP connections

    @property
    def people(self) -> People:
        return self.access.people

    async def _login(self) -> None:
        """`initialize` asks getMe who the bot is (its username is how a group mentions it)."""
        try:
            await retrying(
                "telegram: logging in",
                self.bot.initialize,
                lambda error: not isinstance(error, InvalidToken),
                POLL_BACKOFF,
                level=logging.WARNING,
            )
        except InvalidToken as exc:
            raise LoginRefused(f"Telegram refused the bot token ({exc.message}); {TOKEN_HELP}") from None

    async def _poll(self) -> None:
        offset = self._saved_offset()
        while True:
            updates = await retrying(
                "telegram: getUpdates",
                lambda offset=offset: self.bot.get_updates(offset=offset, timeout=POLL_S, allowed_updates=UPDATES),
                _poll_again,
                POLL_BACKOFF,
                level=logging.WARNING,
            )
            for update in updates:
                await logged(self.name, f"update {update.update_id}", self._take, update)
                offset = update.update_id + 1
                self._offset.save({"offset": offset})

    def _saved_offset(self) -> int | None:
        value = self._offset.load("updates not yet confirmed come again; the inbox drops those already taken")
        offset = value.get("offset")
        return offset if isinstance(offset, int) else None

    async def wait_ready(self) -> None:
        """Until the bot is logged in: a restart's recovery answers old messages only then."""
        await self._ready.wait()

    def check_conversation(self, to: str) -> str | None:
        return conversation_problem(to)

    # --- the host's side ---

    async def send(self, target: Target, text: str) -> None:
        """Deliver `text` in parts; raise if any part could not be delivered after retries, once the owners were
        told. The reply to a message whose draft is on screen (streamed in this turn, or left by a crash and recorded)
        replaces that draft; the same reply again (a restart's recovery just after it was sent) is not sent twice."""
        self._typing.stop(target.conversation)
        try:
            await self._drafts.send(target, text, lambda: self.outbox.post(target, text))
        except DeliveryFailed as failure:
            await self._report(target, str(failure))
            raise

    async def _report(self, target: Target, why: str) -> None:
        for owner in self.people.owners:
            if owner != target.conversation:
                await self.send_dm(
                    owner, f"A reply to Telegram chat {target.conversation} could not be delivered: {why}"
                )

    def listener(self, target: Target) -> Listener | None:
        """A draft for the reply to a person's message, in the chat's stream mode; None for `off` and for what
        answers no message (announcements, job results): those arrive whole."""
        answering = target.reply_to or ""
        if self._group is None or not answering.isdigit() or conversation_problem(target.conversation) is not None:
            return None
        mode = self._stream_in_groups if target.conversation.startswith("-") else self._stream  # groups' ids are < 0
        if mode == "off":
            return None
        conversation = target.conversation
        draft = self._drafts.start(target, mode, on_shown=lambda: self._typing.stop(conversation))
        self._group.start_soon(logged, self.name, f"drafting in {conversation}", draft.run)
        return draft.on_event

    async def typing(self, target: Target) -> None:
        """Keep "typing…" showing until the reply is sent or the turn ends."""
        if self._group is None or conversation_problem(target.conversation) is not None:
            return
        self._typing.start(self._group, target.conversation)

    async def idle(self, target: Target) -> None:
        self._typing.stop(target.conversation)

    async def ask(self, target: Target, question: str, choices: Sequence[str] | None = None) -> str | None:
        """Show the question (an inline keyboard for choices) and wait for the asked user (an owner, when it is
        nobody's in particular); a typed answer is the host's."""
        self._typing.stop(target.conversation)
        return await self.questions.ask(target, question, choices)

    async def send_dm(self, user: str, text: str) -> bool:
        """A private message to `user` (a user id is their private chat's id); False, logged, when it failed."""
        try:
            await self.outbox.post(Target(self.name, user), text)
        except DeliveryFailed as failure:
            logger.warning("telegram: could not message user %s: %s", user, failure)
            return False
        return True

    # --- Telegram's side ---

    async def _take(self, update: Update) -> None:
        if update.callback_query is not None:
            await self.questions.pressed(update.callback_query)
        elif (
            update.message is not None and update.message.from_user is not None and not update.message.from_user.is_bot
        ):
            await self._message(update.message, update.message.from_user)

    async def _message(self, message: Message, sender: User) -> None:
        user = str(sender.id)
        chat_id = str(message.chat.id)
        topic = message.message_thread_id if message.is_topic_message else None
        conversation = f"{chat_id}:{topic}" if topic else chat_id
        text = message.text or message.caption or ""
        chat = await self._admit(message, sender, conversation, text)
        if chat is None:
            return
        text = self._mention.sub("", text).strip()  # `@bot hi` is "hi", `/new@bot` the command `/new`
        media = await describe(message, self._inbox, self._max_text_bytes)
        text = "\n\n".join(part for part in (text, media.text) if part)
        if not text:
            return
        target = Target(self.name, conversation, user, reply_to=str(message.message_id))
        principal = self.people.principal(user, chat, sender.username or sender.full_name)
        inbound = f"{self.name}:{chat_id}:{message.message_id}"
        event = Event(
            "message", text, target, chat=chat, principal=principal, inbound_id=inbound, attachments=media.images
        )
        await self._submit(event)

    async def _admit(self, message: Message, sender: User, conversation: str, text: str) -> ChatType | None:
        """How the host should route the message, or None when it must not reach the agent."""
        user = str(sender.id)
        if message.chat.type == "private":
            verdict = self.people.direct(user)
            if verdict == "pair":
                await self._pair(message, sender)
            return "direct" if verdict == "answer" else None
        in_group = self.access.in_group(str(message.chat.id), user)
        addressed = self._mentioned(text) or self._replied_to(message) or self.questions.waiting(conversation, user)
        if in_group == "ignore" or (in_group == "if-mentioned" and not addressed):
            return None
        return "thread" if ":" in conversation else "group"

    @property
    def _mention(self) -> re.Pattern[str]:
        return re.compile(rf"@{re.escape(self.bot.username)}\b", re.IGNORECASE)

    def _mentioned(self, text: str) -> bool:
        return self._mention.search(text) is not None

    def _replied_to(self, message: Message) -> bool:
        replied = message.reply_to_message
        return replied is not None and replied.from_user is not None and replied.from_user.id == self.bot.id

    async def _pair(self, message: Message, sender: User) -> None:
        """A stranger's private message: their code (the owners hear of a new one), or nothing while they are denied
        or waiting out the pause after their last code."""
        user = str(sender.id)
        outcome = self.people.pairing.request(self.name, user, sender.username or sender.full_name)
        if isinstance(outcome, Refused):
            left_min = (outcome.until - time.time()) / 60
            logger.info("pairing: ignored a message from %s (%s, %.0f min to go)", user, outcome.reason, left_min)
            return
        try:
            target = Target(self.name, str(message.chat.id), user, reply_to=str(message.message_id))
            await self.outbox.post(target, PAIRING_TEXT.format(code=outcome.request.code))
        except DeliveryFailed:
            logger.warning("could not send a pairing code to %s", user)
        if isinstance(outcome, Issued):
            await tell_owners(self.send_dm, self.people.owners, outcome, self.name)


def _poll_again(error: Exception) -> bool:
    """getUpdates is tried again after anything but a refused token; a second poller (`Conflict`) is said loudly."""
    if isinstance(error, Conflict):
        logger.warning("telegram: another program polls this bot (or a webhook is set): %s", error)
    return not isinstance(error, InvalidToken) and isinstance(error, TelegramError | OSError)
