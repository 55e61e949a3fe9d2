"""The Sessions page: every session with its last activity, size and tokens; a session's transcript, followed live
while a turn writes to it; `/new` and `/compact` as buttons.

A session key may hold any character (`discord:dm:42`, a webhook's own name), so it is the rest of the path
(`/sessions/{key:path}`), quoted in every link. Files are read in a worker thread: the dashboard shares the host's
event loop, and a long transcript must not hold up a turn.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from hermitcrab.util.files import stamp

from ..context import context
from ..numbers import whole_number
from ..render import Notices, ServerEvent, done, event_stream, moment, page, templates
from .session_commands import session_commands
from .session_files import Shown, Summaries, Summary, read_entries, shown, summarise

TITLE = "Sessions"
PATH = "/sessions"
PER_PAGE = 50
SHOWN_ENTRIES = 200
"""A transcript shows its last this many entries unless all are asked for."""
POLL_S = 0.5
"""How often a live transcript looks at its file's stamp (one stat)."""
COMMANDS = ("/new", "/compact")

summaries = Summaries()
"""Keyed by each transcript's absolute path: one cache serves every page of the process."""


@dataclass(frozen=True)
class Row:
    key: str
    href: str
    summary: Summary


def href(key: str) -> str:
    """The address of a session's transcript."""
    return f"{PATH}/{quote(key, safe=':@')}"


def live_href(key: str, transcript_id: str, offset: int) -> str:
    """The address of the events of a session's transcript `transcript_id` from byte `offset` on."""
    return f"/api/sessions/live/{quote(key, safe=':@')}?{urlencode({'id': transcript_id, 'offset': offset})}"


async def listing(request: Request) -> Response:
    files = context(request).agent.store.transcripts()
    rows = await anyio.to_thread.run_sync(_rows, files)
    count = max(1, -(-len(rows) // PER_PAGE))
    number = min(max(whole_number(request.query_params.get("page"), 1), 1), count)
    start = (number - 1) * PER_PAGE
    return page(
        request,
        "sessions.html",
        TITLE,
        rows=rows[start : start + PER_PAGE],
        total=len(rows),
        first=start + 1,
        number=number,
        count=count,
    )


def _rows(files: dict[str, Path]) -> list[Row]:
    rows = [Row(key, href(key), summaries.of(path)) for key, path in files.items()]
    return sorted(rows, key=lambda row: row.summary.changed or 0.0, reverse=True)


async def transcript(request: Request) -> Response:
    key: str = request.path_params["key"]
    path = context(request).agent.store.transcripts().get(key)
    if path is None:
        return page(request, "session.html", TITLE, status=404, problem=f"There is no session called “{key}”.")
    try:
        entries, offset, summary = await anyio.to_thread.run_sync(_read_summarised, path)
    except OSError as exc:
        problem = f"The transcript {path.name} could not be read ({exc.strerror or exc})."
        return page(request, "session.html", f"Session {key}", status=500, problem=problem)
    lines = shown(entries)
    everything = request.query_params.get("all") == "1"
    kept = lines if everything else lines[-SHOWN_ENTRIES:]
    return page(
        request,
        "session.html",
        f"Session {key}",
        key=key,
        href=href(key),
        transcript_id=path.stem,
        summary=summary,
        lines=kept,
        total=len(lines),
        live=live_href(key, path.stem, offset),
        busy=context(request).gateway.pending(key) > 0,
    )


def _read_summarised(path: Path) -> tuple[list[dict[str, Any]], int, Summary]:
    """The transcript's entries, the offset after them and their summary, from one read (in a worker thread)."""
    entries, offset = read_entries(path)
    try:
        changed = path.stat().st_mtime
    except FileNotFoundError:  # a session just begun: no file until its first entry
        return entries, offset, Summary()
    return entries, offset, summarise(entries, changed)


async def command(request: Request) -> Response:
    key: str = request.path_params["key"]
    host = context(request)
    if key not in host.agent.store.transcripts():
        return done(request, PATH, f"There is no session called “{key}”.")
    said = (await request.form()).get("command")
    if said not in COMMANDS:
        return done(request, href(key), "This page runs /new and /compact only.")
    notices: Notices = request.app.state.notices
    later = partial(notices.add, request.state.session)
    reply = await session_commands(host.gateway).run(host.gateway, key, str(said), later)
    return done(request, href(key), reply)


async def live(request: Request) -> Response:
    """The entries appended to a session's transcript as Server-Sent Events (`entries`, whose id is the byte offset
    reached, so a reconnecting browser goes on from there), whether a turn runs (`state`), and `replaced` once the key
    points at another transcript (after `/new`)."""
    key: str = request.path_params["key"]
    host = context(request)
    wanted = request.query_params.get("id", "")
    offset = whole_number(request.headers.get("last-event-id") or request.query_params.get("offset"), 0)

    async def events() -> AsyncIterator[ServerEvent]:
        nonlocal offset
        seen, running = None, None
        while True:
            path = host.agent.store.transcripts().get(key)
            if path is None or path.stem != wanted:
                yield ServerEvent("replaced", {})
                return
            now = stamp(path)
            if now != seen:
                seen = now
                entries, offset = await anyio.to_thread.run_sync(read_entries, path, offset)
                if lines := shown(entries):
                    yield ServerEvent("entries", {"html": _render(lines, host.agent.now())}, offset)
            busy = host.gateway.pending(key) > 0
            if busy != running:
                running = busy
                yield ServerEvent("state", {"text": _state(busy)})
            await anyio.sleep(POLL_S)

    return event_stream(events())


def _render(lines: list[Shown], now: dt.datetime) -> str:
    return templates.get_template("session_lines.html").render(lines=lines, when=partial(moment, now=now))


def _state(busy: bool) -> str:
    return "A turn is running in this session: new entries appear as it writes them." if busy else ""


routes: list[BaseRoute] = [
    Route(PATH, listing),
    Route(PATH + "/{key:path}", transcript, methods=["GET"]),
    Route(PATH + "/{key:path}", command, methods=["POST"]),
    Route("/api/sessions/live/{key:path}", live),
]
