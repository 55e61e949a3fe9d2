"""The Chat page: the owner's conversation with the agent through the web channel (`channels/web.py`).

The page is rendered whole from the channel's log, then kept live by its event stream (`/api/chat/stream`, SSE, one
message per thing shown, each with its id so a reconnect goes on where it broke off). Sending a message and
pressing a question's choice are plain forms that work without the script; `static/chat.js` posts them in place,
adds what the stream says and turns Enter into Send.

The agent's text is Markdown, rendered here by markdown-it with raw HTML off (so every character of the model's text
reaches the page escaped) and images off (a model must not make the browser fetch anything): that rendering is the
one HTML the page takes from data, in the template and in the stream alike.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from hermitcrab.channels.web import Entry, WebChannel

from ..auth import csrf_token
from ..context import context
from ..moments import parsed
from ..numbers import whole_number
from ..render import ServerEvent, done, event_stream, moment, page, templates

TITLE = "Chat"
PATH = "/chat"
COMMANDS = (
    ("/new", "Start a new session (the last messages are saved to memory)"),
    ("/compact", "Compact the session's context now"),
    ("/status", "Model, session, tokens, context and servers"),
    ("/usage", "Tokens and cost today and by model"),
)
RETRY_MS = 1000
ENTRY_EVENTS = frozenset({"entry", "update"})


def _link_allowed(url: str) -> bool:
    """markdown-it's own check, and no link to this machine or its network: the session cookie goes to every port of
    127.0.0.1 (browsers do not tell cookies apart by port), so a clicked link to another local port would hand it to
    whatever listens there. Such a link renders as its text."""
    if not MarkdownIt.validateLink(_markdown, url):
        return False
    host = (urlsplit(url.strip()).hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not _IPV4_ENDING.search(host):
            return True  # a name, or a relative link (no host)
        try:  # a browser reads `127.1` and `2130706433` as 127.0.0.1, as inet_aton does
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return False  # a number a browser refuses as an address
    return address.is_global and not address.is_private


_IPV4_ENDING = re.compile(r"(^|\.)(\d+|0x[0-9a-f]*)$")  # a host the URL standard parses as an IPv4 address
_markdown = MarkdownIt("js-default", {"breaks": True}).disable("image")
_markdown.validateLink = _link_allowed


def rendered(text: str) -> Markup:
    """The agent's Markdown as HTML: markdown-it escapes all text and, with html off, passes no tag through."""
    return Markup(_markdown.render(text))  # escaped by markdown-it: see the module's docstring


def _shown_entry(entry: Entry, now: dt.datetime) -> dict[str, Any]:
    """An entry as the template shows it: the agent's and a question's text rendered, the time as every page shows
    one (`render.moment`, against the agent's clock `now`)."""
    at = parsed(entry.get("at"))
    extra: dict[str, Any] = {"when": moment(at.timestamp(), now) if at is not None else ""}
    if entry["kind"] in ("agent", "question"):
        extra["html"] = rendered(str(entry.get("text", "")))
    return {**entry, **extra}


async def show(request: Request) -> Response:
    found = context(request)
    snapshot = found.web.snapshot()
    now = found.agent.now()
    return page(
        request,
        "chat.html",
        TITLE,
        entries=[_shown_entry(entry, now) for entry in snapshot.entries],
        snapshot=snapshot,
        message_id=uuid.uuid4(),
        commands=[(command, what, uuid.uuid4()) for command, what in COMMANDS],
    )


async def send(request: Request) -> Response:
    """A message typed on the page (a slash command too: the gateway runs those)."""
    form = await request.form()
    text, message_id = form.get("text"), form.get("id")
    if not isinstance(text, str) or not isinstance(message_id, str):
        return _outcome(request, "The form lacks the message or its id: reload the page and send it again.")
    return _outcome(request, await context(request).web.take(text, message_id))


async def answer(request: Request) -> Response:
    """A question's choice pressed on the page."""
    form = await request.form()
    question, choice = form.get("question"), form.get("choice")
    number = whole_number(question, -1) if isinstance(question, str) else -1
    if number < 0 or not isinstance(choice, str):
        return _outcome(request, "The form lacks the question or the choice: reload the page.")
    return _outcome(request, context(request).web.answer(number, choice))


async def stream(request: Request) -> Response:
    """What the conversation shows from the page's cursor on (`after`, or Last-Event-ID when the browser
    reconnects), as server-sent events; a new or changed entry comes as its HTML, from the page's own template."""
    found = context(request)
    cursor = request.headers.get("last-event-id") or request.query_params.get("after")
    entries = _Entries(found.agent.now, csrf_token(request.state.session))
    return event_stream(_events(found.web, cursor, entries), RETRY_MS)


class _Entries:
    """Entries as the page's template renders them, for one page's stream."""

    def __init__(self, clock: Callable[[], dt.datetime], csrf: str) -> None:
        self.clock = clock
        self.csrf = csrf
        self.template = templates.env.get_template("chat_entry.html")

    def html(self, entry: Entry) -> str:
        return self.template.render(e=_shown_entry(entry, self.clock()), csrf=self.csrf)


async def _events(web: WebChannel, cursor: str | None, entries: _Entries) -> AsyncIterator[ServerEvent]:
    async for number, event in web.follow(cursor):
        data = {"id": event.data["id"], "html": entries.html(event.data)} if event.type in ENTRY_EVENTS else event.data
        yield ServerEvent(event.type, data, number)


def _outcome(request: Request, problem: str | None) -> Response:
    """The script's request gets JSON; a plain form goes back to the page, with the problem shown there."""
    if "application/json" in request.headers.get("accept", ""):
        return JSONResponse({"error": problem} if problem else {"ok": True}, status_code=400 if problem else 200)
    return done(request, PATH, problem)


routes: list[BaseRoute] = [
    Route(PATH, show),
    Route(f"{PATH}/send", send, methods=["POST"]),
    Route(f"{PATH}/answer", answer, methods=["POST"]),
    Route("/api/chat/stream", stream),
]
