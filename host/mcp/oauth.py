"""OAuth 2.1 logins for remote MCP servers: what the SDK's `OAuthClientProvider` leaves to its host.

The SDK discovers the protected resource and its authorisation server, registers a client (a client ID metadata
document or dynamic registration), runs PKCE, exchanges the code and refreshes tokens. Left here: where a server's
login is kept (`state/oauth/<server>.json`, 0600), the loopback redirect that `hermitcrab mcp login` waits on, and
the rule that a connection never waits for a person: the pool connects with the stored login, and when there is
none, or the server and its refresh both refuse it, the connection fails with `LoginRequired` naming the command.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import logging
import re
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from hermitcrab.util.files import Stamp, stamp
from hermitcrab.util.http_serve import serve_app
from hermitcrab.util.store import JsonFile
from hermitcrab.util.text import escape_controls

from ..config import ServerConfig
from ..errors import ToolServerError

logger = logging.getLogger(__name__)

CALLBACK_PATH = "/callback"
LOGIN_POLL_S = 1.0
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_Model = TypeVar("_Model", OAuthToken, OAuthClientInformationFull)
_LOGIN_FAILURES = (OAuthFlowError, OAuthTokenError, OAuthRegistrationError, httpx2.HTTPError, MCPError, OSError)


class LoginRequired(ToolServerError):
    """A server with `"auth": "oauth"` has no login it accepts; only a person at a browser can make one.

    `path` is the server's login file (None when the program keeps none) and `seen` its stamp when the refused
    connection read it, so `next_login` can tell when another login was stored since (by `hermitcrab mcp login`,
    or by another host process refreshing the token this one then presented)."""

    def __init__(self, server: str, why: str, path: Path | None = None, seen: Stamp | None = None) -> None:
        super().__init__(f"MCP server {server!r} needs an OAuth login ({why}): run `hermitcrab mcp login {server}`")
        self.server = server
        self.path = path
        self.seen = seen


class LoginFailed(ToolServerError):
    """`hermitcrab mcp login` did not end with a login: refused, abandoned, or the server misbehaved."""


def login_required(exc: BaseException) -> LoginRequired | None:
    """The `LoginRequired` that `exc` is or holds: the transport's task groups wrap what the auth flow raised."""
    if isinstance(exc, LoginRequired):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], exc)
        return next((found for inner in group.exceptions if (found := login_required(inner)) is not None), None)
    return None


async def next_login(required: LoginRequired) -> None:
    """Return once the server's login file has changed since `required` was raised: someone logged in (never,
    for a program that keeps no logins)."""
    while required.path is None or stamp(required.path) == required.seen:
        await anyio.sleep(LOGIN_POLL_S)


@dataclass(frozen=True)
class Login:
    """What a server's stored login says, read without asking the server (`doctor`, `mcp status`)."""

    expires_at: float | None
    refreshable: bool

    def describe(self, server: str, now: float) -> str:
        if self.expires_at is None:
            return "logged in (its token does not say when it expires)"
        when = dt.datetime.fromtimestamp(self.expires_at).astimezone().isoformat(timespec="minutes")
        if self.expires_at > now:
            then = ", then it is refreshed" if self.refreshable else "; it cannot be refreshed"
            return f"logged in; the token expires {when}{then}"
        if self.refreshable:
            return f"logged in; the token expired {when} and is refreshed on the next connection"
        return f"the token expired {when} and cannot be refreshed: run `hermitcrab mcp login {server}`"


