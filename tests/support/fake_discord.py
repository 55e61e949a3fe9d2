"""A small fake Discord on 127.0.0.1 for the real discord.py client: the gateway websocket and the REST calls a bot
makes.

Gateway: HELLO, IDENTIFY → READY (with this server's own `resume_gateway_url`) and GUILD_CREATE, heartbeats and
their ACKs, RESUME (the dispatches the client missed are replayed, then RESUMED), MESSAGE_CREATE and
INTERACTION_CREATE from the test. REST: the login calls, slash command registration, opening a DM, messages
(sent, edited, deleted, with replies and buttons), typing, interaction callbacks and follow-ups, attachment downloads.
Edits are recorded with their content and time (`edits`) and rate limited per channel as Discord does
(`EDITS_PER_WINDOW` in `EDIT_WINDOW_S`, then 429 with `retry_after`, each one counted in `limited`), so a test can
prove a client stays under the limit. A test can make the next sends or edits fail with a status (`fail_sends`,
`fail_edits`), drop the gateway connection (`drop`), send a dispatch discord.py cannot parse (`garble`) and count the
gateway sockets still open (`open_sockets`).

It runs on its own event loop in a thread; the test talks to it through plain methods.
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import itertools
import json
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.support.aiohttp_thread import serving
from tests.support.fake_llm import free_port

BOT_ID = "900000000000000001"
GUILD_ID = "800000000000000001"
GUILD_CHANNEL = "800000000000000002"
THREAD = "800000000000000003"
BOT_ROLE = "800000000000000004"  # the role Discord manages for the bot, named like it
MODERATORS = "800000000000000005"
TOKEN = "fake-bot-token"
OWNER = "700000000000000001"
STRANGER = "700000000000000002"
API = "/api/v10"
MESSAGE_CONTENT = 1 << 15
GATEWAY_MESSAGE_CONTENT_LIMITED = 1 << 19  # the application flag of a bot whose Message Content Intent is on
EDITS_PER_WINDOW = 5
EDIT_WINDOW_S = 5.0
"""Discord's bucket for editing messages in one channel: 5 edits per 5 seconds, then 429."""
Json = dict[str, Any]


@dataclass
class Sent:
    """A message the bot posted (or edited), as the fake stored it."""

    id: str
    channel_id: str
    content: str
    reply_to: str | None
    components: list[Json]
    via: str = "channel"
    at: float = field(default_factory=time.monotonic)
    """When the fake stored it (`time.monotonic()`)."""


@dataclass(frozen=True)
class Edit:
    """One accepted edit of a message's content: which message, its new content, and when (`time.monotonic()`)."""

    message_id: str
    channel_id: str
    content: str
    at: float


