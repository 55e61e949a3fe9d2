"""The dashboard's door: only the owner's logged-in browser gets past it, and only with the page's own requests.

Every request is checked here, before any page sees it, in this order:
- the Host header names this server (a loopback name or one of `[dashboard] hosts`): a page on another site that
  rebinds its DNS name to 127.0.0.1 reaches the port but sends its own name, and gets 400;
- the session cookie is a live session (`auth.Sessions`): without one a page asked for by a browser gets the login
  page and anything else (`/api/...`, live streams, forms) a 401;
- a request that changes state (any method but GET and HEAD) carries the session's CSRF token, in the
  `X-CSRF-Token` header or an urlencoded form's `csrf` field: another site can make the browser send the cookie, but
  cannot read a page to learn the token; without it, 403.
Every response says not to be framed, sniffed or referred on (a login link must not leak in a Referer).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from urllib.parse import parse_qs

from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .auth import COOKIE, Sessions, csrf_matches

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
OPEN_PATH = "/login"
OPEN_PREFIX = "/static/"
SAFE_METHODS = frozenset({"GET", "HEAD"})
MAX_FORM_BYTES = 4 * 1024 * 1024
"""Above the largest form the pages send (a memory edit of 300,000 characters, four bytes each at most in UTF-8 and
three for each of those urlencoded), so an edit too long for the page gets the page's own sentence and its text back."""
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def host_name(header: str) -> str:
    """The name in a Host header, without its port (`[::1]:8790` is `::1`)."""
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


class Access:
    """ASGI middleware in front of every page; `login_page` answers browsers that are not logged in."""

    def __init__(self, app: ASGIApp, *, sessions: Sessions, hosts: Collection[str], login_page: ASGIApp) -> None:
        self.app = app
        self.sessions = sessions
        self.hosts = LOOPBACK_NAMES | {name.lower() for name in hosts}
        self.login_page = login_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await receive()  # the client's connect, which a close then refuses: the dashboard has no sockets
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan: the app's start and stop, no request
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        if host_name(headers.get("host", "")).lower() not in self.hosts:
            await _plain(send, 400, "This dashboard answers only to its own address (the Host header is not one).")
            return
        path: str = scope["path"]
        if path == OPEN_PATH or path.startswith(OPEN_PREFIX):
            await self.app(scope, receive, send)
            return
        session = _cookie(headers.get("cookie", ""))
        if session is None or not self.sessions.valid(session):
            if scope["method"] == "GET" and "text/html" in headers.get("accept", "") and not path.startswith("/api/"):
                await self.login_page(scope, receive, send)
            else:
                await _json(send, 401, "not logged in: run `hermitcrab dashboard` on the host for a login link")
            return
        scope.setdefault("state", {})["session"] = session
        if scope["method"] not in SAFE_METHODS:
            token = headers.get("x-csrf-token")
            if token is None and headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
                body = await _body(receive)
                if body is None:
                    await _json(send, 413, f"the form is larger than {MAX_FORM_BYTES // (1024 * 1024)} MB")
                    return
                token = _form_field(body, "csrf")
                receive = _replay(body)
            if token is None or not csrf_matches(session, token):
                await _json(send, 403, "this request lacks the page's CSRF token: reload the page and try again")
                return
        await self.app(scope, receive, send)


def _cookie(header: str) -> str | None:
    """The session cookie's value: parsed as browsers send cookies, so another app's odd cookie on the same host
    (`prefs={"theme": "dark"}`, which the stdlib's SimpleCookie stops at) hides nothing after it."""
    return cookie_parser(header).get(COOKIE)


def _form_field(body: bytes, name: str) -> str | None:
    values = parse_qs(body.decode("utf-8", errors="replace")).get(name)
    return values[0] if values else None


async def _body(receive: Receive) -> bytes | None:
    """The whole request body, or None past `MAX_FORM_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    """A `receive` that hands the page the body this middleware already read, then reports a disconnect at once:
    a page reads its body once and never waits on `receive` again."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def _with_security_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
        await send(message)

    return sending


async def _plain(send: Send, status: int, text: str) -> None:
    await _respond(send, status, b"text/plain; charset=utf-8", text.encode())


async def _json(send: Send, status: int, error: str) -> None:
    await _respond(send, status, b"application/json", json.dumps({"error": error}).encode())


async def _respond(send: Send, status: int, content_type: bytes, body: bytes) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