class LoginFile:
    """One server's login, the SDK's `TokenStorage`: its tokens and registered client in `state/oauth/<name>.json`.

    Two things are kept beside what the SDK stores. The absolute expiry: the SDK holds a token's lifetime only as a
    deadline in memory, so after a restart it would present an expired token instead of refreshing it. And the
    server URL the login was made for: a config that points the name at another server never sends it these
    tokens. `pending_redirect` makes the file serve a login in progress: the stored tokens are not offered (the old
    login stays until new tokens replace it), and a registered client whose redirect URIs lack this login's
    redirect is not reused, so the SDK registers afresh.
    """

    def __init__(self, folder: Path, config: ServerConfig, *, pending_redirect: str | None = None) -> None:
        self.path = folder / f"{_file_name(config.name)}.json"
        self._file = JsonFile(self.path)
        self._config = config
        self._pending_redirect = pending_redirect

    def login(self) -> Login | None:
        tokens = self._stored_tokens()
        if tokens is None:
            return None
        return Login(self.expires_at(), tokens.refresh_token is not None)

    def expires_at(self) -> float | None:
        expires_at = self._read().get("expires_at")
        return float(expires_at) if isinstance(expires_at, int | float) else None

    def redirect_port(self) -> int:
        """The loopback port to listen on for a login: the configured one, else that of the registered client (so
        its registration stays valid), else 0 for any free one."""
        if self._config.oauth.redirect_port:
            return self._config.oauth.redirect_port
        client = self._stored_client()
        uris = [urlsplit(str(uri)) for uri in (client.redirect_uris or [])] if client else []
        return next((uri.port for uri in uris if uri.hostname == "127.0.0.1" and uri.port), 0)

    def forget(self) -> bool:
        """Remove the login (tokens and registered client); False when there was none."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    async def get_tokens(self) -> OAuthToken | None:
        return None if self._pending_redirect else self._stored_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = None if tokens.expires_in is None else time.time() + tokens.expires_in
        self._save(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires_at)
        self._pending_redirect = None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        configured = self._config.oauth
        if configured.client_id:
            method = "client_secret_basic" if configured.client_secret else "none"
            return OAuthClientInformationFull(
                client_id=configured.client_id,
                client_secret=configured.client_secret,
                token_endpoint_auth_method=method,
            )
        client = self._stored_client()
        if client is not None and self._pending_redirect is not None and not self._redirects_to_pending(client):
            return None
        return client

    def _redirects_to_pending(self, client: OAuthClientInformationFull) -> bool:
        return self._pending_redirect in [str(uri) for uri in client.redirect_uris or []]

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._save(client=client_info.model_dump(mode="json", exclude_none=True))

    def _stored_tokens(self) -> OAuthToken | None:
        return self._parsed(OAuthToken, "tokens")

    def _stored_client(self) -> OAuthClientInformationFull | None:
        return self._parsed(OAuthClientInformationFull, "client")

    def _parsed(self, model: type[_Model], key: str) -> _Model | None:
        raw = self._read().get(key)
        if raw is None:
            return None
        try:
            return model.model_validate(raw)
        except ValidationError:
            logger.warning("%s holds an unreadable %s; the server needs a new login", self.path, key)
            return None

    def _read(self) -> dict[str, Any]:
        data = self._file.load("the server needs a new login")
        return data if data.get("url") == self._config.url else {}

    def _save(self, **changes: object) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._file.save({**self._read(), "url": self._config.url, **changes})


def login_state(config: ServerConfig, folder: Path) -> tuple[bool, str]:
    """Whether `config`'s server has a stored login a connection can use (valid, or refreshable), and a sentence
    saying so, read from `folder` without asking the server (`mcp status`, `doctor`, the dashboard)."""
    stored = LoginFile(folder, config).login()
    if stored is None:
        return False, f"not logged in: run `hermitcrab mcp login {config.name}`"
    now = time.time()
    usable = stored.refreshable or stored.expires_at is None or stored.expires_at > now
    return usable, stored.describe(config.name, now)


class _Provider(OAuthClientProvider):
    """The SDK's provider, given back a stored token's expiry, which it does not keep across processes."""

    def __init__(self, login_file: LoginFile, **options: Any) -> None:
        super().__init__(storage=login_file, **options)
        self._login_file = login_file

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = self._login_file.expires_at()


def stored_login(config: ServerConfig, folder: Path | None) -> httpx2.Auth:
    """The auth for the pool's connection to `config`'s server: the stored login in `folder`, refreshed when it
    expires (a pool given no folder has no logins).

    Never waits for a person: with no login stored this raises `LoginRequired` before anything is sent, and when
    the server refuses the token and the refresh fails too, the SDK's call for a browser raises it instead."""
    if folder is None:
        raise LoginRequired(config.name, "this program keeps no logins")
    login_file = LoginFile(folder, config)
    seen = stamp(login_file.path)
    if login_file.login() is None:
        raise LoginRequired(config.name, "not logged in", login_file.path, seen)

    async def refuse(*_: object) -> NoReturn:
        why = "the server wants a new authorisation: it refused the stored token, or asks for more scope"
        raise LoginRequired(config.name, why, login_file.path, seen)

    # The redirect is only named, never listened on: a registration made here would be redone by the next login.
    return _provider(config, login_file, f"http://127.0.0.1{CALLBACK_PATH}", refuse, refuse)


