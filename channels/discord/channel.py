"""The Discord channel: discord.py's client turned into host events in, replies and questions out.

In: a message that passes `Access` becomes one `message` event whose `chat` tells the host how to route it (DM, guild
channel, thread); attachments become text; the bot ignores itself, other bots and a message it already saw (a replayed
dispatch). Out: replies go through `delivery.Outbox`; questions with choices get buttons; "typing…" shows from the start
of a turn to its reply. A reply to a message is streamed into a draft (`channels/draft.py`) that its delivery finalises:
by default with the text as it comes in DMs (`partial`), with tool lines only in guild channels and threads
(`progress`), where everyone in the channel would watch half-written sentences being rewritten.
"""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import anyio
import discord
import yarl
from anyio.abc import TaskGroup, TaskStatus
from discord import app_commands
from discord.asset import Asset
from discord.gateway import DiscordWebSocket
from discord.http import Route

from hermitcrab.channels.chat import COMMANDS, PAIRING_TEXT, Typing, forever, logged
from hermitcrab.channels.draft import Drafts, StreamMode
from hermitcrab.channels.pairing import Issued, Refused
from hermitcrab.channels.welcome import announce_approvals, tell_owners
from hermitcrab.host.events import AttachmentKind, ChatType, Event, Listener, Target
from hermitcrab.util.retry import Backoff, retrying

from .access import Access, Where
from .attachments import describe
from .delivery import LIMIT, DeliveryFailed, Outbox, conversation_problem
from .prompt import ChoiceButtons

logger = logging.getLogger(__name__)

Submit = Callable[[Event], Awaitable[None]]

TYPING_EVERY_S = 8.0
SEEN_MESSAGES = 2000
RECONNECT_S = 5.0
LOGIN_BACKOFF = Backoff(attempts=None, first_s=1.0, max_s=60.0)
TOKEN_HELP = "check [discord] token or DISCORD_TOKEN"
REFUSED = {
    4004: f"bot token; {TOKEN_HELP}",
    4010: "connection: invalid shard (this bot runs unsharded)",
    4011: "connection: this bot is in too many servers to run unsharded",
    4012: "connection: invalid gateway API version (update discord.py)",
    4013: "connection: invalid intents",
}
"""Gateway close codes after which discord.py closes the client: the same connection would be refused again."""
INTENT_HELP = (
    "Discord refused the connection: turn on the Message Content Intent (Developer Portal → your application → "
    "Bot → Privileged Gateway Intents)"
)


class LoginRefused(Exception):
    """Discord refused the bot as configured: a wrong token, or the Message Content Intent not turned on."""


def point_at(api_base: str | None, gateway_url: str | None) -> None:
    """Send discord.py's REST, CDN and gateway traffic to a self-hosted or test Discord instead of discord.com."""
    if api_base:
        Route.BASE = api_base.rstrip("/")
        setattr(Asset, "BASE", str(yarl.URL(api_base).origin()))  # noqa: B010  (typed as a plain attribute)
    if gateway_url:
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


