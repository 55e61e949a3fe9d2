"""The MCP client pool: start and supervise servers, expose their tools, call them safely, relay their events."""

from __future__ import annotations

import logging
import math
import re
import sys
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

import anyio
import httpx2
from mcp import Client, MCPDeprecationWarning, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..config import ServerConfig
from ..providers.base import ToolSpec
from ..providers.images import RawImage
from ..trust.untrusted import UNTRUSTED_META
from .call_clock import call_clock
from .content import render
from .elicitation import ElicitationHandler
from .oauth import LoginRequired, login_required, next_login, stored_login
from .stderr import prefixed_stderr
from .tool_cache import ToolCache

logger = logging.getLogger(__name__)

MAX_BACKOFF_S = 30.0
MAX_SAME_FAILURES = 5
PROBE_INTERVAL_S = 5.0
_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")
SESSION_META = "hermitcrab/session"


@dataclass(frozen=True)
class ServerEvent:
    """A server said one of its resources changed (cron jobs due, a sub-agent finished, ...).

    `initial` events are sent for every resource each time a server (re)connects, so items queued while the host
    was away are read once; only resources that follow the server-event contract act on them.
    """

    server: str
    uri: str
    initial: bool = False


@dataclass(frozen=True)
class ToolOutcome:
    text: str
    is_error: bool = False
    untrusted: bool = False
    """The server marked the result as holding text from others (`hermitcrab/untrusted-content` in its `_meta`)."""
    images: tuple[RawImage, ...] = ()
    """Images of the result, for the turn to fit and show a model that takes them (`content.py`)."""


@dataclass(frozen=True)
class _Route:
    server: str
    tool: str
    spec: ToolSpec


EventSink = Callable[[ServerEvent], Awaitable[None]]
Observer = Callable[[str, str | None, str | None], None]