async def log_in(config: ServerConfig, folder: Path, show: Callable[[str], Awaitable[None]], timeout_s: float) -> int:
    """Log in to `config`'s server and store the login; the number of tools the server then lists.

    `show` is given the authorisation URL to open in a browser; the browser comes back to a loopback listener on
    127.0.0.1 with the code, which must happen within `timeout_s`."""
    async with _Redirect(config.name, timeout_s, LoginFile(folder, config).redirect_port()) as redirect:
        pending = LoginFile(folder, config, pending_redirect=redirect.uri)
        tools = await _list_tools(config, _provider(config, pending, redirect.uri, show, redirect.wait))
    if pending.login() is None:
        raise LoginFailed(f'{config.url} answered without asking for a login: its entry needs no "auth"')
    return tools


def _provider(
    config: ServerConfig,
    login_file: LoginFile,
    redirect_uri: str,
    show: Callable[[str], Awaitable[None]],
    answer: Callable[[], Awaitable[AuthorizationCodeResult]],
) -> _Provider:
    assert config.url is not None
    metadata = OAuthClientMetadata.model_validate(
        {
            "client_name": "hermitcrab",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    )
    return _Provider(
        login_file,
        server_url=config.url,
        client_metadata=metadata,
        redirect_handler=show,
        callback_handler=answer,
        client_metadata_url=config.oauth.client_metadata_url,
    )


async def _list_tools(config: ServerConfig, auth: httpx2.Auth) -> int:
    assert config.url is not None
    http = httpx2.AsyncClient(headers=dict(config.headers), auth=auth, timeout=httpx2.Timeout(30, read=None))
    try:
        async with http, Client(streamable_http_client(config.url, http_client=http)) as client:
            return len((await client.list_tools()).tools)
    except* _LOGIN_FAILURES as group:
        raise LoginFailed(f"the login to {config.name} failed: {_first(group)}") from group


def _first(group: BaseExceptionGroup[Exception]) -> str:
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return escape_controls(f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__)


class _Redirect:
    """The loopback end of a login, listening on 127.0.0.1 while the block runs: the browser comes back to `uri`
    with the code, or with the refusal. `port` 0, or one that is taken, listens on any free port."""

    def __init__(self, server: str, timeout_s: float, port: int) -> None:
        self.uri = ""
        self._server = server
        self._timeout_s = timeout_s
        self._port = port
        self._answer: AuthorizationCodeResult | LoginFailed | None = None
        self._came = anyio.Event()
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> _Redirect:
        group = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(group.cancel_scope.cancel)
        app = Starlette(routes=[Route(CALLBACK_PATH, self.endpoint)])
        try:
            port = await group.start(serve_app, app, "127.0.0.1", self._port, "the login's redirect listener")
        except OSError:
            if not self._port:
                raise
            port = await group.start(serve_app, app, "127.0.0.1", 0, "the login's redirect listener")
        self.uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()

    async def endpoint(self, request: Request) -> Response:
        params = request.query_params
        if self._came.is_set():
            return _page("This login is already finished; you can close this tab.", 409)
        if "error" in params:
            why = " ".join(params.get(key, "") for key in ("error", "error_description")).strip()
            self._answer = LoginFailed(f"the authorisation server refused the login to {self._server}: {why}")
        elif "code" in params:
            state, issuer = params.get("state"), params.get("iss")
            self._answer = AuthorizationCodeResult(code=params["code"], state=state, iss=issuer)
        else:
            return _page("This address is for the end of a login and needs its code.", 400)
        self._came.set()
        if isinstance(self._answer, LoginFailed):
            return _page(f"The login to {self._server} was refused.", 200)
        return _page(f"hermitcrab is now logged in to {self._server}; you can close this tab.", 200)

    async def wait(self) -> AuthorizationCodeResult:
        with anyio.move_on_after(self._timeout_s):
            await self._came.wait()
        if self._answer is None:
            raise LoginFailed(f"no answer came back from the browser within {self._timeout_s:g} s")
        if isinstance(self._answer, LoginFailed):
            raise self._answer
        return self._answer


def _page(text: str, status: int) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><title>hermitcrab</title><p>{html.escape(text)}</p>", status)


def _file_name(server: str) -> str:
    """The server's name when it is safe as a file name, else a digest of it (names are config keys: any text)."""
    if _SAFE_NAME.fullmatch(server):
        return server
    return "server-" + hashlib.sha256(server.encode()).hexdigest()[:16]
