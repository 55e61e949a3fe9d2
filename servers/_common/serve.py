"""Run an MCPServer over stdio or streamable HTTP, as chosen by the `--http HOST:PORT` flag, logging at `--log-level`.

Over stdio, a line the SDK cannot parse (invalid JSON, a lone surrogate, nesting or a number too large for its
parser, `params: []`) is dropped by the SDK without a reply, so the client would wait forever; here it is
answered with a JSON-RPC parse error or invalid-request error (see docs/sdk-issues.md).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from types import TracebackType
from typing import Any, Literal, Self, cast, get_args

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream  # the types lowlevel Server.run takes
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from .arguments import quote

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)


def parse_http(value: str) -> tuple[str, int]:
    """Split `HOST:PORT` (or just `PORT`, meaning 127.0.0.1) into its parts."""
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--http expects HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def add_serve_flags(parser: argparse.ArgumentParser) -> None:
    """The `--http` and `--log-level` flags every server has (log level WARNING by default: INFO logs refused calls)."""
    parser.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP instead of stdio")
    parser.add_argument(
        "--log-level", choices=LOG_LEVELS, default="WARNING", type=str.upper, help="stderr log level (default WARNING)"
    )


def serve(server: MCPServer[Any], http: str | None, log_level: str = "WARNING") -> None:
    """Serve on stdio (the default) or streamable HTTP at `http`; logs go to stderr at `log_level`, never stdout."""
    # force: MCPServer() already installed a rich handler at INFO, which would format every refused argument.
    logging.basicConfig(stream=sys.stderr, level=log_level, format="%(levelname)s %(name)s: %(message)s", force=True)
    if http is None:
        anyio.run(serve_stdio, server)
        return
    host, port = parse_http(http)
    server.settings.log_level = cast(LogLevel, log_level)  # uvicorn's own loggers follow it too
    server.run("streamable-http", host=host, port=port)


async def serve_stdio(server: MCPServer[Any]) -> None:
    """What `server.run()` does for stdio, except that unparseable lines are answered instead of dropped."""
    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]  # the SDK has no public seam for this
    async with stdio_server() as (read_stream, write_stream):
        answering = AnswerUnparseable(read_stream, write_stream)
        await lowlevel.run(answering, write_stream, lowlevel.create_initialization_options())


class AnswerUnparseable:
    """A read stream that answers the transport's parse failures on the write stream and passes messages on."""

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], write_stream: WriteStream[SessionMessage]
    ) -> None:
        self._inner = inner
        self._write = write_stream

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._answer(item)

    async def _answer(self, error: Exception) -> None:
        await self._write.send(SessionMessage(reply_to_unparseable(error)))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.__anext__()
            if not isinstance(item, Exception):
                return item
            await self._answer(item)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


def reply_to_unparseable(error: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line that failed to parse: -32700 for bad JSON, -32600 for a bad message."""
    if not isinstance(error, ValidationError):
        return _error(None, PARSE_ERROR, f"Parse error: {quote(str(error))}")
    details = error.errors(include_url=False)
    for detail in details:
        given = detail.get("input")
        if detail["type"] == "json_invalid":
            request_id = _id_of(_lenient_json(given)) if isinstance(given, str) else None
            reason = str(detail.get("ctx", {}).get("error", detail["msg"]))
            return _error(
                request_id, PARSE_ERROR, f"Parse error: the line is not JSON this server can read ({quote(reason)})"
            )
    envelope = next((d["input"] for d in details if isinstance(d.get("input"), dict)), None)
    return _error(
        _id_of(envelope), INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message (is `params` an object?)"
    )


def _error(request_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def _lenient_json(line: str) -> Any:
    """Python's own parser accepts what pydantic's rejects (lone surrogates, long integers, deep nesting)."""
    try:
        return json.loads(line, parse_int=lambda digits: int(digits) if len(digits) <= 20 else None)
    except (ValueError, RecursionError):
        return None


def _id_of(envelope: Any) -> str | int | None:
    if not isinstance(envelope, dict):
        return None
    request_id = cast(dict[str, Any], envelope).get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    return request_id
