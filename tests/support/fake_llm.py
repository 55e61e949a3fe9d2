"""A scripted LLM server on 127.0.0.1 speaking the OpenAI chat completions and Anthropic Messages wire formats.

Asked to stream (`"stream": true`), it sends a scripted body as server-sent events (`fake_llm_stream.py`), with a
pause between events, a gate to hold the rest back, or a cut mid-way, as the reply says. For each request it also
measures the part a provider's prefix cache could serve (`Prompt`).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .fake_llm_stream import anthropic_frames, openai_frames

NO_PROVIDER_ENV = {
    "HERMITCRAB_PROVIDER": "",
    "HERMITCRAB_LLM_BASE_URL": "",
    "HERMITCRAB_MODEL": "",
    "HERMITCRAB_LLM_API_KEY": "",
}


@dataclass
class Reply:
    """One scripted answer: a JSON body with a status code (and optional headers).

    Streamed (when the request asks and `stream` allows), the body goes out as events `event_delay_s` apart; with
    `hold_after` the stream waits after that many events until the test calls `FakeLLM.release()`; with
    `cut_after` the connection drops after that many events.
    """

    body: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    stream: bool = True
    event_delay_s: float = 0.0
    hold_after: int | None = None
    cut_after: int | None = None


@dataclass
class FakeLLM:
    url: str
    script: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    delivered: list[dict[str, Any]] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)
    streamed_at: list[float] = field(default_factory=list)
    """When each streamed event went out (`time.monotonic()`), for measuring what a client shows how soon."""
    prompts: list[Prompt] = field(default_factory=list)
    """Each request's prompt as a prefix cache sees it, in the order they came."""

    def release(self) -> None:
        """Let a stream held by `Reply.hold_after` go on."""
        self.gate.set()

    @property
    def sink_url(self) -> str:
        """Where a webhook channel can deliver replies; they land in `delivered`."""
        return self.url.removesuffix("/v1") + "/sink"

    def enqueue(self, *replies: Reply | dict[str, Any]) -> None:
        self.script.extend(r if isinstance(r, Reply) else Reply(r) for r in replies)


@dataclass(frozen=True)
class Prompt:
    """A request's prompt in the order a provider caches it (tools, system, messages), one serialized piece each,
    and `shared`: how many of its first characters some earlier request began with, the part a prefix cache could
    serve. Like a provider's cache it keeps every earlier prefix (not only the last one), and compares content only:
    `cache_control` marks, the model and the sampling settings are no part of it."""

    pieces: tuple[str, ...]
    shared: int

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def newest_at(self) -> int:
        """Where the newest message begins: everything before it is the history and the fixed part."""
        return len(self.text) - len(self.pieces[-1])

    @classmethod
    def of(cls, request: dict[str, Any], earlier: list[Prompt]) -> Prompt:
        system = request.get("system")
        parts = [*request.get("tools", []), *([system] if system else []), *request.get("messages", [])]
        pieces = tuple(json.dumps(_content(part), ensure_ascii=False) + "\n" for part in parts)
        text = "".join(pieces)
        return cls(pieces, max((common_prefix(text, e.text) for e in earlier), default=0))


def _content(part: object) -> object:
    if isinstance(part, dict):
        return {k: _content(v) for k, v in cast(dict[str, object], part).items() if k != "cache_control"}
    if isinstance(part, list):
        return [_content(v) for v in cast(list[object], part)]
    return part


def common_prefix(a: str, b: str) -> int:
    """The length of the longest prefix `a` and `b` share (halving the range, so each step is one C comparison)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def fake_llm_env(home: Path, llm: FakeLLM, api_key: str = "sk-test-secret") -> dict[str, str]:
    """The HERMITCRAB_* variables that point a host process at `home` and at the scripted LLM (OpenAI format)."""
    return {
        "HERMITCRAB_HOME": str(home),
        "HERMITCRAB_PROVIDER": "openai",
        "HERMITCRAB_LLM_BASE_URL": llm.url,
        "HERMITCRAB_LLM_API_KEY": api_key,
        "HERMITCRAB_MODEL": "fake-model",
        "HERMITCRAB_DASHBOARD_LISTEN": "127.0.0.1:0",  # a free port each: tests run hosts side by side
    }


def openai_text(text: str, *, tokens: tuple[int, int] = (10, 5)) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
    }


def openai_tool_calls(*calls: tuple[str, str, str]) -> dict[str, Any]:
    """Each call is (id, name, arguments as a JSON string)."""
    return {
        "id": "chatcmpl-test",
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                        for cid, name, args in calls
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 8},
    }


def anthropic_text(text: str) -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "fake-claude",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 12, "output_tokens": 4},
    }


def anthropic_tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "fake-claude",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": call_id, "name": name, "input": arguments},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 30, "output_tokens": 9},
    }


def _app(fake: FakeLLM) -> Starlette:
    async def answer(request: Request) -> Response:
        asked = await request.json()
        fake.requests.append(asked)
        fake.prompts.append(Prompt.of(asked, fake.prompts))
        fake.headers.append(dict(request.headers))
        if not fake.script:
            return JSONResponse({"error": {"message": "the fake LLM has no scripted reply left"}}, status_code=400)
        reply = fake.script.pop(0)
        await anyio.sleep(reply.delay_s)
        if asked.get("stream") and reply.stream and reply.status == 200:
            frames = (anthropic_frames if request.url.path.endswith("/messages") else openai_frames)(reply.body)
            return StreamingResponse(_sent(fake, reply, frames), media_type="text/event-stream", headers=reply.headers)
        body = json.dumps(reply.body)  # ASCII escapes: a scripted reply may hold what UTF-8 cannot (half a pair)
        return Response(body, status_code=reply.status, headers=reply.headers, media_type="application/json")

    async def sink(request: Request) -> JSONResponse:
        fake.delivered.append(await request.json())
        return JSONResponse({"ok": True})

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"data": [{"id": "fake-model"}]})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", answer, methods=["POST"]),
            Route("/v1/messages", answer, methods=["POST"]),
            Route("/v1/models", models),
            Route("/sink", sink, methods=["POST"]),
        ]
    )


async def _sent(fake: FakeLLM, reply: Reply, frames: list[str]) -> AsyncIterator[str]:
    for count, frame in enumerate(frames):
        if count == reply.cut_after:
            raise ConnectionAbortedError("the scripted stream is cut here")  # uvicorn drops the connection
        if count == reply.hold_after:
            await anyio.to_thread.run_sync(fake.gate.wait)
        if count and reply.event_delay_s:
            await anyio.sleep(reply.event_delay_s)
        fake.streamed_at.append(time.monotonic())
        yield frame


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_fake_llm() -> Iterator[FakeLLM]:
    """Serve a FakeLLM from a background thread; `fake.url` is the OpenAI-style base URL (…/v1)."""
    port = free_port()
    fake = FakeLLM(url=f"http://127.0.0.1:{port}/v1")
    server = uvicorn.Server(uvicorn.Config(_app(fake), host="127.0.0.1", port=port, log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the fake LLM server did not start")
        time.sleep(0.01)
    try:
        yield fake
    finally:
        fake.release()  # a stream still held must not keep the server from stopping
        server.should_exit = True
        thread.join(timeout=5)