class DiscordChannel:
    """A Discord bot as a hermitcrab channel; `serve` runs it inside `hermitcrab run`."""

    name = "discord"
    display = (
        "Discord messages: at most 2,000 characters each (longer replies are split), Markdown without tables "
        "or headings, often read on a phone; keep replies short and lists narrow"
    )
    message_limit = LIMIT
    attachments_in: tuple[AttachmentKind, ...] = ("image", "text")

    def __init__(
        self,
        token: str,
        access: Access,
        submit: Submit,
        *,
        inbox: Path,
        max_text_bytes: int,
        drafts: Path,
        stream: StreamMode = "partial",
        stream_in_guilds: StreamMode = "progress",
    ) -> None:
        self._token = token
        self.access = access
        self._submit = submit
        self._inbox = inbox
        self._max_text_bytes = max_text_bytes
        self.client = _Client(self)
        self._group: TaskGroup | None = None
        self._seen: OrderedDict[int, None] = OrderedDict()
        self._typing = Typing(self.name, self._show_typing, (discord.HTTPException, OSError), every_s=TYPING_EVERY_S)
        self._asking: dict[tuple[str, str | None], int] = {}
        self.outbox = Outbox(self.client)
        self._inbound: dict[str, anyio.Lock] = {}
        self._stream: StreamMode = stream
        self._stream_in_guilds: StreamMode = stream_in_guilds
        self._drafts = Drafts(self.outbox, drafts)

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Log in, then stay connected (discord.py resumes a dropped gateway session) until cancelled.

        Reports started at once: an unreachable Discord is retried in the background, never holding up the host;
        a refused token raises LoginRefused. The channel's own background tasks only ever log their failures."""
        try:
            task_status.started()
            await self._login()
            async with anyio.create_task_group() as group:
                self._group = group
                announcing = (announce_approvals, self.send_dm, self.access.pairing, self.name)
                group.start_soon(forever, self.name, "announcing approvals", *announcing)
                await self._stay_connected()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self.client.close()

    async def _stay_connected(self) -> None:
        """Connect again whenever discord.py gives up on a connection: a dispatch it could not parse fails with
        whatever its parser raised, and no payload may end the channel."""
        while True:
            try:
                await self.client.connect(reconnect=True)
            except discord.PrivilegedIntentsRequired:
                raise LoginRefused(INTENT_HELP) from None
            except Exception as exc:
                if isinstance(exc, discord.ConnectionClosed) and exc.code in REFUSED:
                    raise LoginRefused(f"Discord refused the {REFUSED[exc.code]}") from None
                logger.exception("discord: the connection failed; reconnecting in %g s", RECONNECT_S)
                await self._close_socket()
                await anyio.sleep(RECONNECT_S)
            if self.client.is_closed():  # discord.py gave up for good: connecting again would return at once, forever
                raise LoginRefused("Discord closed the connection and discord.py will not reconnect; see the log")

    async def _close_socket(self) -> None:
        """Close the socket of the connection discord.py gave up on: it stays open otherwise, its heartbeat thread
        still running, until Discord drops it a minute later, and every reconnect would leave one more."""
        socket = cast(DiscordWebSocket | None, self.client.ws)  # typed as always set: None until connected
        if socket is None or not socket.open:
            return
        with anyio.move_on_after(5):
            try:
                await socket.close()
            except (OSError, discord.DiscordException) as exc:
                logger.info("discord: could not close the old gateway socket: %s", exc)

    def check_conversation(self, to: str) -> str | None:
        """Why `to` cannot be a conversation of this channel, None when it can: the host checks delivery targets
        where they are written (a cron job, a webhook call), not only when a delivery to them fails."""
        return conversation_problem(to)

    async def _login(self) -> None:
        try:
            await retrying(
                "discord: logging in",
                lambda: self.client.login(self._token),
                (discord.HTTPException, OSError),
                LOGIN_BACKOFF,
                level=logging.WARNING,
            )
        except discord.LoginFailure as exc:
            raise LoginRefused(f"Discord refused the bot token ({exc}); {TOKEN_HELP}") from None

    # --- the host's side: Channel ---

    async def send(self, target: Target, text: str) -> None:
        """Deliver `text` in parts; raise if any part could not be delivered after retries. The reply to a message
        whose draft is on screen (streamed in this turn, or left by a crash and recorded) replaces that draft; the same
        reply again (a restart's recovery after a crash that came just after it was sent) is not sent twice."""
        self._typing.stop(target.conversation)
        await self._drafts.send(target, text, lambda: self._post(target, text))

    def listener(self, target: Target) -> Listener | None:
        """A draft for the reply to a person's message, in the conversation's stream mode; None for mode `off` and
        for what answers no message (announcements, a slash command's follow-up): those arrive whole."""
        answering = target.reply_to or ""
        if self._group is None or not answering.isdigit() or conversation_problem(target.conversation) is not None:
            return None
        mode = self._stream_in_guilds if self._in_guild(target.conversation) else self._stream
        if mode == "off":
            return None
        conversation = target.conversation
        draft = self._drafts.start(target, mode, on_shown=lambda: self._typing.stop(conversation))
        self._group.start_soon(logged, self.name, f"drafting in {conversation}", draft.run)
        return draft.on_event

    def _in_guild(self, conversation: str) -> bool:
        found = self.client.get_channel(int(conversation))
        return isinstance(found, discord.abc.GuildChannel | discord.Thread)

    async def typing(self, target: Target) -> None:
        """Keep "typing…" showing in the conversation until the next message is sent there."""
        if self._group is None or conversation_problem(target.conversation) is not None:
            return  # a conversation that is no channel: its delivery fails with the reason, typing has none to give
        self._typing.start(self._group, target.conversation)

    async def wait_ready(self) -> None:
        """Until the bot is logged in and connected: a restart's recovery answers old messages only then."""
        await self.client.wait_until_ready()

    async def idle(self, target: Target) -> None:
        """The turn is over (its reply, if any, follows): stop "typing…"."""
        self._typing.stop(target.conversation)

    async def ask(self, target: Target, question: str, choices: Sequence[str] | None = None) -> str | None:
        """Show the question (with a button per choice) and wait for the asked user (an owner, when the question is
        nobody's in particular: a cron job's or a webhook's approval); a typed answer is the host's."""
        key = (target.conversation, target.user)
        target = replace(target, reply_to=None)  # the reply to the message comes later, once
        self._asking[key] = self._asking.get(key, 0) + 1
        try:
            if not choices:
                await self._post(target, question)
                await anyio.sleep_forever()
                return None
            buttons = ChoiceButtons(question, choices, target.user, self.access.owners)
            message = await self._post(target, buttons.text, buttons)
            try:
                await buttons.answered.wait()
                return buttons.answer
            finally:
                if message is not None and buttons.answer is None:
                    await self._withdraw(message, buttons)
        finally:
            self._asking[key] -= 1

    # --- Discord's side ---

    async def on_message(self, message: discord.Message) -> None:
        """discord.py runs each dispatch as its own task: a conversation's lock (fair, taken before any await)
        keeps its messages in order while an attachment downloads."""
        if message.author.bot or message.id in self._seen:
            return
        self._seen[message.id] = None
        while len(self._seen) > SEEN_MESSAGES:
            self._seen.popitem(last=False)
        conversation = str(message.channel.id)
        async with self._inbound.setdefault(conversation, anyio.Lock()):
            await self._take(message, conversation)

    async def _take(self, message: discord.Message, conversation: str) -> None:
        user = str(message.author.id)
        addressing = _addressing(message, self.client.user)
        answering = self._asking.get((conversation, user), 0) > 0
        guild_id = message.guild.id if message.guild else getattr(message.channel, "guild_id", None)
        chat = await self._admit(_where(message.channel, guild_id), user, addressing is not None or answering, message)
        if chat is None:
            return
        text = addressing.sub("", message.content).strip() if addressing else message.content
        extra, images = await describe(message.attachments, self._inbox, message.id, self._max_text_bytes)
        text = "\n\n".join(part for part in (text, extra) if part)
        if text:
            target = Target(self.name, conversation, user, reply_to=str(message.id))
            principal = self.access.principal(user, chat, message.author.name)
            inbound = f"{self.name}:{message.id}"
            await self._submit(
                Event("message", text, target, chat=chat, principal=principal, inbound_id=inbound, attachments=images)
            )

    async def on_command(self, interaction: discord.Interaction, name: str) -> None:
        """An application command: the same access rules as a message (no mention needed), then `/name`."""
        user = str(interaction.user.id)
        where = _where(interaction.channel, interaction.guild_id, interaction.channel_id)
        chat = await self._admit(where, user, True, None)
        if chat is None:
            await interaction.response.send_message("I can't take commands from you here.", ephemeral=True)
            return
        await interaction.response.defer(thinking=True)
        target = Target(self.name, str(interaction.channel_id), user, reply_to=self.outbox.defer(interaction))
        principal = self.access.principal(user, chat, interaction.user.name)
        await self._submit(Event("message", f"/{name}", target, chat=chat, principal=principal))

    async def _admit(
        self, where: Where, user: str, addressed: bool, message: discord.Message | None
    ) -> ChatType | None:
        """How the host should route a message from `where`, or None when it must not reach the agent."""
        if where.guild is None:
            verdict = self.access.direct(user)
            if verdict == "pair" and message is not None:
                await self._pair(message)
            return "direct" if verdict == "answer" else None
        guild_verdict = self.access.in_guild(where, user)
        if guild_verdict == "ignore" or (guild_verdict == "if-mentioned" and not addressed):
            return None
        return "thread" if where.parent else "group"

    async def _pair(self, message: discord.Message) -> None:
        """A stranger's DM: their code (the owners hear of a new one), or nothing while they are denied or waiting
        out the pause after their last code."""
        user = str(message.author.id)
        outcome = self.access.pairing.request(self.name, user, message.author.name)
        if isinstance(outcome, Refused):
            left_min = (outcome.until - time.time()) / 60
            logger.info("pairing: ignored a DM from %s (%s, %.0f min to go)", user, outcome.reason, left_min)
            return
        target = Target(self.name, str(message.channel.id), user, reply_to=str(message.id))
        try:
            await self._post(target, PAIRING_TEXT.format(code=outcome.request.code))
        except DeliveryFailed:
            logger.warning("could not send a pairing code to %s", user)
        if isinstance(outcome, Issued):
            await tell_owners(self.send_dm, self.access.owners, outcome, self.name)

    async def send_dm(self, user: str, text: str) -> bool:
        """DM `user` (an id); False, logged, when Discord would not take it."""
        try:
            channel = await self.client.create_dm(discord.Object(int(user)))
            await channel.send(text)
        except (discord.DiscordException, OSError, ValueError) as exc:
            logger.warning("discord: could not DM user %s: %s", user, exc)
            return False
        return True

    async def _post(self, target: Target, text: str, view: discord.ui.View | None = None) -> discord.Message | None:
        self._typing.stop(target.conversation)
        return await self.outbox.post(target, text, view)

    async def _show_typing(self, conversation: str) -> None:
        await self.client.get_partial_messageable(int(conversation)).typing()

    async def _withdraw(self, message: discord.Message, buttons: ChoiceButtons) -> None:
        """The question expired or was answered by typing: its buttons go (shielded: we may be cancelled)."""
        buttons.stop()
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            try:
                await message.edit(view=None)
            except (discord.HTTPException, OSError):
                logger.info("could not remove the buttons of message %s", message.id)


