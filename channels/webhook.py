"""The HTTP webhook channel: other programs wake the agent with a POST; replies can go back to a callback URL.

Inbound (served by `hermitcrab run`, 127.0.0.1 by default, only when a token is configured):
  POST /hooks/agent {message, session?, delivery?: {mode?, channel?, to?}}  runs a turn, answers 202 at once
  POST /hooks/agent?stream=1 {message, session?}     runs a turn, answers with its events (`hook_streams.py`)
  POST /hooks/wake  {text}                                               queues a system event for the main session
  GET  /healthz                                                          200 while serving
Every POST needs `Authorization: Bearer <token>`; a wrong or missing token (or the token without `Bearer `) is 401,
malformed JSON, JSON nested over 200 levels deep or an unknown field 400, a body over 64 KB 413, and nothing runs. A
hook acts with no owner rights (its text is data, its turn gets `[policy.system]`, and the main session is not its to
use: a wake runs in the `webhook` session) unless the owner configured `[webhook] owner = true`. Outbound, a
conversation of this channel is an http(s) URL: a reply is POSTed there as `{"text": ...}`.
"""

from __future__ import annotations

import logging
import secrets
import uuid
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

import anyio
from anyio.abc import TaskStatus
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from hermitcrab.host.events import NOWHERE, Event, Listener, Principal, Target, system
from hermitcrab.util.http_serve import serve_app
from hermitcrab.util.outbound import Outbound, OutboundRefused, guarded_client

from .hook_streams import HookStreams

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
WAKE_SESSION = "webhook"
"""Where wake events go when hooks do not act as the owner: the main session is the owner's alone."""

Submit = Callable[[Event], Awaitable[None]]
Fallback = Callable[[], Target | None]
Check = Callable[[str, str], str | None]
"""Why a (channel, conversation) cannot be delivered to, or None: the host's `Gateway.target_problem`."""


class _Delivery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["announce", "none"] = "announce"
    channel: str | None = None
    to: str | None = None


class _AgentHook(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1)
    session: str | None = Field(default=None, min_length=1, max_length=200)
    delivery: _Delivery = _Delivery()


class _WakeHook(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)


_Hook = TypeVar("_Hook", _AgentHook, _WakeHook)