class ServerHandle:
    """One supervised connection: (re)started with backoff whenever it dies."""

    def __init__(
        self,
        config: ServerConfig,
        on_event: EventSink | None,
        errlog: TextIO,
        min_backoff_s: float = 0.5,
        oauth_logins: Path | None = None,
        tool_cache: ToolCache | None = None,
    ) -> None:
        self.config = config
        self._oauth_logins = oauth_logins
        self._login_required: LoginRequired | None = None
        self._tool_cache = tool_cache
        cached = tool_cache.tools(config) if tool_cache is not None else None
        self._cached = None if cached is None else [tool for tool in cached if config.allows(tool.name)]
        self._tools: list[types.Tool] = []
        self.prompts: list[types.Prompt] = []
        self.last_error: str | None = None
        self.restarts = 0
        self.same_failures = 0
        self.gave_up: str | None = None
        self.attempted = anyio.Event()
        self._on_event = on_event
        self._errlog = errlog
        self._elicitation = ElicitationHandler(config.name)
        self._client: Client | None = None
        self._ready = anyio.Event()
        self._dead = anyio.Event()
        self._min_backoff_s = min_backoff_s
        self._backoff = min_backoff_s

    @property
    def ready(self) -> bool:
        return self._client is not None

    @property
    def tools(self) -> list[types.Tool]:
        """The tools offered: the server's own once its first start was tried, before that those it listed in the
        last run (`tool_cache.py`), if the pool was given them."""
        return self._tools if self._cached is None or self.attempted.is_set() else self._cached

    @property
    def from_cache(self) -> bool:
        """Whether the pool may go on before this server has started: its tools are known from the last run."""
        return self._cached is not None

    def missed_start(self, within_s: float) -> None:
        """The pool's start deadline passed before the first start was tried: say so, and stop offering the last
        run's tools (a call to one would only fail) until the server answers with its own."""
        if self._cached is not None and not self.attempted.is_set():
            self._cached = None
            self.last_error = f"did not start within {within_s:g} s"

    @property
    def unavailable(self) -> str:
        """The tool error for a call this server cannot take now."""
        detail = f": {self.last_error}" if self.last_error else ""
        return f"the {self.config.name} server is not available{detail}"

    @property
    def login_required(self) -> LoginRequired | None:
        """Why the last start failed when only a person can fix it (an OAuth login); the handle waits for one."""
        return self._login_required

    @property
    def state(self) -> str:
        """A few words for `/status` and `doctor`: up, restarting (and why), or given up on (and why)."""
        if self.ready:
            return "up"
        if self.gave_up is not None:
            return f"stopped, not restarted any more: {self.gave_up}"
        if self._login_required is not None:
            return f"waiting for a login: {self._login_required}"
        return f"down, restarting: {self.last_error}" if self.last_error else "starting"

    async def supervise(self) -> None:
        """Keep the server running; give up once it has failed the same way `MAX_SAME_FAILURES` times in a row."""
        while True:
            try:
                # a pipe per process, so a line it left unfinished ends with it, not in the next one's first
                async with prefixed_stderr(self.config.name, self._errlog) as errlog, self._connect(errlog) as client:
                    await self._load_tools(client)
                    await self._load_prompts(client)
                    self._dead = anyio.Event()
                    await self._watch(client)
                    self._mark_down()
                    logger.warning("MCP server %r went away; restarting", self.config.name)
            except Exception as exc:  # supervisor boundary: any start-up or transport failure means restart
                self._record_failure(exc)
            finally:
                self._mark_down()
            self.attempted.set()
            if self.gave_up is not None:
                logger.error("MCP server %r is not restarted any more: %s", self.config.name, self.gave_up)
                return
            self.restarts += 1
            if self._login_required is not None:  # only a person can fix it: retrying would only ask again
                await next_login(self._login_required)
            else:
                await anyio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)

    def _record_failure(self, exc: Exception) -> None:
        error = _describe(exc)
        if _expected(exc):
            logger.warning("MCP server %r failed: %s", self.config.name, error)
        else:
            logger.error("MCP server %r failed unexpectedly: %s", self.config.name, error, exc_info=exc)
        self.same_failures = self.same_failures + 1 if error == self.last_error else 1
        self.last_error = error
        self._login_required = login_required(exc)
        if self.same_failures >= MAX_SAME_FAILURES:
            self.gave_up = f"failed {self.same_failures} times in a row with: {error}"

    def _mark_up(self, client: Client) -> None:
        """Open for calls only once the event stream is in place, so no event published after start-up is missed."""
        self._client = client
        self._login_required = None
        self._backoff = self._min_backoff_s
        self.same_failures = 0
        self._ready.set()
        self.attempted.set()

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        session: str | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> ToolOutcome:
        """Call `tool`; `session` (the calling session's key) goes in the request's `_meta` as `hermitcrab/session`,
        so a server can tell which conversation a call came from (spawn announces a sub-agent's end there), and
        `caller` adds who the turn acts for (`hermitcrab/principal`, `hermitcrab/origin`)."""
        timeout = self.config.timeout_s
        entries = {**({SESSION_META: session} if session is not None else {}), **(caller or {})}
        meta: types.RequestParamsMeta | None = types.RequestParamsMeta(**entries) if entries else None
        with call_clock(timeout), self._elicitation.calling():
            client = await self._connected()
            try:
                result = await client.call_tool(tool, arguments, meta=meta)
            except MCPError as exc:
                if _is_connection_lost(exc):
                    self._mark_down()
                    self._dead.set()
                    return ToolOutcome(f"the {self.config.name} server crashed during the call and is restarting", True)
                return ToolOutcome(f"the {self.config.name} server rejected the call: {exc}", True)
            untrusted = bool((result.meta or {}).get(UNTRUSTED_META))
            rendered = render(result)
            return ToolOutcome(rendered.text, bool(result.is_error), untrusted, rendered.images)
        if self._client is None:
            return ToolOutcome(self.unavailable, True)
        return ToolOutcome(f"{self.config.name}.{tool} timed out after {timeout:g}s", True)

    async def read_resource(self, uri: str) -> str:
        """The text of one of this server's resources (what changed, after a ResourceUpdated event)."""
        with anyio.fail_after(self.config.timeout_s), self._elicitation.calling():
            result = await (await self._connected()).read_resource(uri)
        return "\n".join(getattr(item, "text", "") for item in result.contents)

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        """One of this server's prompts filled in with `arguments` (a `/<server>:<prompt>` command)."""
        with anyio.fail_after(self.config.timeout_s), self._elicitation.calling():
            return await (await self._connected()).get_prompt(name, arguments)

    async def _connected(self) -> Client:
        """The live client, once (re)started; callers bound the wait with their own timeout."""
        await self._ready.wait()
        assert self._client is not None
        return self._client

    def _mark_down(self) -> None:
        """Make new calls wait for the restart instead of reaching a dead connection."""
        if self._client is not None:
            self._client = None
            self._ready = anyio.Event()

    def _connect(self, errlog: TextIO) -> Client:
        """A client of the server; a stdio server's process writes its stderr to `errlog`."""
        config = self.config
        target: Any
        if config.url:
            auth = stored_login(config, self._oauth_logins) if config.auth == "oauth" else None
            http = httpx2.AsyncClient(headers=dict(config.headers), auth=auth, timeout=httpx2.Timeout(30, read=None))
            target = streamable_http_client(config.url, http_client=http)
        else:
            assert config.command is not None
            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=dict(config.env) or None, cwd=config.cwd
            )
            target = stdio_client(params, errlog=errlog)
        return Client(
            target,
            mode=config.protocol,
            elicitation_callback=self._elicitation,
            message_handler=self._on_message,
            client_info=_CLIENT_INFO,
        )

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        """Resource updates from servers of the older protocol era, which notify instead of streaming.

        On 2026-era connections the same updates also arrive here as copies of listen events: those are skipped.
        """
        client = self._client
        older_era = client is not None and client.protocol_version not in MODERN_PROTOCOL_VERSIONS
        if older_era and isinstance(message, types.ResourceUpdatedNotification) and self._on_event is not None:
            await self._on_event(ServerEvent(self.config.name, str(message.params.uri)))

    async def _load_tools(self, client: Client) -> None:
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        self._tools = [tool for tool in tools if self.config.allows(tool.name)]
        if self._tool_cache is not None:
            self._tool_cache.keep(self.config, tools)

    async def _load_prompts(self, client: Client) -> None:
        """The server's prompts, offered as `/<server>:<prompt>` commands; none when it has no prompts capability
        or fails to list them (its tools still work)."""
        prompts: list[types.Prompt] = []
        cursor: str | None = None
        try:
            while client.server_capabilities.prompts is not None:
                page = await client.list_prompts(cursor=cursor)
                prompts.extend(page.prompts)
                cursor = page.next_cursor
                if cursor is None:
                    break
        except MCPError as exc:
            logger.warning("MCP server %r could not list its prompts: %s", self.config.name, exc)
        self.prompts = prompts

    async def _watch(self, client: Client) -> None:
        """Return when the connection is lost: a listen stream that drops, a failed probe, or a failed call."""
        async with anyio.create_task_group() as group:

            async def until_dead() -> None:
                await self._dead.wait()
                group.cancel_scope.cancel()

            group.start_soon(until_dead)
            try:
                await self._listen(client)
                await self._probe_forever(client)  # the server ended its listen stream; the connection stands
            except (ListenNotSupportedError, MCPError) as exc:
                if isinstance(exc, ListenNotSupportedError):
                    await self._subscribe_legacy(client)
                self._mark_up(client)
                await self._announce(await _resource_uris(client))
                await self._probe_forever(client)
            except SubscriptionLost:
                pass
            group.cancel_scope.cancel()

    async def _listen(self, client: Client) -> None:
        uris = await _resource_uris(client)
        async with client.listen(tools_list_changed=True, resource_subscriptions=uris) as subscription:
            self._mark_up(client)
            await self._announce(uris)
            async for event in subscription:
                if isinstance(event, ResourceUpdated) and self._on_event is not None:
                    await self._on_event(ServerEvent(self.config.name, event.uri))
                elif isinstance(event, ToolsListChanged):
                    await self._load_tools(client)

    async def _announce(self, uris: Sequence[str]) -> None:
        if self._on_event is not None:
            for uri in uris:
                await self._on_event(ServerEvent(self.config.name, uri, initial=True))

    async def _subscribe_legacy(self, client: Client) -> None:
        resources = client.server_capabilities.resources
        if resources is None or not resources.subscribe:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # the older era is what this server speaks
            for uri in await _resource_uris(client):
                await client.session.subscribe_resource(uri)  # pyright: ignore[reportDeprecated]  # older era

    async def _probe_forever(self, client: Client) -> None:
        """For servers without `subscriptions/listen`: re-list tools now and then, which works in every protocol era."""
        while True:
            await anyio.sleep(PROBE_INTERVAL_S)
            try:
                with anyio.fail_after(PROBE_INTERVAL_S):
                    await self._load_tools(client)
            except (MCPError, TimeoutError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return


class McpPool:
    """All configured servers, their tools under collision-free names, and one way to call them.

    Usage:
        async with McpPool(settings.servers, on_event=queue_event) as pool:
            specs = pool.tool_specs()
            outcome = await pool.call("read_file", {"path": "notes.md"})
    """

    def __init__(
        self,
        servers: Sequence[ServerConfig],
        *,
        on_event: EventSink | None = None,
        startup_timeout_s: float = 30.0,
        errlog: TextIO = sys.stderr,
        min_backoff_s: float = 0.5,
        oauth_logins: Path | None = None,
        tool_cache: ToolCache | None = None,
    ) -> None:
        """`oauth_logins` is the folder of stored OAuth logins (`Settings.oauth_logins`), for servers with
        `"auth": "oauth"`. With a `tool_cache`, entering the pool waits only for the servers it has no tool list
        of from the last run; the others go on starting behind it, offering that list until they answer or the start
        timeout passes, and a call to one waits for its start (`call`)."""
        self.observers: list[Observer] = []
        """Told `(server, tool, session)` after each call and `(server, None, None)` at each of a server's events:
        a view kept from a server's answers (`subagents.py`) knows from them when it may be out of date."""
        self._on_event = on_event
        self.handles = {
            config.name: ServerHandle(config, self._heard, errlog, min_backoff_s, oauth_logins, tool_cache)
            for config in servers
        }
        self._startup_timeout_s = startup_timeout_s
        self._started_by = math.inf
        self._late: dict[str, str] = {}  # tools offered from the cache of a server that missed its start: its name
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> McpPool:
        group = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(group.cancel_scope.cancel)
        for handle in self.handles.values():
            group.start_soon(handle.supervise)
        self._started_by = anyio.current_time() + self._startup_timeout_s
        if any(handle.from_cache for handle in self.handles.values()):
            group.start_soon(self._end_lazy_starts)
        with anyio.CancelScope(deadline=self._started_by):
            for handle in self.handles.values():
                if not handle.from_cache:
                    await handle.attempted.wait()
        return self

    async def _end_lazy_starts(self) -> None:
        await anyio.sleep_until(self._started_by)
        for handle in self.handles.values():
            self._missed_start(handle)

    def _missed_start(self, handle: ServerHandle) -> None:
        """Past the start deadline, a server offering its cached tools without having started stops offering them;
        the names it offered are kept, so a call to one made from the list offered before gets the reason."""
        if handle.from_cache and not handle.attempted.is_set():
            offered = {name for name, route in self.routes().items() if route.server == handle.config.name}
            self._late.update(dict.fromkeys(offered, handle.config.name))
            handle.missed_start(self._startup_timeout_s)

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()

    def routes(self) -> dict[str, _Route]:
        """Tools keyed by the name the model sees: the tool's own name, or `<server>__<tool>` on a clash."""
        listed = [(name, tool) for name, handle in self.handles.items() for tool in handle.tools]
        counts = Counter(tool.name for _, tool in listed)
        routes: dict[str, _Route] = {}
        for server, tool in listed:
            exposed = tool.name if counts[tool.name] == 1 else f"{server}__{tool.name}"
            exposed = _TOOL_NAME.sub("_", exposed)[:64]
            description = tool.description or tool.title or tool.name
            routes[exposed] = _Route(server, tool.name, ToolSpec(exposed, description, dict(tool.input_schema)))
        return routes

    def ready_routes(self, tool: str) -> dict[str, _Route]:
        """The routes to `tool` on servers that are up now (several servers may offer it), keyed as in `routes`."""
        routes = self.routes().items()
        return {name: r for name, r in routes if r.tool == tool and self.handles[r.server].ready}

    def tool_specs(self) -> list[ToolSpec]:
        return [route.spec for route in self.routes().values()]

    def server_of(self, name: str) -> str | None:
        """The server whose tool the model knows as `name` (for `<server>:<tool>` policy patterns)."""
        route = self.routes().get(name)
        return route.server if route else None

    async def call(
        self, name: str, arguments: dict[str, Any], session: str | None = None, caller: Mapping[str, Any] | None = None
    ) -> ToolOutcome:
        """Call the tool the model knows as `name`. On a server still on its first start, wait for it (until the
        pool's start timeout, counted from the pool's start); then its own list decides whether the tool exists."""
        route = self.routes().get(name)
        if route is not None and not self.handles[route.server].attempted.is_set():
            handle = self.handles[route.server]
            with anyio.CancelScope(deadline=self._started_by):
                await handle.attempted.wait()
            self._missed_start(handle)
            if not handle.ready:
                return ToolOutcome(handle.unavailable, True)
            route = self.routes().get(name)  # the server's own list, which may lack a tool the cached one had
        if route is None:
            late = self.handles[self._late[name]] if name in self._late else None
            if late is not None and not late.ready:
                return ToolOutcome(late.unavailable, True)
            return ToolOutcome(f"unknown tool {name!r}; available: {', '.join(sorted(self.routes())) or 'none'}", True)
        try:
            return await self.handles[route.server].call(route.tool, arguments, session, caller)
        finally:
            for observer in self.observers:
                observer(route.server, route.tool, session)

    async def _heard(self, event: ServerEvent) -> None:
        for observer in self.observers:
            observer(event.server, None, None)
        if self._on_event is not None:
            await self._on_event(event)


async def _resource_uris(client: Client) -> list[str]:
    if client.server_capabilities.resources is None:
        return []
    listing = await client.list_resources()
    return [str(resource.uri) for resource in listing.resources]


def _is_connection_lost(exc: MCPError) -> bool:
    return exc.code == types.CONNECTION_CLOSED


def _expected(exc: BaseException) -> bool:
    """Failures a server or its transport cause in normal life; anything else is a bug worth a traceback."""
    if isinstance(exc, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], exc)
        return all(_expected(inner) for inner in group.exceptions)
    return isinstance(exc, _EXPECTED_FAILURES)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], exc)
        return "; ".join(_describe(inner) for inner in group.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


_EXPECTED_FAILURES = (
    LoginRequired,
    OSError,
    TimeoutError,
    MCPError,
    httpx2.HTTPError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
)
_CLIENT_INFO = types.Implementation(name="hermitcrab", version="0.1.0")
