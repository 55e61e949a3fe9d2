"""POST bodies of the handshake-era streamable HTTP transport, checked before the SDK reads them.

The SDK answers a message that is JSON but not JSON-RPC with pydantic's ~900-character dump (as -32602), where
stdio answers one line (`sdk_workarounds.reply_to_unparseable`); here HTTP gets that same line. It also refuses
every JSON-RPC batch, which protocol version 2025-03-26 requires a server to accept (later versions removed
batches): under that version (the one a request without `MCP-Protocol-Version` is in) each message of a batch is
posted to the SDK on its own and the answers stream back together; under the others a batch gets one -32600 line.
2026-era requests (any other version header) go to the SDK as they are: its stateless path answers them well.
"""

from __future__ import annotations

import json
from typing import Any, cast

import anyio
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types import DEFAULT_NEGOTIATED_VERSION, INVALID_REQUEST
from mcp_types.jsonrpc import jsonrpc_message_adapter
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .sdk_workarounds import reply_to_unparseable

BATCH_VERSIONS = frozenset({"2025-03-26"})
"""The protocol versions whose streamable HTTP transport must accept JSON-RPC batches."""
_VERSION_HEADER = b"mcp-protocol-version"
_SSE_START: Message = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform")],
}


class CheckedBodies:
    """ASGI middleware in front of `server.streamable_http_app()`: malformed messages and batches, per version.

    It runs after the SDK's body limit (`RequestBodyLimitMiddleware`, which hands it the whole body in one message)
    and checks Host, Origin and Content-Type as the SDK would before it answers anything itself."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings, path: str = "/mcp") -> None:
        self.app = app
        self._security = TransportSecurityMiddleware(security)
        self._path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = _version(scope)
        mcp_post = scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == self._path
        if not mcp_post or version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.app(scope, receive, send)
            return
        first = await receive()
        whole = not first.get("more_body")
        refused = await self._security.validate_request(Request(scope), is_post=True) if whole else None
        if not whole or refused is not None:
            await self.app(scope, _replay(first, receive), send)  # too large, or refused: the SDK answers
            return
        try:
            parsed: Any = json.loads(first.get("body", b""))
        except (ValueError, RecursionError):
            parsed = None  # the SDK answers -32700 in one line
        if isinstance(parsed, list):
            await self._batch(scope, cast(list[Any], parsed), version, receive, send)
        elif isinstance(parsed, dict) and (error := _invalid(parsed)) is not None:
            await JSONResponse(error, status_code=400)(scope, receive, send)
        else:
            await self.app(scope, _replay(first, receive), send)

    async def _batch(self, scope: Scope, items: list[Any], version: str, receive: Receive, send: Send) -> None:
        """Each message of the batch posted on its own: notifications and responses first (a refusal, such as an
        unknown session, answers the whole batch), then the requests at once, their answers streamed as one SSE
        response; a malformed item gets its one-line error there."""
        refusal = _batch_refusal(items, version)
        if refusal is not None:
            await JSONResponse(_error(refusal), status_code=400)(scope, receive, send)
            return
        verdicts = [(item, _invalid(item)) for item in items]
        errors = [error for _, error in verdicts if error is not None]
        valid = [cast(dict[str, Any], item) for item, error in verdicts if error is None]
        requests = [item for item in valid if "method" in item and "id" in item]
        for message in (item for item in valid if not ("method" in item and "id" in item)):
            replies = await _collect(self.app, scope, message, receive)
            if replies and replies[0].get("status", 500) >= 400:
                for reply in replies:
                    await send(reply)
                return
        if not requests and not errors:
            await Response(status_code=202)(scope, receive, send)
            return
        merged = _Merged(send)
        async with anyio.create_task_group() as group:
            for request in requests:
                group.start_soon(_stream, self.app, scope, request, receive, merged, group.cancel_scope)
        await merged.finish(errors)


class _Merged:
    """The one response the requests of a batch stream into. The first answer to start decides it: a refusal
    (status 400 or more, such as an unknown session, which the SDK gives before running anything) is sent alone as
    the batch's answer; else it is an SSE stream carrying every request's events."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._lock = anyio.Lock()
        self._started = False
        self.refused = False

    async def begin(self, start: Message) -> bool:
        """Called with each request's response start; True when this request's answer is the refusal."""
        async with self._lock:
            if self._started:
                return False
            self._started = True
            self.refused = start.get("status", 500) >= 400
            await self._send(start if self.refused else _SSE_START)
            return self.refused

    async def pass_on(self, reply: Message) -> None:
        await self._send(reply)

    async def event(self, chunk: bytes) -> None:
        """One SSE event of the merged stream; dropped once a refusal answers the batch instead."""
        async with self._lock:
            if self.refused:
                return
            await self._send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def finish(self, errors: list[dict[str, Any]]) -> None:
        """End the stream, after the one-line errors for the batch's malformed items."""
        if self.refused:
            return
        if not self._started:
            await self._send(_SSE_START)
        for error in errors:
            await self.event(_event(json.dumps(error).encode()))
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})


