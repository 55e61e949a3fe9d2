"""The browser's own forward proxy on loopback: every connection Chromium makes passes the outbound guard here.

Chromium is started with this proxy as its only way out (`--proxy-server`, loopback included; Playwright adds
`<-loopback>` to the bypass list so 127.0.0.1 is proxied too). So each request it sends, whoever asked for it (the
model's navigation, a sub-resource, an XHR or fetch, a frame, a service worker, a WebSocket, and each hop of a
redirect, which Playwright's routing never sees), reaches the network only through `_serve`, which:

- applies the origin policy (`--allowed-origins` / `--blocked-origins`) to the host and port, and
- resolves the name itself with `Outbound.resolve` (every address must pass) and connects to the address it
  checked, so a DNS answer that changes after the check (rebinding) is never used.

Plain http arrives as an absolute-form request, one per connection (we send `Connection: close` upstream), so every
request is judged; https and WebSockets arrive as `CONNECT host:port`, a tunnel to that one host, so a redirect to
another host is a new `CONNECT`. A refusal answers `403` with the guard's message (and `X-Hermitcrab-Refused`), before
any connection is tried, so it reads the same whether something listens there or not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from urllib.parse import urlsplit

from hermitcrab.util.outbound import Outbound, OutboundRefused

from .origins import OriginPolicy

logger = logging.getLogger(__name__)

REFUSED_HEADER = "X-Hermitcrab-Refused"
_HEAD_LIMIT = 64 * 1024
_HEAD_SECONDS = 30.0
_CONNECT_SECONDS = 15.0
_CHUNK = 64 * 1024
_HOP_BY_HOP = frozenset({"connection", "proxy-connection", "keep-alive", "proxy-authorization", "te", "trailer"})


class OutboundProxy:
    """An HTTP proxy on 127.0.0.1 that lets a connection through only when the policy and the guard allow it.

    `on_refusal` hears each refusal's message (the session shows them to the model after the call)."""

    def __init__(self, outbound: Outbound, policy: OriginPolicy, on_refusal: Callable[[str], None]) -> None:
        self.outbound = outbound
        self.policy = policy
        self.on_refusal = on_refusal
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """The proxy's address for Chromium's `--proxy-server`."""
        assert self._server is not None, "start() first"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def start(self) -> str:
        if self._server is None:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=_HEAD_LIMIT)
        return self.url

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._connections):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError) as exc:
            logger.debug("proxy connection ended: %r", exc)
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HEAD_SECONDS)
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, version = request_line.split(" ", 2)
        tunnel = method.upper() == "CONNECT"
        # A tunnel carries https, wss or ws: the origin policy judges its host and port under either scheme.
        urls = [f"https://{target}/", f"http://{target}/"] if tunnel else [target]
        try:
            host, port, address = await self._check(urls)
        except OutboundRefused as exc:
            if unresolvable(exc):
                await _answer(writer, 502, str(exc))  # Chromium says ERR_TUNNEL_CONNECTION_FAILED or shows it
            else:
                await self._refuse(writer, str(exc))
            return
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(address, port, limit=_HEAD_LIMIT), _CONNECT_SECONDS
            )
        except (OSError, TimeoutError):
            await _answer(writer, 502, f"could not connect to {host}:{port}")
            return
        try:
            if tunnel:
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await writer.drain()
            else:
                upstream_writer.write(_origin_form(method, target, version, header_lines))
                await upstream_writer.drain()
            await _pipe(reader, writer, upstream_reader, upstream_writer)
        finally:
            upstream_writer.close()
            with contextlib.suppress(Exception):
                await upstream_writer.wait_closed()

    async def _check(self, urls: list[str]) -> tuple[str, int, str]:
        """The host, port and checked address for the first of `urls` the origin policy allows."""
        allowed = next((url for url in urls if self.policy.allows(url)), None)
        if allowed is None:
            parts = urlsplit(urls[0])
            raise OutboundRefused(
                f"refused {parts.netloc}: outside the origins this browser may visit ({self.policy.describe()})"
            )
        if urlsplit(allowed).scheme not in ("http", "https"):
            raise OutboundRefused(f"refused {allowed[:80]!r}: only http and https are proxied")
        return await self.outbound.resolve(allowed)

    async def _refuse(self, writer: asyncio.StreamWriter, message: str) -> None:
        logger.info("browser request %s", message)
        self.on_refusal(message)
        await _answer(writer, 403, message, refused=True)


def unresolvable(refused: OutboundRefused) -> bool:
    """The guard could not look the name up (no such host): a network error, not a refusal."""
    return str(refused).startswith("could not resolve")


def _origin_form(method: str, target: str, version: str, header_lines: list[str]) -> bytes:
    """The request as the origin server expects it: path only, our hop-by-hop headers out, one request only."""
    parts = urlsplit(target)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = [line for line in header_lines if line and line.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP]
    lines = [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _answer(writer: asyncio.StreamWriter, status: int, message: str, *, refused: bool = False) -> None:
    body = (message + "\n").encode()
    reason = {403: "Forbidden", 502: "Bad Gateway"}[status]
    headers = [
        f"HTTP/1.1 {status} {reason}",
        "Content-Type: text/plain; charset=utf-8",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *([f"{REFUSED_HEADER}: 1"] if refused else []),
        "",
        "",
    ]
    writer.write("\r\n".join(headers).encode() + body)
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    """Copy both ways until either side closes."""
    copies = {
        asyncio.ensure_future(_copy(reader, upstream_writer)),
        asyncio.ensure_future(_copy(upstream_reader, writer)),
    }
    try:
        await asyncio.wait(copies, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for copy in copies:
            copy.cancel()
        await asyncio.gather(*copies, return_exceptions=True)


async def _copy(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while chunk := await source.read(_CHUNK):
            target.write(chunk)
            await target.drain()
