"""Run an MCPServer over stdio or streamable HTTP, as chosen by the `--http HOST:PORT` flag, logging at `--log-level`.

Over HTTP the server checks the Host and Origin of every request on whatever address it binds, and with a token
(`--token`, `$HERMITCRAB_MCP_TOKEN`; required off loopback) answers 401 to a request without it.

Over stdio, lines the SDK cannot parse are answered rather than dropped (`sdk_workarounds.serve_stdio`); over
HTTP, a malformed message gets that same one-line answer and batches are handled per protocol version
(`jsonrpc_http.CheckedBodies`).
"""

from __future__ import annotations

import argparse
import hmac
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any, Literal, get_args

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    RequestBodyLimitMiddleware,
    TransportSecuritySettings,
)
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from hermitcrab.util.redact import RedactingFilter

from .jsonrpc_http import CheckedBodies
from .sdk_workarounds import serve_stdio

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)
TOKEN_VARIABLE = "HERMITCRAB_MCP_TOKEN"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def parse_http(value: str) -> tuple[str, int]:
    """Split `HOST:PORT` (or just `PORT`, meaning 127.0.0.1) into its parts."""
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--http expects HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def add_serve_flags(parser: argparse.ArgumentParser) -> None:
    """The flags every server has for how it serves (read back by `serve`): `--http`, its token and extra hosts, and
    `--log-level` (WARNING by default: INFO logs refused calls)."""
    parser.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP instead of stdio")
    parser.add_argument(
        "--token",
        default=os.environ.get(TOKEN_VARIABLE),
        help=f"over HTTP, the bearer token clients must send (default: ${TOKEN_VARIABLE}; required off loopback)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="over HTTP, another Host (and Origin) name clients may use besides the bound one (repeatable)",
    )
    parser.add_argument(
        "--log-level", choices=LOG_LEVELS, default="WARNING", type=str.upper, help="stderr log level (default WARNING)"
    )


def serve(server: MCPServer[Any], flags: argparse.Namespace) -> None:
    """Serve on stdio (the default) or streamable HTTP at `--http`; logs go to stderr at `--log-level`, never stdout,
    with credentials masked (uvicorn's access log included: a request's query string may carry a key)."""
    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    to_stderr.addFilter(RedactingFilter())
    # force: MCPServer() already installed a rich handler at INFO, which would format every refused argument.
    logging.basicConfig(level=flags.log_level, handlers=[to_stderr], force=True)
    if flags.http is None:
        anyio.run(serve_stdio, server)
        return
    host, port = parse_http(flags.http)
    try:
        app = http_app(server, host, flags.token, flags.allow_host)
    except ValueError as exc:
        raise SystemExit(f"{server.name}: {exc}") from None
    uvicorn.run(app, host=host, port=port, log_level=flags.log_level.lower(), log_config=None)


def http_app(server: MCPServer[Any], host: str, token: str | None, extra_hosts: Sequence[str] = ()) -> ASGIApp:
    """The server's streamable HTTP app behind its two checks: the Host/Origin allowlist, on whatever address it
    binds (a page in the user's browser cannot reach it through a rebinding name), and the bearer token.

    Off loopback a token is required, since anyone on the network could otherwise run its tools."""
    loopback = host in LOOPBACK_NAMES
    if not loopback and not token:
        raise ValueError(
            f"refusing to serve on {host} without a token: anyone who can reach it could call its tools; set "
            f"${TOKEN_VARIABLE} (or --token) and give clients the header Authorization: Bearer <token>"
        )
    names = [*LOOPBACK_NAMES, *([] if loopback or host in ("0.0.0.0", "::") else [host]), *extra_hosts]
    hosts = [f"[{name}]" if ":" in name and not name.startswith("[") else name for name in names]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[pattern for name in hosts for pattern in (name, f"{name}:*")],
        allowed_origins=[
            f"{scheme}://{name}{port}" for name in hosts for scheme in ("http", "https") for port in ("", ":*")
        ],
    )
    streamable = server.streamable_http_app(transport_security=security, host=host)
    app = RequestBodyLimitMiddleware(CheckedBodies(streamable, security), DEFAULT_MAX_REQUEST_BODY_SIZE)
    return BearerToken(app, token) if token else app


class BearerToken:
    """Answers 401 to every HTTP request without `Authorization: Bearer <token>` (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = Headers(scope=scope).get("authorization", "").encode()
            if not hmac.compare_digest(given, self._expected):
                refused = PlainTextResponse(
                    "missing or wrong bearer token", status_code=401, headers={"WWW-Authenticate": "Bearer"}
                )
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)
