"""A small fake Telegram Bot API on 127.0.0.1 for the real python-telegram-bot client.

Methods: getMe, getWebhookInfo, getUpdates (long polling: held open until an update at or past the offset
arrives; an offset confirms everything before it, as Telegram does), sendMessage, editMessageText,
editMessageReplyMarkup, deleteMessage, sendChatAction, answerCallbackQuery, setMyCommands, getFile and the file
download. Everything the
bot sent is recorded (`sent`, with the HTML it was sent as and the text a person sees, `edits`, `deleted`, `actions`,
`answers`). A test can make the next sends fail with a status (`fail_sends`: 429 carries `retry_after`, 500 is a
server error) and counts each failure it served (`failed`).

It runs on its own event loop in a thread; the test talks to it through plain methods.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from aiohttp import web

from tests.support.aiohttp_thread import serving
from tests.support.fake_llm import free_port

TOKEN = "123456:fake-telegram-token"
BOT_ID = 123456
BOT_USERNAME = "hermit_test_bot"
OWNER = 1001
STRANGER = 1002
GROUP = -1009000
Json = dict[str, Any]
_DECODED = frozenset(
    {"chat_id", "message_id", "offset", "timeout", "message_thread_id", "limit", "show_alert"}
    | {"reply_markup", "reply_parameters", "allowed_updates", "commands", "link_preview_options"}
)
"""Parameters sent as JSON text in a form: numbers, flags and nested objects."""


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def visible(body: str, parse_mode: str | None) -> str:
    """What a person sees of a message: its HTML parsed as Telegram does (tags gone, entities decoded)."""
    if parse_mode != "HTML":
        return body
    parser = _Visible()
    parser.feed(body)
    parser.close()
    return "".join(parser.text)


@dataclass
class Sent:
    """A message the bot sent (its text as last edited)."""

    message_id: int
    chat_id: int
    body: str
    parse_mode: str | None
    reply_to: int | None
    topic: int | None
    keyboard: list[Json]
    at: float = field(default_factory=time.monotonic)

    @property
    def text(self) -> str:
        return visible(self.body, self.parse_mode)


@dataclass
class FakeTelegram:
    port: int
    sent: list[Sent] = field(default_factory=list[Sent])
    edits: list[Sent] = field(default_factory=list[Sent])
    deleted: list[int] = field(default_factory=list[int])
    actions: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])
    answers: list[Json] = field(default_factory=list[Json])
    commands: list[Json] = field(default_factory=list[Json])
    polls: int = 0
    """getUpdates requests received: one past those seen before proves a (re)started bot is polling."""
    confirmed: int = 0
    """The highest offset a getUpdates asked for: every update before it is acknowledged."""
    failed: int = 0
    webhook: str = ""
    """The webhook URL set for the bot (getWebhookInfo), which makes Telegram refuse getUpdates."""
    privacy: bool = True
    """Privacy mode (getMe's `can_read_all_group_messages` is its opposite)."""
    files: dict[str, bytes] = field(default_factory=dict[str, bytes])
    loop: asyncio.AbstractEventLoop | None = None
    _updates: list[Json] = field(default_factory=list[Json])
    _failures: list[int] = field(default_factory=list[int])
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _update_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    """Bound to the server's loop when first used there (asyncio's primitives bind lazily)."""

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- what the test does ---

    def user_says(
        self,
        user: int,
        text: str = "",
        *,
        chat: int | None = None,
        topic: int | None = None,
        reply_to_bot: int | None = None,
        photo: bytes | None = None,
        document: tuple[str, str, bytes] | None = None,
        voice: bytes | None = None,
    ) -> int:
        """A user writes in their private chat with the bot (or in the group `chat`, a forum `topic` of it);
        returns the message id. `reply_to_bot` answers that bot message; `photo`, `document` (name, media type,
        body) or `voice` (an OGG note) sends a file with `text` as its caption."""
        message_id = next(self._ids)
        where = chat if chat is not None else user
        kind = "private" if where == user else "supergroup"
        message: Json = {
            "message_id": message_id,
            "from": _user(user),
            "chat": {
                "id": where,
                "type": kind,
                **({"first_name": f"user{user}"} if kind == "private" else {"title": "g"}),
            },
            "date": int(time.time()),
        }
        file_id = f"file{message_id}"
        if photo is not None:
            self.files[file_id] = photo
            message["photo"] = [
                {"file_id": file_id, "file_unique_id": file_id, "width": 8, "height": 8, "file_size": len(photo)}
            ]
        elif document is not None:
            name, kind, body = document
            self.files[file_id] = body
            file: Json = {"file_id": file_id, "file_unique_id": file_id, "file_size": len(body)}
            message["document"] = {**file, "file_name": name, "mime_type": kind}
        elif voice is not None:
            self.files[file_id] = voice
            message["voice"] = {"file_id": file_id, "file_unique_id": file_id, "duration": 3, "mime_type": "audio/ogg"}
        message["caption" if file_id in self.files else "text"] = text
        if topic is not None:
            message["message_thread_id"] = topic
            message["is_topic_message"] = True
        if reply_to_bot is not None:
            message["reply_to_message"] = {
                "message_id": reply_to_bot,
                "from": {"id": BOT_ID, "is_bot": True, "first_name": "Hermit", "username": BOT_USERNAME},
                "chat": message["chat"],
                "date": int(time.time()),
                "text": "…",
            }
        self._call(self._add({"message": message}))
        return message_id

    def press(self, sent: Sent, label: str, user: int) -> str:
        """A user presses the inline button labelled `label` under a message the bot sent; returns the query id."""
        button = next(b for row in sent.keyboard for b in row if b["text"] == label)
        query_id = f"q{next(self._ids)}"
        query = {
            "id": query_id,
            "from": _user(user),
            "chat_instance": "1",
            "data": button["callback_data"],
            "message": {
                "message_id": sent.message_id,
                "chat": {"id": sent.chat_id, "type": "private" if sent.chat_id > 0 else "supergroup"},
                "date": int(time.time()),
                "text": sent.text,
                "from": {"id": BOT_ID, "is_bot": True, "first_name": "Hermit", "username": BOT_USERNAME},
            },
        }
        self._call(self._add({"callback_query": query}))
        return query_id

    def fail_sends(self, *statuses: int) -> None:
        """The next sendMessage calls answer with these statuses, one each, before sends succeed again."""
        self._failures.extend(statuses)

    def replies_to(self, message_id: int) -> list[Sent]:
        return [sent for sent in self.sent if sent.reply_to == message_id]

    def in_chat(self, chat_id: int) -> list[Sent]:
        return [sent for sent in self.sent if sent.chat_id == chat_id]

    # --- the Bot API ---

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", r"/bot{token}/{method}", self._method)
        app.router.add_get(r"/file/bot{token}/{path:.+}", self._download)
        return app

    async def _method(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != TOKEN:
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        method = request.match_info["method"]
        handler = getattr(self, f"_api_{method}", None)
        if handler is None:
            return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)
        params = await _params(request)
        if method == "sendMessage" and self._failures:
            return self._failure(self._failures.pop(0))
        return web.json_response({"ok": True, "result": await handler(params)})

    def _failure(self, status: int) -> web.Response:
        self.failed += 1
        body: Json = {"ok": False, "error_code": status, "description": f"fake failure {status}"}
        if status == 429:
            body["parameters"] = {"retry_after": 1}
        return web.json_response(body, status=status)

    async def _api_getMe(self, params: Json) -> Json:
        bot = {"id": BOT_ID, "is_bot": True, "first_name": "Hermit", "username": BOT_USERNAME}
        return {**bot, "can_read_all_group_messages": not self.privacy}

    async def _api_getWebhookInfo(self, params: Json) -> Json:
        return {"url": self.webhook, "has_custom_certificate": False, "pending_update_count": len(self._updates)}

    async def _api_setMyCommands(self, params: Json) -> bool:
        self.commands = params["commands"]
        return True

    async def _api_getUpdates(self, params: Json) -> list[Json]:
        self.polls += 1
        offset = int(params.get("offset") or 0)
        self.confirmed = max(self.confirmed, offset)
        self._updates = [u for u in self._updates if u["update_id"] >= offset]
        async with self._arrived:
            try:
                await asyncio.wait_for(
                    self._arrived.wait_for(lambda: bool(self._updates)), float(params.get("timeout") or 0)
                )
            except TimeoutError:
                return []
        return list(self._updates)

    async def _api_sendMessage(self, params: Json) -> Json:
        reply = params.get("reply_parameters") or {}
        keyboard = (params.get("reply_markup") or {}).get("inline_keyboard", [])
        sent = Sent(
            next(self._ids),
            params["chat_id"],
            params["text"],
            params.get("parse_mode"),
            reply.get("message_id"),
            params.get("message_thread_id"),
            keyboard,
        )
        self.sent.append(sent)
        return self._message(sent)

    async def _api_editMessageText(self, params: Json) -> Json:
        sent = self._find(params["message_id"])
        sent.body, sent.parse_mode = params["text"], params.get("parse_mode")
        sent.keyboard = (params.get("reply_markup") or {}).get("inline_keyboard", [])
        self.edits.append(Sent(sent.message_id, sent.chat_id, sent.body, sent.parse_mode, None, None, []))
        return self._message(sent)

    async def _api_editMessageReplyMarkup(self, params: Json) -> Json:
        sent = self._find(params["message_id"])
        sent.keyboard = (params.get("reply_markup") or {}).get("inline_keyboard", [])
        return self._message(sent)

    async def _api_deleteMessage(self, params: Json) -> bool:
        self.deleted.append(params["message_id"])
        self.sent = [sent for sent in self.sent if sent.message_id != params["message_id"]]
        return True

    async def _api_sendChatAction(self, params: Json) -> bool:
        self.actions.append((params["chat_id"], params["action"]))
        return True

    async def _api_answerCallbackQuery(self, params: Json) -> bool:
        self.answers.append(params)
        return True

    async def _api_getFile(self, params: Json) -> Json:
        file_id = params["file_id"]
        return {
            "file_id": file_id,
            "file_unique_id": file_id,
            "file_size": len(self.files[file_id]),
            "file_path": f"files/{file_id}",
        }

    async def _download(self, request: web.Request) -> web.Response:
        return web.Response(body=self.files[request.match_info["path"].removeprefix("files/")])

    def _find(self, message_id: int) -> Sent:
        return next(sent for sent in self.sent if sent.message_id == message_id)

    def _message(self, sent: Sent) -> Json:
        return {
            "message_id": sent.message_id,
            "chat": {"id": sent.chat_id, "type": "private" if sent.chat_id > 0 else "supergroup"},
            "date": int(time.time()),
            "text": sent.text,
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "Hermit", "username": BOT_USERNAME},
        }

    async def _add(self, update: Json) -> None:
        async with self._arrived:
            self._updates.append({"update_id": next(self._update_ids), **update})
            self._arrived.notify_all()

    def _call(self, coroutine: Any) -> None:
        assert self.loop is not None
        asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=10)


def _user(user: int) -> Json:
    return {"id": user, "is_bot": False, "first_name": f"user{user}", "username": f"user{user}"}


async def _params(request: web.Request) -> Json:
    """The call's parameters, sent in the query, as JSON, a form or multipart: numbers and nested objects decoded."""
    if request.method == "GET":
        raw = dict(request.query)
    elif request.content_type == "application/json":
        raw: dict[str, Any] = await request.json()
    else:
        raw = {key: value for key, value in (await request.post()).items() if isinstance(value, str)}
    return {
        key: json.loads(value) if isinstance(value, str) and key in _DECODED else value for key, value in raw.items()
    }


@contextmanager
def running_fake_telegram() -> Iterator[FakeTelegram]:
    """Serve a FakeTelegram from a background thread on a free port of 127.0.0.1."""
    fake = FakeTelegram(free_port())
    with serving(fake.app, fake.port, "the fake Telegram", shutdown_s=1) as loop:
        fake.loop = loop
        yield fake
