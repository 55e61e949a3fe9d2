"""The Servers page: each MCP server of the pool as its supervisor sees it (up or down and why, how it is reached, its
tools, restarts, last error, its OAuth login), and the tail of `host.log` and `servers.log`.

Everything shown from a server or a log goes through `redact` and `escape_controls` first: a log written before a
filter caught a credential, or a server's stderr (which no filter sees), can hold one, and a server's text can hold
terminal sequences.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from hermitcrab.host.config import ServerConfig, Settings
from hermitcrab.host.mcp.oauth import LoginFile
from hermitcrab.host.mcp.pool import ServerHandle
from hermitcrab.util.files import Stamp, stamp
from hermitcrab.util.redact import redact
from hermitcrab.util.text import escape_controls

from ..context import context
from ..render import ServerEvent, event_stream, page

TITLE = "Servers"
PATH = "/servers"
LOGS = ("host.log", "servers.log")
TAIL_LINES = 200
TAIL_BYTES = 256 * 1024  # what is read from a log's end for its tail: logs are never rotated, so may be large
LINE_CHARS = 2_000  # one line of a log shown at most this long (a dumped payload is not worth a page of scrolling)
SECRET_OPTION = re.compile(r"token|key|secret|passw|auth", re.IGNORECASE)
"""An option whose name has one of these words takes a credential as its value."""
POLL_S = 1.0  # how often the live tail looks at the logs' stamps: one stat() each


@dataclass(frozen=True)
class Tool:
    name: str
    description: str


@dataclass(frozen=True)
class Server:
    """One server as the page shows it, every text from the server or its config already made safe to show."""

    name: str
    up: bool
    state: str
    transport: str
    restarts: int
    last_error: str | None
    login: str | None
    tools: list[Tool]


@dataclass(frozen=True)
class Tail:
    """The last lines of one log, or why there are none."""

    name: str
    path: Path
    lines: list[str]
    problem: str | None = None

    @property
    def note(self) -> str:
        """The line above the tail: what it shows, or why there is nothing."""
        if self.problem:
            return f"{self.path}: {self.problem}"
        older = " (older lines are in the file)" if len(self.lines) == TAIL_LINES else ""
        return f"The last {len(self.lines)} lines of {self.path}{older}, followed as they are written."


async def show(request: Request) -> Response:
    host = context(request)
    handles = list(host.agent.pool.handles.values()) if host.agent.pool is not None else []
    servers = [_server(handle, host.settings) for handle in handles]
    tails = await anyio.to_thread.run_sync(lambda: [_tail(host.settings.state / "logs" / name) for name in LOGS])
    return page(request, "servers.html", TITLE, servers=servers, tails=tails)


async def live_logs(request: Request) -> Response:
    """Each log's tail again as a Server-Sent Event (`tail`: name, note, lines) whenever the log is written."""
    logs = context(request).settings.state / "logs"

    async def events() -> AsyncIterator[ServerEvent]:
        seen: dict[str, Stamp | None] = {}
        while True:
            for name in LOGS:
                now = stamp(logs / name)
                if name not in seen or seen[name] != now:
                    seen[name] = now
                    tail = await anyio.to_thread.run_sync(_tail, logs / name)
                    yield ServerEvent("tail", {"name": tail.name, "note": tail.note, "lines": tail.lines})
            await anyio.sleep(POLL_S)

    return event_stream(events())


def _server(handle: ServerHandle, settings: Settings) -> Server:
    config = handle.config
    tools = [Tool(_safe(tool.name), _safe(tool.description or tool.title or "")) for tool in handle.tools]
    return Server(
        name=_safe(config.name),
        up=handle.ready,
        state=_safe(handle.state),
        transport=_safe(_transport(config)),
        restarts=handle.restarts,
        last_error=_safe(handle.last_error) if handle.last_error else None,
        login=_login(config, settings) if config.auth == "oauth" else None,
        tools=sorted(tools, key=lambda tool: tool.name),
    )


def _transport(config: ServerConfig) -> str:
    """How the pool reaches the server: its URL, or the command it starts (never its env or headers)."""
    if config.url:
        return f"streamable HTTP: {config.url}"
    return f"stdio: {shlex.join([config.command or '', *_masked(config.args)])}"


def _masked(args: Sequence[str]) -> list[str]:
    """`args` with the value of each secret-looking option (`--token abc`, `--api-key=abc`) shown as `***`:
    `redact` catches only `key=value` spellings it knows."""
    shown: list[str] = []
    secret_next = False
    for arg in args:
        option = arg.startswith("-")
        name, equals, _ = arg.partition("=")
        if secret_next and not option:
            shown.append("***")
        elif option and equals and SECRET_OPTION.search(name):
            shown.append(f"{name}=***")
        else:
            shown.append(arg)
        secret_next = option and not equals and bool(SECRET_OPTION.search(arg))
    return shown


def _login(config: ServerConfig, settings: Settings) -> str:
    """The server's stored OAuth login as `hermitcrab mcp status` words it, read from its file (not asked)."""
    try:
        stored = LoginFile(settings.oauth_logins, config).login()
    except OSError as exc:
        return f"its login cannot be read ({exc})"
    if stored is None:
        return f"not logged in: run `hermitcrab mcp login {config.name}`"
    return stored.describe(config.name, time.time())


def _tail(path: Path) -> Tail:
    """The last `TAIL_LINES` lines of the log at `path`, read from its end, each redacted and made safe to show."""
    try:
        with path.open("rb") as log:
            size = log.seek(0, os.SEEK_END)
            start = max(0, size - TAIL_BYTES)
            log.seek(start)
            lines = log.read().decode("utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return Tail(path.name, path, [], "Nothing has been written to it yet.")
    except OSError as exc:
        return Tail(path.name, path, [], f"It cannot be read ({exc.strerror or exc}).")
    if start > 0:
        lines = lines[1:]  # begun mid-line
    if not lines:
        return Tail(path.name, path, [], "It is empty.")
    return Tail(path.name, path, [_shown_line(line) for line in lines[-TAIL_LINES:]])


def _shown_line(line: str) -> str:
    shown = _safe(line)
    return shown if len(shown) <= LINE_CHARS else shown[:LINE_CHARS] + " …"


def _safe(text: str) -> str:
    return escape_controls(redact(text))


routes: list[BaseRoute] = [Route(PATH, show), Route("/api/servers/logs", live_logs)]
