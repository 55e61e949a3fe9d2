"""Pages as HTML: the Jinja2 templates shipped in the package, rendered with what every page shows (the navigation,
the CSRF token its forms carry, the notices left by the last action)."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.templating import Jinja2Templates

from . import moments
from .auth import csrf_token
from .context import context

templates = Jinja2Templates(
    env=Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=select_autoescape(default=True),  # every template escapes, whatever its name ends in
    )
)


class Notices:
    """One-line outcomes of actions ("Job disabled."), shown once on the page the action redirects to."""

    def __init__(self) -> None:
        self._waiting: defaultdict[str, list[str]] = defaultdict(list)

    def add(self, session: str, text: str) -> None:
        self._waiting[session].append(text)

    def take(self, session: str) -> list[str]:
        return self._waiting.pop(session, [])


def page(request: Request, template: str, title: str, status: int = 200, **values: Any) -> Response:
    """`template` rendered as the page called `title` (its heading and the window's title)."""
    session: str | None = getattr(request.state, "session", None)
    notices: Notices = request.app.state.notices
    shown = {
        "title": title,
        "nav": request.app.state.nav,
        "csrf": csrf_token(session) if session else "",
        "notices": notices.take(session) if session else [],
        "when": partial(moment, now=context(request).agent.now()),
        **values,
    }
    return templates.TemplateResponse(request, template, shown, status_code=status)


def done(request: Request, to: str, notice: str | None = None) -> Response:
    """After a form's action: back to `to` (303, so a reload does not post again), with `notice` shown there."""
    if notice:
        notices: Notices = request.app.state.notices
        notices.add(request.state.session, notice)
    return RedirectResponse(to, status_code=303)


@dataclass(frozen=True)
class ServerEvent:
    """One message of a live page's stream: its `kind` (the browser's event type), `data` (sent as JSON) and `id`
    (what the browser sends back as Last-Event-ID when it reconnects; None: this message moves no cursor)."""

    kind: str
    data: object
    id: str | int | None = None


def event_stream(events: AsyncIterable[ServerEvent], retry_ms: int | None = None) -> StreamingResponse:
    """`events` as Server-Sent Events, unbuffered by a proxy; `retry_ms` tells the browser how soon to reconnect."""

    async def encoded() -> AsyncIterator[str]:
        if retry_ms is not None:
            yield f"retry: {retry_ms}\n\n"
        async for event in events:
            head = f"id: {event.id}\n" if event.id not in (None, "") else ""
            yield f"{head}event: {event.kind}\ndata: {json.dumps(event.data, ensure_ascii=False)}\n\n"

    return StreamingResponse(encoded(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})


def moment(at: float, now: dt.datetime) -> str:
    """`at` (a Unix time) as the owner reads it: date and time in the zone of `now` (the agent's clock, in the
    owner's zone) and how long before or after `now` it is ("2026-12-03 18:45 (3 min ago)"). Templates call it as
    `when(at)`."""
    aware = now if now.tzinfo is not None else now.astimezone()  # a naive clock is local time
    return moments.shown(dt.datetime.fromtimestamp(at, dt.UTC), aware.tzinfo or dt.UTC, aware)