class WebhookChannel:
    """Serves the hook endpoints and delivers replies to callback URLs."""

    name = "webhook"
    display = "nothing to a person: the reply is POSTed as JSON text to a program; plain text, no chat chatter"

    def __init__(
        self,
        token: str,
        submit: Submit,
        fallback: Fallback,
        *,
        owner: bool = False,
        check: Check | None = None,
        outbound: Outbound | None = None,
    ) -> None:
        self._token = token
        self._outbound = outbound or Outbound()
        self._check = check
        self._submit = submit
        self._fallback = fallback
        self._closing = False
        self._owner = owner
        self._principal: Principal = system("a webhook call", "owner" if owner else "system")
        self._streams = HookStreams()

    async def send(self, target: Target, text: str) -> None:
        if self._streams.owns(target):
            self._streams.finish(target, text)
            return
        url = target.conversation
        if not url.startswith(("http://", "https://")):
            raise LookupError(f"webhook conversations are http(s) callback URLs, not {url[:80]!r}")
        async with guarded_client(self._outbound, timeout=30) as client:
            response = await client.post(url, json={"text": text})
            response.raise_for_status()

    async def typing(self, target: Target) -> None:
        return None

    def listener(self, target: Target) -> Listener | None:
        """The event stream of a streamed call's turn; None for every other target (a callback URL)."""
        return self._streams.listener(target)

    def check_conversation(self, to: str) -> str | None:
        """Why `to` cannot be a conversation of this channel, None when it can: the host checks delivery targets
        where they are written (a cron job, a webhook call), not only when a delivery to them fails."""
        if not to.startswith(("http://", "https://")):
            return f"delivery.to: a webhook conversation is an http(s) URL, not {to[:80]!r}"
        try:
            self._outbound.precheck(to)
        except OutboundRefused as exc:
            return f"delivery.to: {exc}"
        return None

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/hooks/agent", self._agent, methods=["POST"]),
                Route("/hooks/wake", self._wake, methods=["POST"]),
                Route("/healthz", self._health, methods=["GET"]),
            ]
        )

    async def serve(self, host: str, port: int, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled (`close()` first refuses new hooks); reports started once the socket listens."""
        await serve_app(self.app(), host, port, "the webhook endpoint", task_status=task_status)

    def close(self) -> None:
        """Refuse new hooks (503) while the host finishes its running turn; cancelling `serve` stops the server."""
        self._closing = True

    async def _health(self, request: Request) -> JSONResponse:
        return JSONResponse({"ok": not self._closing})

    async def _agent(self, request: Request) -> JSONResponse | StreamingResponse:
        try:
            hook = await self._read(request, _AgentHook)
        except _Refused as refused:
            return refused.response()
        if hook.session == "main" and not self._owner:
            message = "session 'main' is the owner's: hooks may use it only with [webhook] owner = true"
            return _Refused(400, message).response()
        streamed = request.query_params.get("stream", "0")
        if streamed not in ("0", "1"):
            return _Refused(400, f"stream: {streamed[:20]!r} is neither 0 nor 1").response()
        if streamed == "1":
            if "delivery" in hook.model_fields_set:
                message = "delivery: a streamed hook's reply comes on its own connection; leave out delivery"
                return _Refused(400, message).response()
            return await self._streamed(hook)
        delivery = hook.delivery
        if self._check is not None and delivery.channel and delivery.to:
            problem = self._check(delivery.channel, delivery.to)
            if problem is not None:
                return _Refused(400, problem).response()
        hook_id = uuid.uuid4().hex[:12]
        target = self._target(hook.delivery)
        await self._submit(
            Event(
                "webhook",
                f"[webhook]\n{hook.message}",
                target or NOWHERE,
                session_key=hook.session or f"hook-{hook_id}",
                metadata={"hook_id": hook_id},
                deliver=target is not None,
                principal=self._principal,
                inbound_id=f"{self.name}:{hook_id}",  # a 202 is a promise: the call is answered across a crash too
            )
        )
        return JSONResponse({"accepted": True, "id": hook_id}, status_code=202)

    async def _streamed(self, hook: _AgentHook) -> StreamingResponse:
        hook_id = uuid.uuid4().hex[:12]
        target, body = self._streams.open(hook_id)
        await self._submit(
            Event(
                "webhook",
                f"[webhook]\n{hook.message}",
                target,
                session_key=hook.session or f"hook-{hook_id}",
                metadata={"hook_id": hook_id},
                principal=self._principal,
            )  # no inbound_id: only this connection can take the reply, and a restart has dropped it
        )
        headers = {"Cache-Control": "no-cache", "X-Hook-Id": hook_id}
        return StreamingResponse(body, media_type="text/event-stream", headers=headers)

    async def _wake(self, request: Request) -> JSONResponse:
        try:
            hook = await self._read(request, _WakeHook)
        except _Refused as refused:
            return refused.response()
        target = self._fallback()
        await self._submit(
            Event(
                "webhook",
                f"[system event]\n{hook.text}",
                target or NOWHERE,
                session_key="main" if self._owner else WAKE_SESSION,
                deliver=bool(target),
                principal=self._principal,
            )
        )
        return JSONResponse({"accepted": True}, status_code=202)

    def _target(self, delivery: _Delivery) -> Target | None:
        if delivery.mode == "none":
            return None
        if delivery.channel and delivery.to:
            return Target(delivery.channel, delivery.to)
        return self._fallback()

    async def _read(self, request: Request, model: type[_Hook]) -> _Hook:
        """The validated body; checks, in order: shutting down, token, size, shape.

        The body is parsed by pydantic's JSON parser, which gives up past 200 levels of nesting with an error we
        answer as 400; `json.loads` recurses once a level, and 64 KB of `[` would exhaust the stack (a 500)."""
        if self._closing:
            raise _Refused(503, "hermitcrab is shutting down")
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(given.encode(), self._token.encode()):
            raise _Refused(401, "missing or wrong bearer token: send Authorization: Bearer <token>")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise _Refused(413, f"the body is over {MAX_BODY_BYTES // 1024} KB")
        try:
            return model.model_validate_json(body)
        except ValidationError as exc:
            errors = exc.errors()
            if errors[0]["type"] == "json_invalid":
                raise _Refused(400, f"the body is not JSON: {errors[0]['msg'].removeprefix('Invalid JSON: ')}") from exc
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in errors)
            raise _Refused(400, problems) from exc


class _Refused(Exception):
    """A hook request turned away before anything ran."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

    def response(self) -> JSONResponse:
        return JSONResponse({"error": str(self)}, status_code=self.status)
