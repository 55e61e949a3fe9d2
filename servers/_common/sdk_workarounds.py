"""Where we work around the MCP SDK, each gap in one place, with its reproduction in docs/sdk-issues.md.

Two gaps reach into the SDK's private `MCPServer._lowlevel_server`, only through `lowlevel_server` here:
- a stdio server drops a line it cannot parse without answering, so the client waits forever ("A stdio server never
  answers a line it cannot parse"): `serve_stdio` answers it with -32700 or -32600;
- `MCPServer` has no public way to add the `resources/subscribe` handlers ("No public seam for resource
  subscriptions"): `servers/_common/notifier.py` adds them on the low-level server.
When the SDK fixes either, delete its part here and its entry there.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any, Self, cast

from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream  # the types lowlevel Server.run takes
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from .arguments import quote


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The SDK's low-level server behind `server`: the SDK has no public seam for either gap above."""
    return server._lowlevel_server  # pyright: ignore[reportPrivateUsage]


async def serve_stdio(server: MCPServer[Any]) -> None:
    """What `server.run()` does for stdio, except that unparseable lines are answered instead of dropped."""
    lowlevel = lowlevel_server(server)
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
    """The JSON-RPC error for a line that failed to parse: -32700 for bad JSON, -32600 for a bad message or a batch
    (served over HTTP under 2025-03-26, `jsonrpc_http.py`, not yet over stdio, where that version wants them too)."""
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
    if all(isinstance(d.get("input"), list) for d in details):
        return _error(None, INVALID_REQUEST, "Invalid request: a JSON-RPC batch; send one message per line")
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