def _where(channel: object, guild_id: int | None, channel_id: int | None = None) -> Where:
    parent = channel.parent_id if isinstance(channel, discord.Thread) else None
    ident = channel_id if channel_id is not None else getattr(channel, "id", 0)
    return Where(str(guild_id) if guild_id else None, str(ident), str(parent) if parent else None)


def _addressing(message: discord.Message, me: discord.ClientUser | None) -> re.Pattern[str] | None:
    """The markup by which a message addresses the bot, or None when it doesn't: a mention of the bot itself, or of
    the role Discord manages for it (the @ picker often offers that role first, under the bot's own name)."""
    if me is None:
        return None
    roles = [role.id for role in message.role_mentions if role.tags is not None and role.tags.bot_id == me.id]
    if me not in message.mentions and not roles:
        return None
    return re.compile("|".join([rf"<@!?{me.id}>", *(f"<@&{role}>" for role in roles)]))


class _Client(discord.Client):
    """discord.py's client with our handlers and application commands."""

    def __init__(self, channel: DiscordChannel) -> None:
        intents = discord.Intents.default()
        intents.message_content = True
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False  # no voice here: no warning about it
        super().__init__(intents=intents, guild_ready_timeout=0.05)
        self.channel = channel
        self.tree = app_commands.CommandTree(self)
        for name, description in COMMANDS.items():
            self.tree.add_command(app_commands.Command(name=name, description=description, callback=_command(name)))

    async def setup_hook(self) -> None:
        try:
            await self.tree.sync()
        except discord.HTTPException as exc:  # commands still work as plain text
            logger.warning("discord: could not register the slash commands: %s", exc)

    async def on_ready(self) -> None:
        logger.info("discord: connected as %s", self.user)

    async def on_message(self, message: discord.Message) -> None:
        await self.channel.on_message(message)


def _command(name: str) -> Callable[[discord.Interaction], Coroutine[Any, Any, None]]:
    async def run(interaction: discord.Interaction) -> None:
        client = interaction.client
        if isinstance(client, _Client):
            await client.channel.on_command(interaction, name)

    return run