def _version(scope: Scope) -> str:
    """The request's protocol version: its header, or 2025-03-26 without one (the spec's rule)."""
    headers = cast(list[tuple[bytes, bytes]], scope.get("headers", []))
    given = next((value.decode("latin-1") for key, value in headers if key == _VERSION_HEADER), None)
    return given or DEFAULT_NEGOTIATED_VERSION


def _batch_refusal(items: list[Any], version: str) -> str | None:
    if version not in BATCH_VERSIONS:
        return f"Invalid request: protocol version {version} has no JSON-RPC batches; post each message on its own"
    if not items:
        return "Invalid request: the batch is empty"
    if any(isinstance(item, dict) and cast(dict[str, Any], item).get("method") == "initialize" for item in items):
        return "Invalid request: initialize must not be part of a JSON-RPC batch"
    return None


def _invalid(message: Any) -> dict[str, Any] | None:
    """The one-line JSON-RPC error for something that is not a JSON-RPC message, or None for a message."""
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        return reply_to_unparseable(exc).model_dump(mode="json", by_alias=True, exclude_unset=True)
    return None


def _error(message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}


def _event(data: bytes) -> bytes:
    return b"event: message\ndata: " + data + b"\n\n"


def _one(scope: Scope, message: dict[str, Any]) -> tuple[Scope, bytes]:
    """A copy of the POST's scope for one message of its batch, with that message's length."""
    body = json.dumps(message).encode()
    headers = cast(list[tuple[bytes, bytes]], scope["headers"])
    kept = [(key, value) for key, value in headers if key != b"content-length"]
    return {**scope, "headers": [*kept, (b"content-length", str(len(body)).encode())]}, body


async def _collect(app: ASGIApp, scope: Scope, message: dict[str, Any], receive: Receive) -> list[Message]:
    """The SDK's whole answer to one message (to a notification or a response: 202, or a refusal)."""
    sub_scope, body = _one(scope, message)
    replies: list[Message] = []

    async def keep(reply: Message) -> None:
        replies.append(reply)

    await app(sub_scope, _replay({"type": "http.request", "body": body}, receive), keep)
    return replies


async def _stream(
    app: ASGIApp, scope: Scope, message: dict[str, Any], receive: Receive, merged: _Merged, batch: anyio.CancelScope
) -> None:
    """Post one request of a batch and pass its SSE events on as they come (a JSON answer becomes one event)."""
    sub_scope, body = _one(scope, message)
    sse = alone = False
    pending: list[bytes] = []

    async def relay(reply: Message) -> None:
        nonlocal sse, alone
        if reply["type"] == "http.response.start":
            headers = cast(list[tuple[bytes, bytes]], reply.get("headers", []))
            sse = any(k == b"content-type" and v.startswith(b"text/event-stream") for k, v in headers)
            alone = await merged.begin(reply)
        elif alone:
            await merged.pass_on(reply)
        elif sse:
            if reply.get("body"):
                await merged.event(reply["body"])
        else:
            pending.append(reply.get("body", b""))
            if not reply.get("more_body") and b"".join(pending).strip():
                await merged.event(_event(b"".join(pending)))

    await app(sub_scope, _replay({"type": "http.request", "body": body}, receive), relay)
    if alone:
        batch.cancel()


def _replay(first: Message, receive: Receive) -> Receive:
    """A receive channel that hands out `first` again, then whatever `receive` gives."""
    given = False

    async def again() -> Message:
        nonlocal given
        if not given:
            given = True
            return first
        return await receive()

    return again
