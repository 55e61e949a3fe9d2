"""An HTTP forward proxy whose every connection is judged before it is made, for a client we do not trust.

The browser's Chromium and the exec server's sandboxed commands reach the network only through one of these. Each
client connection carries one judged destination:

- plain http arrives as an absolute-form request (`GET http://host/path HTTP/1.1`), one per connection (we send
  `Connection: close` upstream), so every request is judged;
- https (and WebSockets) arrive as `CONNECT host:port`, a tunnel to that one host, so a redirect to another host is a
  new `CONNECT`.

`check` (the owner's policy) answers the host, port and checked address to connect to, or raises OutboundRefused. It
is expected to resolve the name itself (`Outbound.resolve`: every address must pass) and the proxy connects to the
address it checked, so a DNS answer that changes after the check (rebinding) is never used. A refusal answers `403`
with the check's message (and `X-Hermitcrab-Refused`) before any connection is tried, so it reads the same whether
something listens there or not; a name that does not resolve answers `502`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

from .outbound import OutboundRefused

logger = logging.getLogger(__name__)

REFUSED_HEADER = "X-Hermitcrab-Refused"
_HEAD_LIMIT = 64 * 1024
_HEAD_SECONDS = 30.0
_CONNECT_SECONDS = 15.0
_CHUNK = 64 * 1024
_HOP_BY_HOP = frozenset({"connection", "proxy-connection", "keep-alive", "proxy-authorization", "te", "trailer"})

Check = Callable[[str, bool], Awaitable[tuple[str, int, str]]]
"""(the request target: a URL, or `host:port` for a tunnel; whether it is a tunnel) -> (host, port, address)."""


class ForwardProxy:
    """One listener (TCP on 127.0.0.1, or a unix socket) whose connections go out only where `check` allows.

    `on_refusal` hears each refusal's message (the browser shows them to the model after the call)."""

    def __init__(self, check: Check, on_refusal: Callable[[str], None] = lambda _: None) -> None:
        self.check = check
        self.on_refusal = on_refusal
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """The TCP listener's address, for a client's proxy setting."""
        assert self._server is not None, "listen_tcp() first"
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def listen_tcp(self) -> str:
        """Listen on a free port of 127.0.0.1 (once); the proxy's URL."""
        if self._server is None:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=_HEAD_LIMIT)
        return self.url

    async def listen_unix(self, path: Path) -> None:
        """Listen on a unix socket at `path` (mode 0600: only the server's user may connect)."""
        self._server = await asyncio.start_unix_server(self._accept, path, limit=_HEAD_LIMIT)
        path.chmod(0o600)

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
        try:
            host, port, address = await self.check(target, tunnel)
        except OutboundRefused as exc:
            if unresolvable(exc):
                await _answer(writer, 502, str(exc))  # Chromium says ERR_TUNNEL_CONNECTION_FAILED or shows it
            else:
                logger.info("proxied request %s", exc)
                self.on_refusal(str(exc))
                await _answer(writer, 403, str(exc), refused=True)
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