@dataclass
class FakeDiscord:
    port: int
    sent: list[Sent] = field(default_factory=list[Sent])
    typing: list[str] = field(default_factory=list[str])
    callbacks: list[Json] = field(default_factory=list[Json])
    requests: list[str] = field(default_factory=list[str])
    identifies: int = 0
    resumes: int = 0
    commands: list[Json] = field(default_factory=list[Json])
    files: dict[str, bytes] = field(default_factory=dict[str, bytes])
    edits: list[Edit] = field(default_factory=list[Edit])
    deleted: list[Sent] = field(default_factory=list[Sent])
    limited: int = 0
    """Edits answered 429 because the channel's edit bucket was empty."""
    _failures: list[int] = field(default_factory=list[int])
    _edit_failures: list[int] = field(default_factory=list[int])
    _recent_edits: dict[str, collections.deque[float]] = field(default_factory=dict[str, collections.deque[float]])
    _session: str | None = None
    _seq: int = 0
    _log: list[Json] = field(default_factory=list[Json])
    _ws: web.WebSocketResponse | None = None
    _sockets: list[web.WebSocketResponse] = field(default_factory=list[web.WebSocketResponse])
    _transport: asyncio.Transport | None = None
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _interactions: dict[str, str] = field(default_factory=dict[str, str])
    loop: asyncio.AbstractEventLoop | None = None
    message_content_intent: bool = True
    close_on_identify: int | None = None
    """A gateway close code to answer IDENTIFY with (as Discord does for a bad shard, version or intents)."""

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}{API}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    @property
    def connected(self) -> bool:
        return self._ws is not None and not self._ws.closed and self._session is not None

    @property
    def open_sockets(self) -> int:
        """Gateway connections not closed yet, the current one and any the client left open."""
        return sum(not ws.closed for ws in self._sockets)

    def snowflake(self) -> str:
        return str(((int(time.time() * 1000) - 1420070400000) << 22) + next(self._ids))

    # --- what the test does ---

    def dm_channel(self, user: str) -> str:
        return str(int(user) + 1_000_000)

    def user_says(
        self,
        user: str,
        content: str,
        *,
        guild: bool = False,
        mention: bool = False,
        attachments: Sequence[tuple[str, str, bytes]] = (),
        message_id: str | None = None,
        bot: bool = False,
        thread: bool = False,
        role: str | None = None,
    ) -> str:
        """A user writes in their DM with the bot, in the guild channel or in its thread; returns the message id.
        `mention` mentions the bot, `role` the guild role with that id."""
        message_id = message_id or self.snowflake()
        guild = guild or thread
        channel = THREAD if thread else GUILD_CHANNEL if guild else self.dm_channel(user)
        data: Json = {
            "id": message_id,
            "channel_id": channel,
            "author": _user(user, bot=bot),
            "content": "".join([f"<@{BOT_ID}> " if mention else "", f"<@&{role}> " if role else "", content]),
            "timestamp": _now(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [_user(BOT_ID, bot=True)] if mention else [],
            "mention_roles": [role] if role else [],
            "attachments": [self._attachment(name, kind, body) for name, kind, body in attachments],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
        }
        if guild:
            data["guild_id"] = GUILD_ID
            data["member"] = {"roles": [], "joined_at": _now(), "deaf": False, "mute": False, "flags": 0}
        self._call(self._dispatch("MESSAGE_CREATE", data))
        return message_id

    def press(self, message: Sent, label: str, user: str) -> str:
        """A user presses the button labelled `label` under a message the bot sent; returns the interaction id."""
        button = next(b for row in message.components for b in row["components"] if b.get("label") == label)
        payload = self._interaction(
            3, user, message.channel_id, {"custom_id": button["custom_id"], "component_type": 2}
        )
        self._interactions[payload["id"]] = message.id
        payload["message"] = _bot_message(message)
        self._call(self._dispatch("INTERACTION_CREATE", payload))
        return payload["id"]

    def slash(self, name: str, user: str) -> str:
        """A user runs `/name` in their DM with the bot; returns the interaction id."""
        command = next(c for c in self.commands if c["name"] == name)
        payload = self._interaction(2, user, self.dm_channel(user), {"id": command["id"], "name": name, "type": 1})
        self._call(self._dispatch("INTERACTION_CREATE", payload))
        return payload["id"]

    def fail_sends(self, *statuses: int) -> None:
        """The next message sends answer with these statuses, one each, before sends succeed again."""
        self._failures.extend(statuses)

    def fail_edits(self, *statuses: int) -> None:
        """The next message edits answer with these statuses, one each, before edits succeed again."""
        self._edit_failures.extend(statuses)

    def drop(self) -> None:
        """Cut the gateway connection without a close frame, as a network failure would."""

        async def cut() -> None:
            if self._transport is not None:
                self._transport.abort()
            self._ws = self._transport = None

        self._call(cut())

    def garble(self) -> None:
        """Send a dispatch discord.py cannot parse: a MESSAGE_CREATE without any of its fields."""
        self._call(self._dispatch("MESSAGE_CREATE", {}))

    def replies_to(self, message_id: str) -> list[Sent]:
        return [s for s in self.sent if s.reply_to == message_id]

    def in_channel(self, channel: str) -> list[Sent]:
        return [s for s in self.sent if s.channel_id == channel]

    def edits_of(self, message_id: str) -> list[Edit]:
        return [e for e in self.edits if e.message_id == message_id]

    # --- gateway ---

    async def gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._ws, self._transport = ws, request.transport
        self._sockets.append(ws)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                continue
            payload = json.loads(frame.data)
            op, data = payload["op"], payload.get("d")
            if op == 1:
                await ws.send_json({"op": 11, "d": None, "s": None, "t": None})
            elif op == 2 and not self.message_content_intent and data["intents"] & MESSAGE_CONTENT:
                await ws.close(code=4014, message=b"Disallowed intent(s).")
            elif op == 2 and self.close_on_identify is not None:
                await ws.close(code=self.close_on_identify, message=b"Refused.")
            elif op == 2:
                await self._identify(ws)
            elif op == 6:
                await self._resume(ws, data)
        if self._ws is ws:
            self._ws = None
        return ws

    async def _identify(self, ws: web.WebSocketResponse) -> None:
        self.identifies += 1
        self._session, self._seq, self._log = uuid.uuid4().hex, 0, []
        await self._dispatch(
            "READY",
            {
                "v": 10,
                "user": _user(BOT_ID, bot=True),
                "guilds": [{"id": GUILD_ID, "unavailable": True}],
                "session_id": self._session,
                "resume_gateway_url": self.gateway_url,
                "application": {"id": BOT_ID, "flags": 0},
                "private_channels": [],
                "relationships": [],
            },
        )
        await self._dispatch("GUILD_CREATE", _guild())

    async def _resume(self, ws: web.WebSocketResponse, data: Json) -> None:
        if data.get("session_id") != self._session:
            await ws.send_json({"op": 9, "d": False, "s": None, "t": None})
            return
        self.resumes += 1
        for payload in self._log:
            if payload["s"] > int(data.get("seq") or 0):
                await ws.send_json(payload)
        await self._dispatch("RESUMED", {})

    async def _dispatch(self, event: str, data: Json) -> None:
        """Send a dispatch now, or keep it for the RESUME of a dropped connection."""
        self._seq += 1
        payload = {"op": 0, "t": event, "s": self._seq, "d": data}
        self._log.append(payload)
        if self._ws is not None and not self._ws.closed:
            try:
                await self._ws.send_json(payload)
            except ConnectionError:
                self._ws = None

    # --- REST ---

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        app.add_routes(
            [
                web.get("/gateway", self.gateway),
                web.get(f"{API}/users/@me", self._me),
                web.get(f"{API}/oauth2/applications/@me", self._application),
                web.put(f"{API}/applications/{{app}}/commands", self._commands),
                web.post(f"{API}/users/@me/channels", self._open_dm),
                web.post(f"{API}/channels/{{channel}}/messages", self._send),
                web.patch(f"{API}/channels/{{channel}}/messages/{{message}}", self._edit),
                web.delete(f"{API}/channels/{{channel}}/messages/{{message}}", self._delete),
                web.post(f"{API}/channels/{{channel}}/typing", self._typing),
                web.post(f"{API}/interactions/{{interaction}}/{{token}}/callback", self._callback),
                web.post(f"{API}/webhooks/{{app}}/{{token}}", self._followup),
                web.get("/attachments/{name}", self._file),
            ]
        )
        return app

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.requests.append(f"{request.method} {request.path}")
        response: web.StreamResponse = await handler(request)
        return response

    async def _application(self, _: web.Request) -> web.Response:
        return _json(_application(GATEWAY_MESSAGE_CONTENT_LIMITED if self.message_content_intent else 0))

    async def _me(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bot {TOKEN}":
            return _json({"message": "401: Unauthorized", "code": 0}, 401)
        return _json(_user(BOT_ID, bot=True))

    async def _commands(self, request: web.Request) -> web.Response:
        self.commands = [
            {**c, "id": self.snowflake(), "application_id": BOT_ID, "version": "1", "type": 1}
            for c in await request.json()
        ]
        return _json(self.commands)

    async def _open_dm(self, request: web.Request) -> web.Response:
        """The bot opens a DM with a user (to write first): the same channel that user's own DMs arrive in."""
        user = str((await request.json())["recipient_id"])
        return _json({"id": self.dm_channel(user), "type": 1, "recipients": [_user(user)], "last_message_id": None})

    async def _send(self, request: web.Request) -> web.Response:
        if self._failures:
            status = self._failures.pop(0)
            if status == 429:  # as Discord's edge sends it: a Via header and the wait in the body
                limited = {"message": "You are being rate limited.", "retry_after": 0.3, "global": False}
                return _json(limited, 429, {"Via": "1.1 google", "Retry-After": "1"})
            return _json({"message": f"scripted failure {status}", "code": 0}, status)
        body = await request.json()
        reference = (body.get("message_reference") or {}).get("message_id")
        reference = None if reference is None else str(reference)
        sent = Sent(
            self.snowflake(),
            request.match_info["channel"],
            body.get("content") or "",
            reference,
            body.get("components") or [],
        )
        self.sent.append(sent)
        return _json(_bot_message(sent))

    async def _edit(self, request: web.Request) -> web.Response:
        if self._edit_failures:
            return _json({"message": "scripted failure", "code": 0}, self._edit_failures.pop(0))
        channel = request.match_info["channel"]
        if (wait := self._edit_wait(channel)) > 0:
            self.limited += 1
            limited = {"message": "You are being rate limited.", "retry_after": round(wait, 3), "global": False}
            return _json(limited, 429, {"Via": "1.1 google", "Retry-After": str(max(1, round(wait)))})
        body = await request.json()
        sent = next((s for s in self.sent if s.id == request.match_info["message"]), None)
        if sent is None:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        if "content" in body:
            sent.content = body["content"]
            self.edits.append(Edit(sent.id, channel, sent.content, time.monotonic()))
        if "components" in body:
            sent.components = body["components"] or []
        return _json(_bot_message(sent))

    def _edit_wait(self, channel: str) -> float:
        """Seconds until the channel's edit bucket has room again; 0 when this edit may go (and is counted)."""
        now = time.monotonic()
        recent = self._recent_edits.setdefault(channel, collections.deque())
        while recent and now - recent[0] >= EDIT_WINDOW_S:
            recent.popleft()
        if len(recent) >= EDITS_PER_WINDOW:
            return EDIT_WINDOW_S - (now - recent[0])
        recent.append(now)
        return 0.0

    async def _delete(self, request: web.Request) -> web.Response:
        sent = next((s for s in self.sent if s.id == request.match_info["message"]), None)
        if sent is None:
            return _json({"message": "Unknown Message", "code": 10008}, 404)
        self.sent.remove(sent)
        self.deleted.append(sent)
        return web.Response(status=204)

    async def _typing(self, request: web.Request) -> web.Response:
        self.typing.append(request.match_info["channel"])
        return web.Response(status=204)

    async def _callback(self, request: web.Request) -> web.Response:
        body = await request.json()
        interaction = request.match_info["interaction"]
        self.callbacks.append({"interaction": interaction, **body})
        if body.get("type") == 7:  # UPDATE_MESSAGE: the pressed button's message changes
            message_id = self._interactions.get(interaction)
            for sent in self.sent:
                if sent.id == message_id:
                    sent.content = body["data"].get("content", sent.content)
                    sent.components = body["data"].get("components") or []
        return _json({"interaction": {"id": interaction, "type": body.get("type")}})

    async def _followup(self, request: web.Request) -> web.Response:
        body = await request.json()
        channel = self._interactions.get(request.match_info["token"], "")
        sent = Sent(
            self.snowflake(), channel, body.get("content") or "", None, body.get("components") or [], "followup"
        )
        self.sent.append(sent)
        return _json(_bot_message(sent))

    async def _file(self, request: web.Request) -> web.Response:
        return web.Response(body=self.files[request.match_info["name"]])

    # --- helpers ---

    def _attachment(self, name: str, kind: str, body: bytes) -> Json:
        self.files[name] = body
        url = f"http://127.0.0.1:{self.port}/attachments/{name}"
        return {
            "id": self.snowflake(),
            "filename": name,
            "size": len(body),
            "url": url,
            "proxy_url": url,
            "content_type": kind,
        }

    def _interaction(self, kind: int, user: str, channel: str, data: Json) -> Json:
        interaction_id, token = self.snowflake(), uuid.uuid4().hex
        self._interactions[token] = channel
        return {
            "id": interaction_id,
            "application_id": BOT_ID,
            "type": kind,
            "token": token,
            "version": 1,
            "channel_id": channel,
            "channel": {"id": channel, "type": 1},
            "user": _user(user),
            "data": data,
            "locale": "en-US",
            "app_permissions": "0",
            "attachment_size_limit": 10_485_760,
            "entitlements": [],
            "authorizing_integration_owners": {},
            "context": 1,
        }

    def _call(self, coroutine: Any) -> None:
        assert self.loop is not None
        asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=10)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def _user(user_id: str, *, bot: bool = False) -> Json:
    return {
        "id": user_id,
        "username": "crab" if bot else f"user{user_id[-2:]}",
        "discriminator": "0",
        "avatar": None,
        "global_name": None,
        "bot": bot,
    }


def _application(flags: int) -> Json:
    return {
        "id": BOT_ID,
        "name": "crab",
        "icon": None,
        "description": "",
        "bot_public": True,
        "bot_require_code_grant": False,
        "verify_key": "0" * 64,
        "flags": flags,
        "owner": _user(OWNER),
    }


def _role(ident: str, name: str, tags: Json | None = None) -> Json:
    role: Json = {
        "id": ident,
        "name": name,
        "permissions": "0",
        "position": 1,
        "color": 0,
        "hoist": False,
        "managed": tags is not None,
        "mentionable": True,
        "flags": 0,
    }
    if tags is not None:
        role["tags"] = tags
    return role


def _guild() -> Json:
    return {
        "id": GUILD_ID,
        "name": "the reef",
        "owner_id": OWNER,
        "unavailable": False,
        "member_count": 3,
        "roles": [
            {
                "id": GUILD_ID,
                "name": "@everyone",
                "permissions": "1024",
                "position": 0,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
                "flags": 0,
            },
            _role(BOT_ROLE, "hermitcrab", tags={"bot_id": BOT_ID}),
            _role(MODERATORS, "moderators"),
        ],
        "channels": [
            {
                "id": GUILD_CHANNEL,
                "type": 0,
                "name": "general",
                "position": 0,
                "permission_overwrites": [],
                "guild_id": GUILD_ID,
                "nsfw": False,
                "parent_id": None,
            }
        ],
        "members": [],
        "threads": [
            {
                "id": THREAD,
                "type": 11,
                "name": "a thread",
                "guild_id": GUILD_ID,
                "parent_id": GUILD_CHANNEL,
                "owner_id": OWNER,
                "message_count": 1,
                "member_count": 1,
                "rate_limit_per_user": 0,
                "thread_metadata": {
                    "archived": False,
                    "auto_archive_duration": 1440,
                    "archive_timestamp": _now(),
                    "locked": False,
                },
            }
        ],
        "emojis": [],
        "stickers": [],
        "features": [],
        "premium_tier": 0,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "nsfw_level": 0,
        "preferred_locale": "en-US",
        "large": False,
        "joined_at": _now(),
    }


def _bot_message(sent: Sent) -> Json:
    data: Json = {
        "id": sent.id,
        "channel_id": sent.channel_id,
        "author": _user(BOT_ID, bot=True),
        "content": sent.content,
        "timestamp": _now(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 19 if sent.reply_to else 0,
        "flags": 0,
        "components": sent.components,
    }
    if sent.reply_to:
        data["message_reference"] = {"message_id": sent.reply_to, "channel_id": sent.channel_id}
    return data


def _json(data: object, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # exactly application/json: discord.py does not parse a body labelled with a charset
    headers = {"Content-Type": "application/json", **(headers or {})}
    return web.Response(body=json.dumps(data).encode(), status=status, headers=headers)


@contextmanager
def running_fake_discord() -> Iterator[FakeDiscord]:
    """Serve a FakeDiscord from a background thread on a free port of 127.0.0.1."""
    fake = FakeDiscord(free_port())
    with serving(fake.app, fake.port, "the fake Discord") as loop:
        fake.loop = loop
        yield fake
